#pragma once
// Runs one rank's Program on its GPU, the same op list the host executor
// and the simulator run. Each Program stream is a CUDA stream; an op waits
// for its dependencies on other streams through their events, and is timed
// by a pair of CUDA events. The step's buffers live in one block of device
// memory carved by the Program's arena plan (planner/arena_plan.hpp): an
// alloc waits for the frees of the buffers whose memory it reuses, so the
// memory held is the plan's, measured, never more.
//
// What each op does, as on the host (host_executor.cpp): the rank's slot of
// a gathered buffer gets its master shard cast to the parameter dtype;
// all-gathers and reduce-scatters run in place through NCCL (DBuffer zero
// copy for ragged); FSDP2's copy-out and copy-in move rank-major pieces in
// one launch each; compute ops run the GPU workload on the gathered
// parameters; the reduced shard is accumulated into the fp32 gradient
// shard; AdamW or block-wise 8-bit Adam updates the master shard.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/collective_watcher.hpp"
#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/device_collectives.hpp"
#include "backend/cuda/device_units.hpp"
#include "backend/cuda/executor_kernels.hpp"
#include "backend/cuda/gpu_workload.hpp"
#include "backend/host_executor.hpp"
#include "backend/measured_step.hpp"
#include "backend/optimizer_math.hpp"
#include "backend/unit_shard.hpp"
#include "planner/arena_plan.hpp"
#include "planner/program.hpp"

namespace ragged::backend::gpu {

struct CudaExecutorConfig {
  ElementType params = ElementType::bf16;  // gathered parameters and activations
  ElementType grads = ElementType::f32;    // unsharded gradients
  ElementType reduce = ElementType::f32;   // the reduce-scatter
  DataConfig data;
  AdamWParams adamw;  // AdamW's, or 8-bit Adam's (whose units say so: DeviceUnit::adam8bit)
  int64_t persistent_bytes = 0;  // held for the whole run (memory samples)
  int64_t private_bytes = 0;     // the workload's private buffers (reserved memory)
};

class CudaExecutor {
 public:
  // `step_memory` holds arena.bytes for the step's buffers. `watcher`
  // (nullable: one rank, or no timeout) follows every collective issued.
  CudaExecutor(const planner::Program& program, const planner::ArenaPlan& arena, std::byte* step_memory,
               const std::vector<UnitShard>& shards, std::vector<DeviceUnit>& units, DeviceCollectives& collectives,
               GpuWorkload& workload, CudaDevice& device, CudaExecutorConfig config,
               CollectiveWatcher* watcher = nullptr);
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  // Enqueues the step, waits for the device, reads the events.
  MeasuredStep run_step(int64_t step);

 private:
  void issue(const planner::Op& op, int64_t step);
  void wait_for_dependencies(const planner::Op& op);
  void allocate(const planner::Op& op);
  void fill_own_slot(int buffer, int unit, cudaStream_t stream);
  void fill_group_slot(std::byte* gathered, int unit, const std::vector<int>& group, cudaStream_t stream);
  bool gather_by_tensor(const planner::Op& op, cudaStream_t stream);
  void gather_persistent();
  std::vector<const void*> params_of(int unit);
  std::vector<void*> grads_of(int unit);
  std::byte* data(int buffer);
  std::byte* data_or_null(int buffer);
  cudaStream_t stream_of(const planner::Op& op) const;
  int64_t param_bytes() const { return element_bytes(config_.params); }

  const planner::Program& program_;
  const planner::ArenaPlan& arena_;
  std::byte* step_memory_;
  const std::vector<UnitShard>& shards_;
  std::vector<DeviceUnit>& units_;
  DeviceCollectives& collectives_;
  GpuWorkload& workload_;
  CudaDevice& device_;
  CudaExecutorConfig config_;
  CollectiveWatcher* watcher_;

  std::vector<std::unique_ptr<CudaEvent>> started_, finished_;  // per op
  CudaEvent step_start_;
  std::vector<int64_t> alloc_op_, free_op_;  // per buffer
  std::vector<bool> live_, slot_filled_;     // per buffer
  std::vector<int> params_, grads_, activations_, workspace_;  // per unit: the buffer in use
  std::vector<bool> per_tensor_;                               // per unit: params_ holds per-tensor copies
  // Per unit ZeRO-3 fetches by group (UnitShard::gathered_by_tensor): each tensor's parameters.
  std::vector<std::vector<const void*>> fetched_;
  int64_t live_bytes_ = 0;
  int64_t live_state_buffers_ = 0;  // of live_bytes_, the parameter and gradient buffers
};

}  // namespace ragged::backend::gpu
