#include "backend/host_executor.hpp"

#include <algorithm>
#include <cstring>

#include "common/errors.hpp"

namespace ragged::backend {

using planner::BufferKind;
using planner::Op;
using planner::OpKind;
using planner::OptimizerPhase;

namespace {

float* floats(std::byte* p) { return reinterpret_cast<float*>(p); }
const float* floats(const std::byte* p) { return reinterpret_cast<const float*>(p); }

int64_t elements_of(const planner::Buffer& b, const std::vector<UnitShard>& shards) {
  const UnitShard& s = shards[static_cast<size_t>(b.unit)];
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
int64_t grad_shard_bytes(const planner::Buffer& b, const std::vector<UnitShard>& shards) {
  if (b.kind != BufferKind::kGradShards) return 0;
  return shards[static_cast<size_t>(b.unit)].shard_size() * static_cast<int64_t>(sizeof(float));
}

}  // namespace

planner::ArenaPlan HostDevice::plan_arena(const planner::Program& program, const std::vector<UnitShard>& shards) {
  return planner::plan_arena(program, static_cast<int64_t>(sizeof(float)), [&shards](const planner::Buffer& b) {
    return elements_of(b, shards) * static_cast<int64_t>(sizeof(float));
  });
}

HostDevice::HostDevice(const planner::Program& program, std::vector<UnitShard>& shards, HostOptimizer& optimizer,
                       const RankGroups& groups, HostWorkload& workload, bool tied_embeddings)
    : program_(program),
      shards_(shards),
      optimizer_(optimizer),
      groups_(groups),
      workload_(workload),
      tied_(tied_embeddings),
      persistent_(shards.size()) {
  // Gradient shards the Program frees each step live only between their alloc and free.
  for (const planner::Buffer& b : program.buffers) {
    if (b.kind != BufferKind::kGradShards) continue;
    grad_shards_bytes_ += grad_shard_bytes(b, shards_);
    std::vector<float>().swap(shards_[static_cast<size_t>(b.unit)].grad());
  }
  for (size_t u = 0; u < shards_.size(); ++u) {
    const UnitShard& s = shards_[u];
    int64_t elements = 0;
    for (int t : s.persistent_tensors()) elements += s.ranks() * s.group_shard_elements({t});
    persistent_[u].assign(static_cast<size_t>(elements), 0.0f);
  }
}

double HostDevice::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() - unmeasured_;
}

void HostDevice::begin_step() {
  times_.assign(program_.ops.size(), {});
  losses_ = 0;
  loss_count_ = 0;
  unmeasured_ = 0;
  start_ = std::chrono::steady_clock::now();
}

void HostDevice::begin_op(const Op& op, const std::vector<int64_t>&) { times_[op.id].start = now(); }
void HostDevice::end_op(const Op& op, int64_t) { times_[op.id].end = now(); }
std::vector<OpTime> HostDevice::finish_step(int64_t) { return times_; }

// The workload adds its gradients into the unsharded gradient buffers and
// the reductions read every element: buffers start zeroed.
int64_t HostDevice::allocated(const planner::Buffer& b, planner::Stream, std::byte* data, int64_t bytes) {
  if (bytes > 0) std::memset(data, 0, static_cast<size_t>(bytes));
  if (b.kind != BufferKind::kGradShards) return 0;
  UnitShard& s = shards_[static_cast<size_t>(b.unit)];
  s.grad().assign(static_cast<size_t>(s.shard_size()), 0.0f);
  return grad_shard_bytes(b, shards_);
}

int64_t HostDevice::released(const planner::Buffer& b) {
  if (b.kind != BufferKind::kGradShards) return 0;
  std::vector<float>().swap(shards_[static_cast<size_t>(b.unit)].grad());
  return grad_shard_bytes(b, shards_);
}

// Master shards, the gradient accumulators that outlive the step (those the
// Program frees each step are empty here), ZeRO-3's gathered small
// parameters and the optimizer's state, as allocated.
int64_t HostDevice::persistent_bytes() const {
  int64_t bytes = optimizer_.state_bytes();
  for (const UnitShard& s : shards_) {
    bytes += static_cast<int64_t>((s.master().size() + s.grad().size()) * sizeof(float));
  }
  for (const std::vector<float>& p : persistent_) bytes += static_cast<int64_t>(p.size() * sizeof(float));
  return bytes;
}

std::byte* HostDevice::persistent_params(int unit) {
  return reinterpret_cast<std::byte*>(persistent_[static_cast<size_t>(unit)].data());
}

void HostDevice::cast_master(planner::Stream, int unit, int64_t offset, int64_t n, std::byte* dst) {
  const std::vector<float>& master = shards_[static_cast<size_t>(unit)].master();
  std::copy_n(master.begin() + offset, n, floats(dst));
}

void HostDevice::convert(planner::Stream, std::byte* dst, Elements, const std::byte* src, Elements, int64_t n) {
  std::copy_n(floats(src), n, floats(dst));
}

void HostDevice::copy(planner::Stream, std::byte* dst, const std::byte* src, int64_t bytes) {
  std::memcpy(dst, src, static_cast<size_t>(bytes));
}

void HostDevice::copy_rows(planner::Stream, std::byte* dst, int64_t dst_pitch, const std::byte* src, int64_t src_pitch,
                           int64_t width, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * dst_pitch, src + r * src_pitch, static_cast<size_t>(width));
}

void HostDevice::copy_out(planner::Stream, int unit, std::byte* per_tensor, const std::byte* gathered) {
  shards_[static_cast<size_t>(unit)].copy_out(floats(gathered), floats(per_tensor));
}

void HostDevice::pack(planner::Stream, int unit, std::byte* gathered, const std::byte* per_tensor) {
  shards_[static_cast<size_t>(unit)].pack(floats(per_tensor), floats(gathered));
}

void HostDevice::all_gather(planner::Stream, std::byte* buffer, int64_t shard_elements, Elements) {
  groups_.shard->all_gather_in_place(floats(buffer), shard_elements);
}

void HostDevice::reduce_scatter(planner::Stream, std::byte* buffer, int64_t shard_elements, Elements) {
  groups_.shard->reduce_scatter_in_place(floats(buffer), shard_elements);
}

void HostDevice::all_reduce(planner::Stream, std::byte* data, int64_t elements, Elements) {
  groups_.replicas->all_reduce_in_place(floats(data), elements);
}

void HostDevice::accumulate(planner::Stream, int unit, const std::byte* reduced, float scale) {
  std::vector<float>& grad = shards_[static_cast<size_t>(unit)].grad();
  const float* r = floats(reduced);
  for (size_t e = 0; e < grad.size(); ++e) grad[e] += r[e] * scale;
}

std::optional<NonFinite> HostDevice::gradient_non_finite(int unit) {
  const double before = now();
  const UnitShard& s = shards_[static_cast<size_t>(unit)];
  std::optional<NonFinite> found = first_non_finite(s, s.grad(), Quantity::kGradient);
  unmeasured_ += now() - before;
  return found;
}

void HostDevice::optimizer(const Op& op, int64_t step) {
  const int u = op.unit;
  if (op.kind == OpKind::kAllToAll) {
    if (op.phase == OptimizerPhase::kGather) optimizer_.gather_to_owners(u);
    else optimizer_.scatter_from_owners(u);
    return;
  }
  switch (op.phase) {
    case OptimizerPhase::kMomentum: optimizer_.momentum(u); break;
    case OptimizerPhase::kOrthogonalize: optimizer_.orthogonalize(u, step); break;
    case OptimizerPhase::kUpdate: {
      optimizer_.update(u, step);
      std::vector<float>& grad = shards_[static_cast<size_t>(u)].grad();
      std::fill(grad.begin(), grad.end(), 0.0f);
      break;
    }
    default: RAGGED_ASSERT(false, "optimizer op without a phase: " + op.name);
  }
}

void HostDevice::set_batch(const Batch& batch) { workload_.set_batch(batch); }

void HostDevice::forward(int unit, const DeviceParams& params, std::byte*, int64_t) {
  ConstTensors tensors;
  for (const std::byte* p : params) tensors.push_back(floats(p));
  workload_.forward(unit, tensors);
  if (is_head(unit)) {
    losses_ += workload_.loss();
    ++loss_count_;
  }
}

void HostDevice::loss_backward(int unit, std::byte*, int64_t) { workload_.loss_backward(unit); }

void HostDevice::backward(int unit, const DeviceParams& params, const DeviceGrads& grads, std::byte*, int64_t) {
  ConstTensors in;
  for (const std::byte* p : params) in.push_back(floats(p));
  Tensors out;
  for (std::byte* g : grads) out.push_back(floats(g));
  if (tied_ && is_head(unit)) {
    tied_grad_.assign(static_cast<size_t>(shards_.front().spec().tensors.front().numel()), 0.0f);
    out.push_back(tied_grad_.data());
  }
  if (tied_ && unit == 0) {  // the head's share of the shared table's gradient
    for (size_t e = 0; e < tied_grad_.size(); ++e) out.front()[e] += tied_grad_[e];
    tied_grad_.clear();
  }
  workload_.backward(unit, in, out);
}

HostExecutor::HostExecutor(const planner::Program& program, std::vector<UnitShard>& shards, HostOptimizer& optimizer,
                           const RankGroups& groups, HostWorkload& workload, const WalkConfig& config)
    : arena_(HostDevice::plan_arena(program, shards)),
      arena_memory_(static_cast<size_t>(arena_.bytes) / sizeof(float)),
      device_(program, shards, optimizer, groups, workload, config.tied_embeddings),
      walk_(std::make_unique<ProgramWalk>(program, arena_, reinterpret_cast<std::byte*>(arena_memory_.data()), shards,
                                          device_, config)) {}

}  // namespace ragged::backend
