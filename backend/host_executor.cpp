#include "backend/host_executor.hpp"

#include <algorithm>
#include <cstring>
#include <span>
#include <utility>

#include "backend/mesh_step.hpp"
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
                       const RankGroups& groups, HostWorkloads workloads)
    : program_(program),
      shards_(shards),
      optimizer_(optimizer),
      groups_(groups),
      workloads_(std::move(workloads)),
      persistent_(shards.size()) {
  RAGGED_ASSERT(!workloads_.per_micro_batch.empty() && workloads_.model_units.size() == shards.size(),
                "host device: a workload and a model unit per Program unit");
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
// Sends to other stages finish within the step (their peers received them).
std::vector<OpTime> HostDevice::finish_step(int64_t) {
  if (workloads_.world != nullptr) workloads_.world->wait_sends();
  return times_;
}

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

void HostDevice::all_gather(planner::Stream, std::byte* buffer, int64_t shard_elements, Elements,
                            planner::Group group) {
  groups_.fsdp(group).all_gather_in_place(floats(buffer), shard_elements);
}

void HostDevice::reduce_scatter(planner::Stream, std::byte* buffer, int64_t shard_elements, Elements,
                                planner::Group group) {
  groups_.fsdp(group).reduce_scatter_in_place(floats(buffer), shard_elements);
}

// The replicas' HSDP all-reduce, or the tp group's of the uncut weights' gradients.
void HostDevice::all_reduce(planner::Stream stream, std::byte* data, int64_t elements, Elements) {
  Communicator& group = stream == planner::Stream::kTensorParallel ? *groups_.tensor : *groups_.replicas;
  group.all_reduce_in_place(floats(data), elements);
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

HostWorkload& HostDevice::workload(int micro_batch) {
  const std::vector<HostWorkload*>& all = workloads_.per_micro_batch;
  return *all[static_cast<size_t>(micro_batch) % all.size()];
}

HostDevice::InFlight& HostDevice::in_flight(int micro_batch) {
  const auto mb = static_cast<size_t>(micro_batch);
  if (in_flight_.size() <= mb) in_flight_.resize(mb + 1);
  return in_flight_[mb];
}

// What another stage sent may already wait (a receive precedes the first
// forward of a stage after the first): only the units run so far restart.
void HostDevice::set_batch(int micro_batch, const Batch& batch) {
  workload(micro_batch).set_batch(batch);
  InFlight& f = in_flight(micro_batch);
  f.last_forward = f.last_backward = -1;
}

void HostDevice::forward(int unit, int micro_batch, const DeviceParams& params, std::byte*, int64_t) {
  HostWorkload& w = workload(micro_batch);
  InFlight& f = in_flight(micro_batch);
  const int model = model_unit(unit);
  if (!f.input.empty()) {  // this chunk's input, from the previous stage
    w.receive_output(model - 1, f.input);
    f.input.clear();
  }
  ConstTensors tensors;
  for (const std::byte* p : params) tensors.push_back(floats(p));
  w.forward(model, tensors);
  f.last_forward = model;
  // A tensor-parallel head knows its loss once the group combined it.
  if (is_head(unit) && w.tensor_parallel().size == 1) record_loss(w);
}

void HostDevice::record_loss(const HostWorkload& w) {
  losses_ += w.loss();
  ++loss_count_;
}

namespace {

ConstTensors const_floats(const DeviceParams& params) {
  ConstTensors out;
  for (const std::byte* p : params) out.push_back(floats(p));
  return out;
}

}  // namespace

void HostDevice::forward_part(int unit, int micro_batch, models::UnitPart part, const DeviceParams& params) {
  workload(micro_batch).forward(model_unit(unit), const_floats(params), part);
  in_flight(micro_batch).last_forward = model_unit(unit);
}

void HostDevice::backward_part(int unit, int micro_batch, models::UnitPart part, const DeviceParams& params,
                               const DeviceGrads& grads) {
  Tensors out;
  for (std::byte* g : grads) out.push_back(floats(g));
  workload(micro_batch).backward(model_unit(unit), const_floats(params), out, part);
  in_flight(micro_batch).last_backward = model_unit(unit);
}

void HostDevice::tensor_parallel(const Op& op) {
  const bool context = op.group == planner::Group::kContext;
  Communicator* group = context ? groups_.context : groups_.tensor;
  RAGGED_ASSERT(group != nullptr, "host device: a mesh op without its group: " + op.name);
  const TpStep step = tensor_parallel_step(op, model_unit(op.unit), is_head(op.unit));
  HostWorkload& w = workload(op.micro_batch);
  const TpExchange x = w.tp_begin(step);
  if (sums_partials(step.collective)) {
    group->reduce_scatter_in_place(x.buffer, x.count);
  } else {
    group->all_gather_in_place(x.buffer, x.count);
  }
  w.tp_end(step);
  if (step.collective == TpCollective::kLossStats) record_loss(w);
}

void HostDevice::loss_backward(int unit, int micro_batch, std::byte*, int64_t) {
  workload(micro_batch).loss_backward(model_unit(unit));
}

void HostDevice::backward(int unit, int micro_batch, const DeviceParams& params, const DeviceGrads& grads, std::byte*,
                          int64_t) {
  HostWorkload& w = workload(micro_batch);
  InFlight& f = in_flight(micro_batch);
  const int model = model_unit(unit);
  if (!f.output_gradient.empty()) {  // this chunk's output gradient, from the next stage
    w.receive_output_gradient(model, f.output_gradient);
    f.output_gradient.clear();
  }
  ConstTensors in;
  for (const std::byte* p : params) in.push_back(floats(p));
  Tensors out;
  for (std::byte* g : grads) out.push_back(floats(g));
  const bool tied = workloads_.tied_embeddings;
  if (tied && is_head(unit)) {
    tied_grad_.assign(static_cast<size_t>(shards_.front().spec().tensors.front().numel()), 0.0f);
    out.push_back(tied_grad_.data());
  }
  if (tied && model == 0) {  // the head's share of the shared table's gradient
    for (size_t e = 0; e < tied_grad_.size(); ++e) out.front()[e] += tied_grad_[e];
    tied_grad_.clear();
  }
  w.backward(model, in, out);
  f.last_backward = model;
}

// To the same place in the peer stage: the output of this stage's last
// forward of the micro-batch, or the gradient its last backward left.
void HostDevice::pipeline_send(const Op& op) {
  RAGGED_ASSERT(workloads_.world != nullptr, "host device: a pipeline send without stages: " + op.name);
  const HostWorkload& w = workload(op.micro_batch);
  const InFlight& f = in_flight(op.micro_batch);
  const std::span<const float> data = planner::carries_gradient(op) ? w.output_gradient(f.last_backward - 1)
                                                                     : w.output(f.last_forward);
  const int peer = op.peer * workloads_.stage_ranks + workloads_.place;
  workloads_.world->send(data.data(), static_cast<int64_t>(data.size()), peer, op.message);
}

void HostDevice::pipeline_recv(const Op& op) {
  RAGGED_ASSERT(workloads_.world != nullptr, "host device: a pipeline receive without stages: " + op.name);
  InFlight& f = in_flight(op.micro_batch);
  std::vector<float>& into = planner::carries_gradient(op) ? f.output_gradient : f.input;
  into.resize(static_cast<size_t>(op.bytes) / sizeof(float));
  const int peer = op.peer * workloads_.stage_ranks + workloads_.place;
  workloads_.world->recv(into.data(), static_cast<int64_t>(into.size()), peer, op.message);
}

HostExecutor::HostExecutor(const planner::Program& program, std::vector<UnitShard>& shards, HostOptimizer& optimizer,
                           const RankGroups& groups, HostWorkloads workloads, const WalkConfig& config)
    : arena_(HostDevice::plan_arena(program, shards)),
      arena_memory_(static_cast<size_t>(arena_.bytes) / sizeof(float)),
      device_(program, shards, optimizer, groups, std::move(workloads)),
      walk_(std::make_unique<ProgramWalk>(program, arena_, reinterpret_cast<std::byte*>(arena_memory_.data()), shards,
                                          device_, config)) {}

void HostDevice::expert_parallel(const Op& op) {
  Communicator* group = groups_.expert;
  RAGGED_ASSERT(group != nullptr && op.kind == OpKind::kAllToAll, "host device: an ep all-to-all without its group: " + op.name);
  HostWorkload& w = workload(op.micro_batch);
  const EpStep step{model_unit(op.unit), tp_pass(op.pass)};
  const EpExchange x = w.ep_begin(step);
  const auto ranks = static_cast<size_t>(group->size());
  RAGGED_ASSERT(x.send_counts.size() == ranks, "host device: one count per rank of the ep group");
  // The counts first (exact in a float up to 2^24 floats a rank), then the rows.
  for (const int64_t count : x.send_counts) {
    RAGGED_ASSERT(count < (int64_t{1} << 24), "host device: an ep exchange's count travels exactly as a float: " + op.name);
  }
  std::vector<float> counts_out(x.send_counts.begin(), x.send_counts.end()), counts_in(ranks);
  std::vector<int64_t> ones(ranks, 1), places(ranks);
  for (size_t r = 0; r < ranks; ++r) places[r] = static_cast<int64_t>(r);
  group->all_to_all_v(counts_out.data(), ones, places, counts_in.data(), ones, places);
  std::vector<int64_t> send_displs(ranks, 0), recv_displs(ranks, 0);
  x.recv_counts->assign(ranks, 0);
  int64_t sent = 0, received = 0;
  for (size_t r = 0; r < ranks; ++r) {
    send_displs[r] = sent;
    recv_displs[r] = received;
    sent += x.send_counts[r];
    (*x.recv_counts)[r] = static_cast<int64_t>(counts_in[r]);
    received += (*x.recv_counts)[r];
  }
  x.recv->resize(static_cast<size_t>(received));
  group->all_to_all_v(x.send, x.send_counts, send_displs, x.recv->data(), *x.recv_counts, recv_displs);
  w.ep_end(step);
}

}  // namespace ragged::backend
