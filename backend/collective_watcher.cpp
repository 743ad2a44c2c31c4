#include "backend/collective_watcher.hpp"

#include <exception>
#include <string>
#include <utility>

namespace ragged::backend {

CollectiveWatcher::CollectiveWatcher(Communicators comms, double timeout_s, int rank, LostHandler on_lost,
                                     WaitClock clock)
    : comms_(std::move(comms)),
      timeout_s_(timeout_s),
      rank_(rank),
      on_lost_(std::move(on_lost)),
      clock_(std::move(clock)),
      thread_([this] { follow(); }) {}

CollectiveWatcher::~CollectiveWatcher() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void CollectiveWatcher::watch(std::string op, std::function<bool()> completed) {
  {
    const std::lock_guard lock(mutex_);
    if (lost_) return;
    pending_.push_back({std::move(op), std::move(completed)});
  }
  changed_.notify_all();
}

bool CollectiveWatcher::drain() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return lost_ || (pending_.empty() && !busy_); });
  return !lost_;
}

bool CollectiveWatcher::lost() const {
  const std::lock_guard lock(mutex_);
  return lost_;
}

void CollectiveWatcher::follow() {
  if (comms_.on_thread_start) {
    try {
      comms_.on_thread_start();  // before any probe runs on this thread
    } catch (const std::exception& e) {
      // Nothing can be followed from this thread: the run ends as on a lost
      // collective, but no communicator is aborted (none was polled).
      on_lost_("rank " + std::to_string(rank_) + ": the collective watcher's thread could not start: " + e.what());
      {
        const std::lock_guard lock(mutex_);
        lost_ = true;
        pending_.clear();
      }
      changed_.notify_all();
      return;
    }
  }
  for (;;) {
    Pending next;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping, nothing left to follow
      next = std::move(pending_.front());
      pending_.pop_front();
      busy_ = true;
    }
    // A destructor that stops the watcher ends the wait too: a run unwinding
    // from an error must not wait out the timeout.
    const CollectiveProbe probe{[&] {
                                  const std::lock_guard lock(mutex_);
                                  return stopping_ || next.completed();
                                },
                                comms_.status, comms_.abort};
    const WaitResult result = wait_for_collective(probe, timeout_s_, clock_);
    if (result.outcome != WaitOutcome::kCompleted) {
      on_lost_(lost_collective_message(result, rank_, next.op, timeout_s_));  // said before drain() can return
      {
        const std::lock_guard lock(mutex_);
        lost_ = true;
        busy_ = false;
        pending_.clear();
      }
      changed_.notify_all();
      return;
    }
    {
      const std::lock_guard lock(mutex_);
      busy_ = false;
    }
    changed_.notify_all();
  }
}

}  // namespace ragged::backend
