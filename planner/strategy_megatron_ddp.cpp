// Megatron-LM's DistributedDataParallel with its distributed optimizer: the
// parameters and their main gradients live in contiguous buffers
// (megatron/core/distributed/param_and_grad_buffer.py), every parameter
// starting on a multiple of 64 elements and every bucket padded to a multiple
// of lcm(dp, 128) (megatron/core/optimizer/param_layout.py, pad_param_start
// and pad_bucket_end); rank r of the data-parallel group owns the r-th of dp
// equal pieces (shard_buffer), whose master weights and Adam states the
// distributed optimizer keeps. The Program's buckets span units
// (planner/distopt_buckets.hpp); a unit's layout here is the same rules
// applied to the unit alone, which is what the optimizer's shards and the
// plan report read.

#include <memory>
#include <numeric>

#include "planner/baseline_util.hpp"
#include "planner/layout_strategy.hpp"

namespace ragged::planner {
namespace {

constexpr int64_t kParamStartAlign = 64;    // pad_param_start
constexpr int64_t kBucketEndDivisor = 128;  // bucket_end_divisor: lcm(dp, 128)

class MegatronDdpStrategy final : public LayoutStrategy {
 public:
  std::string_view name() const override { return "megatron-ddp"; }
  UnitLayout plan_unit(const UnitProblem& problem) const override;
};

UnitLayout MegatronDdpStrategy::plan_unit(const UnitProblem& problem) const {
  const int64_t m = problem.ranks;
  UnitLayout layout = baseline::start_layout(problem, Placement::kContiguous);
  const int64_t end = baseline::place_in_order(problem, layout, kParamStartAlign);
  baseline::set_shard_size(layout, problem, baseline::round_up(end, std::lcm(m, kBucketEndDivisor)) / m);
  layout.honours_granularity = baseline::contiguous_honours_granularity(problem, layout);
  // The model's parameters and gradients are views of the buffers: the
  // collectives run in place, nothing is copied in or out.
  return layout;
}

}  // namespace

std::unique_ptr<LayoutStrategy> make_megatron_ddp_strategy() { return std::make_unique<MegatronDdpStrategy>(); }

}  // namespace ragged::planner
