#include "planner/plan.hpp"

#include <chrono>
#include <string_view>
#include <unordered_map>

#include "common/errors.hpp"
#include "planner/lower_bound.hpp"

namespace ragged::planner {

int64_t Plan::params() const {
  int64_t total = 0;
  for (const UnitPlan& u : units) total += u.params();
  return total;
}

int64_t Plan::padded_params() const {
  int64_t total = 0;
  for (const UnitPlan& u : units) total += u.padded();
  return total;
}

int64_t Plan::lower_bound_padded_params() const {
  int64_t total = 0;
  for (const UnitPlan& u : units) total += u.lower_bound_padded();
  return total;
}

double Plan::padding_ratio() const {
  return params() ? static_cast<double>(padded_params() - params()) / static_cast<double>(params()) : 0.0;
}

double Plan::lower_bound_padding_ratio() const {
  return params() ? static_cast<double>(lower_bound_padded_params() - params()) / static_cast<double>(params()) : 0.0;
}

int64_t Plan::max_shard_size() const {
  int64_t best = 0;
  for (const UnitPlan& u : units) best = std::max(best, u.layout.shard_size);
  return best;
}

bool Plan::honours_granularity() const {
  for (const UnitPlan& u : units) {
    if (!u.layout.honours_granularity) return false;
  }
  return true;
}

UnitProblem unit_problem(const models::UnitSpec& unit, const GranularityPolicy& policy, int64_t ranks,
                         const PlanOptions& options) {
  const int64_t element_bytes = models::dtype_bytes(options.param_dtype);
  UnitProblem problem;
  problem.ranks = ranks;
  problem.collective_align = std::max<int64_t>(1, options.collective_align_bytes / element_bytes);
  problem.tensor_align = std::max<int64_t>(1, options.tensor_align_bytes / element_bytes);
  RAGGED_ASSERT(problem.collective_align % problem.tensor_align == 0,
                "the tensor alignment must divide the collective alignment");
  problem.tensors.reserve(unit.tensors.size());
  std::string_view previous_module;
  for (const models::TensorSpec& t : unit.tensors) {
    PlanTensor p;
    // "self_attn.q_proj.weight" and "self_attn.q_proj.bias" are one module's.
    const std::string_view module = std::string_view(t.name).substr(0, t.name.rfind('.'));
    p.starts_module = problem.tensors.empty() || module != previous_module;
    previous_module = module;
    p.elements = t.numel();
    p.granule = policy.granule_elements(t);
    p.dim0 = t.shape.empty() ? 1 : t.shape.front();
    p.dim0_stride = p.dim0 > 0 ? p.elements / p.dim0 : 1;
    problem.tensors.push_back(p);
  }
  return problem;
}

namespace {

// The ranks expert parallelism is carved out of: the shard group, or with
// whole experts every tp rank's too (planner/mesh.hpp).
int64_t expert_parallel_pool(const models::ModelSpec& model, int64_t ranks) {
  return ranks * (model.split.whole_experts ? model.split.tp : 1);
}

}  // namespace

// A unit's FSDP group: the shard group's ranks, or for routed experts their
// expert shard group.
int64_t unit_ranks(const models::UnitSpec& unit, const models::ModelSpec& model, int64_t ranks) {
  if (unit.kind != models::UnitKind::kExperts) return ranks;
  return expert_parallel_pool(model, ranks) / model.split.ep;
}

double lower_bound_padding_ratio(const models::ModelSpec& model, const GranularityPolicy& policy, int64_t ranks,
                                 const PlanOptions& options) {
  std::unordered_map<std::string, int64_t> bound_of;  // signature -> lower-bound shard size
  int64_t params = 0, padded = 0;
  for (const models::UnitSpec& unit : model.units) {
    UnitProblem problem = unit_problem(unit, policy, unit_ranks(unit, model, ranks), options);
    auto [it, inserted] = bound_of.emplace(problem_signature(problem), 0);
    if (inserted) it->second = lower_bound_shard_size(problem);
    params += problem.total_elements();
    padded += it->second * problem.ranks;
  }
  return params ? static_cast<double>(padded - params) / static_cast<double>(params) : 0.0;
}

Plan plan_model(const models::ModelSpec& model, const GranularityPolicy& policy, int64_t ranks,
                const LayoutStrategy& strategy, const PlanOptions& options, const std::vector<int>& units) {
  if (ranks < 1) throw InputError("the shard group needs at least 1 rank");
  RAGGED_ASSERT(expert_parallel_pool(model, ranks) % model.split.ep == 0,
                "expert parallelism divides the shard group (with whole experts, tp x the shard group)");
  const auto start = std::chrono::steady_clock::now();
  Plan plan;
  plan.strategy = std::string(strategy.name());
  plan.ranks = ranks;
  std::unordered_map<std::string, size_t> planned;  // signature -> first unit with it
  std::vector<int> indices = units;
  if (indices.empty()) {
    for (size_t i = 0; i < model.units.size(); ++i) indices.push_back(static_cast<int>(i));
  }
  for (const int index : indices) {
    const auto i = static_cast<size_t>(index);
    UnitPlan unit;
    unit.unit_index = static_cast<int>(i);
    if (model.units[i].kind == models::UnitKind::kExperts) unit.group = Group::kExpertShard;
    unit.problem = unit_problem(model.units[i], policy, unit_ranks(model.units[i], model, ranks), options);
    auto [it, inserted] = planned.emplace(problem_signature(unit.problem), plan.units.size());
    if (inserted) {
      unit.layout = strategy.plan_unit(unit.problem);
      if (unit.layout.lower_bound_shard_size == 0) unit.layout.lower_bound_shard_size = lower_bound_shard_size(unit.problem);
      ++plan.distinct_units;
    } else {
      unit.layout = plan.units[it->second].layout;
    }
    plan.units.push_back(std::move(unit));
  }
  plan.plan_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return plan;
}

}  // namespace ragged::planner
