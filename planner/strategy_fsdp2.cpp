// FSDP2: per-parameter DTensor Shard(0) with torch.chunk semantics
// (torch/distributed/_composable/fsdp/_fully_shard/_fsdp_param.py,
// _fsdp_collectives.py). Rank-major: every rank holds a zero-padded chunk of
// every parameter; the gathered [m][S] buffer is copied out per parameter.

#include <memory>

#include "planner/baseline_util.hpp"
#include "planner/layout_strategy.hpp"

namespace ragged::planner {
namespace {

class Fsdp2Strategy final : public LayoutStrategy {
 public:
  std::string_view name() const override { return "fsdp2"; }
  UnitLayout plan_unit(const UnitProblem& problem) const override;
};

UnitLayout Fsdp2Strategy::plan_unit(const UnitProblem& problem) const {
  const int64_t m = problem.ranks;
  UnitLayout layout = baseline::start_layout(problem, Placement::kRankMajor);
  layout.chunk_rule = ChunkRule::kDim0Rows;

  // _fsdp_param.py (padded_sharded_param_size): ceil(dim0/m) rows per rank,
  // padded on every rank ("0th always padded"); the all-gather input is the
  // chunks in parameter order, so S is their sum.
  int64_t shard = 0;
  for (const PlanTensor& t : problem.tensors) {
    const int64_t chunk = baseline::ceil_div(t.dim0, m) * t.dim0_stride;
    layout.slots.push_back({shard, chunk});
    shard += chunk;
  }
  baseline::set_shard_size(layout, problem, shard);
  // Rows are cut every ceil(dim0/m) rows; a parameter that fits one rank is whole.
  layout.honours_granularity = baseline::chunks_honour_granularity(problem, layout);

  // _fsdp_collectives.py: all_gather_copy_in into this rank's slot (S),
  // split_with_sizes_copy of the whole [m][S] output, chunk_cat of the
  // unsharded grads into [m][S], and the reduced shard cast/added into .grad (S).
  layout.copies.all_gather_in = shard;
  layout.copies.all_gather_out = m * shard;
  layout.copies.reduce_scatter_in = m * shard;
  layout.copies.reduce_scatter_out = shard;
  return layout;
}

}  // namespace

std::unique_ptr<LayoutStrategy> make_fsdp2_strategy() { return std::make_unique<Fsdp2Strategy>(); }

}  // namespace ragged::planner
