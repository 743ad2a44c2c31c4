#pragma once
// The order one pipeline stage's rank runs its micro-batches' passes in, for
// each schedule (docs/MESH.md, "Pipeline parallelism"): the bubble is what
// the simulator finds when every stage runs its order and waits for its
// neighbours' sends, not a formula.
//  - GPipe (Huang et al. 2019): every forward, then every backward;
//  - 1F1B (PipeDream-flush, Narayanan et al. 2021): pp - stage - 1 forwards,
//    then one forward and one backward in turn, then the last backwards;
//  - interleaved 1F1B (Megatron-LM, Narayanan et al. 2021, section 2.2): v
//    model chunks per rank, micro-batches in rounds of pp, chunk by chunk,
//    the warm-up (pp - stage - 1) x 2 + (v - 1) x pp forwards;
//  - ZB-H1 (Qi et al. 2024): 1F1B with every backward split into its input
//    gradient (B) and its weight gradient (W), stage s deferring its W by
//    s micro-batches into the time 1F1B leaves idle.

#include <string_view>
#include <vector>

namespace ragged::planner {

enum class PipelineScheduleKind { kGpipe, kOneFOneB, kInterleaved1F1B, kZeroBubbleH1 };

std::string_view pipeline_schedule_name(PipelineScheduleKind kind);  // "1F1B", ...

struct PipelineAction {
  enum class Pass {
    kForward,
    kBackward,        // the whole backward
    kBackwardInput,   // ZB-H1's B: the input gradient, what the previous stage waits for
    kBackwardWeight,  // ZB-H1's W: the weight gradients
  };
  Pass pass = Pass::kForward;
  int micro_batch = 0;
  int chunk = 0;  // the rank's model chunk, 0 to virtual stages - 1

  bool operator==(const PipelineAction&) const = default;
};

// The actions of stage `stage` of `stages`, in the order its rank runs them.
// `chunks` > 1 only for interleaved 1F1B, whose micro_batches are a multiple
// of `stages` (scenario validation). `extra_warmup` forwards more before the
// steady state, interleaved 1F1B only: Megatron-Core runs one more when it
// overlaps the expert all-to-alls, so that the forward and the backward of
// each steady-state pair, which it runs together, do not depend on each other.
std::vector<PipelineAction> stage_schedule(PipelineScheduleKind kind, int stages, int stage, int micro_batches,
                                           int chunks = 1, int extra_warmup = 0);

}  // namespace ragged::planner
