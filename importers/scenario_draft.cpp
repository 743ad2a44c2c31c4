#include "importers/scenario_draft.hpp"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "common/input_limits.hpp"
#include "models/catalog.hpp"
#include "models/hf_config.hpp"
#include "scenarios/gpu_presets.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::importers {

std::string enum_text(scenarios::Strategy value) { return scenarios::Strategy_Name(value); }
std::string enum_text(scenarios::DType value) { return scenarios::DType_Name(value); }
std::string enum_text(scenarios::Checkpointing value) { return scenarios::Checkpointing_Name(value); }

ScenarioDraft::ScenarioDraft(const ConfigDocument& doc, const ImportOptions& options, std::string name)
    : doc_(doc), options_(options) {
  scenario_.set_name(std::move(name));
}

void ScenarioDraft::mapped(const std::string& field, const std::string& value, const std::vector<std::string>& from) {
  std::string source;
  for (const std::string& path : from) source += (source.empty() ? "" : ", ") + doc_.quoted(path);
  mapped_.push_back({field, value, source, from});
}

void ScenarioDraft::assumed(const std::string& field, const std::string& value, const std::string& why) {
  assumed_.push_back({field, value, why, {}});
}

void ScenarioDraft::from_command_line(const std::string& field, const std::string& value, const std::string& flags) {
  command_line_.push_back({field, value, flags, {}});
}

void ScenarioDraft::agrees(std::string_view path, const std::string& why) {
  if (doc_.has(path)) agrees_.push_back(fmt::format("{}: {}", doc_.quoted(path), why));
}

void ScenarioDraft::not_modelled(std::string_view path, const std::string& why, bool warn) {
  if (!doc_.has(path)) return;
  const std::string line = fmt::format("{}: {}", doc_.quoted(path), why);
  not_modelled_.push_back(line);
  if (warn) warnings_.push_back(fmt::format("{}: {}", doc_.origin(), line));
}

void ScenarioDraft::not_modelled_section(std::string_view prefix, const std::string& why, bool warn) {
  for (const ConfigLeaf& leaf : doc_.leaves()) {
    if (leaf.path.size() > prefix.size() && leaf.path.starts_with(prefix) && leaf.path[prefix.size()] == '.' &&
        !doc_.was_read(leaf)) {
      not_modelled(leaf.path, why, warn);
    }
  }
}

void ScenarioDraft::set_model(const std::string& catalog, const std::vector<std::string>& from, const std::string& field,
                              const std::string& why_none) {
  scenarios::ModelSource* model = scenario_.mutable_model();
  if (!options_.model.empty()) {
    if (models::names_a_config(options_.model)) {
      const std::string config = std::filesystem::absolute(models::config_file(options_.model)).lexically_normal().string();
      model->set_hf_config(config);
      from_command_line("model.hf_config", fmt::format("\"{}\"", config), "--model");
    } else {
      models::find_catalog_entry(options_.model);  // an unknown name lists the catalog
      model->set_catalog(options_.model);
      from_command_line("model.catalog", fmt::format("\"{}\"", options_.model), "--model");
    }
    for (const std::string& path : from) {
      if (doc_.has(path)) not_modelled(path, "replaced by --model");
    }
    return;
  }
  if (catalog.empty()) {
    doc_.fail(field, fmt::format("{}; give --model NAME (a catalog model: `ragged models`) or --model "
                                 "path/to/config.json", why_none));
  }
  model->set_catalog(catalog);
  mapped("model.catalog", fmt::format("\"{}\"", catalog), from);
}

int64_t ScenarioDraft::set_cluster(int64_t config_gpus, const std::vector<std::string>& from,
                                   const std::string& missing_field, const std::string& missing_why) {
  int64_t gpus = options_.gpus;
  if (gpus <= 0 && config_gpus <= 0) doc_.fail(missing_field, fmt::format("{}; give --gpus N", missing_why));
  const std::string preset_name = options_.gpu.empty() ? "h100" : options_.gpu;
  const scenarios::GpuPreset& preset = scenarios::find_gpu_preset(preset_name);
  if (gpus <= 0) gpus = config_gpus;
  if (gpus > limits::kMaxGpus) {
    if (options_.gpus > 0) {
      throw InputError(fmt::format("--gpus {}: at most {} GPUs", gpus, limits::kMaxGpus));
    }
    doc_.fail(from.empty() ? missing_field : from.front(),
              fmt::format("makes {} GPUs; at most {}: give --gpus N", gpus, limits::kMaxGpus));
  }
  const int64_t per_node =
      options_.gpus_per_node > 0 ? options_.gpus_per_node : std::min<int64_t>(preset.nvlink_domain_gpus, gpus);
  if (gpus % per_node != 0) {
    throw InputError(fmt::format("{}: {} GPUs are not a whole number of nodes of {}; give --gpus a multiple of {}, or "
                                 "a --gpus-per-node that divides {}",
                                 doc_.origin(), gpus, per_node, per_node, gpus));
  }
  scenarios::Cluster* cluster = scenario_.mutable_cluster();
  cluster->mutable_gpu()->set_preset(preset_name);
  cluster->set_gpus_per_node(static_cast<int32_t>(per_node));
  cluster->set_nodes(static_cast<int32_t>(gpus / per_node));
  if (options_.nics_per_node > 0) cluster->mutable_nics()->set_per_node(static_cast<int32_t>(options_.nics_per_node));
  if (options_.nic_gbps > 0) cluster->mutable_nics()->set_bandwidth_gbits_per_s(options_.nic_gbps);

  if (options_.gpus > 0) {
    from_command_line("cluster", fmt::format("{} GPUs", gpus), fmt::format("--gpus {}", gpus));
  } else {
    mapped("cluster", fmt::format("{} GPUs", gpus), from);
  }
  from_command_line("cluster.gpu.preset", fmt::format("\"{}\"", preset_name),
                    options_.gpu.empty() ? "not in the config: h100 unless --gpu says" : "--gpu");
  from_command_line("cluster.gpus_per_node", fmt::format("{}", per_node),
                    options_.gpus_per_node > 0 ? "--gpus-per-node" : "the GPU's NVLink domain unless --gpus-per-node says");
  return gpus;
}

namespace {

// One comment line of the written scenario: a value or a key read from the
// input may hold a line break (a TOML "a\nb", a quoted YAML key), which would
// end the comment and leave the rest to the scenario parser; control bytes
// become spaces.
std::string comment_line(std::string text, std::string_view indent = "   ") {
  for (char& c : text) {
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == '\x7f') c = ' ';
  }
  return fmt::format("#{}{}\n", indent, text);
}

std::string record_line(const std::string& field, const std::string& value, const std::string& source) {
  return comment_line(fmt::format("{}: {}  <- {}", field, value, source));
}

// The record whose scenario field holds `path` (or lies under it): the input field a loader check is about.
template <class Records>
const typename Records::value_type* record_for(const Records& records, const std::string& path) {
  const typename Records::value_type* best = nullptr;
  for (const auto& r : records) {
    const bool covers = path == r.field || path.starts_with(r.field + ".") || r.field.starts_with(path + ".");
    if (covers && !r.from.empty() && (best == nullptr || r.field.size() > best->field.size())) best = &r;
  }
  return best;
}

}  // namespace

ImportedConfig ScenarioDraft::finish(ConfigFormat format,
                                     const std::function<std::string(std::string_view)>& why_ignored) {
  // The loader's own defaults and checks, before anything is written.
  const std::vector<scenarios::FieldIssue> issues = scenarios::validate_scenario(scenarios::with_defaults(scenario_));
  if (!issues.empty()) {
    const scenarios::FieldIssue& first = issues.front();
    if (const auto* r = record_for(mapped_, first.path)) {
      doc_.fail(r->from.front(), fmt::format("as {} it is not a valid scenario: {}", first.path, first.message));
    }
    throw InputError(fmt::format("{}: the imported scenario's {}: {}", doc_.origin(), first.path, first.message));
  }

  const std::string file = std::filesystem::path(doc_.origin()).filename().string();
  std::string text =
      comment_line(fmt::format("Imported by `ragged scenario import` from {} ({}).", file, format_name(format)), " ");
  text += "# Every field of the input is accounted for: mapped, or listed as not mapped with the reason.\n";
  if (!mapped_.empty()) {
    text += "#\n# Mapped from the config:\n";
    for (const Record& r : mapped_) text += record_line(r.field, r.value, r.source);
  }
  if (!assumed_.empty()) {
    text += "#\n# Not in the config, the framework's default:\n";
    for (const Record& r : assumed_) text += record_line(r.field, r.value, r.source);
  }
  if (!command_line_.empty()) {
    text += "#\n# From the command line:\n";
    for (const Record& r : command_line_) text += record_line(r.field, r.value, r.source);
  }
  if (!agrees_.empty()) {
    text += "#\n# Read, nothing to set (what Ragged models already):\n";
    for (const std::string& line : agrees_) text += comment_line(line);
  }
  if (!not_modelled_.empty()) {
    text += "#\n# Not mapped: not modelled by Ragged (the prediction assumes otherwise):\n";
    for (const std::string& line : not_modelled_) text += comment_line(line);
  }
  // Everything nobody read, under its reason, in the input's order.
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  std::vector<const ConfigLeaf*> by_line;
  for (const ConfigLeaf& leaf : doc_.leaves()) by_line.push_back(&leaf);
  std::stable_sort(by_line.begin(), by_line.end(),
                   [](const ConfigLeaf* a, const ConfigLeaf* b) { return a->value.line < b->value.line; });
  for (const ConfigLeaf* leaf_pointer : by_line) {
    const ConfigLeaf& leaf = *leaf_pointer;
    if (doc_.was_read(leaf)) continue;
    const std::string why = why_ignored(leaf.path);
    auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == why; });
    if (group == groups.end()) group = groups.insert(groups.end(), {why, {}});
    group->second.push_back(doc_.quoted(leaf.path));
  }
  for (const auto& [why, fields] : groups) {
    text += "#\n" + comment_line(fmt::format("Not mapped: {}:", why), " ");
    for (const std::string& field : fields) text += comment_line(field);
  }
  text += "\n";

  if (scenario_.training().has_mesh() && scenario_.training().mesh().ByteSizeLong() == 0) {
    scenario_.mutable_training()->clear_mesh();
  }
  std::string body;
  google::protobuf::TextFormat::PrintToString(scenario_, &body);
  text += body;

  ImportedConfig out;
  out.format = format;
  out.scenario_text = std::move(text);
  out.warnings = warnings_;
  return out;
}

}  // namespace ragged::importers
