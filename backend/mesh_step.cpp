#include "backend/mesh_step.hpp"

#include "common/errors.hpp"

namespace ragged::backend {

using planner::OpKind;

TpPass tp_pass(planner::Pass pass) {
  switch (pass) {
    case planner::Pass::kForward: return TpPass::kForward;
    case planner::Pass::kBackward: return TpPass::kBackward;
    case planner::Pass::kRecompute:
    case planner::Pass::kSelectiveRecompute: break;
  }
  return TpPass::kAgain;
}

TpStep tensor_parallel_step(const planner::Op& op, int model_unit, bool head) {
  const bool context = op.group == planner::Group::kContext;
  RAGGED_ASSERT(context || op.group == planner::Group::kTensor, "a mesh exchange of the tp or cp group: " + op.name);
  TpStep step{model_unit, op.part, tp_pass(op.pass), TpCollective::kAllGather};
  switch (op.kind) {
    case OpKind::kAllGather: step.collective = context ? TpCollective::kKeyValueGather : TpCollective::kAllGather; break;
    case OpKind::kReduceScatter:
      step.collective = context ? TpCollective::kKeyValueGradientScatter : TpCollective::kReduceScatter;
      break;
    case OpKind::kAllReduce:
      RAGGED_ASSERT(head && !context, "a tp all-reduce of activations (sequence parallelism is off?): " + op.name);
      step.collective = TpCollective::kLossStats;
      break;
    default: RAGGED_ASSERT(false, "not a tensor-parallel collective: " + op.name);
  }
  return step;
}

bool sums_partials(TpCollective collective) {
  return collective == TpCollective::kReduceScatter || collective == TpCollective::kKeyValueGradientScatter;
}

bool gathers_before(models::UnitPart part, bool backward) {
  if (backward) return part != models::UnitPart::kAttentionInput;
  return part != models::UnitPart::kAttentionCore;
}

bool scatters_after(models::UnitPart part, bool backward) {
  if (backward) return part != models::UnitPart::kAttentionCore;
  return part != models::UnitPart::kAttentionInput;
}

int32_t local_vocabulary_id(int32_t id, int rank, int64_t vocab) {
  const int64_t row = id - rank * vocab;
  return row >= 0 && row < vocab ? static_cast<int32_t>(row) : -1;
}

}  // namespace ragged::backend
