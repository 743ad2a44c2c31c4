#pragma once
// SimGrid's engine is a process-wide singleton whose clock never resets: each
// simulation runs in a forked child. run_in_child returns what the child's
// work returned; an InputError in the child is rethrown as one here, any other
// failure (exception, crash) becomes an InternalError naming it.

#include <functional>
#include <string>

namespace ragged::sim {

struct ChildUsage {
  double cpu_seconds = 0;       // user + system time of the child
  int64_t max_rss_bytes = 0;    // its peak resident memory
  int64_t start_rss_bytes = 0;  // its resident memory when the work started (pages shared with the parent)

  // What the work itself added (the parent's libraries, CUDA's included, are not the simulation's).
  int64_t added_rss_bytes() const { return max_rss_bytes > start_rss_bytes ? max_rss_bytes - start_rss_bytes : 0; }
};

std::string run_in_child(const std::function<std::string()>& work, ChildUsage* usage = nullptr);

}  // namespace ragged::sim
