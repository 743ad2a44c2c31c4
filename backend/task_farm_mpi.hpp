#pragma once
// Tasks over the ranks of an MPI launch (`mpirun -np N`): a TaskRunner
// (common/task_pool.hpp) whose workers are every rank's threads. Rank 0
// holds the list; each rank's main thread asks rank 0 for one task whenever
// one of its threads is free and sends the result back, so a few slow tasks
// never stall the rest (dynamic distribution). Rank 0's own threads take
// from the same list. Only the main threads call MPI; they poll and sleep
// instead of blocking, so an idle rank leaves its core to the busy ones.
//
// Every rank constructs the farm (a collective call); rank 0 calls map()
// as often as it likes and the other ranks serve() until rank 0's farm
// finishes (finish() or its destructor). A task that throws on any rank
// comes back to rank 0's map() as the same kind of error. MPI types stay in
// backend/.

#include <memory>

#include "common/task_pool.hpp"

namespace ragged::backend {

class MpiTaskFarm final : public TaskRunner {
 public:
  // Throws InputError when this build has no MPI.
  // `task_timeout_s`: how long rank 0 waits on a silent worker that holds
  // tasks before it ends the job (kExitLostRank); 0 waits forever.
  MpiTaskFarm(TaskWork work, int threads, double task_timeout_s = 0);
  ~MpiTaskFarm() override;
  MpiTaskFarm(const MpiTaskFarm&) = delete;
  MpiTaskFarm& operator=(const MpiTaskFarm&) = delete;

  int rank() const;
  int ranks() const;
  bool is_root() const { return rank() == 0; }

  // Rank 0 only.
  std::vector<std::optional<std::string>> map(const std::vector<std::string>& tasks,
                                              const MapOptions& options = {}) override;
  int workers() const override;  // threads over all ranks
  // Rank 0: lets the other ranks' serve() return. Called by the destructor too.
  void finish();

  // Ranks other than 0: run tasks until rank 0 finishes.
  void serve();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ragged::backend
