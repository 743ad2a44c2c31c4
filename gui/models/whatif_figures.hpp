#pragma once
// What the What-if tab shows of one simulation: the step against the
// healthy cluster's, the critical rank and what it waited on
// (sim::summarize_whatif, as `ragged simulate --slow-gpus` prints them), and
// the goodput under interruptions (planner::estimate_goodput, as `ragged
// simulate --goodput` prints them). One row per figure: its text and the
// number behind it. No Qt here.

#include <string>
#include <vector>

#include "planner/goodput.hpp"
#include "sim/whatif_summary.hpp"
#include "traces/trace.pb.h"

namespace ragged::gui {

enum class WhatIfFigure {
  kChanged,          // what the what-if changes (no number)
  kStep,             // seconds
  kHealthyStep,      // seconds; 0: not simulated
  kSlowdown,         // step / healthy step
  kCriticalRank,     // the rank
  kWaitedOn,         // the critical rank's exposed communication, seconds
  kGoodput,          // fraction of the wall time that trains
  kMtbf,             // the job's, seconds; infinity: no interruptions
  kCheckpoint,       // write time, seconds
  kInterval,         // seconds between checkpoints; infinity: none
  kTokensPerGpu,     // effective (goodput-adjusted) tokens/s per GPU
  kDaysToTrain,      // 0: goodput.train_tokens not set
  kCount
};

struct WhatIfRow {
  std::string name;
  std::string text;
  double value = 0;
};

struct WhatIfFigures {
  sim::WhatIfSummary whatif;
  planner::GoodputSettings settings;
  planner::GoodputEstimate goodput;
  double tokens_per_s_per_gpu = 0;  // this step's, before interruptions
};

// The figures of `trace` (and its straggler report, null without a what-if)
// for `resolved`. Builds rank 0's Program for the checkpoint size: run it
// off the window's thread.
WhatIfFigures whatif_figures(const planner::ResolvedScenario& resolved, const traces::Trace& trace,
                             const sim::StragglerReport* report);

// One row per WhatIfFigure, in its order.
std::vector<WhatIfRow> whatif_rows(const WhatIfFigures& figures);

}  // namespace ragged::gui
