#pragma once
// The scenario arguments shared by plan, simulate, run and tune: a scenario
// file or shipped name (default: the built-in default scenario), or --model
// with --gpus for a quick look, the cluster options (cluster_options.hpp),
// plus overrides (--gpus, --tp, --cp, --ep, --shard-group, --strategy,
// --granularity, --seq-len, --micro-batch, --checkpointing).

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/cluster_options.hpp"
#include "importers/import_config.hpp"
#include "planner/resolved_scenario.hpp"

namespace ragged::cli {

// --seq-len's values: a whole number of tokens from 1 to the scenario's
// limit, suffixes as token counts take them (8Ki = 8,192, 32K = 32,000).
CLI::Validator sequence_length_value();
int64_t parse_sequence_length(const std::string& text);  // text the validator accepted

// --checkpointing's values: none, selective or full, in any case.
CLI::Validator checkpointing_value();
scenarios::Checkpointing parse_checkpointing_value(const std::string& text);  // text the validator accepted

struct ScenarioOptions {
  std::string scenario;     // file or shipped name
  std::string model;        // --model: catalog name or config.json
  int64_t gpus = 0;         // --gpus: 0 keeps the scenario's
  int64_t shard_group = 0;  // --shard-group: 0 keeps the scenario's (HSDP when smaller than the GPUs)
  int64_t tp = 0;           // --tp: training.mesh.tp; 0 keeps the scenario's
  int64_t cp = 0;           // --cp: training.mesh.cp
  int64_t ep = 0;           // --ep: training.mesh.ep
  int64_t pp = 0;           // --pp: training.mesh.pp
  int64_t expert_tp = 0;    // --expert-tp: training.mesh.expert_tp; 0 keeps the scenario's
  int64_t layers = 0;       // --layers: keep the model's first N blocks (model.layers); 0 keeps the scenario's
  std::string strategy;     // --strategy: one name, "all", or "" to keep the scenario's
  std::string granularity;  // --granularity: element | rows:K | block:RxC | matrix
  std::string sequence_length;  // --seq-len: training.sequence_length, suffixes allowed (8Ki); "" keeps the scenario's
  int64_t micro_batch = 0;      // --micro-batch: training.micro_batch_size; 0 keeps the scenario's
  std::string checkpointing;    // --checkpointing: training.activation_checkpointing, none | selective | full
  std::string optimizer;    // --optimizer: adamw | adam8bit | muon | shampoo
  std::string attention;    // --attention: math | flash2 | flash3 | triton (training.attention)
  std::string loss;         // --loss: fp32-logits | fused | chunked (training.loss)
  bool expandable_segments = false;  // --expandable-segments (training.allocator.expandable_segments)
  double expert_load = 0;   // --expert-load: training.experts.busiest_load; 0 keeps the scenario's
  std::string slow_gpus;    // --slow-gpus N:F (whatif.slow_gpus: count, fraction)
  std::string slow_links;   // --slow-links N:F (whatif.slow_links: count, fraction)
  ClusterOptions cluster;   // --gpu, --gpus-per-node, --nics-per-node, --nic-gbps
  std::vector<std::string> sets;  // --set FIELD=VALUE, applied last (scenarios/scenario_override)

  void add_to(CLI::App* command, bool allow_all_strategies);
  // Only where the scenario comes from and what changes its model, cluster
  // and kernels (the scenario, --model, the cluster options, --layers,
  // --attention, --loss, --expandable-segments, --expert-load): for commands that choose
  // GPU counts, groups and strategies themselves (tune).
  void add_source_to(CLI::App* command);
  // Also offer --optimizer.
  void add_optimizer_to(CLI::App* command);
  // Also offer --slow-gpus and --slow-links.
  void add_whatif_to(CLI::App* command);

  // What a config import takes from these options (--model, --gpus, the
  // cluster options, --micro-batch, --seq-len).
  importers::ImportOptions import_options() const;
  // When the scenario is such a config: its fields that change the
  // prediction and are not modelled, each a "ragged: warning:" line on `err`.
  void warn_about_import(std::ostream& err) const;

  // The scenario with every option applied but --strategy. A torchtitan
  // TOML, llm-foundry YAML or DeepSpeed JSON given as the scenario is
  // imported first (importers/), with --model, --gpus and the cluster
  // options supplying what the config does not say.
  scenarios::LoadedScenario load() const;
  // The scenarios to run: one, or one per strategy with --strategy all.
  std::vector<planner::ResolvedScenario> resolve() const;
};

}  // namespace ragged::cli
