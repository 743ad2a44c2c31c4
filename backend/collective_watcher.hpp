#pragma once
// The NCCL watchdog thread. Device collectives are enqueued asynchronously:
// the host returns at once and only the GPU waits for peers, so a stopped
// peer shows as a collective that never completes, and the host would find
// out only in the step's final synchronisation, which never returns. Like
// PyTorch's ProcessGroupNCCL watchdog, a thread follows this rank's
// collectives in issue order: for each it runs wait_for_collective
// (collective_wait.hpp) with the communicators' probes, and when one fails or
// passes the timeout (timed from when the previous one completed, so a
// prefetched collective queued behind compute is not charged for the wait)
// it hands one line to `on_lost`, which ends the job. Host-side only: the
// CUDA executor supplies the probes (an event query, ncclCommGetAsyncError,
// ncclCommAbort); tests drive it with fakes. The probes run on the watcher's
// own thread, so a CUDA caller passes `on_thread_start` (cudaSetDevice of the
// rank's GPU): without it the event queries of ranks 1-7 under `mpirun -np 8`
// would open a context on GPU 0.

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "backend/collective_wait.hpp"

namespace ragged::backend {

class CollectiveWatcher {
 public:
  struct Communicators {
    std::function<CommStatus(std::string* error)> status;  // every communicator of the rank
    std::function<void()> abort;                           // ncclCommAbort on every communicator
    // Runs once on the watcher's thread before it polls anything (status,
    // abort, a collective's `completed`); empty: nothing. An exception from it
    // ends the watch as a lost collective, reported through `on_lost`.
    std::function<void()> on_thread_start = {};
  };
  // Receives lost_collective_message's line; ends the job (MPI_Abort) in
  // real runs. If it returns, the watcher stops following collectives.
  using LostHandler = std::function<void(const std::string& line)>;

  CollectiveWatcher(Communicators comms, double timeout_s, int rank, LostHandler on_lost,
                    WaitClock clock = system_wait_clock());
  ~CollectiveWatcher();
  CollectiveWatcher(const CollectiveWatcher&) = delete;
  CollectiveWatcher& operator=(const CollectiveWatcher&) = delete;

  // Follows one more collective, named `op` ("layers.3 all_gather (step 2)").
  void watch(std::string op, std::function<bool()> completed);
  // Waits until every collective watched so far completed (true) or one was
  // lost (false). Call before reusing what `completed` queries.
  bool drain();
  bool lost() const;

 private:
  struct Pending {
    std::string op;
    std::function<bool()> completed;
  };
  void follow();

  Communicators comms_;
  double timeout_s_;
  int rank_;
  LostHandler on_lost_;
  WaitClock clock_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Pending> pending_;
  bool busy_ = false;  // the thread holds a collective taken from pending_
  bool lost_ = false;
  bool stopping_ = false;
  std::thread thread_;  // last: starts after every member above exists
};

}  // namespace ragged::backend
