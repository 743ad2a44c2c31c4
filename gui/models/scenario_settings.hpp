#pragma once
// The knobs the dashboard's Explore tab exposes, as one plain struct read
// from a scenario and written back into it. Only the knobs that differ from
// the scenario's own values are written, so everything else the file says
// (hyper-parameters, topology, overrides) is kept. No Qt here.

#include <cstdint>
#include <string>
#include <vector>

#include "scenarios/scenario_loader.hpp"

namespace ragged::gui {

struct ScenarioSettings {
  std::string model;       // a catalog name or a config.json path
  std::string gpu_preset;  // h100, h800, ...
  int64_t gpus = 8;
  int64_t gpus_per_node = 8;
  int64_t nics_per_node = 8;
  double nic_gbits_per_s = 400;
  scenarios::Strategy strategy = scenarios::RAGGED;
  std::string granularity = "element";  // the --granularity syntax
  // GPUs per shard group; the rest replicate (HSDP). Unless written, what
  // the scenario derives (settings_of), which follows the GPU count: a
  // group of every GPU stays so, a smaller one stays where it divides.
  int64_t shard_group = 0;
  // shard_group was given (typed in the window): applied as is, whatever the
  // scenario had, and kept when the GPUs change; one that does not divide
  // them is an InputError naming the divisors nearby.
  bool shard_group_written = false;
  int64_t tp = 1;                       // the device mesh (training.mesh, docs/MESH.md)
  int64_t cp = 1;
  int64_t ep = 1;
  int64_t pp = 1;  // pipeline stages (training.mesh.pp), as --pp writes them
  // The stages' schedule (training.pipeline.schedule; with pp > 1 only) and the
  // step's micro-batches (training.gradient_accumulation_steps: a pipeline's too).
  scenarios::PipelineSchedule schedule = scenarios::ONE_F_ONE_B;
  int64_t accumulation = 1;
  int64_t micro_batch = 1;
  int64_t sequence_length = 4096;
  scenarios::Checkpointing checkpointing = scenarios::NONE;
  // The routed experts' own mode under ep (training.experts.checkpointing);
  // CHECKPOINTING_UNSPECIFIED: the block's.
  scenarios::Checkpointing experts_checkpointing = scenarios::CHECKPOINTING_UNSPECIFIED;
  // Megatron-Core's overlapped expert all-to-alls (training.experts.overlap_all_to_all).
  bool experts_overlap = false;
  int64_t prefetch_depth = 1;
  std::string optimizer = "adamw";  // one of scenarios::optimizer_names()

  int64_t nodes() const { return gpus_per_node > 0 ? gpus / gpus_per_node : 0; }
  bool operator==(const ScenarioSettings&) const = default;
};

// The settings a (defaulted) scenario has.
ScenarioSettings settings_of(const scenarios::Scenario& scenario);

// `base` with the settings that differ from settings_of(base.scenario)
// written into it, defaulted and validated again. Throws InputError with the
// CLI's wording when a value is out of range or inconsistent.
scenarios::LoadedScenario apply_settings(const scenarios::LoadedScenario& base, const ScenarioSettings& settings);

// A scenario for a model picked in the window (catalog name or config.json)
// on `gpus` GPUs of `gpu_preset`, nodes of 8 (fewer GPUs: one node).
scenarios::LoadedScenario scenario_for_model(const std::string& model, const std::string& gpu_preset, int64_t gpus);

// Names offered by the window's choosers.
std::vector<std::string> catalog_model_names();
std::vector<std::string> gpu_preset_names();
std::vector<std::string> shipped_scenario_names();

}  // namespace ragged::gui
