#pragma once
// Sizes that the scenario's fields alone do not bound, checked once the model
// is built (docs/RELIABILITY.md, "Input limits"): the Program's length
// (micro-batches x units) and the bytes one step allocates, so that every
// count downstream stays exact (at most 2^53) and the Program fits in memory.

#include "models/model_spec.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::planner {

// Throws FieldError at training.gradient_accumulation_steps or
// training.micro_batch_size.
void check_step_size(const scenarios::Scenario& scenario, const models::ModelSpec& model);

}  // namespace ragged::planner
