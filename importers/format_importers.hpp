#pragma once
// One importer per format (torchtitan_import.cpp, foundry_import.cpp,
// deepspeed_import.cpp), each mapping a ConfigDocument through a ScenarioDraft.

#include <string>

#include "importers/config_document.hpp"
#include "importers/import_config.hpp"

namespace ragged::importers {

ImportedConfig import_torchtitan(const ConfigDocument& doc, const ImportOptions& options, const std::string& name);
ImportedConfig import_llm_foundry(const ConfigDocument& doc, const ImportOptions& options, const std::string& name);
ImportedConfig import_deepspeed(const ConfigDocument& doc, const ImportOptions& options, const std::string& name);

class ScenarioDraft;
// torchtitan's precision, checkpointing, compile, float8 and optimizer
// (torchtitan_kernels.cpp); `old_layout`: the October 2024 TOML.
void map_torchtitan_kernels(const ConfigDocument& doc, ScenarioDraft& draft, bool old_layout);
// An llm-foundry YAML's model and kernels (foundry_model.cpp): the MPT
// config.json the scenario names as "<name>.config.json", "" when the model is
// a catalog name, a local checkpoint or --model.
std::string map_foundry_model(const ConfigDocument& doc, ScenarioDraft& draft, const ImportOptions& options,
                              const std::string& name);

}  // namespace ragged::importers
