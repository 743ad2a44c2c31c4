#pragma once
// The NCCL shape of the collective watchdog (backend/watchdog.hpp), without
// CUDA or NCCL types so that tests drive it on any machine. A device
// collective cannot be interrupted from the host while its kernel waits for
// a peer; NCCL's answer is to create the communicators non-blocking, poll
// them with ncclCommGetAsyncError while the host waits, and end a hung
// collective with ncclCommAbort, which returns every kernel of the
// communicator. wait_for_collective is that loop: it polls, in turn, whether
// the work completed (a CUDA event or stream query), whether a communicator
// reported an error, and the clock; on an error or past the timeout it calls
// abort once and says why. The CUDA executor supplies the three probes.

#include <functional>
#include <string>

namespace ragged::backend {

// What ncclCommGetAsyncError says: ncclSuccess, ncclInProgress (a
// non-blocking call still running), or an error.
enum class CommStatus { kOk, kInProgress, kFailed };

struct CollectiveProbe {
  std::function<bool()> completed;                       // the work finished (cudaEventQuery == cudaSuccess)
  std::function<CommStatus(std::string* error)> status;  // every communicator; `error` names a failure
  std::function<void()> abort;                           // ncclCommAbort on every communicator
};

struct WaitClock {
  std::function<double()> now_s;  // a steady clock
  std::function<void()> pause;    // between polls (a short sleep)
};

// A steady clock and a 1 ms pause.
WaitClock system_wait_clock();

enum class WaitOutcome { kCompleted, kTimedOut, kFailed };

struct WaitResult {
  WaitOutcome outcome = WaitOutcome::kCompleted;
  double waited_s = 0;
  std::string error;  // kFailed: what the communicator reported
};

// Polls until the work completes, a communicator fails or `timeout_s` passes
// (0: no timeout); on failure or timeout calls probe.abort exactly once.
WaitResult wait_for_collective(const CollectiveProbe& probe, double timeout_s, const WaitClock& clock);

// The one line for a wait that did not complete:
// "rank 1 waited 5.0 s in layers.3 all_gather (step 2) past --collective-timeout 5: a peer is lost or stopped;
// NCCL communicators aborted".
std::string lost_collective_message(const WaitResult& result, int rank, const std::string& op, double timeout_s);

}  // namespace ragged::backend
