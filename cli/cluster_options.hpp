#pragma once
// The cluster options every scenario command shares (part of
// ScenarioOptions): --gpu PRESET, --gpus-per-node N, --nics-per-node N and
// --nic-gbps G. They shape the cluster `--model` builds, and override a
// scenario file's cluster where given (the file's GPU count stays: its nodes
// are re-derived from --gpus-per-node).

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "scenarios/scenario_loader.hpp"

namespace ragged::cli {

struct ClusterOptions {
  std::string gpu;            // --gpu: cluster.gpu.preset ("" keeps the scenario's; h100 with --model)
  int64_t gpus_per_node = 0;  // --gpus-per-node: cluster.gpus_per_node (0 keeps the scenario's; 8 with --model)
  int64_t nics_per_node = 0;  // --nics-per-node: cluster.nics.per_node (0 keeps the scenario's)
  double nic_gbps = 0;        // --nic-gbps: cluster.nics.bandwidth_gbits_per_s (0 keeps the scenario's)

  void add_to(CLI::App* command);

  // The scenario `--model M --gpus N` plans: nodes of --gpus-per-node (else
  // 8, or one node of N below 8) GPUs of --gpu (else h100), named
  // "<model>-<N>x<preset>", with the NIC options applied.
  scenarios::LoadedScenario model_scenario(const std::string& model, int64_t gpus) const;

  // Writes the options given into a scenario file's cluster, keeping its
  // `gpus` GPUs (--gpus when `gpus_given`, else the scenario's): the GPU
  // replaces the file's (its field overrides included), --gpus-per-node
  // re-derives the nodes.
  void apply(scenarios::LoadedScenario& loaded, int64_t gpus, bool gpus_given) const;

  // The GPUs per node a count must be a multiple of: --gpus-per-node, else
  // the scenario's (the cluster `apply` or `model_scenario` built).
  int64_t node_size(const scenarios::Scenario& scenario) const;

  // The GPUs per node --model builds for a count of at least one node.
  int64_t model_node_size() const;

  bool any() const { return !gpu.empty() || gpus_per_node > 0 || nics_per_node > 0 || nic_gbps > 0; }
};

// InputError naming --gpus and --gpus-per-node with the fix when `gpus`
// (given as --gpus, or the scenario's) is not a whole number of nodes of
// `per_node` GPUs.
void check_whole_nodes(int64_t gpus, int64_t per_node, bool gpus_given = true);

}  // namespace ragged::cli
