#include "gui/models/config_import.hpp"

#include <filesystem>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.hpp"
#include "importers/import_config.hpp"

namespace ragged::gui {
namespace {

constexpr std::string_view kCommandLineHeading = "From the command line:";

// What a config never says, from the window; `gpus` only when asked.
importers::ImportOptions window_options(importers::ConfigFormat format, const ScenarioSettings& window, bool gpus) {
  importers::ImportOptions o;
  o.gpu = window.gpu_preset;
  o.gpus = gpus ? window.gpus : 0;
  // Each is used only where the config has none (or "auto").
  o.micro_batch = window.micro_batch;
  o.sequence_length = window.sequence_length;
  // A DeepSpeed config names no model; in the other formats a model would replace the config's.
  if (format == importers::ConfigFormat::kDeepSpeed) o.model = window.model;
  return o;
}

// The scenario text's leading comments, "# " dropped, the command line
// called what it is here; the items of the "Not mapped" and command-line
// sections collected.
void read_notes(const std::string& scenario_text, ConfigImport& out) {
  std::istringstream lines(scenario_text);
  std::string line, section;
  while (std::getline(lines, line) && line.starts_with('#')) {
    std::string text = line.substr(line.starts_with("# ") ? 2 : 1);
    if (!text.starts_with(' ') && text.ends_with(':')) {
      section = text;
      if (section == kCommandLineHeading) text = "From the window's settings (Explore):";
    } else if (text.starts_with("  ")) {
      const std::string item = text.substr(text.find_first_not_of(' '));
      if (section.starts_with("Not mapped")) out.unmapped.push_back(item);
      if (section == kCommandLineHeading) out.from_window.push_back(item.substr(0, item.find("  <- ")));
    }
    out.notes += text + '\n';
  }
}

}  // namespace

bool is_importable_config(const std::string& path) { return importers::config_format_of(path).has_value(); }

ConfigImport import_config_file(const std::string& path, const ScenarioSettings& window) {
  const std::optional<importers::ConfigFormat> format = importers::config_format_of(path);
  if (!format) throw InputError(fmt::format("{}: not a torchtitan, llm-foundry or DeepSpeed config", path));
  importers::ImportedConfig imported;
  try {
    imported = importers::import_config(path, window_options(*format, window, false));
  } catch (const InputError&) {
    // The config leaves the GPU count open (or its batch does not fix it): the window's fills it.
    try {
      imported = importers::import_config(path, window_options(*format, window, true));
    } catch (const InputError& e) {
      throw InputError(fmt::format("{} (opened in the dashboard: Explore's settings stand in for --gpus {}, --gpu, "
                                   "--micro-batch, --seq-len and, for DeepSpeed, --model; change them and open the "
                                   "config again)",
                                   e.what(), window.gpus));
    }
  }
  ConfigImport out;
  out.loaded = importers::load_imported(imported, path);
  out.format = importers::format_name(*format);
  out.warnings = imported.warnings;
  read_notes(imported.scenario_text, out);
  return out;
}

std::string import_summary(const ConfigImport& imported, const std::string& path) {
  const auto count = [](size_t n, const char* what) { return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s"); };
  std::string line = fmt::format("{} ({}): {} not mapped, {}", std::filesystem::path(path).filename().string(),
                                 imported.format, count(imported.unmapped.size(), "field"),
                                 count(imported.warnings.size(), "warning"));
  if (!imported.from_window.empty()) line += fmt::format("; from the window: {}", fmt::join(imported.from_window, ", "));
  return line;
}

}  // namespace ragged::gui
