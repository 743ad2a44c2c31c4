#pragma once
// How each strategy moves parameters and gradients around its collectives,
// beyond the layout (../shared/reference/baselines.md section 8).

#include <string_view>

#include "scenarios/scenario.pb.h"

namespace ragged::planner {

struct StrategyTraits {
  // Casts the master shard to the parameter dtype before every all-gather
  // (ragged and vescale-paper into the DBuffer slot, FSDP1's _mp_shard, FSDP2's
  // foreach cast). Otherwise a persistent parameter-dtype shard is refreshed
  // once after the optimizer (ZeRO-3's ds_tensor, Megatron's weight buffer).
  bool cast_before_gather = true;
  // At most this many units hold unsharded parameters at once; 0 means
  // prefetch_depth + 1. FSDP1's rate limiter allows two all-gathers in flight.
  int max_unsharded_units = 0;
  // Backward writes gradients straight into the unsharded gradient buffer in
  // the reduce dtype (GEMMs with an fp32 output, as a DBuffer allows), so the
  // reduce-scatter runs in place with no cast or copy before it.
  bool grads_in_reduce_dtype = false;
  // The sharded gradient accumulator is in the parameter dtype (ZeRO-3's
  // grad_accum_dtype and Megatron's main_grads_dtype default to it), not fp32.
  bool grad_shard_in_param_dtype = false;
  // All-gathers and reduce-scatters go through one communicator, which runs
  // them in issue order (../shared/reference/baselines.md section 8: "NCCL
  // collectives on one communicator serialise"). Ragged gives each stream its
  // own communicator, so prefetching all-gathers never queue behind a
  // reduce-scatter (the veScale reference leaves it open; our choice).
  bool one_communicator = false;
};

StrategyTraits strategy_traits(scenarios::Strategy strategy);

}  // namespace ragged::planner
