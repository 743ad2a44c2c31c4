#pragma once
// A one-line progress bar on stderr for work that runs over a second:
// "label [#####.....]  42% 3.1s, 4.2s left". It shows only when stderr is a
// terminal (or RAGGED_PROGRESS=1 forces it from the start, for scripts and
// tests), never in the first `delay_s`, and clears its line when finished. Safe to update from
// several threads.

#include <chrono>
#include <mutex>
#include <string>

namespace ragged {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label, double delay_s = 1.0);
  ~ProgressBar() { finish(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Whether a bar would show: stderr is a terminal, or RAGGED_PROGRESS=1.
  static bool wanted();

  // `fraction` of the work done, in [0, 1]; `detail` follows the times
  // ("312/576 candidates"). The time left extrapolates the rate so far.
  void update(double fraction, const std::string& detail = "");
  // Clears the bar's line if it was ever drawn.
  void finish();

 private:
  std::string label_;
  double delay_s_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
};

}  // namespace ragged
