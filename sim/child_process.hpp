#pragma once
// SimGrid's engine is a process-wide singleton whose clock never resets: each
// simulation runs in a forked child. run_in_child returns what the child's
// work returned; an InputError in the child is rethrown as one here, any other
// failure (exception, crash) becomes an InternalError naming it.
//
// The child is forked from a process that may have other threads (the
// tuner's workers, MPI's): a lock one of them held at the fork stays held in
// the child, which then sleeps forever. GCC 12's AddressSanitizer has no fork
// handler for its allocator's locks, so a sanitized tune met this; any
// library's lock could do the same. A child that has used no CPU time and
// sent nothing for `stall_seconds` is therefore killed and forked again
// (kForkAttempts in all) before the call fails.

#include <functional>
#include <stdexcept>
#include <string>

namespace ragged::sim {

inline constexpr double kStallSeconds = 30;
inline constexpr int kForkAttempts = 3;

struct ChildUsage {
  double cpu_seconds = 0;       // user + system time of the child
  int64_t max_rss_bytes = 0;    // its peak resident memory
  int64_t start_rss_bytes = 0;  // its resident memory when the work started (pages shared with the parent)

  // What the work itself added (the parent's libraries, CUDA's included, are not the simulation's).
  int64_t added_rss_bytes() const { return max_rss_bytes > start_rss_bytes ? max_rss_bytes - start_rss_bytes : 0; }
};

std::string run_in_child(const std::function<std::string()>& work, ChildUsage* usage = nullptr);

// The work was cancelled: its child was killed before it answered.
class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("cancelled") {}
};

// How the parent watches a child it may have to stop (the dashboard's jobs).
struct ChildControl {
  // Polled by the parent every `poll_ms` while it waits; true kills the
  // child (SIGKILL) and run_in_child throws Cancelled.
  std::function<bool()> cancelled;
  // Called in the parent, on the waiting thread, with each fraction the
  // child reports through the `progress` function its work is given.
  std::function<void(double)> progress;
  int poll_ms = 20;
  // Added to the child's nice value: background work yields the CPU to an
  // interactive parent (the dashboard's event loop).
  int nice = 0;
  // No CPU time and no bytes for this long: the child is stuck (see above).
  double stall_seconds = kStallSeconds;
};

// The same with a control: `work` gets a progress function that sends a
// fraction in [0, 1] to the parent (throttled to changes of 1/200 or more).
std::string run_in_child(const std::function<std::string(const std::function<void(double)>& progress)>& work,
                         const ChildControl& control, ChildUsage* usage = nullptr);

}  // namespace ragged::sim
