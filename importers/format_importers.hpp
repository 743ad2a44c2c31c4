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

}  // namespace ragged::importers
