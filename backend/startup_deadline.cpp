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
    // Woken long after the deadline: this process was itself stopped (it is
    // the lost rank, continued by the launcher ending the job), so the line
    // is the others' to say.
    const double late_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - armed_at).count() - timeout_s;
    if (late_s > kSuspendedSeconds) std::_Exit(kExitLostRank);
    const std::string line = fmt::format(
        "ragged: error: rank {}: the job did not start within {} {:g} s: a rank never reached the "
        "start (stopped, or its node hung); ending the job\n",
        rank, option, timeout_s);
    const ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
    (void)ignored;
    std::_Exit(kExitLostRank);  // MPI may be inside its start-up exchange: no MPI_Abort; the launcher ends the rest
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
