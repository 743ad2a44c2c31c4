#pragma once
// Training configs people already have, as scenarios: a torchtitan job
// TOML, an llm-foundry YAML or a DeepSpeed JSON becomes a scenario file
// (text format) whose comments account for every field of the input:
// mapped (and into what), taken from the command line, or not mapped and why.
// What a scenario needs and the config does not say (the GPU count and type,
// a DeepSpeed run's model and sequence length) comes from ImportOptions,
// which the CLI fills from its usual flags; a missing one is an InputError
// naming the field and the flag that supplies it.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "scenarios/scenario_loader.hpp"

namespace ragged::importers {

enum class ConfigFormat { kTorchtitan, kLlmFoundry, kDeepSpeed };

std::string format_name(ConfigFormat format);  // "torchtitan job config", ...

// What the command line adds; zero or empty: not given.
struct ImportOptions {
  std::string model;          // --model: a catalog name or a config.json (replaces the config's model)
  int64_t gpus = 0;           // --gpus
  std::string gpu;            // --gpu: a GPU preset; default h100
  int64_t gpus_per_node = 0;  // --gpus-per-node; default the GPU's NVLink domain (8), or the GPUs below it
  int64_t nics_per_node = 0;  // --nics-per-node
  double nic_gbps = 0;        // --nic-gbps
  int64_t micro_batch = 0;    // --micro-batch: where the config has none, or "auto"
  int64_t sequence_length = 0;  // --seq-len: where the config has none
};

// The format of a config file by its name and, for .json, its keys (a
// DeepSpeed config has zero_optimization, train_batch_size,
// train_micro_batch_size_per_gpu, ... and no scenario's model/cluster/training).
// nullopt: not an importable config (a scenario file, a shipped name).
std::optional<ConfigFormat> config_format_of(const std::string& path);

struct ImportedConfig {
  ConfigFormat format = ConfigFormat::kTorchtitan;
  std::string scenario_text;  // the scenario file, comments included
  // An llm-foundry MPT model as a Hugging Face config.json (model_type mpt),
  // which the scenario names as model.hf_config: "<model_config_name>"; empty
  // when the model is a catalog name or the user's own config.
  std::string model_config_json;
  std::string model_config_name;
  std::vector<std::string> warnings;  // fields that change the prediction and are not modelled, for stderr
};

// Reads `path` (16 MiB at most, like every input) and maps it; `scenario_name`
// names the scenario and its model-config file (default: the input's stem).
// Any problem is one InputError "file:line:col: field: what; how to fix".
ImportedConfig import_config(const std::filesystem::path& path, const ImportOptions& options,
                             const std::string& scenario_name = "");

// Writes the scenario to `out` (and its model config beside it, named after
// `out`), each atomically (a temporary file renamed into place); an empty
// `out` leaves the scenario in `scenario_text` for stdout, its model config
// in the cache (as load_imported does) and named there by its absolute path.
ImportedConfig write_imported(const std::filesystem::path& path, const ImportOptions& options,
                              const std::filesystem::path& out);

// The imported scenario loaded, defaulted and validated, as `ragged simulate
// FILE` and `ragged tune FILE` run it; a model config goes to the user's
// cache ($XDG_CACHE_HOME/ragged/import, else ~/.cache/ragged/import), named
// by a hash of its contents.
scenarios::LoadedScenario load_imported(const std::filesystem::path& path, const ImportOptions& options,
                                        const std::string& scenario_name = "");
// The same, from an import already made (the dashboard shows its notes too).
scenarios::LoadedScenario load_imported(const ImportedConfig& imported, const std::filesystem::path& path);

}  // namespace ragged::importers
