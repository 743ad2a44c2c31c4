#pragma once
// A Plan: one layout per FSDP unit of a model for one strategy and shard
// group size. Identical units (every transformer block of a dense model) are
// planned once and shared.

#include <cstdint>
#include <string>
#include <vector>

#include "models/model_spec.hpp"
#include "planner/granularity.hpp"
#include "planner/group.hpp"
#include "planner/layout_strategy.hpp"

namespace ragged::planner {

struct PlanOptions {
  int64_t collective_align_bytes = 16;  // NCCL wants 16-byte aligned per-rank chunks
  int64_t tensor_align_bytes = 16;      // every tensor starts 16-byte aligned (vectorized kernels, cuBLAS)
  models::DType param_dtype = models::DType::kBF16;  // the gathered buffer's dtype sets the element alignment
};

struct UnitPlan {
  int unit_index = 0;  // into ModelSpec::units
  // The ranks the unit is sharded over: the shard group, or for the routed
  // experts of an expert-parallel split the experts' own (Plan::ranks / ep).
  Group group = Group::kShard;
  UnitProblem problem;
  UnitLayout layout;

  int64_t params() const { return problem.total_elements(); }
  int64_t padded() const { return layout.padded_elements(); }
  int64_t lower_bound_padded() const { return layout.lower_bound_shard_size * layout.ranks; }
};

struct Plan {
  std::string strategy;
  int64_t ranks = 1;  // the shard group size (a unit of routed experts: ranks / the model's split.ep)
  std::vector<UnitPlan> units;
  double plan_seconds = 0;  // wall time of planning every unit
  int distinct_units = 0;   // units actually planned (the rest reuse a layout)

  int64_t params() const;
  int64_t padded_params() const;
  int64_t lower_bound_padded_params() const;
  double padding_ratio() const;              // (padded - params) / params
  double lower_bound_padding_ratio() const;
  int64_t max_shard_size() const;
  bool honours_granularity() const;
};

// The problem of one unit: its tensors with their granules under `policy`.
UnitProblem unit_problem(const models::UnitSpec& unit, const GranularityPolicy& policy, int64_t ranks,
                         const PlanOptions& options);

// The lower-bound padding ratio of the whole model at `ranks`, without
// planning: cheap enough to scan group sizes for the one that keeps padding low.
double lower_bound_padding_ratio(const models::ModelSpec& model, const GranularityPolicy& policy, int64_t ranks,
                                 const PlanOptions& options = {});

// Plans every unit over `ranks` (the shard group), a unit of routed experts
// over ranks / model.split.ep (UnitKind::kExperts); with `units`, only those
// of the model's units, in that order (a pipeline stage's).
Plan plan_model(const models::ModelSpec& model, const GranularityPolicy& policy, int64_t ranks,
                const LayoutStrategy& strategy, const PlanOptions& options = {}, const std::vector<int>& units = {});

// The model's unit that the plan's unit `u` plans.
inline const models::UnitSpec& planned_unit(const models::ModelSpec& model, const Plan& plan, int u) {
  return model.units[static_cast<size_t>(plan.units[static_cast<size_t>(u)].unit_index)];
}

// The ranks a unit of `model` is sharded over when the shard group has `ranks`.
int64_t unit_ranks(const models::UnitSpec& unit, const models::ModelSpec& model, int64_t ranks);

}  // namespace ragged::planner
