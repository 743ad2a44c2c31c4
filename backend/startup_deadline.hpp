#pragma once
// A job's start-up, bounded. MPI_Init's exchange and the first collectives
// (the ranks' agreement on the scenario) wait for every rank before the
// collective watchdog (watchdog.hpp) runs; a rank stopped there (SIGSTOP, a
// hung file system, a node that froze) would leave the others waiting
// forever. A deadline armed first thing ends this rank with one line and
// kExitLostRank when the start-up has not finished within the collective
// timeout; the launcher then ends the job. The run disarms it once its
// collective watchdog runs (disarm_startup_deadline).

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace ragged::backend {

// A deadline's thread that wakes this much after its time was stopped with
// its process (SIGSTOP; a frozen node): that process is the lost rank, and it
// ends without a line, which is the ranks' that waited for it.
inline constexpr double kSuspendedSeconds = 1.0;

// Ends this rank for a deadline that passed (start-up, or exit_deadline.hpp's
// meeting): `line` on stderr, unless this rank was the one stopped, then
// exit kExitLostRank without any MPI call.
[[noreturn]] void end_rank_past_deadline(const std::string& line, bool this_rank_was_stopped);

class StartupDeadline {
 public:
  // timeout_s <= 0: no deadline. `rank`: this process's, and `option` the
  // one that set the timeout, for the line.
  StartupDeadline(double timeout_s, int rank, std::string option = "--collective-timeout");
  ~StartupDeadline();
  StartupDeadline(const StartupDeadline&) = delete;
  StartupDeadline& operator=(const StartupDeadline&) = delete;

  void disarm();

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool disarmed_ = false;
  std::thread thread_;
};

// Disarms the deadline armed in this process, if any: the collective
// watchdog has taken over.
void disarm_startup_deadline();

}  // namespace ragged::backend
