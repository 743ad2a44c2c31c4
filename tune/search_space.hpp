#pragma once
// What `ragged tune` searches: the constraints a user gives and the
// configurations they allow on one GPU count. A configuration (Candidate)
// is the strategy, the device mesh (tensor, context and expert parallelism,
// docs/MESH.md), the shard group (FSDP over every data-parallel rank, or HSDP
// groups replicated), micro-batch x gradient accumulation for the global
// batch, activation checkpointing (the block's and, under expert parallelism,
// the experts' own), prefetch depth, reshard after forward and,
// for the RaggedShard strategies, the sharding granularity.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/scenario_loader.hpp"
#include "traces/metrics.hpp"

namespace ragged::tune {

struct Constraints {
  std::optional<int64_t> global_batch_tokens;  // default: the scenario's tokens per GPU times the GPUs
  std::optional<int64_t> sequence_length;      // default: the scenario's
  // Fraction of the allocator's capacity left free, in [0, 1): by default the
  // simulator's own peak-memory error, so a candidate that fits is never one
  // `ragged simulate` calls a tight fit.
  double headroom = traces::kPeakMemoryPredictionError;
  // Also require the upper end of each candidate's memory band (the peak
  // comparable validation runs reached against their predictions,
  // sim::regime_band) within the allocator's capacity: against a confident
  // pick whose real peak the model under-predicts.
  bool memory_band = false;
  int64_t max_grad_accum = 64;
  std::vector<scenarios::Strategy> strategies;          // empty: all six
  // FSDP groups (dp_shard x cp); empty: a node's share of them times powers of
  // two, and every rank of a tp rank.
  std::vector<int64_t> shard_groups;
  // Empty: 1 (FSDP alone), widened to 1, 2, 4 and 8 (those dividing a node and
  // the model's heads and widths) where FSDP alone cannot train the global
  // batch (enumerate_candidates) or fits nothing (Tuner::search).
  std::vector<int64_t> tps;
  std::vector<int64_t> cps;  // empty: 1, and from 32,768 tokens 2 to 16 that cut a sequence in 2 x cp chunks
  std::vector<int64_t> eps;  // empty: 1, and for a mixture of experts the powers of two dividing its experts
  // Pipeline stages (training.mesh.pp): empty: 1, widened with tp to 1, 2,
  // 4, 8 and 16 (those leaving every stage a block); and their schedules:
  // empty: 1F1B and interleaved 1F1B (2 chunks per stage).
  std::vector<int64_t> pps;
  std::vector<scenarios::PipelineSchedule> schedules;
  std::vector<int64_t> micro_batches;                   // empty: every divisor of a data-parallel rank's batch
  std::vector<scenarios::Checkpointing> checkpointing;  // empty: none, selective, full
  // The routed experts' own full recompute (training.experts.checkpointing
  // FULL: Megatron-Core's `--recompute-modules moe`) under a block mode short
  // of full, where they are a unit of their own (ep > 1); empty: without and with.
  std::vector<bool> experts_recompute;
  // Megatron-Core's overlapped expert all-to-alls (training.experts.
  // overlap_all_to_all) where a candidate can run them (expert_overlap_runs);
  // empty: without and with.
  std::vector<bool> expert_overlaps;
  std::vector<int> prefetch_depths;                     // empty: 1 and 2
  std::vector<bool> reshard_after_forward;              // empty: true and false
  std::vector<std::string> granularities;               // ragged, vescale-paper; empty: the scenario's
};

struct Candidate {
  scenarios::Strategy strategy = scenarios::RAGGED;
  int64_t shard_group = 1;  // dp_shard x cp
  int64_t micro_batch = 1;  // sequences of a data-parallel rank (its tp and cp ranks share them)
  int64_t grad_accum = 1;
  scenarios::Checkpointing checkpointing = scenarios::NONE;
  int prefetch = 1;
  bool reshard = true;
  std::string granularity;  // "" keeps the scenario's
  int64_t tp = 1;  // the device mesh (training.mesh)
  int64_t cp = 1;
  int64_t ep = 1;
  int64_t pp = 1;
  scenarios::PipelineSchedule schedule = scenarios::PIPELINE_SCHEDULE_UNSPECIFIED;  // with pp > 1
  int64_t virtual_stages = 1;  // model chunks per stage (interleaved 1F1B)
  // With tp and ep: each routed expert whole on its rank (training.mesh.expert_tp 1),
  // ep carved out of tp x the shard group; false splits them over tp.
  bool whole_experts = false;
  // The experts rerun their layer in the backward (training.experts.checkpointing
  // FULL) where the block keeps more (checkpointing none or selective, ep > 1).
  bool experts_recompute = false;
  // Each steady-state forward and the backward after it run as one pass with
  // their expert all-to-alls beside the other's compute (Megatron-Core's
  // --overlap-moe-expert-parallel-comm), where expert_overlap_runs.
  bool expert_overlap = false;

  bool operator==(const Candidate&) const = default;
};

// Whether a candidate's strategy, mesh, schedule and checkpointing can run
// the overlapped expert all-to-alls (scenarios::expert_overlap_runs).
bool expert_overlap_runs(const Candidate& c);

// The batch every candidate on `gpus` GPUs trains per optimizer step.
struct BatchShape {
  int64_t sequence_length = 0;
  int64_t global_sequences = 0;
  int64_t gpus = 1;

  int64_t global_tokens() const { return global_sequences * sequence_length; }
  // A GPU's share of a step's tokens (the tp and cp ranks share theirs).
  double tokens_per_gpu() const { return static_cast<double>(global_tokens()) / static_cast<double>(gpus); }
};

// Throws InputError for constraints no search could meet, whatever the GPU
// count: headroom outside [0, 100%), no strategy, an unknown granularity.
void check_constraints(const Constraints& constraints);

// The batch on `base`'s GPU count; InputError when it is not whole
// sequences. (Whether it divides over a mesh's data-parallel ranks is each
// mesh's question: enumerate_candidates.)
BatchShape batch_shape(const scenarios::Scenario& base, const Constraints& constraints);

// Every allowed configuration on `base`'s GPU count, in a fixed order (the
// same on every MPI rank). A mesh is left out where it cannot be laid out (tp
// or ep not dividing the model's heads, widths or experts, the GPUs, a node,
// or the batch over its data-parallel ranks). InputError when none can be
// formed, saying what stood in the way.
std::vector<Candidate> enumerate_candidates(const scenarios::LoadedScenario& base, const Constraints& constraints);

// The constraints with tensor parallelism's default sizes (1, 2, 4, 8) and
// the pipeline's (1 to 16 stages) searched too where none were given.
Constraints with_tensor_parallel_defaults(const Constraints& constraints);

// Whether a strategy lays out RaggedShard buffers (granularity is a choice).
bool is_ragged_strategy(scenarios::Strategy strategy);

}  // namespace ragged::tune
