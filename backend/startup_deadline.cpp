#include "backend/startup_deadline.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "backend/watchdog.hpp"

namespace ragged::backend {
namespace {

std::atomic<StartupDeadline*> g_current{nullptr};

}  // namespace

void end_rank_past_deadline(const std::string& line, bool this_rank_was_stopped) {
  if (!this_rank_was_stopped) {
    const std::string text = line + "\n";
    const ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
    (void)ignored;
  }
  // MPI may be inside an exchange a peer never finishes: no MPI call; the launcher ends the rest.
  std::_Exit(kExitLostRank);
}

StartupDeadline::StartupDeadline(double timeout_s, int rank, std::string option) {
  if (timeout_s <= 0) {
    disarmed_ = true;
    return;
  }
  g_current.store(this, std::memory_order_release);
  thread_ = std::thread([this, timeout_s, rank, option = std::move(option)] {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point due =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    // Waited in slices: a slice that took over kSuspendedSeconds means this
    // process was itself stopped (the lost rank, continued by the launcher
    // ending the job, perhaps just after its own deadline), so the line is
    // the others' to say.
    bool stopped = false;
    std::unique_lock lock(mutex_);
    for (Clock::time_point polled_at = Clock::now(); polled_at < due;) {
      if (changed_.wait_for(lock, std::chrono::milliseconds(100), [this] { return disarmed_; })) return;
      const Clock::time_point previous = std::exchange(polled_at, Clock::now());
      stopped = stopped || polled_at - previous > std::chrono::duration<double>(kSuspendedSeconds);
    }
    end_rank_past_deadline(fmt::format("ragged: error: rank {}: the job did not start within {} {:g} s: a rank never "
                                       "reached the start (stopped, or its node hung); ending the job",
                                       rank, option, timeout_s),
                           stopped);
  });
}

StartupDeadline::~StartupDeadline() {
  disarm();
  StartupDeadline* self = this;
  g_current.compare_exchange_strong(self, nullptr);
  if (thread_.joinable()) thread_.join();
}

void StartupDeadline::disarm() {
  {
    const std::lock_guard lock(mutex_);
    disarmed_ = true;
  }
  changed_.notify_all();
}

void disarm_startup_deadline() {
  if (StartupDeadline* current = g_current.load(std::memory_order_acquire)) current->disarm();
}

}  // namespace ragged::backend
