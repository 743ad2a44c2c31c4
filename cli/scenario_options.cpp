#include "cli/validators.hpp"
#include "cli/scenario_options.hpp"
#include "cli/cli.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.hpp"
#include "common/input_limits.hpp"
#include "common/units.hpp"
#include "scenarios/scenario_override.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::cli {

int64_t parse_sequence_length(const std::string& text) {
  return static_cast<int64_t>(parse_token_count(text, "--seq-len"));
}

CLI::Validator sequence_length_value() {
  const std::string range = fmt::format("a whole number of tokens from 1 to {}, e.g. 8192 or 8Ki",
                                        format_integer(limits::kMaxSequence));
  return CLI::Validator(
      [range](std::string& text) -> std::string {
        double tokens = 0;
        try {
          tokens = parse_token_count(text, "--seq-len");
        } catch (const InputError&) {
          return fmt::format("'{}' is not a sequence length: give {}", shortened(text), range);
        }
        if (tokens != std::floor(tokens)) {
          return fmt::format("{} is not a whole number of tokens: give {}", shortened(text), range);
        }
        if (tokens > static_cast<double>(limits::kMaxSequence)) {
          return fmt::format("{} is out of range: give {}", shortened(text), range);
        }
        return "";
      },
      range);
}

scenarios::Checkpointing parse_checkpointing_value(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return scenarios::parse_checkpointing(lower);
}

CLI::Validator checkpointing_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          parse_checkpointing_value(text);
        } catch (const InputError&) {
          return fmt::format("'{}' is not a checkpointing mode: give none, selective or full", shortened(text));
        }
        return "";
      },
      "none, selective or full");
}

void ScenarioOptions::add_to(CLI::App* command, bool allow_all_strategies) {
  add_source_to(command);
  command->add_option("--gpus", gpus, "Number of GPUs (overrides the scenario's cluster size)")->transform(whole_number(1, kMaxCount));
  command->add_option("--shard-group", shard_group,
                      "GPUs per shard group; fewer than the GPUs makes HSDP: groups replicated, gradients all-reduced "
                      "across the replicas (default: the scenario's)")
      ->transform(whole_number(1, kMaxCount));
  command->add_option("--tp", tp, "Tensor-parallel ranks (training.mesh.tp): every block's matrices split Megatron-style")
      ->transform(whole_number(1, kMaxCount));
  command->add_option("--cp", cp, "Context-parallel ranks (training.mesh.cp): each sequence split, ring attention")
      ->transform(whole_number(1, kMaxCount));
  command->add_option("--ep", ep, "Expert-parallel ranks (training.mesh.ep), carved out of the FSDP group: each holds "
                                  "1/ep of the routed experts")
      ->transform(whole_number(1, kMaxCount));
  command
      ->add_option("--pp", pp,
                   "Pipeline stages (training.mesh.pp): the layers split over pp ranks, run in "
                   "training.pipeline's schedule (default 1F1B); 1 drops the pipeline block, keeping "
                   "the step's micro-batches")
      ->transform(whole_number(1, kMaxCount));
  command->add_option("--expert-tp", expert_tp,
                      "The routed experts' tensor parallelism (training.mesh.expert_tp): the tp (the default: each "
                      "expert split over the tp ranks like the MLP) or 1 (each expert whole on its rank, Megatron's "
                      "--expert-tensor-parallel-size 1; needs --ep above 1)")
      ->transform(whole_number(1, kMaxCount));
  command->add_option("--strategy", strategy,
                      std::string("Layout strategy: ragged, vescale-paper, fsdp1, fsdp2, zero3, megatron, ddp, "
                                  "megatron-ddp") +
                          (allow_all_strategies ? ", or all" : ""));
  command->add_option("--granularity", granularity, "Sharding granularity: element, rows:K, block:RxC or matrix");
  command->add_option("--seq-len", sequence_length,
                      "Sequence length (training.sequence_length), e.g. 8192 or 8Ki (default: the scenario's)")
      ->check(sequence_length_value());
  command->add_option("--micro-batch", micro_batch,
                      "Sequences per GPU per micro-step (training.micro_batch_size; the accumulation steps stay the "
                      "scenario's) (default: the scenario's)")
      ->transform(whole_number(1, limits::kMaxMicroBatch));
  command->add_option("--checkpointing", checkpointing,
                      "Activation checkpointing (training.activation_checkpointing): none, selective or full "
                      "(default: the scenario's)")
      ->check(checkpointing_value());
}

void ScenarioOptions::add_source_to(CLI::App* command) {
  command->add_option("scenario", scenario, "Scenario file (.textproto/.json) or shipped name; default: " +
                                                std::string(scenarios::kDefaultScenario));
  command->add_option("--model", model, "Plan a catalog model or config.json instead of a scenario (needs --gpus)");
  cluster.add_to(command);
  command->add_option("--layers", layers,
                      "Keep the model's first N transformer blocks, same widths (model.layers): a scaled-down model "
                      "for runs on a few GPUs")
      ->transform(whole_number(1, kMaxCount));
  command->add_option("--attention", attention,
                      "Attention kernel (training.attention): math (scores in HBM), flash2, flash3 (Hopper), triton "
                      "(flash-attn's Triton FlashAttention, llm-foundry's attn_impl: triton), efficient (SDPA's "
                      "memory-efficient backend, what it runs when given an attn_mask) or cudnn (SDPA's cuDNN "
                      "backend, Transformer Engine's fused attention; Hopper and Blackwell)");
  command->add_option("--loss", loss,
                      "Loss kernel (training.loss): fp32-logits (TorchTitan), fused (flash-attn's, llm-foundry), "
                      "chunked (Liger's fused linear cross-entropy), shifted-fp32-logits (Hugging Face's causal-LM "
                      "loss), log-softmax (torch's F.cross_entropy over the compute-dtype logits, eager) or "
                      "loss-parallel (torchtitan under tp: torch's loss_parallel over vocabulary-sharded logits)");
  command
      ->add_option("--expert-load", expert_load,
                   "Mixture-of-experts models: the busiest routed expert's tokens over the mean expert's "
                   "(training.experts.busiest_load): 1 is a balanced router, experts / top-k a collapsed one")
      ->transform(number_between(1, static_cast<double>(limits::kMaxExperts)));
  command->add_flag("--expandable-segments", expandable_segments,
                    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (training.allocator.expandable_segments)");
  command->add_option("--set", sets,
                      "FIELD=VALUE: set any scenario field (dotted path, text-format value), after the other "
                      "options; repeatable, e.g. --set training.prefetch_depth=0");
}

void ScenarioOptions::add_optimizer_to(CLI::App* command) {
  command->add_option("--optimizer", optimizer,
                      fmt::format("Optimizer: {} (defaults for its settings)",
                                  fmt::join(scenarios::optimizer_names(), ", ")));
}

void ScenarioOptions::add_whatif_to(CLI::App* command) {
  command
      ->add_option("--slow-gpus", slow_gpus,
                   "N:F: N GPUs (chosen by whatif.slow_gpus.seed) at fraction F of their compute rate "
                   "(whatif.slow_gpus); simulates every node and the healthy cluster beside it")
      ->transform(count_and_fraction(kMaxCount, limits::kMinSlowFraction));
  command
      ->add_option("--slow-links", slow_links,
                   "N:F: N nodes' NICs (chosen by whatif.slow_links.seed) at fraction F of their bandwidth "
                   "(whatif.slow_links); simulates every node and the healthy cluster beside it")
      ->transform(count_and_fraction(kMaxCount, limits::kMinSlowFraction));
}

namespace {

// N:F of --slow-gpus or --slow-links into its whatif block: a count drawn
// by the block's seed (the scenario's, or the default), replacing any list.
template <class Slow>
void set_slow(Slow* slow, void (Slow::*clear_list)(), const char* option, const std::string& text, const char* what,
              int64_t limit) {
  const CountAndFraction value = parse_count_and_fraction(text);
  if (value.count > limit) {
    throw InputError(fmt::format("{} {}: {} {}, but the cluster has {}; give at most {}", option, text,
                                 format_integer(value.count), what, format_integer(limit), format_integer(limit)));
  }
  (slow->*clear_list)();
  slow->set_count(static_cast<int32_t>(value.count));
  slow->set_fraction(value.fraction);
}

void set_whatif(scenarios::LoadedScenario& loaded, const std::string& slow_gpus, const std::string& slow_links) {
  scenarios::WhatIf* whatif = loaded.written.mutable_whatif();
  if (!slow_gpus.empty()) {
    set_slow(whatif->mutable_slow_gpus(), &scenarios::SlowGpus::clear_ranks, "--slow-gpus", slow_gpus, "GPUs",
             scenarios::total_gpus(loaded.scenario));
  }
  if (!slow_links.empty()) {
    set_slow(whatif->mutable_slow_links(), &scenarios::SlowLinks::clear_nodes, "--slow-links", slow_links, "nodes",
             loaded.scenario.cluster().nodes());
  }
  loaded = scenarios::rebuild(std::move(loaded));
}

void set_optimizer(scenarios::LoadedScenario& loaded, const std::string& name) {
  scenarios::select_optimizer(loaded.written.mutable_training(), name, "--optimizer");
  loaded = scenarios::rebuild(std::move(loaded));
}

// --seq-len, --micro-batch, --checkpointing into training; the values were
// checked when parsed.
void set_batch_shape(scenarios::LoadedScenario& loaded, const std::string& sequence_length, int64_t micro_batch,
                     const std::string& checkpointing) {
  const scenarios::Training& was = loaded.scenario.training();
  const int64_t tokens = sequence_length.empty() ? was.sequence_length() : parse_sequence_length(sequence_length);
  const int64_t sequences = micro_batch > 0 ? micro_batch : was.micro_batch_size();
  // Checked here so that the error names the flags, not the scenario's line.
  if (tokens * sequences > limits::kMaxMicroBatchTokens) {
    const std::string given = !sequence_length.empty() && micro_batch > 0 ? "--micro-batch or --seq-len"
                              : micro_batch > 0                          ? "--micro-batch"
                                                                         : "--seq-len";
    throw InputError(fmt::format("{}: micro-batch {} x sequence length {} is {} tokens per micro-batch; at most {} "
                                 "(2^26): lower {}",
                                 given, format_integer(sequences), format_integer(tokens),
                                 format_integer(tokens * sequences), format_integer(limits::kMaxMicroBatchTokens), given));
  }
  scenarios::Training* t = loaded.written.mutable_training();
  if (!sequence_length.empty()) t->set_sequence_length(static_cast<int32_t>(tokens));
  if (micro_batch > 0) t->set_micro_batch_size(static_cast<int32_t>(micro_batch));
  if (!checkpointing.empty()) t->set_activation_checkpointing(parse_checkpointing_value(checkpointing));
  loaded = scenarios::rebuild(std::move(loaded));
}

// --attention, --loss, --expandable-segments into training.
void set_kernels(scenarios::LoadedScenario& loaded, const std::string& attention, const std::string& loss,
                 bool expandable_segments) {
  scenarios::Training* t = loaded.written.mutable_training();
  if (attention == "math") t->set_attention(scenarios::MATH);
  else if (attention == "flash2") t->set_attention(scenarios::FLASH_ATTENTION_2);
  else if (attention == "flash3") t->set_attention(scenarios::FLASH_ATTENTION_3);
  else if (attention == "triton") t->set_attention(scenarios::TRITON_FLASH_ATTENTION);
  else if (attention == "efficient") t->set_attention(scenarios::MEMORY_EFFICIENT);
  else if (attention == "cudnn") t->set_attention(scenarios::CUDNN_ATTENTION);
  else if (!attention.empty()) {
    throw InputError(fmt::format("--attention {}: use math, flash2, flash3, triton, efficient or cudnn", attention));
  }
  if (loss == "fp32-logits") t->set_loss(scenarios::FP32_LOGITS);
  else if (loss == "fused") t->set_loss(scenarios::FUSED);
  else if (loss == "chunked") t->set_loss(scenarios::CHUNKED);
  else if (loss == "shifted-fp32-logits") t->set_loss(scenarios::SHIFTED_FP32_LOGITS);
  else if (loss == "log-softmax") t->set_loss(scenarios::LOG_SOFTMAX);
  else if (loss == "loss-parallel") t->set_loss(scenarios::LOSS_PARALLEL);
  else if (!loss.empty()) {
    throw InputError(fmt::format(
        "--loss {}: use fp32-logits, fused, chunked, shifted-fp32-logits, log-softmax or loss-parallel", loss));
  }
  if (expandable_segments) t->mutable_allocator()->set_expandable_segments(true);
  loaded = scenarios::rebuild(std::move(loaded));
}

}  // namespace

importers::ImportOptions ScenarioOptions::import_options() const {
  importers::ImportOptions o;
  o.model = model;
  o.gpus = gpus;
  o.gpu = cluster.gpu;
  o.gpus_per_node = cluster.gpus_per_node;
  o.nics_per_node = cluster.nics_per_node;
  o.nic_gbps = cluster.nic_gbps;
  o.micro_batch = micro_batch;
  if (!sequence_length.empty()) o.sequence_length = parse_sequence_length(sequence_length);
  return o;
}

void ScenarioOptions::warn_about_import(std::ostream& err) const {
  if (scenario.empty() || !importers::config_format_of(scenario)) return;
  try {
    for (const std::string& warning : importers::import_config(scenario, import_options()).warnings) {
      err << "ragged: warning: " << one_line(warning) << '\n';
    }
  } catch (const InputError&) {
    // Said by load() where it matters (a --sweep imports at each count).
  }
}

scenarios::LoadedScenario ScenarioOptions::load() const {
  // A training config of another stack: imported with the options it lacks.
  const bool imported = !scenario.empty() && importers::config_format_of(scenario).has_value();
  if (!model.empty() && !scenario.empty() && !imported) throw InputError("give either a scenario or --model, not both");
  scenarios::LoadedScenario loaded =
      imported        ? importers::load_imported(scenario, import_options())
      : model.empty() ? scenarios::load_scenario(scenario.empty() ? scenarios::kDefaultScenario : scenario)
                      : cluster.model_scenario(model, gpus);
  if (model.empty() && !imported) {
    cluster.apply(loaded, gpus > 0 ? gpus : scenarios::total_gpus(loaded.scenario), gpus > 0);
    // Below one node the node shrinks (with_total_gpus), unless its size was given.
    const int64_t per_node = cluster.node_size(loaded.scenario);
    if (gpus > 0 && (gpus > per_node || cluster.gpus_per_node > 0)) check_whole_nodes(gpus, per_node);
    if (gpus > 0) loaded = scenarios::with_total_gpus(loaded, gpus);
  }
  if (!optimizer.empty()) set_optimizer(loaded, optimizer);
  if (!sequence_length.empty() || micro_batch > 0 || !checkpointing.empty()) {
    set_batch_shape(loaded, sequence_length, micro_batch, checkpointing);
  }
  if (!attention.empty() || !loss.empty() || expandable_segments) set_kernels(loaded, attention, loss, expandable_segments);
  if (expert_load > 0) {
    loaded.written.mutable_training()->mutable_experts()->set_busiest_load(expert_load);
    loaded = scenarios::rebuild(std::move(loaded));
  }
  if (layers > 0) {
    loaded.written.mutable_model()->set_layers(static_cast<int32_t>(layers));
    loaded = scenarios::rebuild(std::move(loaded));
  }
  if (!slow_gpus.empty() || !slow_links.empty()) set_whatif(loaded, slow_gpus, slow_links);
  if (tp > 0 || cp > 0 || ep > 0 || pp > 0) loaded = scenarios::with_mesh(loaded, tp, cp, ep, pp);
  if (expert_tp > 0) {
    loaded.written.mutable_training()->mutable_mesh()->set_expert_tp(static_cast<int32_t>(expert_tp));
    loaded = scenarios::rebuild(std::move(loaded));
  }
  if (shard_group > 0) {
    const scenarios::Mesh& mesh = loaded.scenario.training().mesh();
    const int64_t total = scenarios::total_gpus(loaded.scenario) / (int64_t{std::max(1, mesh.tp())} * std::max(1, mesh.pp()));
    if (total % shard_group != 0) {
      throw InputError(fmt::format("--shard-group {}: it must divide the {} GPUs{}", shard_group, total,
                                   total != scenarios::total_gpus(loaded.scenario) ? " of one stage's tp rank" : ""));
    }
    scenarios::Training* training = loaded.written.mutable_training();
    training->set_shard_group_size(static_cast<int32_t>(shard_group));
    training->clear_replicate_group_size();
    training->mutable_mesh()->clear_dp_shard();
    training->mutable_mesh()->clear_dp_replicate();
    loaded = scenarios::rebuild(std::move(loaded));
  }
  if (!granularity.empty()) {
    planner::set_uniform_granularity(planner::GranularitySpec::parse(granularity),
                                     loaded.written.mutable_training()->mutable_granularity());
    loaded = scenarios::rebuild(std::move(loaded));
  }
  if (!sets.empty()) loaded = scenarios::with_overrides(loaded, scenarios::parse_overrides(sets));
  return loaded;
}

std::vector<planner::ResolvedScenario> ScenarioOptions::resolve() const {
  const scenarios::LoadedScenario loaded = load();
  std::vector<scenarios::Strategy> strategies;
  if (strategy == "all") {
    strategies = scenarios::all_strategies();
  } else if (!strategy.empty()) {
    strategies = {scenarios::parse_strategy(strategy)};
  } else {
    strategies = {loaded.scenario.training().strategy()};
  }
  std::vector<planner::ResolvedScenario> out;
  for (scenarios::Strategy s : strategies) {
    scenarios::LoadedScenario copy = loaded;
    if ((s == scenarios::DDP || s == scenarios::MEGATRON_DDP) && loaded.written.training().strategy() != s) {
      // DDP's defaults (a shard group of one) and Megatron DDP's (its buckets)
      // follow from what the scenario writes, and are checked with it.
      copy.written.mutable_training()->set_strategy(s);
      copy = scenarios::rebuild(std::move(copy));
    }
    copy.scenario.mutable_training()->set_strategy(s);
    out.push_back(planner::resolve_scenario(std::move(copy)));
  }
  return out;
}

}  // namespace ragged::cli
