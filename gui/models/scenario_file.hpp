#pragma once
// Saving the scenario the window has built: the fields as written (plus the
// window's edits), as text format or JSON by the file's extension, so that
// `ragged simulate FILE` reads back the same scenario. No Qt.

#include <filesystem>
#include <string>

#include "scenarios/scenario_loader.hpp"

namespace ragged::gui {

std::string scenario_text(const scenarios::Scenario& scenario, scenarios::ScenarioFormat format);

// Writes atomically; throws InputError naming the file.
void save_scenario(const scenarios::LoadedScenario& loaded, const std::filesystem::path& path);

}  // namespace ragged::gui
