#include "backend/cuda/cuda_executor.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/kernels.hpp"
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
    case planner::Stream::kTensorParallel:
    case planner::Stream::kContextParallel:
    case planner::Stream::kExpertParallel:
    case planner::Stream::kPipelineSend:
    case planner::Stream::kPipelineRecv: break;  // a mesh's: ragged run refuses meshes (check_launch)
  }
  RAGGED_ASSERT(false, "the CUDA executor runs FSDP's streams only");
  return StreamKind::compute;
}

bool is_collective(OpKind kind) {
  return kind == OpKind::kAllGather || kind == OpKind::kReduceScatter || kind == OpKind::kAllReduce;
}

}  // namespace

CudaExecutor::CudaExecutor(const planner::Program& program, const planner::ArenaPlan& arena, std::byte* step_memory,
                           const std::vector<UnitShard>& shards, std::vector<DeviceUnit>& units,
                           DeviceCollectives& collectives, GpuWorkload& workload, CudaDevice& device,
                           CudaExecutorConfig config, CollectiveWatcher* watcher)
    : program_(program),
      arena_(arena),
      step_memory_(step_memory),
      shards_(shards),
      units_(units),
      collectives_(collectives),
      workload_(workload),
      device_(device),
      config_(config),
      watcher_(watcher),
      alloc_op_(program.buffers.size(), -1),
      free_op_(program.buffers.size(), -1),
      live_(program.buffers.size(), false),
      slot_filled_(program.buffers.size(), false),
      params_(shards.size(), -1),
      grads_(shards.size(), -1),
      activations_(shards.size(), -1),
      workspace_(shards.size(), -1),
      per_tensor_(shards.size(), false),
      fetched_(shards.size()) {
  RAGGED_ASSERT(units.size() == shards.size(), "one device unit per shard");
  for (const Op& op : program.ops) {
    started_.push_back(std::make_unique<CudaEvent>());
    finished_.push_back(std::make_unique<CudaEvent>());
    if (op.kind == OpKind::kAlloc) alloc_op_[static_cast<size_t>(op.buffer)] = op.id;
    if (op.kind == OpKind::kFree) free_op_[static_cast<size_t>(op.buffer)] = op.id;
  }
}

CudaExecutor::~CudaExecutor() = default;

cudaStream_t CudaExecutor::stream_of(const Op& op) const { return device_.stream(stream_kind(op.stream)); }

std::byte* CudaExecutor::data(int buffer) {
  RAGGED_ASSERT(live_.at(static_cast<size_t>(buffer)), "cuda executor: buffer used outside its lifetime");
  const int64_t offset = arena_.offsets[static_cast<size_t>(buffer)];
  RAGGED_ASSERT(offset >= 0, "cuda executor: buffer without memory");
  return step_memory_ + offset;
}

// Activations and workspaces may be empty (the embedding keeps nothing and
// needs no scratch): the plan gives those no memory, the workload no pointer.
std::byte* CudaExecutor::data_or_null(int buffer) {
  if (arena_.sizes[static_cast<size_t>(buffer)] > 0) return data(buffer);
  RAGGED_ASSERT(live_.at(static_cast<size_t>(buffer)), "cuda executor: buffer used outside its lifetime");
  return nullptr;
}

// Dependencies on other streams become event waits; an alloc also waits for
// the frees of the buffers whose memory it takes over, a free for its alloc.
void CudaExecutor::wait_for_dependencies(const Op& op) {
  std::vector<int64_t> waits(op.deps.begin(), op.deps.end());
  if (op.kind == OpKind::kAlloc) {
    for (int previous : arena_.reuses[static_cast<size_t>(op.buffer)]) waits.push_back(free_op_[static_cast<size_t>(previous)]);
  }
  if (op.kind == OpKind::kFree) waits.push_back(alloc_op_[static_cast<size_t>(op.buffer)]);
  const cudaStream_t stream = stream_of(op);
  for (int64_t d : waits) {
    if (program_.ops[static_cast<size_t>(d)].stream != op.stream) finished_[static_cast<size_t>(d)]->wait_on(stream);
  }
}

void CudaExecutor::allocate(const Op& op) {
  const size_t b = static_cast<size_t>(op.buffer);
  const planner::Buffer& buffer = program_.buffers[b];
  live_[b] = true;
  slot_filled_[b] = false;
  live_bytes_ += arena_.sizes[b];
  if (planner::is_parameter_or_gradient_buffer(buffer.kind)) live_state_buffers_ += arena_.sizes[b];
  const size_t u = static_cast<size_t>(buffer.unit);
  switch (buffer.kind) {
    case BufferKind::kUnshardedGrads:  // a second one of the unit is the cat's output (kCopyIn below)
      if (grads_[u] < 0 || !live_[static_cast<size_t>(grads_[u])]) grads_[u] = op.buffer;
      break;
    case BufferKind::kActivations: activations_[u] = op.buffer; break;
    case BufferKind::kWorkspace: workspace_[u] = op.buffer; break;
    default: break;
  }
  // Gaps no tensor covers are reduced like the rest: they must hold zeros.
  const bool reduced = buffer.kind == BufferKind::kReduceInput ||
                       (buffer.kind == BufferKind::kUnshardedGrads && shards_[u].contiguous());
  if (!reduced) return;
  const int64_t bytes = buffer.kind == BufferKind::kReduceInput ? element_bytes(config_.reduce) : element_bytes(config_.grads);
  for (const auto& [begin, end] : units_[u].padding) {
    CUDA_CHECK(cudaMemsetAsync(data(op.buffer) + begin * bytes, 0, static_cast<size_t>((end - begin) * bytes),
                               stream_of(op)));
  }
}

// The rank's slot of a gathered buffer gets its master shard, cast to the
// parameter dtype (the cast and copy-in ops, or the all-gather itself).
void CudaExecutor::fill_own_slot(int buffer, int unit, cudaStream_t stream) {
  if (slot_filled_[static_cast<size_t>(buffer)]) return;
  const UnitShard& s = shards_[static_cast<size_t>(unit)];
  std::byte* slot = data(buffer) + s.rank() * s.shard_size() * param_bytes();
  convert(slot, config_.params, units_[static_cast<size_t>(unit)].master, ElementType::f32, s.shard_size(), stream);
  slot_filled_[static_cast<size_t>(buffer)] = true;
}

// This rank's chunks of a ZeRO-3 fetch group's tensors, cast, one after
// another into its slot of the group's gathered buffer (UnitShard::fill_group_slot).
void CudaExecutor::fill_group_slot(std::byte* gathered, int unit, const std::vector<int>& group, cudaStream_t stream) {
  const UnitShard& s = shards_[static_cast<size_t>(unit)];
  std::byte* slot = gathered + s.rank() * s.group_shard_elements(group) * param_bytes();
  for (int t : group) {
    const planner::TensorSlot& chunk = s.layout().slots[static_cast<size_t>(t)];
    convert(slot, config_.params, units_[static_cast<size_t>(unit)].master + chunk.offset, ElementType::f32,
            chunk.length, stream);
    slot += chunk.length * param_bytes();
  }
}

// ZeRO-3's ops on a fetch group's buffer (Buffer::tensors): the copy-in
// fills this rank's slot, the all-gather runs in place (a single tensor is
// then read where it landed), the copy-out lays each tensor of a set out as
// its own [m][chunk] piece. A gather of a unit whose tensors are all kept
// gathered has nothing to do. False: not such an op.
bool CudaExecutor::gather_by_tensor(const Op& op, cudaStream_t stream) {
  const UnitShard& s = shards_[static_cast<size_t>(op.unit)];
  const planner::Buffer& buffer = program_.buffers[static_cast<size_t>(op.buffer)];
  if (!s.gathered_by_tensor()) return false;
  const std::vector<int>& group = buffer.tensors;
  std::vector<const void*>& fetched = fetched_[static_cast<size_t>(op.unit)];
  switch (op.kind) {
    case OpKind::kCast:
    case OpKind::kCopyIn:
    case OpKind::kAllGather:
      if (buffer.kind != BufferKind::kUnshardedParams) return false;
      if (group.empty()) return true;
      if (!slot_filled_[static_cast<size_t>(op.buffer)]) fill_group_slot(data(op.buffer), op.unit, group, stream);
      slot_filled_[static_cast<size_t>(op.buffer)] = true;
      if (op.kind != OpKind::kAllGather) return true;
      collectives_.all_gather_in_place(data(op.buffer), s.group_shard_elements(group), config_.params, op.stream,
                                       stream);
      if (group.size() == 1) fetched[static_cast<size_t>(group.front())] = data(op.buffer);
      return true;
    case OpKind::kCopyOut: {
      const std::byte* gathered = data(program_.gathered_buffer(op));
      const int64_t row = s.group_shard_elements(group) * param_bytes();
      const std::vector<int64_t> offsets = s.group_piece_offsets(group);
      int64_t in_slot = 0;
      for (size_t i = 0; i < group.size(); ++i) {
        const int64_t chunk = s.layout().slots[static_cast<size_t>(group[i])].length * param_bytes();
        std::byte* piece = data(op.buffer) + offsets[i] * param_bytes();
        CUDA_CHECK(cudaMemcpy2DAsync(piece, static_cast<size_t>(chunk), gathered + in_slot, static_cast<size_t>(row),
                                     static_cast<size_t>(chunk), static_cast<size_t>(s.ranks()),
                                     cudaMemcpyDeviceToDevice, stream));
        fetched[static_cast<size_t>(group[i])] = piece;
        in_slot += chunk;
      }
      return true;
    }
    default: return false;
  }
}

// ZeRO-3 keeps its small parameters gathered between uses (the Program
// counts them in persistent memory): each step gathers them from the updated
// master shards on the all-gather stream before any op, a tensor at a time.
void CudaExecutor::gather_persistent() {
  const cudaStream_t stream = device_.stream(StreamKind::all_gather);
  for (size_t u = 0; u < shards_.size(); ++u) {
    const UnitShard& s = shards_[u];
    if (!s.gathered_by_tensor()) continue;
    fetched_[u].assign(s.spec().tensors.size(), nullptr);
    std::byte* next = units_[u].persistent;
    for (int t : s.persistent_tensors()) {
      const std::vector<int> group = {t};
      fill_group_slot(next, static_cast<int>(u), group, stream);
      collectives_.all_gather_in_place(next, s.group_shard_elements(group), config_.params,
                                       planner::Stream::kAllGather, stream);
      fetched_[u][static_cast<size_t>(t)] = next;
      next += s.ranks() * s.group_shard_elements(group) * static_cast<int64_t>(sizeof(float));
    }
  }
}

std::vector<const void*> CudaExecutor::params_of(int unit) {
  const size_t u = static_cast<size_t>(unit);
  if (shards_[u].gathered_by_tensor()) return fetched_[u];
  std::byte* base = data(params_[u]);
  std::vector<const void*> out;
  for (int64_t offset : shards_[u].tensor_offsets(per_tensor_[u])) out.push_back(base + offset * param_bytes());
  return out;
}

std::vector<void*> CudaExecutor::grads_of(int unit) {
  const size_t u = static_cast<size_t>(unit);
  std::byte* base = data(grads_[u]);
  std::vector<void*> out;
  for (int64_t offset : shards_[u].tensor_offsets(!shards_[u].contiguous())) {
    out.push_back(base + offset * element_bytes(config_.grads));
  }
  return out;
}

void CudaExecutor::issue(const Op& op, int64_t step) {
  const int u = op.unit;
  const size_t ui = static_cast<size_t>(std::max(u, 0));
  const cudaStream_t stream = stream_of(op);
  if (u >= 0 && op.buffer >= 0 && gather_by_tensor(op, stream)) return;
  switch (op.kind) {
    case OpKind::kAlloc: allocate(op); break;
    case OpKind::kFree:
      live_[static_cast<size_t>(op.buffer)] = false;
      live_bytes_ -= arena_.sizes[static_cast<size_t>(op.buffer)];
      if (planner::is_parameter_or_gradient_buffer(program_.buffers[static_cast<size_t>(op.buffer)].kind)) {
        live_state_buffers_ -= arena_.sizes[static_cast<size_t>(op.buffer)];
      }
      break;
    case OpKind::kCast:
    case OpKind::kCopyIn: {
      const BufferKind kind = program_.buffers[static_cast<size_t>(op.buffer)].kind;
      const UnitShard& s = shards_[ui];
      if (kind == BufferKind::kUnshardedParams) {
        fill_own_slot(op.buffer, u, stream);
      } else if (kind == BufferKind::kReduceInput && s.contiguous()) {
        convert(data(op.buffer), config_.reduce, data(grads_[ui]), config_.grads, s.shard_size() * s.ranks(), stream);
      } else if (kind == BufferKind::kReduceInput) {
        copy_pieces(data(op.buffer), config_.reduce, data(grads_[ui]), config_.grads, units_[ui].pack, units_[ui].pieces,
                    stream);
      } else if (kind == BufferKind::kUnshardedGrads) {  // FSDP1: the per-parameter gradients concatenated
        const size_t bytes = static_cast<size_t>(arena_.sizes[static_cast<size_t>(op.buffer)]);
        CUDA_CHECK(cudaMemcpyAsync(data(op.buffer), data(grads_[ui]), bytes, cudaMemcpyDeviceToDevice, stream));
        grads_[ui] = op.buffer;
      }
      break;
    }
    case OpKind::kScale: {  // at factor 1, over the op's elements (read + write)
      const BufferKind kind = program_.buffers[static_cast<size_t>(op.buffer)].kind;
      const ElementType type = kind == BufferKind::kUnshardedGrads ? config_.grads : config_.reduce;
      scale_in_place(data(op.buffer), type, 1.0f, op.bytes / (2 * element_bytes(type)), stream);
      break;
    }
    case OpKind::kAllGather:
      fill_own_slot(op.buffer, u, stream);
      collectives_.all_gather_in_place(data(op.buffer), shards_[ui].shard_size(), config_.params, op.stream, stream);
      params_[ui] = op.buffer;
      per_tensor_[ui] = false;
      break;
    case OpKind::kCopyOut: {
      const int gathered = program_.gathered_buffer(op);
      copy_pieces(data(op.buffer), config_.params, data(gathered), config_.params, units_[ui].copy_out,
                  units_[ui].pieces, stream);
      params_[ui] = op.buffer;
      per_tensor_[ui] = true;
      break;
    }
    case OpKind::kComputeFwd: {
      if (u == 0) {
        const int64_t first = first_sequence(step, op.micro_batch, program_.micro_batches, collectives_.rank(),
                                             collectives_.size(), config_.data.micro_batch_size);
        workload_.set_batch(synthetic_batch(config_.data.seed, first, config_.data.micro_batch_size,
                                            config_.data.seq_len, config_.data.vocab));
      }
      const int act = activations_[ui];
      workload_.forward(u, params_of(u), data_or_null(act), arena_.sizes[static_cast<size_t>(act)]);
      break;
    }
    case OpKind::kRecompute: {
      const int ws = workspace_[ui];
      workload_.recompute(u, params_of(u), data_or_null(ws), arena_.sizes[static_cast<size_t>(ws)]);
      break;
    }
    case OpKind::kComputeBwd: {
      if (op.loss_only) {
        workload_.loss_backward(u, data(op.buffer), arena_.sizes[static_cast<size_t>(op.buffer)]);
        break;
      }
      const int ws = workspace_[ui];
      workload_.backward(u, params_of(u), grads_of(u), data_or_null(ws), arena_.sizes[static_cast<size_t>(ws)]);
      break;
    }
    case OpKind::kReduceScatter:
      collectives_.reduce_scatter_in_place(data(op.buffer), shards_[ui].shard_size(), config_.reduce, op.stream, stream);
      break;
    case OpKind::kTrainMetrics:
      RAGGED_ASSERT(false, "the GPU workload computes no train metrics (check_loop_metrics refuses them): " + op.name);
      break;
    case OpKind::kGradAccumulate: {
      // The step's gradient is the mean over every rank's micro-batches.
      const UnitShard& s = shards_[ui];
      const float scale = 1.0f / static_cast<float>(collectives_.size() * program_.micro_batches);
      const std::byte* slot = data(op.buffer) + s.rank() * s.shard_size() * element_bytes(config_.reduce);
      accumulate_scaled(units_[ui].grad, slot, config_.reduce, scale, s.shard_size(), stream);
      break;
    }
    case OpKind::kOptimizer: {
      RAGGED_ASSERT(op.phase == OptimizerPhase::kUpdate,
                    "the GPU executor runs AdamW and 8-bit Adam only: " + op.name);
      DeviceUnit& d = units_[ui];
      const int64_t n = shards_[ui].shard_size();
      if (d.adam8bit) {
        adam8bit_update(d, step, config_.adamw, stream);
      } else {
        adamw_step(d.master, d.grad, d.m, d.v, n, step, config_.adamw, stream);
      }
      CUDA_CHECK(cudaMemsetAsync(d.grad, 0, static_cast<size_t>(n) * sizeof(float), stream));
      break;
    }
    case OpKind::kAllReduce: {  // HSDP: the reduced slot summed over the replicas
      const UnitShard& s = shards_[ui];
      std::byte* slot = data(op.buffer) + s.rank() * s.shard_size() * element_bytes(config_.reduce);
      collectives_.all_reduce_in_place(slot, s.shard_size(), config_.reduce, op.stream, stream);
      break;
    }
    case OpKind::kAllToAll:
      throw InputError(fmt::format("the GPU executor does not run '{}' (owner-based optimizers run on --device cpu)",
                                   op.name));
    case OpKind::kSend:
    case OpKind::kRecv:
      RAGGED_ASSERT(false, "the GPU executor runs no pipeline stages (check_launch refuses them): " + op.name);
      break;
  }
}

MeasuredStep CudaExecutor::run_step(int64_t step) {
  MeasuredStep out;
  const cudaStream_t compute = device_.stream(StreamKind::compute);
  step_start_.record(compute);
  for (StreamKind kind : {StreamKind::all_gather, StreamKind::reduce_scatter, StreamKind::all_reduce}) {
    step_start_.wait_on(device_.stream(kind));
  }
  gather_persistent();
  std::vector<std::pair<uint32_t, int64_t>> memory;  // after each alloc and free: op, bytes held
  int64_t peak_live = 0, peak_state_buffers = 0;
  for (const Op& op : program_.ops) {
    wait_for_dependencies(op);
    started_[op.id]->record(stream_of(op));
    Progress::instance().at_op(step, op.id);
    issue(op, step);
    finished_[op.id]->record(stream_of(op));
    if (watcher_ != nullptr && is_collective(op.kind)) {
      // Any answer but "not ready" ends the watch: an error surfaces in the
      // synchronisation below, named by CUDA_CHECK.
      watcher_->watch(Progress::instance().describe(step, op.id),
                      [event = finished_[op.id]->get()] { return cudaEventQuery(event) != cudaErrorNotReady; });
    }
    if (op.kind == OpKind::kAlloc || op.kind == OpKind::kFree) {
      memory.emplace_back(op.id, live_bytes_);
      peak_live = std::max(peak_live, live_bytes_);
      peak_state_buffers = std::max(peak_state_buffers, live_state_buffers_);
    }
  }
  if (watcher_ != nullptr && !watcher_->drain()) {
    throw InternalError(fmt::format("step {}: a collective did not complete (see the line above)", step));
  }
  device_.synchronize();
  out.times.resize(program_.ops.size());
  for (const Op& op : program_.ops) {
    out.times[op.id].start = elapsed_seconds(step_start_, *started_[op.id]);
    out.times[op.id].end = elapsed_seconds(step_start_, *finished_[op.id]);
    out.seconds = std::max(out.seconds, out.times[op.id].end);
  }
  for (const auto& [id, bytes] : memory) out.memory.push_back({out.times[id].end, config_.persistent_bytes + bytes});
  out.peak_bytes = config_.persistent_bytes + peak_live;
  out.peak_state_and_buffers_bytes = config_.persistent_bytes + peak_state_buffers;
  out.persistent_bytes = config_.persistent_bytes;
  out.reserved_bytes = config_.persistent_bytes + arena_.bytes + config_.private_bytes;
  out.loss = workload_.take_mean_loss();
  RAGGED_ASSERT(live_bytes_ == 0, "every buffer of the step is freed by its end");
  return out;
}

}  // namespace ragged::backend::gpu
