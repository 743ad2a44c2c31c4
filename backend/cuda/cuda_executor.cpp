#include "backend/cuda/cuda_executor.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/kernels.hpp"
#include "backend/mesh_step.hpp"
#include "backend/progress.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu {

using planner::BufferKind;
using planner::Op;
using planner::OpKind;
using planner::OptimizerPhase;

namespace {

StreamKind stream_kind(planner::Stream stream) {
  switch (stream) {
    case planner::Stream::kCompute: return StreamKind::compute;
    case planner::Stream::kAllGather: return StreamKind::all_gather;
    case planner::Stream::kReduceScatter: return StreamKind::reduce_scatter;
    case planner::Stream::kAllReduce: return StreamKind::all_reduce;
    case planner::Stream::kTensorParallel: return StreamKind::tensor_parallel;
    case planner::Stream::kContextParallel: return StreamKind::context_parallel;
    case planner::Stream::kExpertParallel: return StreamKind::expert_parallel;
    case planner::Stream::kPipelineSend:
    case planner::Stream::kPipelineRecv: break;  // pp: refused on the GPU (check_gpu_runnable)
  }
  RAGGED_ASSERT(false, "the CUDA executor runs FSDP's, tp's, cp's and ep's streams only");
  return StreamKind::compute;
}

bool is_collective(const Op& op) {
  return op.kind == OpKind::kAllGather || op.kind == OpKind::kReduceScatter || op.kind == OpKind::kAllReduce ||
         (op.kind == OpKind::kAllToAll && op.group == planner::Group::kExpert);
}

}  // namespace

CudaStepDevice::CudaStepDevice(const planner::Program& program, const std::vector<UnitShard>& shards,
                               std::vector<DeviceUnit>& units, DeviceCollectives& collectives, GpuWorkloads workloads,
                               CudaDevice& device, const CudaExecutorConfig& config, CollectiveWatcher* watcher)
    : program_(program),
      shards_(shards),
      units_(units),
      collectives_(collectives),
      workloads_(workloads),
      device_(device),
      config_(config),
      watcher_(watcher) {
  RAGGED_ASSERT(units.size() == shards.size(), "one device unit per shard");
  RAGGED_ASSERT((workloads.plain == nullptr) != (workloads.mesh == nullptr), "the GPU device runs one workload");
  for (size_t i = 0; i < program.ops.size(); ++i) {
    started_.push_back(std::make_unique<CudaEvent>());
    finished_.push_back(std::make_unique<CudaEvent>());
  }
}

CudaStepDevice::~CudaStepDevice() = default;

cudaStream_t CudaStepDevice::stream(planner::Stream s) const { return device_.stream(stream_kind(s)); }

ElementType CudaStepDevice::type_of(Elements kind) const {
  switch (kind) {
    case Elements::kParams: return config_.params;
    case Elements::kGrads: return config_.grads;
    case Elements::kReduce: return config_.reduce;
  }
  return config_.params;
}

int64_t CudaStepDevice::element_bytes(Elements kind) const { return gpu::element_bytes(type_of(kind)); }

void CudaStepDevice::begin_step() {
  step_start_.record(device_.stream(StreamKind::compute));
  for (StreamKind kind : {StreamKind::all_gather, StreamKind::reduce_scatter, StreamKind::all_reduce,
                          StreamKind::tensor_parallel, StreamKind::context_parallel, StreamKind::expert_parallel}) {
    step_start_.wait_on(device_.stream(kind));
  }
}

// Dependencies on other streams become event waits.
void CudaStepDevice::begin_op(const Op& op, const std::vector<int64_t>& waits) {
  const cudaStream_t s = stream(op.stream);
  for (int64_t d : waits) {
    if (program_.ops[static_cast<size_t>(d)].stream != op.stream) finished_[static_cast<size_t>(d)]->wait_on(s);
  }
  started_[op.id]->record(s);
}

void CudaStepDevice::end_op(const Op& op, int64_t step) {
  finished_[op.id]->record(stream(op.stream));
  if (watcher_ != nullptr && is_collective(op)) {
    // Any answer but "not ready" ends the watch: an error surfaces in the
    // synchronisation of finish_step, named by CUDA_CHECK.
    watcher_->watch(Progress::instance().describe(step, op.id),
                    [event = finished_[op.id]->get()] { return cudaEventQuery(event) != cudaErrorNotReady; });
  }
}

std::vector<OpTime> CudaStepDevice::finish_step(int64_t step) {
  if (watcher_ != nullptr && !watcher_->drain()) {
    throw InternalError(fmt::format("step {}: a collective did not complete (see the line above)", step));
  }
  device_.synchronize();
  std::vector<OpTime> times(program_.ops.size());
  for (const Op& op : program_.ops) {
    times[op.id].start = elapsed_seconds(step_start_, *started_[op.id]);
    times[op.id].end = elapsed_seconds(step_start_, *finished_[op.id]);
  }
  return times;
}

// The workload writes every gradient it makes; gaps no tensor covers are
// reduced like the rest, so they must hold zeros.
int64_t CudaStepDevice::allocated(const planner::Buffer& buffer, planner::Stream s, std::byte* data, int64_t) {
  const size_t u = static_cast<size_t>(buffer.unit);
  if (buffer.kind == BufferKind::kGradShards && units_[u].grad_in_arena) {
    // The unit's gradient accumulator for this step (make_device_units left it
    // to the arena), zeroed: the first reduction adds into it.
    units_[u].grad = reinterpret_cast<float*>(data);
    CUDA_CHECK(cudaMemsetAsync(data, 0, static_cast<size_t>(shards_[u].shard_size()) * sizeof(float), stream(s)));
    return 0;
  }
  const bool reduced = buffer.kind == BufferKind::kReduceInput ||
                       (buffer.kind == BufferKind::kUnshardedGrads && shards_[u].contiguous());
  if (!reduced) return 0;
  const int64_t bytes = element_bytes(buffer.kind == BufferKind::kReduceInput ? Elements::kReduce : Elements::kGrads);
  for (const auto& [begin, end] : units_[u].padding) {
    CUDA_CHECK(cudaMemsetAsync(data + begin * bytes, 0, static_cast<size_t>((end - begin) * bytes), stream(s)));
  }
  return 0;
}

int64_t CudaStepDevice::released(const planner::Buffer& buffer) {
  if (buffer.kind != BufferKind::kGradShards) return 0;
  DeviceUnit& d = units_[static_cast<size_t>(buffer.unit)];
  if (d.grad_in_arena) d.grad = nullptr;
  return 0;
}

void CudaStepDevice::cast_master(planner::Stream s, int unit, int64_t offset, int64_t n, std::byte* dst) {
  gpu::convert(dst, config_.params, units_[static_cast<size_t>(unit)].master + offset, ElementType::f32, n, stream(s));
}

void CudaStepDevice::convert(planner::Stream s, std::byte* dst, Elements dst_kind, const std::byte* src,
                             Elements src_kind, int64_t n) {
  gpu::convert(dst, type_of(dst_kind), src, type_of(src_kind), n, stream(s));
}

void CudaStepDevice::copy(planner::Stream s, std::byte* dst, const std::byte* src, int64_t bytes) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, stream(s)));
}

void CudaStepDevice::copy_rows(planner::Stream s, std::byte* dst, int64_t dst_pitch, const std::byte* src,
                               int64_t src_pitch, int64_t width, int64_t rows) {
  CUDA_CHECK(cudaMemcpy2DAsync(dst, static_cast<size_t>(dst_pitch), src, static_cast<size_t>(src_pitch),
                               static_cast<size_t>(width), static_cast<size_t>(rows), cudaMemcpyDeviceToDevice,
                               stream(s)));
}

void CudaStepDevice::copy_out(planner::Stream s, int unit, std::byte* per_tensor, const std::byte* gathered) {
  const DeviceUnit& d = units_[static_cast<size_t>(unit)];
  copy_pieces(per_tensor, config_.params, gathered, config_.params, d.copy_out, d.pieces, stream(s));
}

void CudaStepDevice::pack(planner::Stream s, int unit, std::byte* gathered, const std::byte* per_tensor) {
  const DeviceUnit& d = units_[static_cast<size_t>(unit)];
  copy_pieces(gathered, config_.reduce, per_tensor, config_.grads, d.pack, d.pieces, stream(s));
}

// Run at factor 1, over the op's elements (read + write), so its cost is measured.
void CudaStepDevice::scale_by_one(planner::Stream s, std::byte* data, Elements kind, int64_t n) {
  scale_in_place(data, type_of(kind), 1.0f, n, stream(s));
}

// A unit's FSDP group: the shard group, or the expert shard group of a routed experts' unit.
void CudaStepDevice::all_gather(planner::Stream s, std::byte* buffer, int64_t shard_elements, Elements kind,
                                planner::Group group) {
  collectives_.all_gather_in_place(buffer, shard_elements, type_of(kind), s, stream(s), group);
}

void CudaStepDevice::reduce_scatter(planner::Stream s, std::byte* buffer, int64_t shard_elements, Elements kind,
                                    planner::Group group) {
  collectives_.reduce_scatter_in_place(buffer, shard_elements, type_of(kind), s, stream(s), group);
}

void CudaStepDevice::all_reduce(planner::Stream s, std::byte* data, int64_t elements, Elements kind) {
  collectives_.all_reduce_in_place(data, elements, type_of(kind), s, stream(s));
}

void CudaStepDevice::accumulate(planner::Stream s, int unit, const std::byte* reduced, float scale) {
  accumulate_scaled(units_[static_cast<size_t>(unit)].grad, reduced, config_.reduce, scale,
                    shards_[static_cast<size_t>(unit)].shard_size(), stream(s));
}

void CudaStepDevice::optimizer(const Op& op, int64_t step) {
  if (op.kind == OpKind::kAllToAll) {
    throw InputError(fmt::format("the GPU executor does not run '{}' (owner-based optimizers run on --device cpu)",
                                 op.name));
  }
  RAGGED_ASSERT(op.phase == OptimizerPhase::kUpdate, "the GPU executor runs AdamW, 8-bit Adam and SGD only: " + op.name);
  const size_t u = static_cast<size_t>(op.unit);
  DeviceUnit& d = units_[u];
  const int64_t n = shards_[u].shard_size();
  const cudaStream_t s = stream(op.stream);
  if (config_.sgd) {
    sgd_step(d.master, d.grad, d.m, n, step, *config_.sgd, s);
  } else if (d.adam8bit) {
    adam8bit_update(d, step, config_.adamw, s);
  } else {
    adamw_step(d.master, d.grad, d.m, d.v, n, step, config_.adamw, s);
  }
  CUDA_CHECK(cudaMemsetAsync(d.grad, 0, static_cast<size_t>(n) * sizeof(float), s));
}

GpuWorkload& CudaStepDevice::plain() const {
  RAGGED_ASSERT(workloads_.plain != nullptr, "the GPU device: a whole unit's compute under a mesh");
  return *workloads_.plain;
}

GpuMeshWorkload& CudaStepDevice::mesh() const {
  RAGGED_ASSERT(workloads_.mesh != nullptr, "the GPU device: a mesh op without a mesh (check_launch)");
  return *workloads_.mesh;
}

namespace {

std::vector<const void*> pointers(const DeviceParams& params) { return {params.begin(), params.end()}; }
std::vector<void*> pointers(const DeviceGrads& grads) { return {grads.begin(), grads.end()}; }

}  // namespace

void CudaStepDevice::set_batch(int, const Batch& batch) {
  if (workloads_.mesh != nullptr) {
    workloads_.mesh->set_batch(batch);
  } else {
    plain().set_batch(batch);
  }
}

// Under a mesh the embedding and the head keep their activations in the
// mesh workload (gpu_workload_mesh.hpp), not in the Program's buffer.
void CudaStepDevice::forward(int unit, int, const DeviceParams& params, std::byte* saved, int64_t capacity) {
  if (workloads_.mesh != nullptr) {
    workloads_.mesh->forward(unit, pointers(params));
    return;
  }
  plain().forward(unit, pointers(params), saved, capacity);
}

void CudaStepDevice::recompute(int unit, int, const DeviceParams& params, std::byte* workspace, int64_t capacity) {
  plain().recompute(unit, pointers(params), workspace, capacity);
}

void CudaStepDevice::loss_backward(int unit, int, std::byte* gradient, int64_t capacity) {
  if (workloads_.mesh != nullptr) {
    workloads_.mesh->loss_backward(unit);
    return;
  }
  plain().loss_backward(unit, gradient, capacity);
}

void CudaStepDevice::forward_part(int unit, int, models::UnitPart part, const DeviceParams& params) {
  mesh().forward_part(unit, part, pointers(params));
}

void CudaStepDevice::backward_part(int unit, int, models::UnitPart part, const DeviceParams& params,
                                   const DeviceGrads& grads) {
  mesh().backward_part(unit, part, pointers(params), pointers(grads));
}

void CudaStepDevice::tensor_parallel(const Op& op) {
  const bool head = shards_[static_cast<size_t>(op.unit)].spec().kind == models::UnitKind::kHead;
  const TpStep step = tensor_parallel_step(op, op.unit, head);  // the GPU's units are the model's (no stages)
  const cudaStream_t s = stream(op.stream);
  const MeshExchange x = mesh().exchange_begin(step, s);
  if (sums_partials(step.collective)) {
    collectives_.reduce_scatter_in_place(x.buffer, x.count, x.type, op.stream, s);
  } else {
    collectives_.all_gather_in_place(x.buffer, x.count, x.type, op.stream, s);
  }
  mesh().exchange_end(step, s);
}

// The counts first when the receivers need them, then the rows, each one
// NCCL group of sends and receives on the expert-parallel stream.
void CudaStepDevice::expert_parallel(const Op& op) {
  RAGGED_ASSERT(op.kind == OpKind::kAllToAll, "the GPU's ep exchanges are all-to-alls: " + op.name);
  const EpStep step{op.unit, tp_pass(op.pass)};  // the GPU's units are the model's (no stages)
  const cudaStream_t s = stream(op.stream);
  const ExpertRows counts = mesh().expert_counts(step, s);
  if (!counts.sends.empty()) {
    collectives_.exchange_rows(counts.send, counts.receive, counts.row_elements, counts.type, counts.sends,
                               counts.receives, op.stream, s);
  }
  const ExpertRows rows = mesh().expert_begin(step, s);
  collectives_.exchange_rows(rows.send, rows.receive, rows.row_elements, rows.type, rows.sends, rows.receives,
                             op.stream, s);
  mesh().expert_end(step, s);
}

double CudaStepDevice::mean_loss() {
  return workloads_.mesh != nullptr ? workloads_.mesh->take_mean_loss() : plain().take_mean_loss();
}

void CudaStepDevice::pipeline_send(const Op& op) {
  RAGGED_ASSERT(false, "the GPU executor runs no pipeline stages (check_gpu_runnable refuses them): " + op.name);
}

void CudaStepDevice::pipeline_recv(const Op& op) {
  RAGGED_ASSERT(false, "the GPU executor runs no pipeline stages (check_gpu_runnable refuses them): " + op.name);
}

void CudaStepDevice::backward(int unit, int, const DeviceParams& params, const DeviceGrads& grads,
                              std::byte* workspace, int64_t capacity) {
  if (workloads_.mesh != nullptr) {
    workloads_.mesh->backward(unit, pointers(params), pointers(grads));
    return;
  }
  plain().backward(unit, pointers(params), pointers(grads), workspace, capacity);
}

namespace {

WalkConfig walk_config(const CudaExecutorConfig& config) {
  WalkConfig walk;
  walk.data = config.data;
  walk.world_rank = config.data_rank;
  walk.world_size = config.data_ranks;
  walk.token_shares = config.token_shares;
  return walk;  // tied embeddings: refused on the GPU (check_gpu_supported)
}

}  // namespace

CudaExecutor::CudaExecutor(const planner::Program& program, const planner::ArenaPlan& arena, std::byte* step_memory,
                           const std::vector<UnitShard>& shards, std::vector<DeviceUnit>& units,
                           DeviceCollectives& collectives, GpuWorkloads workloads, CudaDevice& device,
                           CudaExecutorConfig config, CollectiveWatcher* watcher)
    : device_(program, shards, units, collectives, workloads, device, config, watcher),
      walk_(program, arena, step_memory, shards, device_, walk_config(config)) {}

}  // namespace ragged::backend::gpu
