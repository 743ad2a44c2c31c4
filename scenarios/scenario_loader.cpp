#include "scenarios/scenario_loader.hpp"

#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/edit_distance.hpp"
#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "scenarios/scenario_rules.hpp"
#include "scenarios/text_format.hpp"

namespace ragged::scenarios {
namespace {

namespace pb = google::protobuf;

Scenario parse_text(std::string_view text, const std::string& origin, const FieldLocations& locations) {
  Scenario scenario;
  parse_text_message(text, origin, locations, &scenario);
  return scenario;
}

// Protobuf's JSON errors read "(cluster.nodes): invalid value ..." or
// "(cluster) nodez: Cannot find field.": the path and what is wrong, read by
// hand (std::regex's recursion overflowed the stack on a 30,000-character
// name), the unknown name echoed shortened.
struct JsonErrorPath {
  std::string path;
  std::string detail;
};

std::optional<JsonErrorPath> json_error_path(const std::string& message) {
  // A field of the top level has no parenthesised path: "bogus: Cannot find field."
  const bool top_level = message.empty() || message.front() != '(';
  const size_t close = top_level ? 0 : message.find(')');
  if (close == std::string::npos) return std::nullopt;
  size_t at = top_level ? 0 : close + 1;
  const auto skip_spaces = [&] {
    while (at < message.size() && std::isspace(static_cast<unsigned char>(message[at]))) ++at;
  };
  skip_spaces();
  const size_t name_begin = at;
  while (at < message.size() && (std::isalnum(static_cast<unsigned char>(message[at])) || message[at] == '_')) ++at;
  const std::string name = message.substr(name_begin, at - name_begin);
  skip_spaces();
  if (at >= message.size() || message[at] != ':') return std::nullopt;
  ++at;
  skip_spaces();
  JsonErrorPath out;
  out.path = top_level ? "" : to_snake_case(message.substr(1, close - 1));
  out.detail = clipped(message.substr(at, message.find('\n', at) - at));
  if (top_level && (name.empty() || !out.detail.starts_with("Cannot find field"))) return std::nullopt;
  if (!name.empty()) {
    out.path = out.path.empty() ? to_snake_case(name) : out.path + "." + to_snake_case(name);
    out.detail = fmt::format("unknown field '{}'", shortened(name));
  }
  return out;
}

Scenario parse_json(std::string_view text, const std::string& origin, const FieldLocations& locations) {
  Scenario scenario;
  pb::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = pb::util::JsonStringToMessage(std::string(text), &scenario, options);
  if (status.ok()) return scenario;
  const std::string message(status.message());
  if (const auto located = json_error_path(message)) {
    throw InputError(field_error_text(origin, locations, located->path, located->detail));
  }
  throw InputError(fmt::format("{}: malformed JSON: {}", origin, clipped(message.substr(0, message.find('\n')))));
}

LoadedScenario finish(LoadedScenario loaded) {
  loaded.scenario = with_defaults(loaded.written);
  auto issues = validate_scenario(loaded.scenario);
  if (!issues.empty()) {
    std::string message = issues.front().message;
    if (issues.size() > 1) message += fmt::format(" ({} more problem{})", issues.size() - 1, issues.size() > 2 ? "s" : "");
    std::string text = field_error_text(loaded.origin, loaded.locations, issues.front().path, message);
    // A few more are each a located line of their own; many, only counted.
    constexpr size_t kListed = 4;
    if (issues.size() <= kListed) {
      for (size_t i = 1; i < issues.size(); ++i) {
        text += "\n  and " + field_error_text(loaded.origin, loaded.locations, issues[i].path, issues[i].message);
      }
    }
    throw InputError(text);
  }
  return loaded;
}

// Parses, names an unnamed scenario `default_name`, applies defaults, validates.
LoadedScenario parse_named(std::string_view text, ScenarioFormat format, const std::string& origin,
                           const std::filesystem::path& base_dir, const std::string& default_name) {
  LoadedScenario loaded;
  loaded.origin = origin;
  loaded.base_dir = base_dir;
  bool json = format == ScenarioFormat::kJson;
  loaded.locations = json ? locate_json_fields(text, origin) : locate_textproto_fields(text, origin);
  loaded.written = json ? parse_json(text, origin, loaded.locations) : parse_text(text, origin, loaded.locations);
  if (loaded.written.name().empty()) loaded.written.set_name(default_name);
  return finish(std::move(loaded));
}

bool looks_like_path(std::string_view text) {
  auto ends_with = [&](std::string_view suffix) {
    return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
  };
  std::error_code error;  // a name too long for the file system is not a path to a file
  return text.find('/') != std::string_view::npos || ends_with(".textproto") || ends_with(".json") ||
         ends_with(".txtpb") || ends_with(".pbtxt") || std::filesystem::exists(std::string(text), error);
}

}  // namespace

std::string field_error_text(const std::string& origin, const FieldLocations& locations, std::string_view path,
                             const std::string& message) {
  auto location = locations.find(path);
  std::string where = location ? fmt::format("{}:{}:{}", origin, location->line, location->column) : origin;
  return fmt::format("{}: {}: {}", where, path, message);
}

void throw_field_error(const LoadedScenario& loaded, std::string_view path, const std::string& message) {
  throw InputError(field_error_text(loaded.origin, loaded.locations, path, message));
}

LoadedScenario parse_scenario(std::string_view text, ScenarioFormat format, const std::string& origin,
                              const std::filesystem::path& base_dir) {
  return parse_named(text, format, origin, base_dir, "");
}

LoadedScenario load_scenario_file(const std::filesystem::path& path) {
  std::string text = read_file(path);
  ScenarioFormat format = path.extension() == ".json" ? ScenarioFormat::kJson : ScenarioFormat::kText;
  std::filesystem::path base = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  return parse_named(text, format, path.string(), base, path.stem().string());
}

LoadedScenario load_scenario(std::string_view name_or_path) {
  if (looks_like_path(name_or_path)) return load_scenario_file(std::string(name_or_path));
  std::vector<std::string> names;
  for (const EmbeddedFile& file : shipped_scenarios()) {
    if (file.name == name_or_path) {
      return parse_named(file.contents, ScenarioFormat::kText, fmt::format("builtin:{}", file.name), ".",
                         std::string(file.name));
    }
    names.emplace_back(file.name);
  }
  throw InputError(fmt::format("no scenario file or shipped scenario '{}'; closest shipped name: {} (`ragged "
                               "scenario list`)", name_or_path, closest_name(name_or_path.substr(0, 200), names)));
}

LoadedScenario rebuild(LoadedScenario loaded) { return finish(std::move(loaded)); }

LoadedScenario with_total_gpus(const LoadedScenario& loaded, int64_t gpus) {
  if (gpus < 1) throw InputError(fmt::format("--gpus {}: the number of GPUs must be at least 1", gpus));
  LoadedScenario changed = loaded;
  Cluster* cluster = changed.written.mutable_cluster();
  int64_t per_node = cluster->gpus_per_node();
  if (gpus < per_node) {
    cluster->set_gpus_per_node(static_cast<int32_t>(gpus));
    cluster->set_nodes(1);
  } else if (gpus % per_node != 0) {
    throw InputError(fmt::format("--gpus {}: not a multiple of the {} GPUs per node of {}; use a multiple of {}",
                                 gpus, per_node, loaded.origin, per_node));
  } else {
    cluster->set_nodes(static_cast<int32_t>(gpus / per_node));
  }
  Training* training = changed.written.mutable_training();
  if (training->has_shard_group_size() && gpus % training->shard_group_size() != 0) training->clear_shard_group_size();
  if (training->has_shard_group_size() && training->has_replicate_group_size()) training->clear_replicate_group_size();
  // The mesh keeps its tp, cp and ep; its data-parallel sizes follow the GPUs.
  Mesh* mesh = training->mutable_mesh();
  const int64_t model_parallel = int64_t{std::max(1, mesh->tp())} * std::max(1, mesh->cp()) * std::max(1, mesh->pp());
  if (mesh->has_dp_shard() && gpus % (model_parallel * std::max(1, mesh->dp_shard())) != 0) mesh->clear_dp_shard();
  if (mesh->has_dp_replicate()) mesh->clear_dp_replicate();
  if (training->mesh().ByteSizeLong() == 0) training->clear_mesh();
  return finish(std::move(changed));
}

LoadedScenario with_mesh(const LoadedScenario& loaded, int64_t tp, int64_t cp, int64_t ep, int64_t pp) {
  LoadedScenario changed = loaded;
  Training* t = changed.written.mutable_training();
  Mesh* mesh = t->mutable_mesh();
  if (tp > 0) mesh->set_tp(static_cast<int32_t>(std::min<int64_t>(tp, std::numeric_limits<int32_t>::max())));
  if (cp > 0) mesh->set_cp(static_cast<int32_t>(std::min<int64_t>(cp, std::numeric_limits<int32_t>::max())));
  if (ep > 0) mesh->set_ep(static_cast<int32_t>(std::min<int64_t>(ep, std::numeric_limits<int32_t>::max())));
  if (pp > 0) {
    // One stage drops the pipeline block; another count drops a split written for the old one.
    if (pp == 1 && t->has_pipeline()) {  // the step keeps its micro-batches
      t->set_gradient_accumulation_steps(loaded.scenario.training().gradient_accumulation_steps());
      t->clear_pipeline();
    }
    if (pp != std::max(1, loaded.scenario.training().mesh().pp()) && t->has_pipeline()) {
      t->mutable_pipeline()->clear_layers_per_stage();
    }
    mesh->set_pp(static_cast<int32_t>(std::min<int64_t>(pp, std::numeric_limits<int32_t>::max())));
  }
  if (tp > 0 || cp > 0 || pp > 0) {
    t->clear_shard_group_size();
    mesh->clear_dp_shard();
    const int64_t gpus = total_gpus(loaded.scenario);
    const int64_t model_parallel = int64_t{std::max(1, mesh->tp())} * std::max(1, mesh->cp()) * std::max(1, mesh->pp());
    const int64_t replicas = t->has_replicate_group_size() ? t->replicate_group_size() : mesh->dp_replicate();
    if (replicas < 1 || gpus % (model_parallel * replicas) != 0) {
      t->clear_replicate_group_size();
      mesh->clear_dp_replicate();
    }
  }
  return finish(std::move(changed));
}

std::string to_text(const Scenario& scenario) {
  std::string text;
  pb::TextFormat::PrintToString(scenario, &text);
  return text;
}

}  // namespace ragged::scenarios
