#pragma once
// Rank 0 of the MPI task farm (task_farm_mpi.hpp) hands tasks to worker ranks
// and waits for their results; a worker that stopped (SIGSTOP, a node that
// froze) would leave it waiting forever. This clock says when a worker that
// holds tasks, or owes the farm its last word, has been silent past the
// timeout. Pure bookkeeping (times given by the caller), no MPI.

#include <map>
#include <optional>

namespace ragged::backend {

class WorkerClock {
 public:
  explicit WorkerClock(double timeout_s) : timeout_s_(timeout_s) {}

  // A message from `rank` (a request or a result) at time `now`, seconds.
  void heard(int rank, double now);
  // A task given to `rank`, and its result back.
  void task_sent(int rank, double now);
  void result_received(int rank, double now);
  // The farm waits for `rank`'s last request (finish): it owes a message.
  void owes_message(int rank, double now);

  struct Silent {
    int rank = -1;
    double seconds = 0;  // since it was last heard from (or owed)
    int tasks = 0;       // tasks it holds
  };
  // The worker silent longest among those that hold tasks or owe a message,
  // when past the timeout; none with a timeout of 0.
  std::optional<Silent> silent_past_timeout(double now) const;

 private:
  struct Worker {
    int tasks = 0;
    bool owes = false;
    double last = 0;
  };
  double timeout_s_;
  std::map<int, Worker> workers_;
};

}  // namespace ragged::backend
