#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::scenarios {
namespace {

struct StrategyName {
  Strategy strategy;
  const char* name;
};

constexpr StrategyName kNames[] = {
    {RAGGED, "ragged"}, {VESCALE_PAPER, "vescale-paper"}, {FSDP1, "fsdp1"},
    {FSDP2, "fsdp2"},   {ZERO3, "zero3"},                 {MEGATRON, "megatron"},
    {DDP, "ddp"},       {MEGATRON_DDP, "megatron-ddp"},
};

struct OptimizerName {
  Optimizer::KindCase kind;
  const char* name;
  void (*select)(Optimizer*);  // sets this kind, its fields left to the defaults
};

constexpr OptimizerName kOptimizers[] = {
    {Optimizer::kAdamw, "adamw", [](Optimizer* o) { o->mutable_adamw(); }},
    {Optimizer::kAdam8Bit, "adam8bit", [](Optimizer* o) { o->mutable_adam8bit(); }},
    {Optimizer::kMuon, "muon", [](Optimizer* o) { o->mutable_muon(); }},
    {Optimizer::kShampoo, "shampoo", [](Optimizer* o) { o->mutable_shampoo(); }},
    {Optimizer::kSgd, "sgd", [](Optimizer* o) { o->mutable_sgd(); }},
};

}  // namespace

std::vector<std::string> optimizer_names() {
  std::vector<std::string> names;
  for (const auto& entry : kOptimizers) names.emplace_back(entry.name);
  return names;
}

std::string optimizer_name(const Optimizer& optimizer) {
  for (const auto& entry : kOptimizers) {
    if (entry.kind == optimizer.kind_case()) return entry.name;
  }
  return "adamw";
}

void select_optimizer(Training* training, const std::string& name, const std::string& field) {
  for (const auto& entry : kOptimizers) {
    if (entry.name != name) continue;
    entry.select(training->mutable_optimizer());
    if (entry.kind == Optimizer::kAdam8Bit) training->mutable_granularity()->clear_default_spec();
    return;
  }
  throw InputError(fmt::format("{} {}: use one of {}", field, name, fmt::join(optimizer_names(), ", ")));
}

std::string strategy_name(Strategy strategy) {
  for (const auto& entry : kNames) {
    if (entry.strategy == strategy) return entry.name;
  }
  return "unspecified";
}

Strategy parse_strategy(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& entry : kNames) {
    if (name == entry.name) return entry.strategy;
    names.push_back(entry.name);
  }
  throw InputError(fmt::format("unknown strategy '{}': use one of {}", name, fmt::join(names, ", ")));
}

std::vector<Strategy> all_strategies() {
  std::vector<Strategy> out;
  // DDP shards nothing and Megatron's DDP only its optimizer: neither is a
  // layout of a shard group to compare with the others.
  for (const auto& entry : kNames) {
    if (entry.strategy != DDP && entry.strategy != MEGATRON_DDP) out.push_back(entry.strategy);
  }
  return out;
}

std::string checkpointing_name(Checkpointing mode) {
  switch (mode) {
    case SELECTIVE: return "selective";
    case FULL: return "full";
    case SAVED_NAMES: return "saved_names";
    default: return "none";
  }
}

Checkpointing parse_checkpointing(const std::string& name) {
  if (name == "none") return NONE;
  if (name == "selective") return SELECTIVE;
  if (name == "full") return FULL;
  if (name == "saved_names") return SAVED_NAMES;
  throw InputError(fmt::format("checkpointing '{}': use none, selective, full or saved_names", name));
}

std::string schedule_name(PipelineSchedule schedule) {
  switch (schedule) {
    case GPIPE: return "gpipe";
    case ONE_F_ONE_B: return "1f1b";
    case INTERLEAVED_1F1B: return "interleaved";
    case ZERO_BUBBLE_H1: return "zb-h1";
    default: return "-";
  }
}

PipelineSchedule parse_schedule(const std::string& name) {
  for (PipelineSchedule s : {GPIPE, ONE_F_ONE_B, INTERLEAVED_1F1B, ZERO_BUBBLE_H1}) {
    if (name == schedule_name(s)) return s;
  }
  throw InputError(fmt::format("schedule '{}': use gpipe, 1f1b, interleaved or zb-h1", name));
}

}  // namespace ragged::scenarios
