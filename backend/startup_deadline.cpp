#include "backend/startup_deadline.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>

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
    const auto armed_at = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex_);
    if (changed_.wait_for(lock, std::chrono::duration<double>(timeout_s), [this] { return disarmed_; })) return;
    // Woken long after the deadline: this process was itself stopped.
    const double late_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - armed_at).count() - timeout_s;
    end_rank_past_deadline(fmt::format("ragged: error: rank {}: the job did not start within {} {:g} s: a rank never "
                                       "reached the start (stopped, or its node hung); ending the job",
                                       rank, option, timeout_s),
                           late_s > kSuspendedSeconds);
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
