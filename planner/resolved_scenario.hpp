#pragma once
// A scenario with its model built and its granularity checked against that
// model: what every command (plan, simulate, run, scenario validate) starts
// from. Every problem is an InputError naming the file, line and field.

#include <optional>

#include "models/model_spec.hpp"
#include "planner/granularity.hpp"
#include "scenarios/scenario_loader.hpp"

namespace ragged::planner {

struct ResolvedScenario {
  scenarios::LoadedScenario loaded;
  // What one rank of the mesh holds and runs (training.mesh: its tensor-
  // parallel widths, its share of the routed experts); the whole model when
  // FSDP runs alone. Plans and Programs are built from it.
  models::ModelSpec model;
  GranularityPolicy granularity;
  // The whole model, when `model` is one rank's part of it.
  std::optional<models::ModelSpec> whole_model;

  const scenarios::Scenario& scenario() const { return loaded.scenario; }
  // The whole model: its parameters and its FLOPs per token (MFU).
  const models::ModelSpec& whole() const { return whole_model ? *whole_model : model; }
};

ResolvedScenario resolve_scenario(scenarios::LoadedScenario loaded);

// The model a scenario names: catalog entry, config.json (relative to the
// scenario's directory) or inline architecture. Throws FieldError at model.*.
models::ModelSpec resolve_model(const scenarios::ModelSource& source, const std::filesystem::path& base_dir);

models::ArchConfig arch_from_proto(const scenarios::ModelArch& arch);

// The model's kernels for training.attention and training.loss.
models::KernelChoices kernel_choices(const scenarios::Training& training);

}  // namespace ragged::planner
