#include "backend/collective_wait.hpp"

#include <chrono>
#include <thread>

#include <fmt/format.h>

namespace ragged::backend {

WaitClock system_wait_clock() {
  return {[] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); },
          [] { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }};
}

WaitResult wait_for_collective(const CollectiveProbe& probe, double timeout_s, const WaitClock& clock) {
  const double start = clock.now_s();
  WaitResult result;
  for (;;) {
    result.waited_s = clock.now_s() - start;
    if (probe.completed()) return result;
    std::string error;
    if (probe.status(&error) == CommStatus::kFailed) {
      result.outcome = WaitOutcome::kFailed;
      result.error = error.empty() ? "an NCCL error" : error;
      probe.abort();
      return result;
    }
    if (timeout_s > 0 && result.waited_s >= timeout_s) {
      result.outcome = WaitOutcome::kTimedOut;
      probe.abort();
      return result;
    }
    clock.pause();
  }
}

std::string lost_collective_message(const WaitResult& result, int rank, const std::string& op, double timeout_s) {
  if (result.outcome == WaitOutcome::kFailed) {
    return fmt::format("rank {} in {}: NCCL reported {} after {:.1f} s; a peer is lost or its link failed; NCCL "
                       "communicators aborted", rank, op, result.error, result.waited_s);
  }
  return fmt::format("rank {} waited {:.1f} s in {} past --collective-timeout {:g}: a peer is lost or stopped; NCCL "
                     "communicators aborted", rank, result.waited_s, op, timeout_s);
}

}  // namespace ragged::backend
