#pragma once
// What `ragged tune` searches: the constraints a user gives and the
// configurations they allow on one GPU count. A configuration (Candidate)
// is the strategy, the shard group (FSDP over all GPUs, or HSDP groups
// replicated), micro-batch x gradient accumulation for the global batch,
// activation checkpointing, prefetch depth, reshard after forward and, for
// the RaggedShard strategies, the sharding granularity.

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
  int64_t max_grad_accum = 64;
  std::vector<scenarios::Strategy> strategies;          // empty: all six
  std::vector<int64_t> shard_groups;                    // empty: a node's GPUs times powers of two, and all GPUs
  std::vector<int64_t> micro_batches;                   // empty: every divisor of the per-GPU batch
  std::vector<scenarios::Checkpointing> checkpointing;  // empty: none, selective, full
  std::vector<int> prefetch_depths;                     // empty: 1 and 2
  std::vector<bool> reshard_after_forward;              // empty: true and false
  std::vector<std::string> granularities;               // ragged, vescale-paper; empty: the scenario's
};

struct Candidate {
  scenarios::Strategy strategy = scenarios::RAGGED;
  int64_t shard_group = 1;
  int64_t micro_batch = 1;
  int64_t grad_accum = 1;
  scenarios::Checkpointing checkpointing = scenarios::NONE;
  int prefetch = 1;
  bool reshard = true;
  std::string granularity;  // "" keeps the scenario's

  bool operator==(const Candidate&) const = default;
};

// The batch every candidate on `gpus` GPUs trains per optimizer step.
struct BatchShape {
  int64_t sequence_length = 0;
  int64_t global_sequences = 0;
  int64_t per_gpu_sequences = 0;

  int64_t global_tokens() const { return global_sequences * sequence_length; }
};

// Throws InputError for constraints no search could meet, whatever the GPU
// count: headroom outside [0, 100%), no strategy, an unknown granularity.
void check_constraints(const Constraints& constraints);

// The batch on `base`'s GPU count; InputError when it is not whole
// sequences or does not divide over the GPUs.
BatchShape batch_shape(const scenarios::Scenario& base, const Constraints& constraints);

// Every allowed configuration on `base`'s GPU count, in a fixed order (the
// same on every MPI rank). InputError when none can be formed (no allowed
// shard group divides the GPUs, no micro-batch divides the per-GPU batch
// within the accumulation limit).
std::vector<Candidate> enumerate_candidates(const scenarios::LoadedScenario& base, const Constraints& constraints);

// Whether a strategy lays out RaggedShard buffers (granularity is a choice).
bool is_ragged_strategy(scenarios::Strategy strategy);

}  // namespace ragged::tune
