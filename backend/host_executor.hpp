#pragma once
// The host as a StepDevice (step_device.hpp), and the host executor: one
// rank's Program run by the shared walk (program_walk.hpp) on the CPU. The
// host has one stream, so every call runs at once, in issue order (a
// topological order of the Program's dependencies), timed with a steady
// clock. Parameter and gradient buffers live in one arena carved by the
// Program's arena plan, in fp32; the workload (workload.hpp) keeps its own
// activations and workspaces, so those buffers get no arena memory here.
// Collectives run through the communicator: the shard group's all-gathers
// and reduce-scatters, the replicas' HSDP all-reduces; the optimizer's
// phases and all-to-alls through HostOptimizer.

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/communicator.hpp"
#include "backend/host_optimizer.hpp"
#include "backend/measured_step.hpp"
#include "backend/program_walk.hpp"
#include "backend/rank_groups.hpp"
#include "backend/step_device.hpp"
#include "backend/unit_shard.hpp"
#include "backend/workload.hpp"
#include "planner/arena_plan.hpp"
#include "planner/program.hpp"

namespace ragged::backend {

// What the host device runs beyond the Program and the shards.
struct HostWorkloads {
  // One per micro-batch a pipeline stage holds at once (its schedule keeps
  // several in flight), picked by micro_batch % size; else one.
  std::vector<HostWorkload*> per_micro_batch;
  // Per Program unit, the model unit it is (a stage's plan holds its own units).
  std::vector<int> model_units;
  bool tied_embeddings = false;
  // Pipeline stages: the world, and this rank's place in its stage; stage
  // s's rank at the same place is world rank s * stage_ranks + place.
  Communicator* world = nullptr;
  int stage_ranks = 0;
  int place = 0;
};

class HostDevice final : public StepDevice {
 public:
  HostDevice(const planner::Program& program, std::vector<UnitShard>& shards, HostOptimizer& optimizer,
             const RankGroups& groups, HostWorkloads workloads);

  // The arena the host carves for the Program: fp32 parameter and gradient buffers.
  static planner::ArenaPlan plan_arena(const planner::Program& program, const std::vector<UnitShard>& shards);

  int64_t element_bytes(Elements) const override { return static_cast<int64_t>(sizeof(float)); }
  void begin_step() override;
  void begin_op(const planner::Op& op, const std::vector<int64_t>& waits) override;
  void end_op(const planner::Op& op, int64_t step) override;
  std::vector<OpTime> finish_step(int64_t step) override;
  int64_t allocated(const planner::Buffer& buffer, planner::Stream stream, std::byte* data, int64_t bytes) override;
  int64_t released(const planner::Buffer& buffer) override;
  int64_t persistent_bytes() const override;
  int64_t held_beside_arena() const override { return grad_shards_bytes_; }
  std::byte* persistent_params(int unit) override;
  void cast_master(planner::Stream stream, int unit, int64_t offset, int64_t n, std::byte* dst) override;
  void convert(planner::Stream stream, std::byte* dst, Elements dst_kind, const std::byte* src, Elements src_kind,
               int64_t n) override;
  void copy(planner::Stream stream, std::byte* dst, const std::byte* src, int64_t bytes) override;
  void copy_rows(planner::Stream stream, std::byte* dst, int64_t dst_pitch, const std::byte* src, int64_t src_pitch,
                 int64_t width, int64_t rows) override;
  void copy_out(planner::Stream stream, int unit, std::byte* per_tensor, const std::byte* gathered) override;
  void pack(planner::Stream stream, int unit, std::byte* gathered, const std::byte* per_tensor) override;
  void scale_by_one(planner::Stream, std::byte*, Elements, int64_t) override {}  // x * 1 is x in fp32
  void all_gather(planner::Stream stream, std::byte* buffer, int64_t shard_elements, Elements kind,
                  planner::Group group) override;
  void reduce_scatter(planner::Stream stream, std::byte* buffer, int64_t shard_elements, Elements kind,
                      planner::Group group) override;
  void all_reduce(planner::Stream stream, std::byte* data, int64_t elements, Elements kind) override;
  void accumulate(planner::Stream stream, int unit, const std::byte* reduced, float scale) override;
  std::optional<NonFinite> gradient_non_finite(int unit) override;
  void optimizer(const planner::Op& op, int64_t step) override;
  void set_batch(int micro_batch, const Batch& batch) override;
  void forward(int unit, int micro_batch, const DeviceParams& params, std::byte* saved, int64_t capacity) override;
  // The host workload keeps every activation: nothing to rebuild.
  void recompute(int, int, const DeviceParams&, std::byte*, int64_t) override {}
  void loss_backward(int unit, int micro_batch, std::byte* gradient, int64_t capacity) override;
  void backward(int unit, int micro_batch, const DeviceParams& params, const DeviceGrads& grads, std::byte* workspace,
                int64_t capacity) override;
  void forward_part(int unit, int micro_batch, models::UnitPart part, const DeviceParams& params) override;
  void backward_part(int unit, int micro_batch, models::UnitPart part, const DeviceParams& params,
                     const DeviceGrads& grads) override;
  // Runs the tp group's exchange of the workload's hidden states (or the
  // loss's statistics) the op names: gathers as all-gathers, partial sums as
  // reduce-scatters, the vocabulary-parallel loss's one all-reduce as a
  // gather of each rank's per-token statistics, combined in rank order.
  void tensor_parallel(const planner::Op& op) override;
  // The ep group's all-to-all of an experts unit's rows: each rank's counts
  // first (one float per rank), then the rows.
  void expert_parallel(const planner::Op& op) override;
  void pipeline_send(const planner::Op& op) override;
  void pipeline_recv(const planner::Op& op) override;
  double mean_loss() override { return loss_count_ ? losses_ / loss_count_ : 0.0; }

 private:
  double now() const;
  void record_loss(const HostWorkload& w);
  bool is_head(int unit) const { return shards_[static_cast<size_t>(unit)].spec().kind == models::UnitKind::kHead; }
  HostWorkload& workload(int micro_batch);
  int model_unit(int unit) const { return workloads_.model_units[static_cast<size_t>(unit)]; }
  // Per micro-batch (grown as they come): what arrived from another stage
  // for its next compute, and the model units its last forward and
  // backward ran.
  struct InFlight {
    std::vector<float> input, output_gradient;
    int last_forward = -1, last_backward = -1;
  };
  InFlight& in_flight(int micro_batch);

  const planner::Program& program_;
  std::vector<UnitShard>& shards_;
  HostOptimizer& optimizer_;
  const RankGroups& groups_;
  HostWorkloads workloads_;
  std::vector<InFlight> in_flight_;
  std::chrono::steady_clock::time_point start_;
  double unmeasured_ = 0;  // time spent checking, left out of the step's clock
  std::vector<OpTime> times_;
  std::vector<std::vector<float>> persistent_;  // per unit: ZeRO-3's gathered small parameters
  // Tied embeddings: the head's gradient of the shared table, held until the
  // embedding's own gradient buffer exists (its backward comes last).
  std::vector<float> tied_grad_;
  int64_t grad_shards_bytes_ = 0;  // the Program's per-step gradient shards, held outside the arena
  double losses_ = 0;
  int loss_count_ = 0;
};

// One rank's Program on the host: the arena, the host device and the walk.
class HostExecutor {
 public:
  HostExecutor(const planner::Program& program, std::vector<UnitShard>& shards, HostOptimizer& optimizer,
               const RankGroups& groups, HostWorkloads workloads, const WalkConfig& config);

  MeasuredStep run_step(int64_t step) { return walk_->run_step(step); }
  // The step's buffers: one block of arena_bytes(), carved by the plan.
  int64_t arena_bytes() const { return arena_.bytes; }

 private:
  planner::ArenaPlan arena_;
  std::vector<float> arena_memory_;
  HostDevice device_;
  std::unique_ptr<ProgramWalk> walk_;
};

}  // namespace ragged::backend
