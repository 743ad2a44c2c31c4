#pragma once
// A lost rank is a clear, bounded failure. A collective waits for every rank
// of its group; a rank that stops (SIGSTOP, a stuck node, a dead NIC) would
// leave the others waiting forever. Each rank's watchdog thread trades small
// heartbeats with its peers (their step, op and collectives entered) on its
// own communicator; when this rank has waited in one collective longer than
// the timeout it prints one line naming the op, the waiting rank and the
// ranks that did not arrive, and aborts the job. If the launcher ends the
// job (a peer died), a signal handler prints what this rank last knew.

#include <memory>

namespace ragged::backend {

class Watchdog {
 public:
  virtual ~Watchdog() = default;
};

// The exit code of a job the watchdog aborted.
inline constexpr int kExitLostRank = 4;

// This rank found an error that rank 0 reports and ends the job with (every
// rank finds bad input alike): the launcher's signal that follows ends this
// rank without the handler's line, so the job says the error once, not once
// per rank. Async-signal-safe to check; sticky for the process.
void silence_signal_line();

}  // namespace ragged::backend
