#include "gui/models/scenario_settings.hpp"

#include <fmt/format.h>

#include "common/errors.hpp"
#include "models/catalog.hpp"
#include "planner/granularity.hpp"
#include "scenarios/gpu_presets.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::gui {
namespace {

std::string model_of(const scenarios::ModelSource& source) {
  if (source.has_hf_config()) return source.hf_config();
  if (source.has_inline_spec()) return source.inline_spec().name();
  return source.catalog();
}

bool is_config_file(const std::string& model) {
  return model.ends_with(".json") || model.find('/') != std::string::npos;
}

void write_granularity(scenarios::Training* training, const std::string& text) {
  const planner::GranularitySpec spec = planner::GranularitySpec::parse(text);
  auto* proto = training->mutable_granularity();
  proto->clear_overrides();
  auto* out = proto->mutable_default_spec();
  out->Clear();
  out->set_kind(spec.kind == planner::GranuleKind::kRows     ? scenarios::ROWS
                : spec.kind == planner::GranuleKind::kBlock  ? scenarios::BLOCK
                : spec.kind == planner::GranuleKind::kMatrix ? scenarios::MATRIX
                                                             : scenarios::ELEMENT);
  if (spec.kind == planner::GranuleKind::kRows) out->set_rows(static_cast<int32_t>(spec.rows));
  if (spec.kind == planner::GranuleKind::kBlock) {
    out->set_block_rows(static_cast<int32_t>(spec.block_rows));
    out->set_block_cols(static_cast<int32_t>(spec.block_cols));
  }
  proto->set_partial_blocks(true);  // one block for every tensor of the model: edge tiles allowed, as the CLI's flag
}

void write_cluster_size(scenarios::Cluster* cluster, int64_t gpus, int64_t per_node) {
  if (gpus < 1) throw InputError(fmt::format("GPUs {}: the number of GPUs must be at least 1", gpus));
  if (per_node < 1) throw InputError(fmt::format("GPUs per node {}: must be at least 1", per_node));
  if (gpus < per_node) per_node = gpus;
  if (gpus % per_node != 0) {
    throw InputError(fmt::format("GPUs {}: not a multiple of the {} GPUs per node; use a multiple of {}", gpus,
                                 per_node, per_node));
  }
  cluster->set_gpus_per_node(static_cast<int32_t>(per_node));
  cluster->set_nodes(static_cast<int32_t>(gpus / per_node));
}

// The divisors of `n` on either side of `wanted`: "4 or 8", "64".
std::string divisors_near(int64_t n, int64_t wanted) {
  int64_t below = 0, above = 0;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    for (int64_t v : {d, n / d}) {
      if (v <= wanted && v > below) below = v;
      if (v >= wanted && (above == 0 || v < above)) above = v;
    }
  }
  if (below == 0) return std::to_string(above);
  if (above == 0 || above == below) return std::to_string(below);
  return fmt::format("{} or {}", below, above);
}

// A new schedule for the stages, with its own chunks per stage and the
// balanced split (after the mesh has its pp).
void write_schedule(scenarios::Training* t, const ScenarioSettings& settings) {
  if (settings.pp <= 1) {
    throw InputError(fmt::format("schedule {}: a pipeline schedule needs stages: set pp above 1 first",
                                 scenarios::schedule_name(settings.schedule)));
  }
  scenarios::Pipeline* p = t->mutable_pipeline();
  p->set_schedule(settings.schedule);
  p->clear_virtual_stages();
  p->clear_layers_per_stage();
}

}  // namespace

ScenarioSettings settings_of(const scenarios::Scenario& scenario) {
  const auto& cluster = scenario.cluster();
  const auto& training = scenario.training();
  ScenarioSettings s;
  s.model = model_of(scenario.model());
  s.gpu_preset = cluster.gpu().preset();
  s.gpus = scenarios::total_gpus(scenario);
  s.gpus_per_node = cluster.gpus_per_node();
  s.nics_per_node = cluster.nics().per_node();
  s.nic_gbits_per_s = cluster.nics().bandwidth_gbits_per_s();
  s.strategy = training.strategy();
  s.granularity = planner::GranularitySpec::from_proto(training.granularity().default_spec()).describe();
  s.shard_group = training.shard_group_size();
  s.tp = training.mesh().tp();
  s.cp = training.mesh().cp();
  s.ep = training.mesh().ep();
  s.pp = std::max(1, training.mesh().pp());
  if (s.pp > 1) s.schedule = training.pipeline().schedule();
  s.accumulation = training.gradient_accumulation_steps();
  s.micro_batch = training.micro_batch_size();
  s.sequence_length = training.sequence_length();
  s.checkpointing = training.activation_checkpointing();
  s.experts_checkpointing = training.experts().checkpointing();
  s.experts_overlap = training.experts().overlap_all_to_all();
  s.prefetch_depth = training.prefetch_depth();
  s.optimizer = scenarios::optimizer_name(training.optimizer());
  return s;
}

scenarios::LoadedScenario apply_settings(const scenarios::LoadedScenario& base, const ScenarioSettings& settings) {
  const ScenarioSettings before = settings_of(base.scenario);
  if (settings == before) return base;
  scenarios::LoadedScenario out = base;
  scenarios::Scenario& w = out.written;
  if (settings.model != before.model) {
    w.mutable_model()->clear_source();
    if (is_config_file(settings.model)) w.mutable_model()->set_hf_config(settings.model);
    else w.mutable_model()->set_catalog(settings.model);
  }
  if (settings.gpu_preset != before.gpu_preset) {
    w.mutable_cluster()->mutable_gpu()->Clear();
    w.mutable_cluster()->mutable_gpu()->set_preset(settings.gpu_preset);
  }
  if (settings.gpus != before.gpus || settings.gpus_per_node != before.gpus_per_node) {
    write_cluster_size(w.mutable_cluster(), settings.gpus, settings.gpus_per_node);
  }
  if (settings.nics_per_node != before.nics_per_node) {
    w.mutable_cluster()->mutable_nics()->set_per_node(static_cast<int32_t>(settings.nics_per_node));
  }
  if (settings.nic_gbits_per_s != before.nic_gbits_per_s) {
    w.mutable_cluster()->mutable_nics()->set_bandwidth_gbits_per_s(settings.nic_gbits_per_s);
  }
  scenarios::Training* t = w.mutable_training();
  if (settings.strategy != before.strategy) t->set_strategy(settings.strategy);
  if (settings.optimizer != before.optimizer) scenarios::select_optimizer(t, settings.optimizer, "optimizer");
  if (settings.granularity != before.granularity) write_granularity(t, settings.granularity);
  if (settings.shard_group_written) {
    const int64_t model_ranks = settings.gpus / std::max<int64_t>(1, settings.tp);  // the ranks of one tp rank
    if (settings.shard_group < 1 || model_ranks < 1 || model_ranks % settings.shard_group != 0) {
      throw InputError(fmt::format("shard group {}: it must divide the {} GPUs{}; use {}, or auto for the scenario's own",
                                   settings.shard_group, model_ranks, settings.tp > 1 ? " of one tp rank" : "",
                                   divisors_near(std::max<int64_t>(1, model_ranks), settings.shard_group)));
    }
    t->set_shard_group_size(static_cast<int32_t>(settings.shard_group));
    t->clear_replicate_group_size();
  } else if (settings.gpus != before.gpus) {
    // Sharded over every GPU before: still so. A smaller group stays where it divides.
    const bool every_gpu = before.shard_group == before.gpus;
    if (every_gpu || settings.gpus % before.shard_group != 0) t->clear_shard_group_size();
    else t->set_shard_group_size(static_cast<int32_t>(before.shard_group));
    t->clear_replicate_group_size();
  }
  if (settings.micro_batch != before.micro_batch) t->set_micro_batch_size(static_cast<int32_t>(settings.micro_batch));
  if (settings.accumulation != before.accumulation) {
    t->set_gradient_accumulation_steps(static_cast<int32_t>(settings.accumulation));
    if (t->has_pipeline()) t->mutable_pipeline()->clear_micro_batches();
  }
  const bool mesh_changed =
      settings.tp != before.tp || settings.cp != before.cp || settings.ep != before.ep || settings.pp != before.pp;
  if (settings.sequence_length != before.sequence_length) {
    t->set_sequence_length(static_cast<int32_t>(settings.sequence_length));
  }
  if (settings.checkpointing != before.checkpointing) t->set_activation_checkpointing(settings.checkpointing);
  if (settings.experts_checkpointing != before.experts_checkpointing) {
    if (settings.experts_checkpointing == scenarios::CHECKPOINTING_UNSPECIFIED) {
      t->mutable_experts()->clear_checkpointing();
    } else {
      t->mutable_experts()->set_checkpointing(settings.experts_checkpointing);
    }
  }
  if (settings.experts_overlap != before.experts_overlap) {
    t->mutable_experts()->set_overlap_all_to_all(settings.experts_overlap);
  }
  if (settings.prefetch_depth != before.prefetch_depth)
    t->set_prefetch_depth(static_cast<int32_t>(settings.prefetch_depth));
  // The mesh as the CLI's --tp/--cp/--ep/--pp writes it: a new tp, cp or pp re-derives the shard group.
  const bool split_changed = settings.tp != before.tp || settings.cp != before.cp || settings.pp != before.pp;
  scenarios::LoadedScenario meshed =
      mesh_changed ? scenarios::with_mesh(scenarios::rebuild(std::move(out)), split_changed ? settings.tp : 0,
                                          split_changed ? settings.cp : 0, settings.ep != before.ep ? settings.ep : 0,
                                          settings.pp != before.pp ? settings.pp : 0)
                   : std::move(out);
  // Without stages the schedule shown is 1F1B's, which writes nothing.
  const bool no_stages_default = settings.pp <= 1 && settings.schedule == scenarios::ONE_F_ONE_B;
  if (settings.schedule == before.schedule || no_stages_default) return scenarios::rebuild(std::move(meshed));
  write_schedule(meshed.written.mutable_training(), settings);
  return scenarios::rebuild(std::move(meshed));
}

scenarios::LoadedScenario scenario_for_model(const std::string& model, const std::string& gpu_preset, int64_t gpus) {
  if (gpus < 1) throw InputError(fmt::format("GPUs {}: the number of GPUs must be at least 1", gpus));
  const int64_t per_node = std::min<int64_t>(8, gpus);
  if (gpus % per_node != 0) throw InputError(fmt::format("GPUs {}: use a multiple of 8 above 8 GPUs", gpus));
  const bool file = is_config_file(model);
  const std::string text = fmt::format(
      "name: \"{}-{}x{}\"\nmodel {{ {}: \"{}\" }}\ncluster {{ gpu {{ preset: \"{}\" }} gpus_per_node: {} nodes: {} }}\n",
      file ? "model" : model, gpus, gpu_preset, file ? "hf_config" : "catalog", model, gpu_preset, per_node,
      gpus / per_node);
  return scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "the window's model", ".");
}

std::vector<std::string> catalog_model_names() {
  std::vector<std::string> names;
  for (const auto& entry : models::catalog()) names.push_back(entry.arch.name);
  return names;
}

std::vector<std::string> gpu_preset_names() {
  std::vector<std::string> names;
  for (const auto& preset : scenarios::gpu_presets()) names.push_back(preset.name);
  return names;
}

std::vector<std::string> shipped_scenario_names() {
  std::vector<std::string> names;
  for (const auto& file : scenarios::shipped_scenarios()) names.emplace_back(file.name);
  return names;
}

}  // namespace ragged::gui
