#pragma once
// `ragged simulate --goodput` and its overrides of the scenario's goodput
// block (--interruptions-per-gpu-hour, --storage-*, --async-checkpoint,
// --restart-minutes, --checkpoint-interval-minutes, --train-tokens). Any
// override implies --goodput. `ragged tune --rank-by goodput` takes the same
// settings (add_settings_to; its --train-tokens is its own).

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "planner/resolved_scenario.hpp"

namespace ragged::cli {

struct GoodputOptions {
  bool goodput = false;
  bool async_checkpoint = false;
  std::optional<double> interruptions_per_gpu_hour;
  std::optional<double> storage_gbytes_per_s_per_node;
  std::optional<double> storage_aggregate_tbytes_per_s;
  std::optional<double> restart_minutes;
  std::optional<double> checkpoint_interval_minutes;
  std::optional<double> train_tokens;

  void add_to(CLI::App* command);
  // The settings alone (not --goodput, not --train-tokens); their help says
  // each one implies `implies`.
  void add_settings_to(CLI::App* command, const std::string& implies);
  bool settings_given() const;  // any setting but --train-tokens
  bool requested() const;
  // Writes the overrides into the scenario's goodput block (written and defaulted).
  void apply(scenarios::LoadedScenario& loaded) const;
  // ... into every scenario's.
  void apply(std::vector<planner::ResolvedScenario>& configs) const;
};

}  // namespace ragged::cli
