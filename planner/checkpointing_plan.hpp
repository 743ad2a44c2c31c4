#pragma once
// Which activation checkpointing each FSDP unit runs: the scenario's mode,
// and with training.checkpoint_every n > 1 under FULL, TorchTitan's
// "selective layer" AC: its wrapper counts blocks from 1 and checkpoints the
// n-th, 2n-th, ... block; the other blocks keep every activation.

#include <vector>

#include "models/model_spec.hpp"
#include "planner/plan.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::planner {

// The model's checkpointing mode for the scenario's training.activation_checkpointing.
models::Checkpointing checkpointing_mode(scenarios::Checkpointing mode);

// One mode per unit of `plan`, in the plan's order.
std::vector<models::Checkpointing> unit_checkpointing(const models::ModelSpec& model, const Plan& plan,
                                                      const scenarios::Training& training);

}  // namespace ragged::planner
