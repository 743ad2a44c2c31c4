#include "importers/import_config.hpp"

#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "importers/config_readers.hpp"
#include "importers/format_importers.hpp"

namespace ragged::importers {
namespace {

std::string extension_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

// Keys only a DeepSpeed config has at its top level.
bool looks_like_deepspeed(const nlohmann::json& root) {
  if (!root.is_object()) return false;
  for (const char* scenario_key : {"model", "cluster", "training"}) {
    if (root.contains(scenario_key)) return false;
  }
  for (const char* key : {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
                          "zero_optimization", "fp16", "bf16", "zero_allow_untested_optimizer"}) {
    if (root.contains(key)) return true;
  }
  return false;
}

// The cache folder of imported model configs.
std::filesystem::path cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::filesystem::path(xdg) / "ragged" / "import";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::filesystem::path(home) / ".cache" / "ragged" / "import";
  }
  return std::filesystem::temp_directory_path() / "ragged-import";
}

// FNV-1a: the cache folder of a model config is named by its contents.
std::string content_hash(std::string_view text) {
  uint64_t hash = 1469598103934665603ULL;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", hash);
}

// Where the model config of `imported` lives in the cache, written there.
std::filesystem::path cached_model_config(const ImportedConfig& imported) {
  const std::filesystem::path dir = cache_dir() / content_hash(imported.model_config_json);
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    throw InputError(fmt::format("cannot create the cache folder {} for the imported model's config.json: {} (set "
                                 "XDG_CACHE_HOME, or write the scenario with `ragged scenario import FILE -o OUT`)",
                                 dir.string(), error.message()));
  }
  const std::filesystem::path file = dir / imported.model_config_name;
  write_file_atomically(file, imported.model_config_json);
  return file;
}

}  // namespace

std::string format_name(ConfigFormat format) {
  switch (format) {
    case ConfigFormat::kTorchtitan: return "torchtitan job config";
    case ConfigFormat::kLlmFoundry: return "llm-foundry training YAML";
    case ConfigFormat::kDeepSpeed: return "DeepSpeed config";
  }
  return "config";
}

std::optional<ConfigFormat> config_format_of(const std::string& path) {
  const std::string ext = extension_of(path);
  if (ext == ".toml") return ConfigFormat::kTorchtitan;
  if (ext == ".yaml" || ext == ".yml") return ConfigFormat::kLlmFoundry;
  if (ext != ".json") return std::nullopt;
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return std::nullopt;  // the scenario loader says why
  std::string text;
  try {
    text = read_file(path);
  } catch (const InputError&) {
    return std::nullopt;  // too large, unreadable: the scenario loader reports it
  }
  const nlohmann::json root = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !looks_like_deepspeed(root)) return std::nullopt;
  return ConfigFormat::kDeepSpeed;
}

ImportedConfig import_config(const std::filesystem::path& path, const ImportOptions& options,
                             const std::string& scenario_name) {
  std::optional<ConfigFormat> format = config_format_of(path.string());
  if (!format && extension_of(path.string()) == ".json") format = ConfigFormat::kDeepSpeed;  // say what is missing
  if (!format) {
    throw InputError(fmt::format("{}: not a config the importer reads: give a torchtitan job config (.toml), an "
                                 "llm-foundry YAML (.yaml) or a DeepSpeed config (.json)", path.string()));
  }
  const std::string text = read_file(path);  // 16 MiB at most, a regular file
  const std::string origin = path.string();
  const std::string name = scenario_name.empty() ? path.stem().string() : scenario_name;
  switch (*format) {
    case ConfigFormat::kTorchtitan:
      return import_torchtitan(read_toml(text, origin, format_name(*format)), options, name);
    case ConfigFormat::kLlmFoundry:
      return import_llm_foundry(read_yaml(text, origin, format_name(*format)), options, name);
    case ConfigFormat::kDeepSpeed:
      return import_deepspeed(read_json(text, origin, format_name(*format)), options, name);
  }
  throw InputError(origin + ": unknown config format");
}

ImportedConfig write_imported(const std::filesystem::path& path, const ImportOptions& options,
                              const std::filesystem::path& out) {
  ImportedConfig imported = import_config(path, options, out.empty() ? "" : out.stem().string());
  if (out.empty()) {
    if (!imported.model_config_json.empty()) {
      // Named by its absolute path, so that the scenario works from anywhere.
      const std::string relative = fmt::format("hf_config: \"{}\"", imported.model_config_name);
      const size_t at = imported.scenario_text.find(relative);
      if (at != std::string::npos) {
        imported.scenario_text.replace(at, relative.size(),
                                       fmt::format("hf_config: \"{}\"", cached_model_config(imported).string()));
      }
    }
    return imported;
  }
  if (!imported.model_config_json.empty()) {
    const std::filesystem::path parent = out.parent_path();
    write_file_atomically(parent / imported.model_config_name, imported.model_config_json);
  }
  write_file_atomically(out, imported.scenario_text);
  return imported;
}

scenarios::LoadedScenario load_imported(const std::filesystem::path& path, const ImportOptions& options,
                                        const std::string& scenario_name) {
  return load_imported(import_config(path, options, scenario_name), path);
}

scenarios::LoadedScenario load_imported(const ImportedConfig& imported, const std::filesystem::path& path) {
  std::filesystem::path base = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  if (!imported.model_config_json.empty()) base = cached_model_config(imported).parent_path();
  // Located errors would point into the generated text: the origin says it is the import.
  scenarios::LoadedScenario loaded = scenarios::parse_scenario(
      imported.scenario_text, scenarios::ScenarioFormat::kText, fmt::format("{} (imported)", path.string()), base);
  loaded.locations = scenarios::FieldLocations{};
  return loaded;
}

}  // namespace ragged::importers
