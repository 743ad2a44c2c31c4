#pragma once
// Defaults and validation of a Scenario, independent of the model it names.
// Model-dependent checks (a block that does not divide a tensor) happen when
// the model is resolved (planner/granularity).

#include <cstdint>
#include <string>
#include <vector>

#include "scenarios/scenario.pb.h"

namespace ragged::scenarios {

// One problem with one field: `path` uses proto field names, `message` says
// what is wrong and how to fix it.
struct FieldIssue {
  std::string path;
  std::string message;
};

// Fills every unset optional field with its documented default (scenario.proto).
// Values the user wrote are never changed.
Scenario with_defaults(const Scenario& written);

// Every problem of a defaulted scenario, in field order; empty when valid.
std::vector<FieldIssue> validate_scenario(const Scenario& scenario);

int64_t total_gpus(const Scenario& scenario);
// A GPU's dense bf16 peak in FLOP/s and its capacity in bytes (GiB = 2^30 B),
// the one conversion of the scenario's units that every report uses.
double peak_bf16_flops(const Gpu& gpu);
int64_t hbm_capacity_bytes(const Gpu& gpu);
// What PyTorch's caching allocator can reserve: the GPU's memory less what the
// CUDA context and NCCL hold (training.allocator.outside_gib).
int64_t allocator_capacity_bytes(const Scenario& scenario);
// Sequences per optimizer step over every data-parallel rank (the GPUs over
// mesh.tp x mesh.cp x mesh.pp, which share their sequences).
int64_t global_batch_sequences(const Scenario& scenario);
// Whether the loop steps its optimizer (training.optimizer_step, default true).
bool steps_optimizer(const Training& training);
// Whether the routed experts are whole on their ranks under tensor
// parallelism (training.mesh.expert_tp 1 with tp above 1; docs/MESH.md).
bool whole_experts(const Mesh& mesh);
// Whether the head's logits stay sharded by vocabulary over tensor
// parallelism (tp above 1, a vocabulary-parallel head, no gathered_logits):
// what torch's loss_parallel computes on.
bool vocabulary_sharded_logits(const Mesh& mesh);
// Whether the strategy reduces its gradients unit by unit, FSDP's way
// (RAGGED, VESCALE_PAPER, FSDP1, FSDP2, ZERO3), not in buffers of its own
// (DDP, Megatron's DDP, Megatron-FSDP).
bool reduces_unit_by_unit(Strategy strategy);
// Whether Megatron-Core's overlapped expert all-to-alls can run: Megatron's
// DDP with ep above 1, without stages or under interleaved 1F1B, neither the
// blocks nor the experts fully recomputed (what scenario validation accepts,
// each refusal with its reason; docs/MESH.md).
bool expert_overlap_runs(Strategy strategy, int64_t ep, int64_t pp, PipelineSchedule schedule, bool full_recompute);
std::string strategy_name(Strategy strategy);               // "ragged", "fsdp2", ...
// Parses "ragged", "vescale-paper", "fsdp1", "fsdp2", "zero3", "megatron", "ddp"; throws InputError.
Strategy parse_strategy(const std::string& name);
// The sharding strategies ("all" of --strategy and tune), DDP aside.
std::vector<Strategy> all_strategies();
std::string checkpointing_name(Checkpointing mode);          // "none", "selective", "full", "saved_names"
Checkpointing parse_checkpointing(const std::string& name);  // those names; throws InputError
std::vector<std::string> optimizer_names();                  // "adamw", "adam8bit", "muon", "shampoo", "sgd"
std::string optimizer_name(const Optimizer& optimizer);      // one of those; "adamw" when unset (the default)
// Sets the optimizer kind `name` names (its fields left to the defaults) and,
// for 8-bit Adam, lets its block granularity apply unless one is given.
// Throws InputError naming `field` and the choices.
void select_optimizer(Training* training, const std::string& name, const std::string& field);
std::string schedule_name(PipelineSchedule schedule);         // "gpipe", "1f1b", "interleaved", "zb-h1"
PipelineSchedule parse_schedule(const std::string& name);     // those names; throws InputError

}  // namespace ragged::scenarios
