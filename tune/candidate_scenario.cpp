#include "tune/candidate_scenario.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "planner/granularity.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::tune {

scenarios::LoadedScenario candidate_scenario(const scenarios::LoadedScenario& base, const Candidate& c,
                                             int64_t sequence_length) {
  scenarios::LoadedScenario out = base;
  scenarios::Training* t = out.written.mutable_training();
  t->set_strategy(c.strategy);
  // A strategy's own block describes the scenario's runtime; a candidate of
  // another strategy leaves it behind (a Megatron-Core run tuned over FSDP).
  if (c.strategy != scenarios::DDP) t->clear_ddp();
  if (c.strategy != scenarios::MEGATRON_DDP) t->clear_megatron_ddp();
  scenarios::Mesh* mesh = t->mutable_mesh();
  // The search sets the mesh's sizes; how the stack dispatches tokens to
  // experts (and where they go) and overlaps tp's collectives are the
  // runtime's, kept where the candidate's mesh allows them.
  const scenarios::Mesh written = *mesh;
  mesh->Clear();
  mesh->set_expert_dispatcher(written.expert_dispatcher());
  mesh->set_expert_routing(written.expert_routing());
  if (c.tp > 1) mesh->set_tp_overlap(written.tp_overlap());
  mesh->set_tp(static_cast<int32_t>(c.tp));
  mesh->set_cp(static_cast<int32_t>(c.cp));
  mesh->set_ep(static_cast<int32_t>(c.ep));
  mesh->set_pp(static_cast<int32_t>(c.pp));
  if (c.whole_experts) mesh->set_expert_tp(1);
  t->clear_pipeline();
  if (c.pp > 1) {
    t->mutable_pipeline()->set_schedule(c.schedule);
    if (c.virtual_stages > 1) t->mutable_pipeline()->set_virtual_stages(static_cast<int32_t>(c.virtual_stages));
  }
  t->set_shard_group_size(static_cast<int32_t>(c.shard_group));
  t->clear_replicate_group_size();  // the rest of the GPUs
  t->set_micro_batch_size(static_cast<int32_t>(c.micro_batch));
  t->set_gradient_accumulation_steps(static_cast<int32_t>(c.grad_accum));
  t->set_sequence_length(static_cast<int32_t>(sequence_length));
  t->set_activation_checkpointing(c.checkpointing);
  // The search chooses the checkpointing: the experts take their block's or
  // rerun their layer on their own.
  if (c.experts_recompute) {
    t->mutable_experts()->set_checkpointing(scenarios::FULL);
  } else {
    t->mutable_experts()->clear_checkpointing();
  }
  // The search chooses Megatron-Core's overlapped all-to-alls; their delayed
  // weight gradients stay the runtime's, kept with the overlap.
  if (c.expert_overlap) {
    RAGGED_ASSERT(expert_overlap_runs(c), "the search offers the overlapped all-to-alls only where they run");
    t->mutable_experts()->set_overlap_all_to_all(true);
  } else {
    t->mutable_experts()->clear_overlap_all_to_all();
    t->mutable_experts()->clear_delay_weight_gradients();
  }
  t->set_prefetch_depth(c.prefetch);
  t->set_reshard_after_forward(c.reshard);
  if (!c.granularity.empty()) {
    planner::set_uniform_granularity(planner::GranularitySpec::parse(c.granularity), t->mutable_granularity());
  }
  return scenarios::rebuild(std::move(out));
}

std::string mesh_text(const Candidate& c) {
  std::string text;
  for (const auto& [name, size] :
       {std::pair{"tp", c.tp}, std::pair{"cp", c.cp}, std::pair{"ep", c.ep}, std::pair{"pp", c.pp}}) {
    if (size > 1) text += fmt::format("{}{} {}", text.empty() ? "" : " x ", name, size);
  }
  if (c.whole_experts) text += " (experts whole)";
  if (c.pp > 1) {
    text += fmt::format(" ({}{})", scenarios::schedule_name(c.schedule),
                        c.virtual_stages > 1 ? fmt::format(", {} chunks per stage", c.virtual_stages) : "");
  }
  if (c.expert_overlap) text += " (all-to-alls overlapped)";
  return text;
}

std::string describe(const Candidate& c, int64_t gpus) {
  const int64_t replicas = gpus / (c.shard_group * c.tp * c.pp);
  const std::string mesh = mesh_text(c);
  return fmt::format("{}, {}shard group {}{}, micro-batch {} x {}, {} checkpointing{}, prefetch {}, {}{}",
                     scenarios::strategy_name(c.strategy), mesh.empty() ? "" : mesh + ", ", c.shard_group,
                     replicas > 1 ? fmt::format(" x {} replicas", replicas) : "", c.micro_batch, c.grad_accum,
                     c.checkpointing == scenarios::NONE ? "no" : scenarios::checkpointing_name(c.checkpointing),
                     c.experts_recompute ? " (experts recomputed)" : "", c.prefetch,
                     c.reshard ? "reshard" : "no reshard",
                     c.granularity.empty() ? "" : ", granularity " + c.granularity);
}

std::string scenario_file_text(const scenarios::LoadedScenario& scenario, const std::string& description) {
  scenarios::Scenario written = scenario.written;
  written.set_name(scenario.scenario.name() + "-tuned");
  written.set_description(description);
  if (written.model().has_hf_config()) {
    const std::filesystem::path path = written.model().hf_config();
    if (path.is_relative()) {
      written.mutable_model()->set_hf_config(
          std::filesystem::absolute(scenario.base_dir / path).lexically_normal().string());
    }
  }
  return fmt::format("# Written by `ragged tune` from {}: {}\n", scenario.origin, description) +
         scenarios::to_text(written);
}

}  // namespace ragged::tune
