#include "common/progress_bar.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "common/units.hpp"

namespace ragged {

namespace {

bool forced() {
  const char* value = std::getenv("RAGGED_PROGRESS");
  return value != nullptr && std::string(value) == "1";
}

}  // namespace

ProgressBar::ProgressBar(std::string label, double delay_s)
    : label_(std::move(label)),
      delay_s_(forced() ? 0.0 : delay_s),
      enabled_(wanted()),
      start_(std::chrono::steady_clock::now()) {}

bool ProgressBar::wanted() { return ::isatty(STDERR_FILENO) || forced(); }

void ProgressBar::update(double fraction, const std::string& detail) {
  if (!enabled_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (elapsed < delay_s_) return;
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int width = 30, filled = static_cast<int>(fraction * width);
  std::string left = fraction > 0 ? fmt::format(", {} left", format_seconds(elapsed * (1 - fraction) / fraction)) : "";
  const std::lock_guard lock(mutex_);
  std::fprintf(stderr, "\r\033[K%s [%s%s] %3.0f%% %s%s%s%s", label_.c_str(), std::string(filled, '#').c_str(),
               std::string(width - filled, '.').c_str(), 100 * fraction, format_seconds(elapsed).c_str(), left.c_str(),
               detail.empty() ? "" : "  ", detail.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::finish() {
  const std::lock_guard lock(mutex_);
  if (!drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace ragged
