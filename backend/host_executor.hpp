#pragma once
// Runs one rank's Program on the host, op by op in issue order (a
// topological order of its dependencies; the host has one stream): buffers
// live in one arena carved by the Program's arena plan (planner/arena_plan)
// and are zeroed by their alloc op, all-gathers and
// reduce-scatters run in place on them through the communicator, compute ops
// run the real workload on the gathered parameters, HSDP all-reduces sum the
// reduced shard over the replicas, the optimizer ops update the shards. Every op is timed with a steady clock.

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "backend/rank_groups.hpp"
#include "backend/host_optimizer.hpp"
#include "backend/measured_step.hpp"
#include "backend/unit_shard.hpp"
#include "backend/workload.hpp"
#include "planner/arena_plan.hpp"
#include "planner/program.hpp"

namespace ragged::backend {

struct DataConfig {
  uint64_t seed = 0;
  int64_t micro_batch_size = 1;  // sequences per rank per micro-batch
  int64_t seq_len = 1;
  int64_t vocab = 1;
};

// The sequences rank `rank` of `world` trains on in micro-batch `micro_batch`
// of optimizer step `step` (1-based): the reference uses the same numbering.
int64_t first_sequence(int64_t step, int micro_batch, int micro_batches, int rank, int world, int64_t sequences);

class HostExecutor {
 public:
  HostExecutor(const planner::Program& program, std::vector<UnitShard>& shards, HostOptimizer& optimizer,
               const RankGroups& groups, HostWorkload& workload, DataConfig data, int64_t persistent_bytes,
               bool tied_embeddings);

  MeasuredStep run_step(int64_t step);
  // The step's buffers: one block of arena_bytes(), carved by the plan.
  int64_t arena_bytes() const { return arena_.bytes; }

 private:
  void execute(const planner::Op& op, int64_t step, MeasuredStep& out);
  void allocate(const planner::Op& op);
  void fill_own_slot(int buffer, int unit);
  void gather_group(int buffer, int unit);
  void copy_out_group(int gathered, int copies, int unit);
  void gather_persistent();
  std::vector<const float*> params_of(int unit);
  std::vector<const float*> own_params(int unit);  // params_of without a tied head's table
  float* data(int buffer);
  int64_t elements_of(const planner::Buffer& buffer) const;
  int64_t grad_shard_bytes(const planner::Buffer& buffer) const;

  const planner::Program& program_;
  std::vector<UnitShard>& shards_;
  HostOptimizer& optimizer_;
  const RankGroups& groups_;
  HostWorkload& workload_;
  DataConfig data_;
  int64_t persistent_bytes_;
  planner::ArenaPlan arena_;
  std::vector<float> arena_memory_;
  std::vector<bool> live_;  // per buffer: allocated and not yet freed
  std::unordered_map<int, bool> slot_filled_;
  std::vector<int> params_;        // per unit: the buffer its parameters are read from
  std::vector<bool> per_tensor_;   // per unit: that buffer is a per-tensor concatenation
  std::vector<int> grads_;         // per unit: its unsharded gradient buffer
  std::vector<std::vector<float>> reduced_;  // per unit: the reduce-scatter result, until accumulated
  // Per unit fetched by ZeRO-3's groups: each tensor's parameters, and the
  // small ones it keeps gathered.
  std::vector<std::vector<const float*>> fetched_;
  std::vector<std::vector<std::vector<float>>> persistent_;
  // Tied embeddings: the head's gradient of the shared table, held until the
  // embedding's own gradient buffer exists (its backward comes last).
  std::vector<float> tied_grad_;
  bool tied_ = false;
  int64_t live_bytes_ = 0;
  int64_t grad_shards_bytes_ = 0;  // the Program's per-step gradient shards, held outside the arena
  double losses_ = 0;
  int loss_count_ = 0;
};

}  // namespace ragged::backend
