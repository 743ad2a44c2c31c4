#include "planner/pipeline_schedule.hpp"

#include <algorithm>

#include "common/errors.hpp"

namespace ragged::planner {
namespace {

using ActionPass = PipelineAction::Pass;

// Warm-up forwards, then one forward and one backward in turn, then the
// remaining backwards, over `forwards` and `backwards` in their order.
std::vector<PipelineAction> one_forward_one_backward(const std::vector<PipelineAction>& forwards,
                                                     const std::vector<PipelineAction>& backwards, size_t warmup) {
  std::vector<PipelineAction> out;
  warmup = std::min(warmup, forwards.size());
  out.insert(out.end(), forwards.begin(), forwards.begin() + static_cast<std::ptrdiff_t>(warmup));
  size_t b = 0;
  for (size_t f = warmup; f < forwards.size(); ++f) {
    out.push_back(forwards[f]);
    out.push_back(backwards[b++]);
  }
  while (b < backwards.size()) out.push_back(backwards[b++]);
  return out;
}

std::vector<PipelineAction> passes(ActionPass pass, int micro_batches) {
  std::vector<PipelineAction> out;
  for (int mb = 0; mb < micro_batches; ++mb) out.push_back({pass, mb, 0});
  return out;
}

// Megatron's interleaved order: the k-th forward runs chunk (k / pp) % v of
// micro-batch (k / (pp v)) pp + k % pp; backwards run the chunks last first.
std::vector<PipelineAction> interleaved(int stages, int stage, int micro_batches, int chunks, int extra_warmup) {
  const int total = micro_batches * chunks;
  std::vector<PipelineAction> forwards, backwards;
  for (int k = 0; k < total; ++k) {
    const int micro_batch = (k / (stages * chunks)) * stages + k % stages;
    const int round_chunk = (k / stages) % chunks;
    forwards.push_back({ActionPass::kForward, micro_batch, round_chunk});
    backwards.push_back({ActionPass::kBackward, micro_batch, chunks - 1 - round_chunk});
  }
  const size_t warmup = static_cast<size_t>((stages - stage - 1) * 2 + (chunks - 1) * stages + extra_warmup);
  return one_forward_one_backward(forwards, backwards, warmup);
}

// 1F1B's order with each backward split in B then W, stage s running the W
// of micro-batch i after the B of micro-batch i + s: in the steady state
// stage s runs F(x), B(x - (pp - 1 - s)), W(x - (pp - 1)), so the last stage,
// whose B the others wait for, defers its W most.
std::vector<PipelineAction> zero_bubble_h1(int stages, int stage, int micro_batches) {
  const std::vector<PipelineAction> order = one_forward_one_backward(passes(ActionPass::kForward, micro_batches),
                                                                     passes(ActionPass::kBackwardInput, micro_batches),
                                                                     static_cast<size_t>(stages - stage - 1));
  const int delay = stage;
  std::vector<PipelineAction> out;
  int next_weight = 0;
  for (const PipelineAction& a : order) {
    out.push_back(a);
    if (a.pass == ActionPass::kBackwardInput && a.micro_batch - delay >= next_weight) {
      out.push_back({ActionPass::kBackwardWeight, next_weight++, 0});
    }
  }
  while (next_weight < micro_batches) out.push_back({ActionPass::kBackwardWeight, next_weight++, 0});
  return out;
}

}  // namespace

std::string_view pipeline_schedule_name(PipelineScheduleKind kind) {
  switch (kind) {
    case PipelineScheduleKind::kGpipe:
      return "GPipe";
    case PipelineScheduleKind::kOneFOneB:
      return "1F1B";
    case PipelineScheduleKind::kInterleaved1F1B:
      return "interleaved 1F1B";
    case PipelineScheduleKind::kZeroBubbleH1:
      return "ZB-H1";
  }
  return "?";
}

std::vector<PipelineAction> stage_schedule(PipelineScheduleKind kind, int stages, int stage, int micro_batches,
                                           int chunks, int extra_warmup) {
  RAGGED_ASSERT(stages >= 1 && stage >= 0 && stage < stages && micro_batches >= 1 && chunks >= 1,
                "a stage of the pipeline and at least one micro-batch");
  RAGGED_ASSERT(chunks == 1 || kind == PipelineScheduleKind::kInterleaved1F1B, "chunks only interleave");
  RAGGED_ASSERT(extra_warmup >= 0 && (extra_warmup == 0 || kind == PipelineScheduleKind::kInterleaved1F1B),
                "an extra warm-up forward only for interleaved 1F1B");
  switch (kind) {
    case PipelineScheduleKind::kGpipe: {
      std::vector<PipelineAction> out = passes(ActionPass::kForward, micro_batches);
      const std::vector<PipelineAction> backwards = passes(ActionPass::kBackward, micro_batches);
      out.insert(out.end(), backwards.begin(), backwards.end());
      return out;
    }
    case PipelineScheduleKind::kOneFOneB:
      return one_forward_one_backward(passes(ActionPass::kForward, micro_batches),
                                      passes(ActionPass::kBackward, micro_batches),
                                      static_cast<size_t>(stages - stage - 1));
    case PipelineScheduleKind::kInterleaved1F1B:
      RAGGED_ASSERT(micro_batches % stages == 0, "interleaved 1F1B runs micro-batches in rounds of pp");
      return interleaved(stages, stage, micro_batches, chunks, extra_warmup);
    case PipelineScheduleKind::kZeroBubbleH1:
      return zero_bubble_h1(stages, stage, micro_batches);
  }
  throw InternalError("stage_schedule: unknown schedule");
}

}  // namespace ragged::planner
