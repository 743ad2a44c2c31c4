#pragma once
// A simulated candidate's goodput under interruptions: planner::estimate_goodput
// with the candidate's scenario (its cluster, shard group and goodput block)
// and the figures the search already has (step time, tokens/s per GPU, the
// checkpoint bytes the planner counted): the inputs `ragged simulate
// --goodput` gives it, so nothing is simulated again and the result cache
// needs no goodput in its key.

#include "planner/goodput.hpp"
#include "scenarios/scenario.pb.h"
#include "tune/evaluation.hpp"

namespace ragged::tune {

// `evaluation` must be simulated (a step time above zero).
planner::GoodputEstimate candidate_goodput(const scenarios::Scenario& scenario, const Evaluation& evaluation);

}  // namespace ragged::tune
