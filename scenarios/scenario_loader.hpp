#pragma once
// Loading a Scenario from protobuf text format or JSON, with defaults applied
// and every field validated. Any problem is one InputError naming the file,
// the line and column, and the field path.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/embedded_file.hpp"
#include "scenarios/field_locations.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::scenarios {

enum class ScenarioFormat { kText, kJson };

struct LoadedScenario {
  Scenario written;   // as the file has it
  Scenario scenario;  // defaults applied, validated
  std::string origin; // the file path, or "builtin:<name>"
  std::filesystem::path base_dir;  // relative paths inside the scenario resolve here
  FieldLocations locations;
};

// `.json` files are JSON; anything else is text format.
LoadedScenario load_scenario_file(const std::filesystem::path& path);

LoadedScenario parse_scenario(std::string_view text, ScenarioFormat format, const std::string& origin,
                              const std::filesystem::path& base_dir);

// A scenario file path, or the name of a shipped scenario ("llama3-8b-8xh100").
LoadedScenario load_scenario(std::string_view name_or_path);

// The same scenario on `gpus` GPUs: nodes (and gpus_per_node below one node)
// change, and the shard and replicate groups are re-derived unless written.
LoadedScenario with_total_gpus(const LoadedScenario& loaded, int64_t gpus);

// The same scenario with training.mesh's tp, cp, ep and pp set (0 keeps one).
// A new tp, cp or pp changes what is left to FSDP: the written shard group gives
// way (the data-parallel sizes follow), the replicas stay where they still
// divide the GPUs. A pp of 1 drops the pipeline block, another pp a written
// split of the layers over the old stages. `--tp/--cp/--ep/--pp` and the
// dashboard's knobs.
LoadedScenario with_mesh(const LoadedScenario& loaded, int64_t tp, int64_t cp, int64_t ep, int64_t pp = 0);

// After edits to `written` (command-line overrides): defaults and validation again.
LoadedScenario rebuild(LoadedScenario loaded);

// An InputError "origin:line:col: path: message" (the location of the nearest
// written ancestor when the field itself was not written).
[[noreturn]] void throw_field_error(const LoadedScenario& loaded, std::string_view path,
                                    const std::string& message);
std::string field_error_text(const std::string& origin, const FieldLocations& locations,
                             std::string_view path, const std::string& message);

// Scenarios compiled into the binary, from the repository's scenarios/ folder.
const std::vector<EmbeddedFile>& shipped_scenarios();
// The scenario `make demo` and a bare `ragged simulate` run.
inline constexpr const char* kDefaultScenario = "llama3-8b-8xh100";

// The scenario back as text format (defaults included), for traces and reports.
std::string to_text(const Scenario& scenario);

}  // namespace ragged::scenarios
