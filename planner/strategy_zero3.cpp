// DeepSpeed ZeRO-3: per-parameter element-wise partitions
// (deepspeed/runtime/zero/partition_parameters.py, stage3.py,
// runtime/comm/coalesced_collectives.py, zero/config.py). Rank-major: rank r
// owns elements [rP, (r+1)P) of every flattened parameter, the last zero-padded.

#include <memory>

#include "planner/baseline_util.hpp"
#include "planner/layout_strategy.hpp"
#include "planner/zero3_fetch.hpp"

namespace ragged::planner {
namespace {

class Zero3Strategy final : public LayoutStrategy {
 public:
  std::string_view name() const override { return "zero3"; }
  UnitLayout plan_unit(const UnitProblem& problem) const override;
};

UnitLayout Zero3Strategy::plan_unit(const UnitProblem& problem) const {
  const int64_t m = problem.ranks;
  UnitLayout layout = baseline::start_layout(problem, Placement::kRankMajor);
  layout.chunk_rule = ChunkRule::kElements;

  // partition_parameters.py (_padding_size): P = ceil(n/N) per parameter; the
  // fetch set's flat all-gather buffer holds the partitions in order (S = sum).
  int64_t shard = 0;
  for (const PlanTensor& t : problem.tensors) {
    const int64_t chunk = baseline::ceil_div(t.elements, m);
    layout.slots.push_back({shard, chunk});
    shard += chunk;
    // Small parameters stay gathered between uses.
    if (zero3_persistent(t)) {
      layout.persistent_elements += t.elements;
      layout.persistent_shard_elements += chunk;
      layout.slots.back().persistent = true;
    }
  }
  baseline::set_shard_size(layout, problem, shard);
  // Flat partitions are cut every P elements, wherever rows and granules fall.
  layout.honours_granularity = baseline::chunks_honour_granularity(problem, layout);

  // partition_parameters.py: a single-parameter fetch gathers straight into
  // the parameter's padded storage (zero copy); a set of several, torch.cat
  // of their shards into this rank's slot and of the per-rank slices out.
  layout.fetch_groups = zero3_fetch_groups(problem);
  layout.copies.all_gather_in = group_shard_elements(layout, tensors_gathered_coalesced(layout));
  layout.copies.all_gather_out = m * layout.copies.all_gather_in;
  // stage3.py + coalesced_collectives.py: grads copied into the IPG bucket,
  // then a rank-interleaved torch.cat (two m*S copies); the reduced partition
  // is copied into grad_partitions_flat_buffer (S).
  layout.copies.reduce_scatter_in = 2 * m * shard;
  layout.copies.reduce_scatter_out = shard;
  return layout;
}

}  // namespace

std::unique_ptr<LayoutStrategy> make_zero3_strategy() { return std::make_unique<Zero3Strategy>(); }

}  // namespace ragged::planner
