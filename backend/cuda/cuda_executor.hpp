#pragma once
// Runs one rank's Program on its GPU through the walk the host runs too
// (backend/program_walk.hpp): this file is the GPU's StepDevice. Each
// Program stream is a CUDA stream; an op waits for its dependencies on other
// streams through their events, and is timed by a pair of CUDA events. The
// step's buffers live in one block of device memory carved by the Program's
// arena plan (planner/arena_plan.hpp): an alloc waits for the frees of the
// buffers whose memory it reuses, so the memory held is the plan's,
// measured, never more. Casts run as kernels (the master shard to the
// parameter dtype), all-gathers and reduce-scatters in place through NCCL
// (DBuffer zero copy for ragged), FSDP2's copy-out and copy-in as one launch
// of rank-major pieces each, compute through the GPU workload, the update
// as AdamW or block-wise 8-bit Adam. Under tensor or context parallelism
// the compute runs through the mesh workload (gpu_workload_mesh.hpp): a
// block as its parts, the tp group's exchanges through NCCL on the
// tensor-parallel stream, the cp group's keys and values on the
// context-parallel one; under expert parallelism too, the ep group's
// dispatch and combine of routed rows on the expert-parallel one.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "backend/collective_watcher.hpp"
#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/device_collectives.hpp"
#include "backend/cuda/device_units.hpp"
#include "backend/cuda/executor_kernels.hpp"
#include "backend/cuda/gpu_workload.hpp"
#include "backend/cuda/gpu_workload_mesh.hpp"
#include "backend/program_walk.hpp"
#include "backend/step_device.hpp"
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
  std::optional<SgdParams> sgd;  // set: the update is SGD's, not AdamW's
  int64_t persistent_bytes = 0;  // held for the whole run (memory samples)
  int64_t private_bytes = 0;     // the workload's private buffers (reserved memory)
  // The data-parallel place whose sequences this rank reads, among how many
  // (a tp group's ranks read the same ones: RankGroups::reading_rank).
  int data_rank = 0;
  int data_ranks = 1;
  // Ranks reading the same sequences, each its chunks of them (the cp group).
  int token_shares = 1;
};

// The GPU's compute: the plain workload, or under a mesh the mesh workload.
struct GpuWorkloads {
  GpuWorkload* plain = nullptr;
  GpuMeshWorkload* mesh = nullptr;
};

// The GPU as a StepDevice: each Program stream is a CUDA stream, each op
// timed by a pair of CUDA events; collectives through NCCL.
class CudaStepDevice final : public StepDevice {
 public:
  // `watcher` (nullable: one rank, or no timeout) follows every collective issued.
  CudaStepDevice(const planner::Program& program, const std::vector<UnitShard>& shards, std::vector<DeviceUnit>& units,
                 DeviceCollectives& collectives, GpuWorkloads workloads, CudaDevice& device,
                 const CudaExecutorConfig& config, CollectiveWatcher* watcher);
  ~CudaStepDevice() override;
  CudaStepDevice(const CudaStepDevice&) = delete;
  CudaStepDevice& operator=(const CudaStepDevice&) = delete;

  int64_t element_bytes(Elements kind) const override;
  void begin_step() override;
  void begin_op(const planner::Op& op, const std::vector<int64_t>& waits) override;
  void end_op(const planner::Op& op, int64_t step) override;
  std::vector<OpTime> finish_step(int64_t step) override;
  int64_t allocated(const planner::Buffer& buffer, planner::Stream stream, std::byte* data, int64_t bytes) override;
  int64_t released(const planner::Buffer& buffer) override;
  int64_t persistent_bytes() const override { return config_.persistent_bytes; }
  int64_t held_beside_arena() const override { return config_.private_bytes; }
  std::byte* persistent_params(int unit) override { return units_[static_cast<size_t>(unit)].persistent; }
  void cast_master(planner::Stream stream, int unit, int64_t offset, int64_t n, std::byte* dst) override;
  void convert(planner::Stream stream, std::byte* dst, Elements dst_kind, const std::byte* src, Elements src_kind,
               int64_t n) override;
  void copy(planner::Stream stream, std::byte* dst, const std::byte* src, int64_t bytes) override;
  void copy_rows(planner::Stream stream, std::byte* dst, int64_t dst_pitch, const std::byte* src, int64_t src_pitch,
                 int64_t width, int64_t rows) override;
  void copy_out(planner::Stream stream, int unit, std::byte* per_tensor, const std::byte* gathered) override;
  void pack(planner::Stream stream, int unit, std::byte* gathered, const std::byte* per_tensor) override;
  void scale_by_one(planner::Stream stream, std::byte* data, Elements kind, int64_t n) override;
  void all_gather(planner::Stream stream, std::byte* buffer, int64_t shard_elements, Elements kind,
                  planner::Group group) override;
  void reduce_scatter(planner::Stream stream, std::byte* buffer, int64_t shard_elements, Elements kind,
                      planner::Group group) override;
  void all_reduce(planner::Stream stream, std::byte* data, int64_t elements, Elements kind) override;
  void accumulate(planner::Stream stream, int unit, const std::byte* reduced, float scale) override;
  // Checked after the step on the master shards (cuda_run.cpp): a NaN in a
  // gradient reaches them in the same step's update.
  std::optional<NonFinite> gradient_non_finite(int) override { return std::nullopt; }
  void optimizer(const planner::Op& op, int64_t step) override;
  // One micro-batch at a time: the GPU runs no pipeline stages (check_gpu_runnable).
  void set_batch(int, const Batch& batch) override;
  void forward(int unit, int micro_batch, const DeviceParams& params, std::byte* saved, int64_t capacity) override;
  void recompute(int unit, int micro_batch, const DeviceParams& params, std::byte* workspace,
                 int64_t capacity) override;
  void loss_backward(int unit, int micro_batch, std::byte* gradient, int64_t capacity) override;
  void backward(int unit, int micro_batch, const DeviceParams& params, const DeviceGrads& grads, std::byte* workspace,
                int64_t capacity) override;
  void forward_part(int unit, int micro_batch, models::UnitPart part, const DeviceParams& params) override;
  void backward_part(int unit, int micro_batch, models::UnitPart part, const DeviceParams& params,
                     const DeviceGrads& grads) override;
  // The tp or cp group's exchange the op names, in place through NCCL on its stream.
  void tensor_parallel(const planner::Op& op) override;
  // An experts unit's ep dispatch or combine: NCCL sends and receives on the ep stream.
  void expert_parallel(const planner::Op& op) override;
  void pipeline_send(const planner::Op& op) override;
  void pipeline_recv(const planner::Op& op) override;
  double mean_loss() override;

 private:
  cudaStream_t stream(planner::Stream stream) const;
  ElementType type_of(Elements kind) const;
  GpuWorkload& plain() const;
  GpuMeshWorkload& mesh() const;

  const planner::Program& program_;
  const std::vector<UnitShard>& shards_;
  std::vector<DeviceUnit>& units_;
  DeviceCollectives& collectives_;
  GpuWorkloads workloads_;
  CudaDevice& device_;
  CudaExecutorConfig config_;
  CollectiveWatcher* watcher_;
  std::vector<std::unique_ptr<CudaEvent>> started_, finished_;  // per op
  CudaEvent step_start_;
};

// One rank's Program on its GPU: the GPU device and the shared walk.
class CudaExecutor {
 public:
  // `step_memory` holds arena.bytes for the step's buffers.
  CudaExecutor(const planner::Program& program, const planner::ArenaPlan& arena, std::byte* step_memory,
               const std::vector<UnitShard>& shards, std::vector<DeviceUnit>& units, DeviceCollectives& collectives,
               GpuWorkloads workloads, CudaDevice& device, CudaExecutorConfig config,
               CollectiveWatcher* watcher = nullptr);

  // Enqueues the step, waits for the device, reads the events.
  MeasuredStep run_step(int64_t step) { return walk_.run_step(step); }

 private:
  CudaStepDevice device_;
  ProgramWalk walk_;
};

}  // namespace ragged::backend::gpu
