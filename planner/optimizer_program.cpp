#include "planner/optimizer_program.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <queue>

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged::planner {
namespace {

using models::TensorRole;

bool owner_based(const scenarios::Optimizer& o) { return o.has_muon() || o.has_shampoo(); }

// Newton-Schulz on an a x b matrix (a <= b): per iteration A = X X^T (a*a*b),
// A^2 (a*a*a), (bA + cA^2) X (a*a*b).
double newton_schulz_flops(int64_t rows, int64_t cols, int steps) {
  const double a = static_cast<double>(std::min(rows, cols)), b = static_cast<double>(std::max(rows, cols));
  return steps * (2 * a * a * b + 2 * a * a * a + 2 * a * a * b);
}

// Calls f(r, c) for the r x c blocks of a rows x cols matrix cut every `block`
// rows and columns (edge blocks smaller), as backend/optimizer_shampoo.cpp cuts it.
template <typename F>
void for_each_block(int64_t rows, int64_t cols, int64_t block, F f) {
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    for (int64_t c0 = 0; c0 < cols; c0 += block) f(std::min(block, rows - r0), std::min(block, cols - c0));
  }
}

// The update's kernels as the training stack runs them: bytes each shard
// element moves through memory (read + write; gradients and moments in the
// master dtype, m bytes) and the torch ops issued, once per update or once
// per tensor.
struct UpdateKernels {
  double bytes_per_element = 0;
  int64_t ops = 0;
  bool per_tensor = false;
};

UpdateKernels update_kernels(const scenarios::Optimizer& o, int64_t master) {
  const double m = static_cast<double>(master);
  // 8-bit Adam: master rw, grad r, 8-bit m/v rw, block scales. Muon: master
  // rw, grad r, momentum rw, update r. Each as nine foreach ops.
  if (o.has_adam8bit()) return {2 * m + m + 2 * 2 + 0.01, 9, false};
  if (o.has_muon()) return {2 * m + m + 2 * m + 2, 9, false};
  if (o.has_shampoo()) return {7 * m, 9, false};  // AdamW on the rest, as foreach ops
  if (o.has_sgd()) {
    // torch/optim/sgd.py _multi_tensor_sgd: weight decay as a new gradient
    // list (_foreach_add: r r w); the momentum buffers (_foreach_mul_: rw,
    // _foreach_add_: r r w); the parameters (_foreach_add_: r r w).
    UpdateKernels sgd{3 * m, 1, false};
    if (o.sgd().weight_decay() > 0) sgd = {sgd.bytes_per_element + 3 * m, sgd.ops + 1, false};
    if (o.sgd().momentum() > 0) sgd = {sgd.bytes_per_element + 5 * m, sgd.ops + 2, false};
    return sgd;
  }
  switch (o.adamw().implementation()) {
    // torch/optim/adamw.py _multi_tensor_adamw: the step count (+1, on the
    // CPU), then over the list _foreach_mul_ (decay, rw), _foreach_lerp_ (m:
    // r r w), _foreach_mul_ (v: rw), _foreach_addcmul_ (v: r r w),
    // _foreach_sqrt (r w), _foreach_div_ (rw), _foreach_add_ (eps, rw),
    // _foreach_addcdiv_ (p: r r r w): 20 m, 9 ops.
    case scenarios::FOREACH: return {20 * m, 9, false};
    // Composer's DecoupledAdamW.adamw (composer/optim/decoupled_weight_decay.py),
    // per parameter: p.mul_ (rw), exp_avg.mul_ (rw) .add_(grad) (r r w),
    // exp_avg_sq.mul_ (rw) .addcmul_(grad, grad) (r r w), sqrt (r w), / (r w),
    // .add_(eps) (r w), p.addcdiv_(exp_avg, denom) (r r r w): 22 m, 9 ops.
    case scenarios::PER_PARAMETER: return {22 * m, 9, true};
    // FUSED_KERNEL (torch/optim/adamw.py _fused_adamw, Ragged's GPU backend):
    // the step count (+1) and one kernel reading the parameter, gradient, m
    // and v and writing p, m and v: 7 m, 2 ops.
    default: return {7 * m, 2, false};
  }
}

}  // namespace

bool handled_whole(const models::TensorSpec& t) {
  return t.is_matrix() && t.role != TensorRole::kEmbedding && t.role != TensorRole::kHead;
}

// Per r x c block: statistics L += G G^T and R += G^T G (2 r c (r + c)), the
// preconditioned update L^-1/4 G R^-1/4 (2 r c (r + c)) every step; an inverse
// root per factor (a symmetric eigendecomposition and V diag V^T, ~10 n^3)
// every `frequency` steps. Edge blocks count at their real size: a 704 x 256
// matrix under the default block of 1024 is one 704 x 256 block.
double shampoo_flops(int64_t rows, int64_t cols, int block, int frequency) {
  double flops = 0;
  for_each_block(rows, cols, block, [&](int64_t r, int64_t c) {
    const double rd = static_cast<double>(r), cd = static_cast<double>(c);
    flops += 4 * rd * cd * (rd + cd) + 10 * (rd * rd * rd + cd * cd * cd) / frequency;
  });
  return flops;
}

// Per r x c block: L (r x r), R (c x c) and their two roots, in float64.
int64_t shampoo_state_bytes(int64_t rows, int64_t cols, int block) {
  int64_t bytes = 0;
  for_each_block(rows, cols, block, [&](int64_t r, int64_t c) { bytes += 2 * (r * r + c * c) * 8; });
  return bytes;
}

std::vector<int> assign_owners(const std::vector<double>& costs, int64_t ranks) {
  std::vector<size_t> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  using Load = std::pair<double, int64_t>;  // (load, rank): the least loaded, lowest rank first
  std::priority_queue<Load, std::vector<Load>, std::greater<>> loads;
  for (int64_t r = 0; r < ranks; ++r) loads.push({0.0, r});
  std::vector<int> owners(costs.size(), 0);
  for (size_t i : order) {
    auto [load, rank] = loads.top();
    loads.pop();
    owners[i] = static_cast<int>(rank);
    loads.push({load + costs[i], rank});
  }
  return owners;
}

int64_t group_ranks(const Plan& plan, Group group) {
  if (group == Group::kExpertShard) {
    for (const UnitPlan& unit : plan.units) {
      if (unit.group == Group::kExpertShard) return unit.layout.ranks;
    }
  }
  return plan.ranks;
}

int rank_in_group(const Plan& plan, Group group, int shard_rank) {
  if (group != Group::kExpertShard) return shard_rank;
  // Split experts only: whole ones (expert_tp 1) place a rank in its expert
  // shard group by its tp rank too, and the owner-based optimizers that ask
  // refuse tensor parallelism.
  const int64_t ep = plan.ranks / group_ranks(plan, group);
  RAGGED_ASSERT(ep >= 1 && plan.ranks % group_ranks(plan, group) == 0,
                "a shard rank's place in its expert shard group needs experts split over tp");
  return static_cast<int>(shard_rank / ep);
}

std::vector<OwnedMatrix> owned_matrices(const OptimizerContext& c) {
  std::vector<OwnedMatrix> matrices;
  if (!owner_based(c.optimizer)) return matrices;
  for (const UnitPlan& unit : c.plan->units) {
    const auto& tensors = c.model->units[unit.unit_index].tensors;
    for (size_t t = 0; t < tensors.size(); ++t) {
      if (!handled_whole(tensors[t])) continue;
      const int64_t rows = tensors[t].rows() / tensors[t].matrices(), cols = tensors[t].row_length();
      double flops = c.optimizer.has_muon()
                         ? newton_schulz_flops(rows, cols, c.optimizer.muon().ns_steps())
                         : shampoo_flops(rows, cols, c.optimizer.shampoo().block_size(), c.optimizer.shampoo().precondition_frequency());
      for (int64_t m = 0; m < tensors[t].matrices(); ++m) {
        matrices.push_back({unit.unit_index, static_cast<int>(t), rows, cols, flops, 0, unit.group});
      }
    }
  }
  // Owners are balanced within each group: the shard group's matrices over
  // its ranks, the routed experts' over their expert shard group.
  for (Group group : {Group::kShard, Group::kExpertShard}) {
    std::vector<double> costs;
    std::vector<size_t> members;
    for (size_t i = 0; i < matrices.size(); ++i) {
      if (matrices[i].group != group) continue;
      costs.push_back(matrices[i].flops);
      members.push_back(i);
    }
    const std::vector<int> owners = assign_owners(costs, group_ranks(*c.plan, group));
    for (size_t k = 0; k < members.size(); ++k) matrices[members[k]].owner = owners[k];
  }
  return matrices;
}

namespace {

// Megatron-LM's count_zeros_fp32 (megatron/core/optimizer/clip_grads.py):
// for each parameter, `grad.numel() - torch.count_nonzero(grad)` added to a
// running total, three torch ops and kernels a parameter reading its
// gradient once; then `.item()`, on which the CPU waits before the update.
// The all-reduce of the one-element total is not charged.
constexpr int64_t kZeroCountOpsPerTensor = 3;

std::optional<uint32_t> add_gradient_zeros(ProgramWriter& w, const OptimizerContext& c,
                                           const std::vector<uint32_t>& grads_ready) {
  if (!c.count_gradient_zeros || c.plan->units.empty()) return std::nullopt;
  int64_t tensors = 0;
  double elements = 0;
  for (const UnitPlan& unit : c.plan->units) {
    tensors += c.flat_shards ? 1 : static_cast<int64_t>(unit.layout.slots.size());
    elements += static_cast<double>(unit.layout.shard_size);
  }
  ComputeWork work;
  work.elementwise_bytes = elements * static_cast<double>(c.master_bytes);
  work.elementwise_kernels = kZeroCountOpsPerTensor * tensors;
  const int head = static_cast<int>(c.plan->units.size()) - 1;
  return w.compute(OpKind::kOptimizer, head, -1, "gradient zeros", std::move(work), grads_ready);
}

}  // namespace

void add_optimizer_ops(ProgramWriter& w, const OptimizerContext& c, const std::vector<uint32_t>& grads_ready) {
  const UpdateKernels kernels = update_kernels(c.optimizer, c.master_bytes);
  const std::optional<uint32_t> zeros = add_gradient_zeros(w, c, grads_ready);
  const double per_element =
      kernels.bytes_per_element + (c.refresh_compute_shard ? static_cast<double>(c.master_bytes + c.param_bytes) : 0.0);
  std::vector<OwnedMatrix> matrices = owned_matrices(c);
  const int units = static_cast<int>(c.plan->units.size());
  for (int u = units - 1; u >= 0; --u) {  // gradients finish last-unit first
    const UnitPlan& unit = c.plan->units[u];
    const std::string& name = c.model->units[unit.unit_index].name;
    const int64_t shard = unit.layout.shard_size;
    uint32_t last = zeros.value_or(grads_ready[u]);
    int64_t gathered = 0;
    ComputeWork owned;  // the matrices of this unit this rank owns
    for (const OwnedMatrix& m : matrices) {
      if (m.unit != unit.unit_index) continue;
      gathered += m.rows * m.cols;
      if (m.owner == rank_in_group(*c.plan, unit.group, c.rank)) {
        const int64_t a = std::min(m.rows, m.cols), b = std::max(m.rows, m.cols);
        const int steps = c.optimizer.has_muon() ? c.optimizer.muon().ns_steps() : 1;
        if (c.optimizer.has_muon()) {
          for (int s = 0; s < steps; ++s) {
            owned.gemms.push_back({a, a, b, 1});
            owned.gemms.push_back({a, a, a, 1});
            owned.gemms.push_back({a, b, a, 1});
          }
        } else {
          owned.other_flops += m.flops;
        }
      }
    }
    if (gathered > 0) {
      // Muon's momentum on the shard (Shampoo: the gradient copied as it
      // is), then the ragged gather to the owners, the owners' math, and the
      // scatter back.
      last = w.traffic(OpKind::kOptimizer, Stream::kCompute, u, -1, name + " momentum",
                       static_cast<int64_t>(3.0 * c.master_bytes * static_cast<double>(shard)), {last});
      w.program().ops[last].phase = OptimizerPhase::kMomentum;
      last = w.collective(OpKind::kAllToAll, Stream::kAllGather, unit.group, u, -1, name + " gather to owners",
                          gathered * c.param_bytes, -1, {last});
      w.program().ops[last].phase = OptimizerPhase::kGather;
      last = w.compute(OpKind::kOptimizer, u, -1, name + (c.optimizer.has_muon() ? " newton-schulz" : " shampoo"),
                       std::move(owned), {last});
      w.program().ops[last].phase = OptimizerPhase::kOrthogonalize;
      last = w.collective(OpKind::kAllToAll, Stream::kAllGather, unit.group, u, -1, name + " scatter from owners",
                          gathered * c.param_bytes, -1, {last});
      w.program().ops[last].phase = OptimizerPhase::kScatter;
    }
    uint32_t update = w.traffic(OpKind::kOptimizer, Stream::kCompute, u, -1, name + " update",
                                static_cast<int64_t>(per_element * static_cast<double>(shard)), {last});
    w.program().ops[update].phase = OptimizerPhase::kUpdate;
    // Its ops run over the unit's tensors: as lists (foreach, fused) or one
    // tensor at a time.
    const int64_t tensors = c.flat_shards ? 1 : static_cast<int64_t>(unit.layout.slots.size());
    HostWork& host = w.program().ops[update].host;
    host.framework_ops = kernels.per_tensor ? kernels.ops * tensors : kernels.ops;
    host.list_tensors = kernels.per_tensor ? 0 : kernels.ops * tensors;
    if (zeros && u == units - 1) host.waits.push_back(*zeros);  // the count's .item()
  }
}

int64_t optimizer_state_bytes(const OptimizerContext& c) {
  int64_t shard = 0;
  for (const UnitPlan& u : c.plan->units) shard += u.layout.shard_size;
  const scenarios::Optimizer& o = c.optimizer;
  if (o.has_adam8bit()) {
    const int64_t tile = int64_t{o.adam8bit().block_rows()} * o.adam8bit().block_cols();
    return 2 * shard + 2 * 4 * ((shard + tile - 1) / tile);  // two 8-bit states and an fp32 scale per tile each
  }
  if (o.has_sgd()) return o.sgd().momentum() > 0 ? c.master_bytes * shard : 0;  // the momentum buffers
  if (!owner_based(o)) return 2 * c.master_bytes * shard;  // AdamW m and v
  // Muon keeps a momentum on the shard share of the matrices, Shampoo nothing
  // there (no momentum: the gradient goes to the owner as it is); AdamW's m
  // and v for the rest. Shampoo's factors and roots live on the owners.
  int64_t matrix_elements = 0, all_elements = 0;
  for (const UnitPlan& u : c.plan->units) {
    for (const auto& t : c.model->units[u.unit_index].tensors) {
      all_elements += t.numel();
      if (handled_whole(t)) matrix_elements += t.numel();
    }
  }
  const double share = all_elements ? static_cast<double>(matrix_elements) / static_cast<double>(all_elements) : 0.0;
  int64_t bytes = static_cast<int64_t>((1 - share) * static_cast<double>(shard)) * 2 * c.master_bytes;
  if (o.has_muon()) bytes += static_cast<int64_t>(share * static_cast<double>(shard)) * c.master_bytes;
  if (o.has_shampoo()) {
    for (const OwnedMatrix& m : owned_matrices(c)) {
      if (m.owner == rank_in_group(*c.plan, m.group, c.rank)) bytes += shampoo_state_bytes(m.rows, m.cols, o.shampoo().block_size());
    }
  }
  return bytes;
}

}  // namespace ragged::planner
