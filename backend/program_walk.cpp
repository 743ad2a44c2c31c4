#include "backend/program_walk.hpp"

#include <algorithm>
#include <utility>

#include "backend/progress.hpp"
#include "common/errors.hpp"

namespace ragged::backend {

using planner::BufferKind;
using planner::Op;
using planner::OpKind;
using planner::OptimizerPhase;

void StepDevice::forward_part(int, int, models::UnitPart, const DeviceParams&) {
  throw InternalError("this device computes no tensor-parallel parts (the run checks refuse its mesh)");
}

void StepDevice::backward_part(int, int, models::UnitPart, const DeviceParams&, const DeviceGrads&) {
  throw InternalError("this device computes no tensor-parallel parts (the run checks refuse its mesh)");
}

void StepDevice::tensor_parallel(const Op& op) {
  throw InternalError("this device runs no tensor-parallel exchanges (the run checks refuse its mesh): " + op.name);
}

void StepDevice::expert_parallel(const Op& op) {
  throw InternalError("this device runs no expert-parallel exchanges (the run checks refuse its mesh): " + op.name);
}

int64_t first_sequence(int64_t step, int micro_batch, int micro_batches, int rank, int world, int64_t sequences) {
  return (((step - 1) * micro_batches + micro_batch) * world + rank) * sequences;
}

ProgramWalk::ProgramWalk(const planner::Program& program, const planner::ArenaPlan& arena, std::byte* step_memory,
                         const std::vector<UnitShard>& shards, StepDevice& device, WalkConfig config)
    : program_(program),
      arena_(arena),
      step_memory_(step_memory),
      shards_(shards),
      device_(device),
      config_(config),
      alloc_op_(program.buffers.size(), -1),
      free_op_(program.buffers.size(), -1),
      live_(program.buffers.size(), false),
      slot_filled_(program.buffers.size(), false),
      beside_arena_(program.buffers.size(), 0),
      params_(shards.size(), -1),
      grads_(shards.size(), -1),
      activations_(shards.size(), -1),
      workspace_(shards.size(), -1),
      per_tensor_(shards.size(), false),
      fetched_(shards.size()) {
  for (const Op& op : program.ops) {
    RAGGED_ASSERT((op.kind != OpKind::kAlloc && op.kind != OpKind::kFree) ||
                      (op.buffer >= 0 && op.buffer < static_cast<int>(program.buffers.size())),
                  "program walk: an alloc or free of a buffer of the Program: " + op.name);
    if (op.kind == OpKind::kAlloc) alloc_op_[static_cast<size_t>(op.buffer)] = op.id;
    if (op.kind == OpKind::kFree) free_op_[static_cast<size_t>(op.buffer)] = op.id;
  }
}

std::byte* ProgramWalk::data(int buffer) {
  RAGGED_ASSERT(live_.at(static_cast<size_t>(buffer)), "program walk: buffer used outside its lifetime");
  const int64_t offset = arena_.offsets[static_cast<size_t>(buffer)];
  RAGGED_ASSERT(offset >= 0, "program walk: buffer without memory");
  return step_memory_ + offset;
}

// Activations and workspaces may be empty (the embedding keeps nothing and
// needs no scratch; the host's workload keeps its own): the plan gives those
// no memory, the workload no pointer.
std::byte* ProgramWalk::data_or_null(int buffer) {
  if (buffer >= 0 && size_of(buffer) > 0) return data(buffer);
  RAGGED_ASSERT(buffer < 0 || live_.at(static_cast<size_t>(buffer)), "program walk: buffer used outside its lifetime");
  return nullptr;
}

// An op's dependencies; an alloc also waits for the frees of the buffers
// whose memory it takes over, a free for its alloc.
std::vector<int64_t> ProgramWalk::waits_of(const Op& op) const {
  std::vector<int64_t> waits(op.deps.begin(), op.deps.end());
  if (op.kind == OpKind::kAlloc) {
    for (int previous : arena_.reuses[static_cast<size_t>(op.buffer)]) waits.push_back(free_op_[static_cast<size_t>(previous)]);
  }
  if (op.kind == OpKind::kFree) waits.push_back(alloc_op_[static_cast<size_t>(op.buffer)]);
  return waits;
}

void ProgramWalk::allocate(const Op& op) {
  const size_t b = static_cast<size_t>(op.buffer);
  const planner::Buffer& buf = buffer(op.buffer);
  live_[b] = true;
  slot_filled_[b] = false;
  beside_arena_[b] = device_.allocated(buf, op.stream, data_or_null(op.buffer), size_of(op.buffer));
  const int64_t held = size_of(op.buffer) + beside_arena_[b];
  live_bytes_ += held;
  if (planner::is_parameter_or_gradient_buffer(buf.kind)) live_state_buffers_ += held;
  const size_t u = static_cast<size_t>(buf.unit);
  switch (buf.kind) {
    case BufferKind::kUnshardedGrads:  // a second one of the unit is the cat's output (kCopyIn below)
      if (grads_[u] < 0 || !live_[static_cast<size_t>(grads_[u])]) grads_[u] = op.buffer;
      break;
    case BufferKind::kActivations: activations_[u] = op.buffer; break;
    case BufferKind::kWorkspace: workspace_[u] = op.buffer; break;
    default: break;
  }
}

void ProgramWalk::release(const Op& op) {
  const size_t b = static_cast<size_t>(op.buffer);
  const planner::Buffer& buf = buffer(op.buffer);
  live_[b] = false;
  RAGGED_ASSERT(device_.released(buf) == beside_arena_[b], "a device gives back what it took for a buffer");
  const int64_t held = size_of(op.buffer) + beside_arena_[b];
  live_bytes_ -= held;
  if (planner::is_parameter_or_gradient_buffer(buf.kind)) live_state_buffers_ -= held;
}

// The rank's slot of a gathered buffer gets its master shard, cast to the
// parameter type (the cast and copy-in ops, or the all-gather itself).
void ProgramWalk::fill_own_slot(const Op& op) {
  if (slot_filled_[static_cast<size_t>(op.buffer)]) return;
  const UnitShard& s = shard(op.unit);
  std::byte* slot = data(op.buffer) + s.rank() * s.shard_size() * device_.element_bytes(Elements::kParams);
  device_.cast_master(op.stream, op.unit, 0, s.shard_size(), slot);
  slot_filled_[static_cast<size_t>(op.buffer)] = true;
}

// This rank's chunks of a ZeRO-3 fetch group's tensors, one after another
// into its slot of the group's gathered buffer (UnitShard::fill_group_slot).
void ProgramWalk::fill_group_slot(planner::Stream stream, std::byte* gathered, int unit, const std::vector<int>& group) {
  const UnitShard& s = shard(unit);
  const int64_t param_bytes = device_.element_bytes(Elements::kParams);
  std::byte* slot = gathered + s.rank() * s.group_shard_elements(group) * param_bytes;
  for (int t : group) {
    const planner::TensorSlot& chunk = s.layout().slots[static_cast<size_t>(t)];
    device_.cast_master(stream, unit, chunk.offset, chunk.length, slot);
    slot += chunk.length * param_bytes;
  }
}

// ZeRO-3's ops on a fetch group's buffer (Buffer::tensors): the copy-in
// fills this rank's slot, the all-gather runs in place (a single tensor is
// then read where it landed), the copy-out lays each tensor of a set out as
// its own [m][chunk] piece. A gather of a unit whose tensors are all kept
// gathered has nothing to do. False: not such an op.
bool ProgramWalk::gather_by_tensor(const Op& op) {
  const UnitShard& s = shard(op.unit);
  const planner::Buffer& buf = buffer(op.buffer);
  if (!s.gathered_by_tensor()) return false;
  const std::vector<int>& group = buf.tensors;
  switch (op.kind) {
    case OpKind::kCast:
    case OpKind::kCopyIn:
    case OpKind::kAllGather:
      if (buf.kind != BufferKind::kUnshardedParams) return false;
      if (group.empty()) return true;
      if (!slot_filled_[static_cast<size_t>(op.buffer)]) fill_group_slot(op.stream, data(op.buffer), op.unit, group);
      slot_filled_[static_cast<size_t>(op.buffer)] = true;
      if (op.kind != OpKind::kAllGather) return true;
      device_.all_gather(op.stream, data(op.buffer), s.group_shard_elements(group), Elements::kParams, s.group());
      if (group.size() == 1) fetched_[static_cast<size_t>(op.unit)][static_cast<size_t>(group.front())] = data(op.buffer);
      return true;
    case OpKind::kCopyOut:
      if (group.empty()) return false;
      copy_out_group(op);
      return true;
    default: return false;
  }
}

void ProgramWalk::copy_out_group(const Op& op) {
  const UnitShard& s = shard(op.unit);
  const std::vector<int>& group = buffer(op.buffer).tensors;
  const int64_t param_bytes = device_.element_bytes(Elements::kParams);
  const std::byte* gathered = data(program_.gathered_buffer(op));
  const int64_t row = s.group_shard_elements(group) * param_bytes;
  const std::vector<int64_t> offsets = s.group_piece_offsets(group);
  DeviceParams& fetched = fetched_[static_cast<size_t>(op.unit)];
  int64_t in_slot = 0;
  for (size_t i = 0; i < group.size(); ++i) {
    const int64_t chunk = s.layout().slots[static_cast<size_t>(group[i])].length * param_bytes;
    std::byte* piece = data(op.buffer) + offsets[i] * param_bytes;
    device_.copy_rows(op.stream, piece, chunk, gathered + in_slot, row, chunk, s.ranks());
    fetched[static_cast<size_t>(group[i])] = piece;
    in_slot += chunk;
  }
}

// ZeRO-3 keeps its small parameters gathered between uses (the Program
// counts them in persistent memory): each step gathers them from the updated
// master shards on the all-gather stream before any op, a tensor at a time,
// in the same order on every rank.
void ProgramWalk::gather_persistent() {
  for (size_t u = 0; u < shards_.size(); ++u) {
    const UnitShard& s = shards_[u];
    if (!s.gathered_by_tensor()) continue;
    fetched_[u].assign(s.spec().tensors.size(), nullptr);
    std::byte* next = device_.persistent_params(static_cast<int>(u));
    for (int t : s.persistent_tensors()) {
      const std::vector<int> group = {t};
      fill_group_slot(planner::Stream::kAllGather, next, static_cast<int>(u), group);
      device_.all_gather(planner::Stream::kAllGather, next, s.group_shard_elements(group), Elements::kParams,
                         s.group());
      fetched_[u][static_cast<size_t>(t)] = next;
      next += s.ranks() * s.group_shard_elements(group) * static_cast<int64_t>(sizeof(float));
    }
  }
}

DeviceParams ProgramWalk::own_params(int unit) {
  const size_t u = static_cast<size_t>(unit);
  if (shards_[u].gathered_by_tensor()) return fetched_[u];
  const std::byte* base = data(params_[u]);
  DeviceParams out;
  for (int64_t offset : shards_[u].tensor_offsets(per_tensor_[u])) {
    out.push_back(base + offset * device_.element_bytes(Elements::kParams));
  }
  return out;
}

// A unit's parameters for the workload; a tied head also reads the
// embedding table, which stays gathered until the embedding's backward.
DeviceParams ProgramWalk::params_of(int unit) {
  DeviceParams params = own_params(unit);
  if (config_.tied_embeddings && unit + 1 == static_cast<int>(shards_.size())) params.push_back(own_params(0).front());
  return params;
}

DeviceGrads ProgramWalk::grads_of(int unit) {
  const size_t u = static_cast<size_t>(unit);
  std::byte* base = data(grads_[u]);
  DeviceGrads out;
  for (int64_t offset : shards_[u].tensor_offsets(!shards_[u].contiguous())) {
    out.push_back(base + offset * device_.element_bytes(Elements::kGrads));
  }
  return out;
}

// The reduced shard in this rank's slot of the reduce-scatter's buffer.
std::byte* ProgramWalk::reduced_slot(const Op& op) {
  const UnitShard& s = shard(op.unit);
  return data(op.buffer) + s.rank() * s.shard_size() * device_.element_bytes(Elements::kReduce);
}

void ProgramWalk::copy_in(const Op& op) {
  const size_t u = static_cast<size_t>(op.unit);
  const UnitShard& s = shards_[u];
  switch (buffer(op.buffer).kind) {
    case BufferKind::kUnshardedParams: fill_own_slot(op); break;
    case BufferKind::kReduceInput:
      if (s.contiguous()) {
        device_.convert(op.stream, data(op.buffer), Elements::kReduce, data(grads_[u]), Elements::kGrads,
                        s.shard_size() * s.ranks());
      } else {
        device_.pack(op.stream, op.unit, data(op.buffer), data(grads_[u]));
      }
      break;
    case BufferKind::kUnshardedGrads:  // FSDP1: the per-parameter gradients concatenated
      device_.copy(op.stream, data(op.buffer), data(grads_[u]), size_of(op.buffer));
      grads_[u] = op.buffer;
      break;
    default: break;
  }
}

// A micro-batch's tokens and labels come with its first forward on this
// rank (a pipeline stage's first chunk may not start at the embedding).
void ProgramWalk::compute_forward(const Op& op, int64_t step) {
  const auto mb = static_cast<size_t>(op.micro_batch);
  if (batch_set_.size() <= mb) batch_set_.resize(mb + 1, false);
  if (!batch_set_[mb]) {
    const DataConfig& d = config_.data;
    const int64_t first = first_sequence(step, op.micro_batch, program_.micro_batches, config_.world_rank,
                                         config_.world_size, d.micro_batch_size);
    device_.set_batch(op.micro_batch, synthetic_batch(d.seed, first, d.micro_batch_size, d.seq_len, d.vocab));
    batch_set_[mb] = true;
  }
  if (op.part != models::UnitPart::kWhole) {
    device_.forward_part(op.unit, op.micro_batch, op.part, params_of(op.unit));
    return;
  }
  const int act = activations_[static_cast<size_t>(op.unit)];
  device_.forward(op.unit, op.micro_batch, params_of(op.unit), data_or_null(act), act >= 0 ? size_of(act) : 0);
}

void ProgramWalk::compute_backward(const Op& op) {
  if (op.loss_only) {
    device_.loss_backward(op.unit, op.micro_batch, data_or_null(op.buffer), size_of(op.buffer));
    return;
  }
  // Both devices' backward makes the weight gradients with the input's, so
  // ZB-H1's W has nothing left to do; the gradients still add up in the
  // schedule's micro-batch order.
  if (op.weight_gradients_only) return;
  if (op.part != models::UnitPart::kWhole) {
    device_.backward_part(op.unit, op.micro_batch, op.part, params_of(op.unit), grads_of(op.unit));
    return;
  }
  const int ws = workspace_[static_cast<size_t>(op.unit)];
  device_.backward(op.unit, op.micro_batch, params_of(op.unit), grads_of(op.unit), data_or_null(ws),
                   ws >= 0 ? size_of(ws) : 0);
}

// The tensor-parallel group's all-reduce of a unit's weights that tensor
// parallelism does not cut: each rank's gradient of them is a partial sum.
void ProgramWalk::all_reduce_uncut_gradients(const Op& op) {
  const DeviceGrads grads = grads_of(op.unit);
  const std::vector<models::TensorSpec>& tensors = shard(op.unit).spec().tensors;
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (tensors[t].tp_cut != models::TensorCut::kWhole) continue;
    device_.all_reduce(op.stream, grads[t], tensors[t].numel(), Elements::kGrads);
  }
}

void ProgramWalk::execute(const Op& op, int64_t step) {
  const int u = op.unit;
  if (op.group == planner::Group::kTensor || op.group == planner::Group::kContext) {
    if (op.kind == OpKind::kAllReduce && op.buffer >= 0) {
      all_reduce_uncut_gradients(op);
    } else {
      device_.tensor_parallel(op);
    }
    return;
  }
  if (op.group == planner::Group::kExpert) {
    device_.expert_parallel(op);
    return;
  }
  if (u >= 0 && op.buffer >= 0 && gather_by_tensor(op)) return;
  switch (op.kind) {
    case OpKind::kAlloc: allocate(op); break;
    case OpKind::kFree: release(op); break;
    case OpKind::kCast:
    case OpKind::kCopyIn: copy_in(op); break;
    case OpKind::kScale: {
      const Elements kind = buffer(op.buffer).kind == BufferKind::kUnshardedGrads ? Elements::kGrads : Elements::kReduce;
      device_.scale_by_one(op.stream, data(op.buffer), kind, op.bytes / (2 * device_.element_bytes(kind)));
      break;
    }
    case OpKind::kAllGather:
      fill_own_slot(op);
      device_.all_gather(op.stream, data(op.buffer), shard(u).shard_size(), Elements::kParams, shard(u).group());
      params_[static_cast<size_t>(u)] = op.buffer;
      per_tensor_[static_cast<size_t>(u)] = false;
      break;
    case OpKind::kCopyOut:
      device_.copy_out(op.stream, u, data(op.buffer), data(program_.gathered_buffer(op)));
      params_[static_cast<size_t>(u)] = op.buffer;
      per_tensor_[static_cast<size_t>(u)] = true;
      break;
    case OpKind::kComputeFwd: compute_forward(op, step); break;
    case OpKind::kRecompute: {
      const int ws = workspace_[static_cast<size_t>(u)];
      device_.recompute(u, op.micro_batch, params_of(u), data_or_null(ws), ws >= 0 ? size_of(ws) : 0);
      break;
    }
    case OpKind::kComputeBwd: compute_backward(op); break;
    case OpKind::kReduceScatter:
      device_.reduce_scatter(op.stream, data(op.buffer), shard(u).shard_size(), Elements::kReduce, shard(u).group());
      break;
    case OpKind::kAllReduce:  // HSDP: the reduced slot summed over the replicas
      device_.all_reduce(op.stream, reduced_slot(op), shard(u).shard_size(), Elements::kReduce);
      break;
    case OpKind::kGradAccumulate: {
      // The step's gradient is the mean over every rank's micro-batches.
      const float scale = 1.0f / static_cast<float>(config_.world_size * config_.token_shares * program_.micro_batches);
      device_.accumulate(op.stream, u, reduced_slot(op), scale);
      break;
    }
    case OpKind::kTrainMetrics:
      RAGGED_ASSERT(false, "the workloads compute no train metrics (check_loop_metrics refuses them): " + op.name);
      break;
    case OpKind::kSend: device_.pipeline_send(op); break;
    case OpKind::kRecv: device_.pipeline_recv(op); break;
    case OpKind::kAllToAll:
    case OpKind::kOptimizer: device_.optimizer(op, step); break;
  }
}

MeasuredStep ProgramWalk::run_step(int64_t step) {
  MeasuredStep out;
  batch_set_.assign(batch_set_.size(), false);
  device_.begin_step();
  gather_persistent();
  std::vector<std::pair<uint32_t, int64_t>> memory;  // after each alloc and free: op, bytes held
  int64_t peak_live = 0, peak_state_buffers = 0;
  for (const Op& op : program_.ops) {
    // The gradient is final here and gone after the update: look for NaN
    // now (the device keeps the check off the step's clock).
    if (op.kind == OpKind::kOptimizer && op.phase == OptimizerPhase::kUpdate && !out.gradient_non_finite) {
      out.gradient_non_finite = device_.gradient_non_finite(op.unit);
    }
    device_.begin_op(op, waits_of(op));
    Progress::instance().at_op(step, op.id);
    execute(op, step);
    device_.end_op(op, step);
    if (op.kind == OpKind::kAlloc || op.kind == OpKind::kFree) {
      memory.emplace_back(op.id, live_bytes_);
      peak_live = std::max(peak_live, live_bytes_);
      peak_state_buffers = std::max(peak_state_buffers, live_state_buffers_);
    }
  }
  out.times = device_.finish_step(step);
  for (const OpTime& t : out.times) out.seconds = std::max(out.seconds, t.end);
  const int64_t persistent = device_.persistent_bytes();
  for (const auto& [id, bytes] : memory) out.memory.push_back({out.times[id].end, persistent + bytes});
  out.peak_bytes = persistent + peak_live;
  out.peak_state_and_buffers_bytes = persistent + peak_state_buffers;
  out.persistent_bytes = persistent;
  out.reserved_bytes = persistent + arena_.bytes + device_.held_beside_arena();
  out.loss = device_.mean_loss();
  RAGGED_ASSERT(live_bytes_ == 0, "every buffer of the step is freed by its end");
  return out;
}

}  // namespace ragged::backend
