#pragma once
// Runs one rank's Program, op by op in issue order, on a StepDevice
// (step_device.hpp): the host (host_device.hpp) or a GPU
// (cuda/cuda_step_device.hpp). The step's buffers live in one block carved
// by the Program's arena plan (planner/arena_plan.hpp); the walk keeps which
// are live, where each unit's parameters and gradients are (the gathered
// buffer, its per-tensor copy, ZeRO-3's fetched tensors), fills this rank's
// slot of every gathered buffer with its master shard, runs the collectives
// in place, the workload on the gathered parameters, accumulates the
// reduced shard and runs the optimizer; it records the memory held after
// every alloc and free and checks the final gradients before the update.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/measured_step.hpp"
#include "backend/step_device.hpp"
#include "backend/unit_shard.hpp"
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

struct WalkConfig {
  DataConfig data;
  int world_rank = 0;  // this rank among every rank of the job (the batch it trains on)
  int world_size = 1;
  // Ranks that read the same sequences and each train its share of their
  // tokens (context parallelism): the step's gradient is the mean over
  // world_size x token_shares such ranks.
  int token_shares = 1;
  // The head multiplies by the embedding table (head_reads_embedding): its
  // forward and backward also read the embedding's gathered table.
  bool tied_embeddings = false;
};

class ProgramWalk {
 public:
  // `step_memory` holds arena.bytes for the step's buffers.
  ProgramWalk(const planner::Program& program, const planner::ArenaPlan& arena, std::byte* step_memory,
              const std::vector<UnitShard>& shards, StepDevice& device, WalkConfig config);

  MeasuredStep run_step(int64_t step);

 private:
  void all_reduce_uncut_gradients(const planner::Op& op);
  void execute(const planner::Op& op, int64_t step);
  void allocate(const planner::Op& op);
  void release(const planner::Op& op);
  void fill_own_slot(const planner::Op& op);
  void fill_group_slot(planner::Stream stream, std::byte* gathered, int unit, const std::vector<int>& group);
  bool gather_by_tensor(const planner::Op& op);
  void copy_out_group(const planner::Op& op);
  void gather_persistent();
  void copy_in(const planner::Op& op);
  void compute_forward(const planner::Op& op, int64_t step);
  void compute_backward(const planner::Op& op);
  std::byte* reduced_slot(const planner::Op& op);
  DeviceParams own_params(int unit);
  DeviceParams params_of(int unit);
  DeviceGrads grads_of(int unit);
  std::byte* data(int buffer);
  std::byte* data_or_null(int buffer);
  int64_t size_of(int buffer) const { return arena_.sizes[static_cast<size_t>(buffer)]; }
  const planner::Buffer& buffer(int b) const { return program_.buffers[static_cast<size_t>(b)]; }
  const UnitShard& shard(int unit) const { return shards_[static_cast<size_t>(unit)]; }
  std::vector<int64_t> waits_of(const planner::Op& op) const;

  const planner::Program& program_;
  const planner::ArenaPlan& arena_;
  std::byte* step_memory_;
  const std::vector<UnitShard>& shards_;
  StepDevice& device_;
  WalkConfig config_;

  std::vector<int64_t> alloc_op_, free_op_;  // per buffer
  std::vector<bool> live_, slot_filled_;     // per buffer
  std::vector<int64_t> beside_arena_;        // per buffer: what the device took for it beside the arena
  std::vector<int> params_, grads_, activations_, workspace_;  // per unit: the buffer in use
  std::vector<bool> per_tensor_;                               // per unit: params_ holds per-tensor copies
  // Per unit fetched by ZeRO-3's groups (UnitShard::gathered_by_tensor): each tensor's parameters.
  std::vector<DeviceParams> fetched_;
  std::vector<bool> batch_set_;  // per micro-batch, this step
  int64_t live_bytes_ = 0;
  int64_t live_state_buffers_ = 0;  // of live_bytes_, the parameter and gradient buffers
};

}  // namespace ragged::backend
