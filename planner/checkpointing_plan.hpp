#pragma once
// Which activation checkpointing each FSDP unit runs: the scenario's mode,
// and with training.checkpoint_every n > 1 under FULL, TorchTitan's
// "selective layer" AC: its wrapper counts blocks from 1 and checkpoints the
// n-th, 2n-th, ... block; the other blocks keep every activation. With
// SAVED_NAMES, which tensors each block keeps.

#include <optional>
#include <vector>

#include "models/model_spec.hpp"
#include "planner/plan.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::planner {

// The model's checkpointing mode for the scenario's training.activation_checkpointing:
// SAVED_NAMES is selective checkpointing with the named tensors kept
// (models::KernelChoices::saved_names).
models::Checkpointing checkpointing_mode(scenarios::Checkpointing mode);

// What SAVED_NAMES keeps of each block, its presets expanded (DOTS,
// DOTS_NO_BATCH_DIMS); nothing under the other modes. Throws FieldError at
// training.saved_activations for DOTS under MATH attention (whose S x S
// scores it would keep, not modelled).
std::optional<models::SavedNames> saved_names(const scenarios::Training& training);

// One mode per unit of `plan`, in the plan's order: a block's routed experts
// (a unit of their own under ep) take training.experts.checkpointing where it
// is set, the block's mode otherwise.
std::vector<models::Checkpointing> unit_checkpointing(const models::ModelSpec& model, const Plan& plan,
                                                      const scenarios::Training& training);

}  // namespace ragged::planner
