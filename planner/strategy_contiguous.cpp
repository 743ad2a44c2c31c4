// The two RaggedShard planners behind the LayoutStrategy interface.

#include "planner/contiguous_search.hpp"
#include "planner/layout_strategy.hpp"
#include "planner/lower_bound.hpp"

namespace ragged::planner {
namespace {

class RaggedStrategy : public LayoutStrategy {
 public:
  std::string_view name() const override { return "ragged"; }
  UnitLayout plan_unit(const UnitProblem& problem) const override {
    UnitLayout layout = contiguous_layout(problem, ragged_search(problem));
    layout.lower_bound_shard_size = lower_bound_shard_size(problem);
    return layout;
  }
};

class VescalePaperStrategy : public LayoutStrategy {
 public:
  std::string_view name() const override { return "vescale-paper"; }
  UnitLayout plan_unit(const UnitProblem& problem) const override {
    UnitLayout layout = contiguous_layout(problem, vescale_paper_search(problem));
    layout.lower_bound_shard_size = lower_bound_shard_size(problem);
    return layout;
  }
};

}  // namespace

std::unique_ptr<LayoutStrategy> make_ragged_strategy() { return std::make_unique<RaggedStrategy>(); }
std::unique_ptr<LayoutStrategy> make_vescale_paper_strategy() { return std::make_unique<VescalePaperStrategy>(); }

}  // namespace ragged::planner
