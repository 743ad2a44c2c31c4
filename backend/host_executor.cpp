#include "backend/host_executor.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "backend/progress.hpp"
#include "common/errors.hpp"

namespace ragged::backend {

using planner::BufferKind;
using planner::Op;
using planner::OpKind;
using planner::OptimizerPhase;

int64_t first_sequence(int64_t step, int micro_batch, int micro_batches, int rank, int world, int64_t sequences) {
  return (((step - 1) * micro_batches + micro_batch) * world + rank) * sequences;
}

HostExecutor::HostExecutor(const planner::Program& program, std::vector<UnitShard>& shards, HostOptimizer& optimizer,
                           const RankGroups& groups, HostWorkload& workload, DataConfig data, int64_t persistent_bytes,
                           bool tied_embeddings)
    : program_(program),
      shards_(shards),
      optimizer_(optimizer),
      groups_(groups),
      workload_(workload),
      data_(data),
      persistent_bytes_(persistent_bytes),
      params_(shards.size(), -1),
      per_tensor_(shards.size(), false),
      grads_(shards.size(), -1),
      reduced_(shards.size()),
      fetched_(shards.size()),
      persistent_(shards.size()),
      tied_(tied_embeddings) {
  arena_ = planner::plan_arena(program, static_cast<int64_t>(sizeof(float)),
                               [this](const planner::Buffer& b) { return elements_of(b) * static_cast<int64_t>(sizeof(float)); });
  arena_memory_.resize(static_cast<size_t>(arena_.bytes) / sizeof(float));
  live_.assign(program.buffers.size(), false);
  // Gradient shards the Program frees each step live only between their alloc and free.
  for (const planner::Buffer& b : program.buffers) {
    if (b.kind != BufferKind::kGradShards) continue;
    grad_shards_bytes_ += grad_shard_bytes(b);
    std::vector<float>().swap(shards_[static_cast<size_t>(b.unit)].grad());
  }
}

float* HostExecutor::data(int buffer) {
  RAGGED_ASSERT(live_.at(static_cast<size_t>(buffer)), "host executor: buffer used outside its lifetime");
  return arena_memory_.data() + arena_.offsets[static_cast<size_t>(buffer)] / static_cast<int64_t>(sizeof(float));
}

int64_t HostExecutor::elements_of(const planner::Buffer& b) const {
  const UnitShard& s = shards_[static_cast<size_t>(b.unit)];
  const int64_t gathered = s.shard_size() * s.ranks();
  switch (b.kind) {
    case BufferKind::kUnshardedParams:
    case BufferKind::kReduceInput: return gathered;
    case BufferKind::kParamCopies: return s.unsharded_elements();
    case BufferKind::kUnshardedGrads: return s.contiguous() ? gathered : s.unsharded_elements();
    default: return 0;  // activations and workspaces live inside the workload, gradient shards in UnitShard
  }
}

// A unit's gradient shard the Program frees each step (kGradShards): the
// accumulator in UnitShard is allocated from the unit's first reduction of
// the step to the free after the optimizer, as PyTorch's zero_grad leaves it.
int64_t HostExecutor::grad_shard_bytes(const planner::Buffer& b) const {
  if (b.kind != BufferKind::kGradShards) return 0;
  return shards_[static_cast<size_t>(b.unit)].shard_size() * static_cast<int64_t>(sizeof(float));
}

void HostExecutor::allocate(const Op& op) {
  const planner::Buffer& b = program_.buffers[static_cast<size_t>(op.buffer)];
  const int64_t elements = elements_of(b);
  live_[static_cast<size_t>(op.buffer)] = true;
  if (b.kind == BufferKind::kGradShards) {
    UnitShard& s = shards_[static_cast<size_t>(b.unit)];
    s.grad().assign(static_cast<size_t>(s.shard_size()), 0.0f);
    live_bytes_ += grad_shard_bytes(b);
  }
  if (elements > 0) std::fill_n(data(op.buffer), elements, 0.0f);
  live_bytes_ += elements * static_cast<int64_t>(sizeof(float));
  if (b.kind == BufferKind::kUnshardedGrads) {
    // A second gradient buffer of the unit is the cat's output (kCopyIn below).
    int& grads = grads_[static_cast<size_t>(b.unit)];
    if (grads < 0 || !live_[static_cast<size_t>(grads)]) grads = op.buffer;
  }
}

std::vector<const float*> HostExecutor::own_params(int unit) {
  const size_t i = static_cast<size_t>(unit);
  if (shards_[i].gathered_by_tensor()) return fetched_[i];
  return shards_[i].params_in(data(params_[i]), per_tensor_[i]);
}

// A unit's parameters for the workload; a tied head also reads the
// embedding table, which stays gathered until the embedding's backward.
std::vector<const float*> HostExecutor::params_of(int unit) {
  std::vector<const float*> params = own_params(unit);
  if (tied_ && unit + 1 == static_cast<int>(shards_.size())) {
    params.push_back(own_params(0).front());
  }
  return params;
}

// The rank's slot of a gathered buffer gets its master shard (the cast and
// copy-in ops; fp32 on the host, so a copy).
void HostExecutor::fill_own_slot(int buffer, int unit) {
  if (slot_filled_[buffer]) return;
  UnitShard& s = shards_[static_cast<size_t>(unit)];
  const std::vector<int>& group = program_.buffers[static_cast<size_t>(buffer)].tensors;
  if (group.empty()) std::copy(s.master().begin(), s.master().end(), data(buffer) + s.rank() * s.shard_size());
  else s.fill_group_slot(group, data(buffer));
  slot_filled_[buffer] = true;
}

// A buffer of a ZeRO-3 fetch group: gathered in place; a single tensor is
// then read where it landed, a set once copied out (kCopyOut).
void HostExecutor::gather_group(int buffer, int unit) {
  const UnitShard& s = shards_[static_cast<size_t>(unit)];
  const std::vector<int>& group = program_.buffers[static_cast<size_t>(buffer)].tensors;
  groups_.shard->all_gather_in_place(data(buffer), s.group_shard_elements(group));
  if (group.size() == 1) fetched_[static_cast<size_t>(unit)][static_cast<size_t>(group.front())] = data(buffer);
}

void HostExecutor::copy_out_group(int gathered, int copies, int unit) {
  const UnitShard& s = shards_[static_cast<size_t>(unit)];
  const std::vector<int>& group = program_.buffers[static_cast<size_t>(copies)].tensors;
  s.copy_out_group(group, data(gathered), data(copies));
  const std::vector<int64_t> offsets = s.group_piece_offsets(group);
  for (size_t i = 0; i < group.size(); ++i) {
    fetched_[static_cast<size_t>(unit)][static_cast<size_t>(group[i])] = data(copies) + offsets[i];
  }
}

// ZeRO-3 keeps its small parameters gathered between uses (the Program
// counts them in persistent memory): each step gathers them from the updated
// shards before the first op, one tensor at a time, in the same order on
// every rank.
void HostExecutor::gather_persistent() {
  for (size_t u = 0; u < shards_.size(); ++u) {
    const UnitShard& s = shards_[u];
    if (!s.gathered_by_tensor()) continue;
    fetched_[u].assign(s.spec().tensors.size(), nullptr);
    persistent_[u].clear();
    for (int t : s.persistent_tensors()) {
      const std::vector<int> group = {t};
      std::vector<float>& gathered = persistent_[u].emplace_back(
          static_cast<size_t>(s.ranks() * s.group_shard_elements(group)), 0.0f);
      s.fill_group_slot(group, gathered.data());
      groups_.shard->all_gather_in_place(gathered.data(), s.group_shard_elements(group));
      fetched_[u][static_cast<size_t>(t)] = gathered.data();
    }
  }
}

void HostExecutor::execute(const Op& op, int64_t step, MeasuredStep& out) {
  const int u = op.unit;
  UnitShard* s = u >= 0 ? &shards_[static_cast<size_t>(u)] : nullptr;
  // A ZeRO-3 unit whose tensors are all kept gathered has nothing to fetch.
  const bool gathers = op.kind == OpKind::kAllGather || op.kind == OpKind::kCopyIn || op.kind == OpKind::kCast;
  if (gathers && s && s->gathered_by_tensor()) {
    const planner::Buffer& b = program_.buffers[static_cast<size_t>(op.buffer)];
    if (b.kind == BufferKind::kUnshardedParams && b.tensors.empty()) return;
  }
  switch (op.kind) {
    case OpKind::kAlloc: allocate(op); break;
    case OpKind::kFree: {
      const planner::Buffer& b = program_.buffers[static_cast<size_t>(op.buffer)];
      live_[static_cast<size_t>(op.buffer)] = false;
      live_bytes_ -= elements_of(b) * static_cast<int64_t>(sizeof(float)) + grad_shard_bytes(b);
      if (b.kind == BufferKind::kGradShards) std::vector<float>().swap(shards_[static_cast<size_t>(b.unit)].grad());
      slot_filled_.erase(op.buffer);
      break;
    }
    case OpKind::kCast:
    case OpKind::kCopyIn: {
      const BufferKind kind = program_.buffers[static_cast<size_t>(op.buffer)].kind;
      if (kind == BufferKind::kUnshardedParams) {
        fill_own_slot(op.buffer, u);
      } else if (kind == BufferKind::kReduceInput) {
        const float* grads = data(grads_[static_cast<size_t>(u)]);
        if (s->contiguous()) std::copy_n(grads, s->shard_size() * s->ranks(), data(op.buffer));
        else s->pack(grads, data(op.buffer));
      } else if (kind == BufferKind::kUnshardedGrads) {  // FSDP1: the per-parameter gradients concatenated
        int& grads = grads_[static_cast<size_t>(u)];
        std::copy_n(data(grads), elements_of(program_.buffers[static_cast<size_t>(op.buffer)]), data(op.buffer));
        grads = op.buffer;
      }
      break;
    }
    case OpKind::kAllGather:
      fill_own_slot(op.buffer, u);
      if (!program_.buffers[static_cast<size_t>(op.buffer)].tensors.empty()) {
        gather_group(op.buffer, u);
        break;
      }
      groups_.shard->all_gather_in_place(data(op.buffer), s->shard_size());
      params_[static_cast<size_t>(u)] = op.buffer;
      per_tensor_[static_cast<size_t>(u)] = false;
      break;
    case OpKind::kCopyOut: {
      const int gathered = program_.gathered_buffer(op);
      if (!program_.buffers[static_cast<size_t>(op.buffer)].tensors.empty()) {
        copy_out_group(gathered, op.buffer, u);
        break;
      }
      s->copy_out(data(gathered), data(op.buffer));
      params_[static_cast<size_t>(u)] = op.buffer;
      per_tensor_[static_cast<size_t>(u)] = true;
      break;
    }
    case OpKind::kComputeFwd: {
      if (u == 0) {
        const int64_t first = first_sequence(step, op.micro_batch, program_.micro_batches, groups_.world->rank(),
                                             groups_.world->size(),
                                             data_.micro_batch_size);
        workload_.set_batch(synthetic_batch(data_.seed, first, data_.micro_batch_size, data_.seq_len, data_.vocab));
      }
      workload_.forward(u, params_of(u));
      if (u + 1 == static_cast<int>(shards_.size())) {
        losses_ += workload_.loss();
        ++loss_count_;
      }
      break;
    }
    case OpKind::kComputeBwd: {
      if (op.loss_only) {
        workload_.loss_backward(u);
        break;
      }
      const size_t i = static_cast<size_t>(u);
      std::vector<float*> grads = s->grads_in(data(grads_[i]), !s->contiguous());
      const bool head = u + 1 == static_cast<int>(shards_.size());
      if (tied_ && head) {
        tied_grad_.assign(static_cast<size_t>(shards_.front().spec().tensors.front().numel()), 0.0f);
        grads.push_back(tied_grad_.data());
      }
      if (tied_ && u == 0) {  // the head's share of the shared table's gradient
        for (size_t e = 0; e < tied_grad_.size(); ++e) grads.front()[e] += tied_grad_[e];
        tied_grad_.clear();
      }
      workload_.backward(u, params_of(u), grads);
      break;
    }
    case OpKind::kRecompute: break;  // the host workload keeps every activation
    case OpKind::kScale: break;      // run at factor 1: the mean is taken at the accumulation
    case OpKind::kReduceScatter: {
      groups_.shard->reduce_scatter_in_place(data(op.buffer), s->shard_size());
      const float* slot = data(op.buffer) + s->rank() * s->shard_size();
      reduced_[static_cast<size_t>(u)].assign(slot, slot + s->shard_size());
      break;
    }
    case OpKind::kAllReduce: {  // HSDP: the reduced shard summed over the replicas
      std::vector<float>& reduced = reduced_[static_cast<size_t>(u)];
      groups_.replicas->all_reduce_in_place(reduced.data(), static_cast<int64_t>(reduced.size()));
      break;
    }
    case OpKind::kTrainMetrics:
      RAGGED_ASSERT(false, "the host workload computes no train metrics (check_loop_metrics refuses them): " + op.name);
      break;
    case OpKind::kGradAccumulate: {
      // The step's gradient is the mean over every rank's micro-batches.
      const float scale = 1.0f / static_cast<float>(groups_.world->size() * program_.micro_batches);
      std::vector<float>& reduced = reduced_[static_cast<size_t>(u)];
      for (size_t e = 0; e < reduced.size(); ++e) s->grad()[e] += reduced[e] * scale;
      reduced.clear();
      break;
    }
    case OpKind::kSend:
    case OpKind::kRecv:
      RAGGED_ASSERT(false, "the host executor runs no pipeline stages (check_launch refuses them): " + op.name);
      break;
    case OpKind::kAllToAll:
      if (op.phase == OptimizerPhase::kGather) optimizer_.gather_to_owners(u);
      else optimizer_.scatter_from_owners(u);
      break;
    case OpKind::kOptimizer:
      switch (op.phase) {
        case OptimizerPhase::kMomentum: optimizer_.momentum(u); break;
        case OptimizerPhase::kOrthogonalize: optimizer_.orthogonalize(u, step); break;
        case OptimizerPhase::kUpdate:
          optimizer_.update(u, step);
          std::fill(s->grad().begin(), s->grad().end(), 0.0f);
          break;
        default: RAGGED_ASSERT(false, "optimizer op without a phase: " + op.name);
      }
      break;
  }
  (void)out;
}

MeasuredStep HostExecutor::run_step(int64_t step) {
  MeasuredStep out;
  out.times.resize(program_.ops.size());
  losses_ = 0;
  loss_count_ = 0;
  const auto start = std::chrono::steady_clock::now();
  double unmeasured = 0;  // time spent checking, left out of the step's clock
  auto now = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() - unmeasured;
  };
  gather_persistent();
  for (const Op& op : program_.ops) {
    // The gradient is final here and gone after the update: look for NaN
    // now, off the step's clock, so the check costs the measurement nothing.
    if (op.kind == OpKind::kOptimizer && op.phase == OptimizerPhase::kUpdate && !out.gradient_non_finite) {
      const double before = now();
      const UnitShard& s = shards_[static_cast<size_t>(op.unit)];
      out.gradient_non_finite = first_non_finite(s, s.grad(), Quantity::kGradient);
      unmeasured += now() - before;
    }
    Progress::instance().at_op(step, op.id);
    out.times[op.id].start = now();
    execute(op, step, out);
    out.times[op.id].end = now();
    if (op.kind == OpKind::kAlloc || op.kind == OpKind::kFree) {
      out.memory.push_back({out.times[op.id].end, persistent_bytes_ + live_bytes_});
      out.peak_bytes = std::max(out.peak_bytes, persistent_bytes_ + live_bytes_);
    }
  }
  out.seconds = now();
  out.reserved_bytes = persistent_bytes_ + arena_.bytes + grad_shards_bytes_;
  // The arena holds parameter and gradient buffers only: the workload keeps
  // activations and workspaces itself.
  out.peak_state_and_buffers_bytes = out.peak_bytes;
  out.persistent_bytes = persistent_bytes_;
  out.loss = loss_count_ ? losses_ / loss_count_ : 0.0;
  RAGGED_ASSERT(live_bytes_ == 0, "every buffer of the step is freed by its end");
  return out;
}

}  // namespace ragged::backend
