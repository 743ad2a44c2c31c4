// DDP (torch.nn.parallel.DistributedDataParallel): no sharding. Every rank
// holds every parameter, so a unit's "shard" is the whole unit over a group
// of one, its tensors packed one after the other as the module holds them;
// nothing is gathered, copied or reduce-scattered. The gradients' buckets
// and their all-reduces over the replicas are the Program's
// (planner/ddp_buckets.hpp, ddp_reduction.hpp).

#include <memory>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "planner/baseline_util.hpp"
#include "planner/layout_strategy.hpp"

namespace ragged::planner {
namespace {

class DdpStrategy final : public LayoutStrategy {
 public:
  std::string_view name() const override { return "ddp"; }
  UnitLayout plan_unit(const UnitProblem& problem) const override;
};

UnitLayout DdpStrategy::plan_unit(const UnitProblem& problem) const {
  if (problem.ranks != 1) {
    throw InputError(fmt::format("training.shard_group_size: DDP shards nothing, but the unit is planned over {} "
                                 "ranks: set shard_group_size to 1",
                                 problem.ranks));
  }
  UnitLayout layout = baseline::start_layout(problem, Placement::kContiguous);
  const int64_t end = baseline::place_in_order(problem, layout, 1);
  baseline::set_shard_size(layout, problem, end);
  layout.lower_bound_shard_size = end;
  return layout;
}

}  // namespace

std::unique_ptr<LayoutStrategy> make_ddp_strategy() { return std::make_unique<DdpStrategy>(); }

}  // namespace ragged::planner
