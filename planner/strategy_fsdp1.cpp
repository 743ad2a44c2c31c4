// FSDP1: one FlatParameter per unit with use_orig_params=True
// (torch/distributed/fsdp/_flat_param.py, _runtime_utils.py). Element-wise
// flat: tensors straddle ranks wherever the shard boundaries fall.

#include <memory>

#include "planner/baseline_util.hpp"
#include "planner/layout_strategy.hpp"

namespace ragged::planner {
namespace {

class Fsdp1Strategy final : public LayoutStrategy {
 public:
  std::string_view name() const override { return "fsdp1"; }
  UnitLayout plan_unit(const UnitProblem& problem) const override;
};

UnitLayout Fsdp1Strategy::plan_unit(const UnitProblem& problem) const {
  const int64_t m = problem.ranks;
  UnitLayout layout = baseline::start_layout(problem, Placement::kContiguous);

  // _flat_param.py (align_addresses = use_orig_params): a zero pad before each
  // param so that it starts on 16 bytes, i.e. a multiple of tensor_align.
  int64_t flat_end = 0;
  for (const PlanTensor& t : problem.tensors) {
    const int64_t offset = baseline::round_up(flat_end, problem.tensor_align);
    layout.slots.push_back({offset, t.elements});
    flat_end = offset + t.elements;
  }

  // _flat_param.py sharding: S = ceil(F/N), rank r owns [rS, (r+1)S); S is not
  // rounded further, and granularity is ignored (computed here for the record).
  baseline::set_shard_size(layout, problem, baseline::ceil_div(flat_end, m));
  layout.honours_granularity = baseline::contiguous_honours_granularity(problem, layout);

  // Original params are views of the flat buffer: no all-gather copies. With
  // use_orig_params the flat buffer already carries a tail pad to N*S, so the
  // F.pad copy of _runtime_utils.py (_get_reduce_scatter_tensors) never runs;
  // the reduced shard is the output itself.
  return layout;
}

}  // namespace

std::unique_ptr<LayoutStrategy> make_fsdp1_strategy() { return std::make_unique<Fsdp1Strategy>(); }

}  // namespace ragged::planner
