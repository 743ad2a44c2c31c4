#pragma once
// The global batch of a scenario in tokens, and the gradient accumulation
// steps that keep a given one at another GPU count: what `ragged simulate
// --sweep-global-batch` and the dashboard's Sweep tab do at each GPU count.

#include <cstdint>
#include <string>

#include "scenarios/scenario.pb.h"

namespace ragged::planner {

// Tokens one optimizer step trains: data-parallel ranks (the GPUs over tp x
// cp x pp, which share their micro-batch) x micro-batch x sequence x
// accumulation steps.
double global_batch_tokens(const scenarios::Scenario& scenario);

// The accumulation steps that make `tokens` a step at this scenario's GPU
// count, each data-parallel rank keeping its micro-batch; InputError
// "<what>: at N GPUs, ... does not divide ..." when no whole count from 1 to
// limits::kMaxAccumulation does.
int64_t accumulation_for_global_batch(const scenarios::Scenario& scenario, double tokens, const std::string& what);

}  // namespace ragged::planner
