#pragma once
// A training config of another stack (torchtitan TOML, llm-foundry YAML,
// DeepSpeed JSON) opened in the dashboard: imported by the same importers
// library as `ragged scenario import`, with what the config does not say
// (the GPU count and type, a DeepSpeed run's model and sequence length)
// taken from the window's settings, and the import's notes kept to show.
// No Qt.

#include <string>
#include <vector>

#include "gui/models/scenario_settings.hpp"
#include "scenarios/scenario_loader.hpp"

namespace ragged::gui {

struct ConfigImport {
  scenarios::LoadedScenario loaded;
  std::string format;                  // "torchtitan job config", ...
  std::vector<std::string> warnings;   // what changes the prediction and is not modelled
  std::vector<std::string> unmapped;   // "job.dump_folder = \"./outputs\" (line 4)": fields not mapped
  std::string notes;                   // the scenario's comments: every field, mapped or not and why
  std::vector<std::string> from_window;  // the settings the window supplied ("cluster: 8 GPUs")
};

// True for a file the importers read (by extension, and a .json by its keys).
bool is_importable_config(const std::string& path);

// The config at `path` as a scenario. The config decides whatever it fixes;
// the window's GPU count only fills a count the config leaves open. Throws
// InputError with the importer's message and what the window supplied.
ConfigImport import_config_file(const std::string& path, const ScenarioSettings& window);

// One line: "llama3_8b.toml (torchtitan job config): 25 fields not mapped,
// 0 warnings; from the window: cluster: 16 GPUs, ...".
std::string import_summary(const ConfigImport& imported, const std::string& path);

}  // namespace ragged::gui
