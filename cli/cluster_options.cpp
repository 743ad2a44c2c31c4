#include "cli/cluster_options.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "cli/validators.hpp"
#include "common/errors.hpp"
#include "models/hf_config.hpp"
#include "scenarios/field_ranges.hpp"
#include "scenarios/gpu_presets.hpp"

namespace ragged::cli {
namespace {

// An HGX board: the node --model builds unless told otherwise.
constexpr int64_t kModelGpusPerNode = 8;

// The scenario field's own range (scenarios/field_ranges.cpp) as a CLI check.
CLI::Validator field_check(const char* message, const char* field, bool whole) {
  const std::optional<scenarios::FieldRange> range = scenarios::field_range(message, field);
  return whole ? whole_number(static_cast<int64_t>(range->min), static_cast<int64_t>(range->max))
               : number_between(range->min, range->max);
}

// A preset name, checked where it is typed: the loader's message lists them.
CLI::Validator gpu_preset_check() {
  return CLI::Validator(
      [](std::string& name) -> std::string {
        try {
          scenarios::find_gpu_preset(name);
          return "";
        } catch (const InputError& error) {
          return error.what();
        }
      },
      "PRESET");
}

void set_nics(const ClusterOptions& o, scenarios::Cluster* cluster) {
  if (o.nics_per_node > 0) cluster->mutable_nics()->set_per_node(static_cast<int32_t>(o.nics_per_node));
  if (o.nic_gbps > 0) cluster->mutable_nics()->set_bandwidth_gbits_per_s(o.nic_gbps);
}

}  // namespace

void check_whole_nodes(int64_t gpus, int64_t per_node, bool gpus_given) {
  if (gpus % per_node == 0) return;
  const int64_t below = gpus / per_node * per_node;
  throw InputError(fmt::format(
      "{}: not a whole number of nodes of --gpus-per-node {}; give --gpus {}{}, or a --gpus-per-node that divides {}",
      gpus_given ? fmt::format("--gpus {}", gpus) : fmt::format("the scenario's {} GPUs", gpus), per_node,
      below > 0 ? fmt::format("{} or ", below) : "", below + per_node, gpus));
}

void ClusterOptions::add_to(CLI::App* command) {
  command
      ->add_option("--gpu", gpu,
                   "GPU preset (cluster.gpu.preset): h100, h100-sxm-95g, h200, h800, a100-80g, a100-40g, b200, gb200 "
                   "(72 per node with --model: an NVL72 rack), mi300x, ...; replaces a "
                   "scenario's GPU (default with --model: h100)")
      ->check(gpu_preset_check());
  command
      ->add_option("--gpus-per-node", gpus_per_node,
                   "GPUs in one node (cluster.gpus_per_node; default with --model: the GPU's NVLink domain, 8, or 72 for gb200); on a scenario the GPU count "
                   "stays and the nodes follow. Four on an HGX 4-GPU board (no NVSwitch): also "
                   "--set cluster.intra_node.full_mesh_gpus=4")
      ->transform(field_check("Cluster", "gpus_per_node", true));
  command
      ->add_option("--nics-per-node", nics_per_node, "NICs in one node (cluster.nics.per_node; default: one per GPU)")
      ->transform(field_check("Nics", "per_node", true));
  command
      ->add_option("--nic-gbps", nic_gbps,
                   "Bandwidth of one NIC, Gbit/s per direction "
                   "(cluster.nics.bandwidth_gbits_per_s; default 400)")
      ->transform(field_check("Nics", "bandwidth_gbits_per_s", false));
}

// With --model, a node is the GPU's NVLink domain as sold: 8 on a baseboard,
// 72 in a GB200 NVL72 rack (GpuPreset::nvlink_domain_gpus).
int64_t ClusterOptions::model_node_size() const {
  if (gpus_per_node > 0) return gpus_per_node;
  const scenarios::GpuPreset* preset = scenarios::gpu_preset_or_null(gpu.empty() ? "h100" : gpu);
  return preset != nullptr ? preset->nvlink_domain_gpus : kModelGpusPerNode;
}

namespace {

// Text for a quoted text-format string: quotes, backslashes and line breaks
// of a path or folder name escaped.
std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

scenarios::LoadedScenario ClusterOptions::model_scenario(const std::string& model, int64_t gpus) const {
  if (gpus < 1) throw InputError("--model needs --gpus N (the number of GPUs to shard over)");
  const int64_t per_node = gpus_per_node > 0 ? gpus_per_node : std::min(model_node_size(), gpus);
  check_whole_nodes(gpus, per_node);
  const std::string preset = gpu.empty() ? "h100" : gpu;
  const bool is_file = models::names_a_config(model);
  const std::string config = is_file ? models::config_file(model).string() : model;
  const std::string text = fmt::format(
      "name: \"{}-{}x{}\"\nmodel {{ {}: \"{}\" }}\n"
      "cluster {{ gpu {{ preset: \"{}\" }} gpus_per_node: {} nodes: {} }}\n",
      escaped(is_file ? models::config_folder_name(config) : model), gpus, preset, is_file ? "hf_config" : "catalog",
      escaped(config), preset, per_node, gpus / per_node);
  scenarios::LoadedScenario loaded = scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "--model", ".");
  if (nics_per_node == 0 && nic_gbps == 0) return loaded;
  set_nics(*this, loaded.written.mutable_cluster());
  return scenarios::rebuild(std::move(loaded));
}

void ClusterOptions::apply(scenarios::LoadedScenario& loaded, int64_t gpus, bool gpus_given) const {
  if (!any()) return;
  scenarios::Cluster* cluster = loaded.written.mutable_cluster();
  if (!gpu.empty()) {
    cluster->clear_gpu();
    cluster->mutable_gpu()->set_preset(gpu);
  }
  if (gpus_per_node > 0) {
    check_whole_nodes(gpus, gpus_per_node, gpus_given);
    cluster->set_gpus_per_node(static_cast<int32_t>(gpus_per_node));
    cluster->set_nodes(static_cast<int32_t>(gpus / gpus_per_node));
  }
  set_nics(*this, cluster);
  loaded = scenarios::rebuild(std::move(loaded));
}

int64_t ClusterOptions::node_size(const scenarios::Scenario& scenario) const {
  return gpus_per_node > 0 ? gpus_per_node : scenario.cluster().gpus_per_node();
}

}  // namespace ragged::cli
