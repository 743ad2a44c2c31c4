#pragma once
// The built-in model catalog: published architectures with their published
// parameter totals (a test checks that every built model matches within 0.5%).

#include <string>
#include <string_view>
#include <vector>

#include "models/arch_config.hpp"
#include "models/model_spec.hpp"

namespace ragged::models {

struct CatalogEntry {
  ArchConfig arch;
  double published_params = 0;  // as stated by the model's authors
  std::string source;           // where the configuration comes from (HF repository)
};

const std::vector<CatalogEntry>& catalog();

// Looks a model up by name (case-insensitive); throws InputError listing the
// catalog when there is no such model.
const CatalogEntry& find_catalog_entry(std::string_view name);
ModelSpec catalog_model(std::string_view name);

}  // namespace ragged::models
