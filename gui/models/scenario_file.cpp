#include "gui/models/scenario_file.hpp"

#include <google/protobuf/util/json_util.h>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "common/file_io.hpp"

namespace ragged::gui {

std::string scenario_text(const scenarios::Scenario& scenario, scenarios::ScenarioFormat format) {
  if (format == scenarios::ScenarioFormat::kText) return scenarios::to_text(scenario);
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  std::string out;
  const auto status = google::protobuf::util::MessageToJsonString(scenario, &out, options);
  RAGGED_ASSERT(status.ok(), "a scenario always prints as JSON");
  return out;
}

void save_scenario(const scenarios::LoadedScenario& loaded, const std::filesystem::path& path) {
  const auto format = path.extension() == ".json" ? scenarios::ScenarioFormat::kJson : scenarios::ScenarioFormat::kText;
  scenarios::Scenario written = loaded.written;
  // A config.json named relative to the scenario it came from stays findable.
  if (written.model().has_hf_config()) {
    const std::filesystem::path config = written.model().hf_config();
    if (config.is_relative()) written.mutable_model()->set_hf_config(std::filesystem::absolute(loaded.base_dir / config).string());
  }
  try {
    write_file_atomically(path, scenario_text(written, format));
  } catch (const std::exception& e) {
    throw InputError(fmt::format("{}: cannot save the scenario: {}", path.string(), e.what()));
  }
}

}  // namespace ragged::gui
