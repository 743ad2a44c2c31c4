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
  // The training loop frees the sharded gradients every step (PyTorch's
  // optimizer.zero_grad(), set_to_none=True by default since PyTorch 2.0):
  // each unit's shard is allocated by its first reduction of the step, on
  // the stream that reduces it, and freed after the optimizer. Otherwise the
  // shards are a persistent accumulator (ZeRO-3's grad_partitions_flat_buffer,
  // Megatron-FSDP's main_grad buffer, a DBuffer). Sources in strategy_traits.cpp.
  bool grad_shards_freed_each_step = false;
  // All-gathers and reduce-scatters go through one communicator, which runs
  // them in issue order (../shared/reference/baselines.md section 8: "NCCL
  // collectives on one communicator serialise"). Ragged gives each stream its
  // own communicator, so prefetching all-gathers never queue behind a
  // reduce-scatter (the veScale reference leaves it open; our choice).
  bool one_communicator = false;

  // Backpressure of the gradient reductions on the backward: before a
  // unit's gradients are handed over to be reduced, the compute stream waits
  // for the oldest reductions still in flight until at most
  // `reduce_queue_units` of them remain (-1: no limit) and they hold at most
  // `reduce_queue_elements()` elements (0: no limit). Without it a backward
  // faster than its reduce-scatters keeps every unit's unsharded gradients
  // alive at once. Each strategy's rule and its source: docs/SIMULATOR.md
  // section 4b.
  int reduce_queue_units = -1;
  // The queue's capacity in elements: max(floor, factor x the mean
  // parameters of a block) (Megatron-FSDP's; ZeRO-3's is a floor alone);
  // 0 and 0: no limit in elements.
  int64_t reduce_queue_min_elements = 0;
  int64_t reduce_queue_block_factor = 0;
  // The copy of the unsharded gradients into the reduce-scatter input (pack
  // or cast) runs on the compute stream, after the wait above, and frees the
  // gradients there (FSDP2's foreach_reduce); otherwise on the
  // reduce-scatter stream.
  bool reduce_copy_in_on_compute = false;
  // Autograd gives each parameter's gradient a tensor of its own, and the
  // backward of the split that made the parameters views of the flat
  // parameter concatenates them into the flat gradient on the compute
  // stream (FSDP1). Otherwise the backward writes into the unit's buffer
  // (a DBuffer) or the strategy's copy-in gathers them (reduce_scatter_in).
  bool grads_concatenated = false;
  // The unsharded gradients are divided by gradient_predivide_factor() in
  // place before the reduce-scatter and the reduced shard by the rest of the
  // world size after it, each an element-wise pass (FSDP1's _div_if_needed).
  bool divides_gradients = false;
  // The root's hooks fence each micro-batch: at the end of its backward the
  // compute stream waits for every reduction issued, and the next forward's
  // all-gathers wait for the compute stream, so none of them starts before
  // the previous micro-batch's reductions have ended (FSDP1, FSDP2).
  bool root_fences_micro_batches = false;
  // The units outside the blocks (embedding, final norm, head) are the root
  // module's group: FSDP does not reshard it after the forward (its backward
  // would gather it again at once), so the embedding stays gathered from its
  // forward to its backward, and the group is reduced when its last gradient,
  // the embedding's, is ready, so the head's unsharded gradients live through
  // the whole backward (FSDP1, FSDP2; sources in strategy_traits.cpp).
  bool root_group_outside_blocks = false;
  // With its gradient sync off, a backward moves each unit's unsharded
  // gradients into an accumulator of the reduce dtype, held until the sync
  // (FSDP2's post_backward: to_accumulated_grad_if_needed, then
  // accumulate_unsharded_grad_if_needed); otherwise autograd accumulates
  // them in the parameter dtype.
  bool accumulates_unsynced_grads_in_reduce_dtype = false;

  // DDP: every rank holds the whole model, which computes with its own
  // parameters (cast per op by autocast when the compute dtype is below the
  // master dtype): nothing is gathered or reduce-scattered, and the
  // gradients are all-reduced in buckets over the replicas
  // (planner/ddp_reduction.hpp). Megatron's DDP likewise holds its
  // parameters (in the compute dtype), its buckets reduce-scattered and
  // all-gathered by the distributed optimizer (planner/distopt_reduction.hpp).
  bool replicated_params = false;

  // The optimizer updates one flat tensor per unit (FSDP1's flat parameter
  // with use_orig_params=False, ZeRO-3's flat fp32 partition), not each
  // parameter's shard.
  bool optimizer_over_flat_shards = false;

  // The host path (docs/SIMULATOR.md, "The CPU issue path"): the Python work
  // of the strategy's hooks per parameter, and the waits that block the CPU
  // thread rather than a stream. Sources in strategy_traits.cpp.
  // Gathering a unit sets up one view per parameter.
  bool views_per_parameter = false;
  // Resharding restores each parameter's sharded view.
  bool reshard_per_parameter = false;
  // Each parameter's gradient is handed over with a view of its own (a
  // DTensor around its reduced shard, a view of the bucket).
  bool grad_views_per_parameter = false;
  // Each parameter's gradient is copied into the reduction bucket by a
  // kernel of its own.
  bool grad_copy_per_parameter = false;
  // Each parameter is cast to the compute dtype by a kernel of its own
  // before the all-gather (otherwise one fused cast).
  bool cast_per_parameter = false;
  // Each gathered parameter is copied out by a kernel of its own (otherwise
  // one split copy).
  bool copy_out_per_parameter = false;
  // The CPU synchronizes on the free of the unit that left the all-gather
  // window before issuing the next all-gather (FSDP1's rate limiter).
  bool gather_window_blocks_host = false;
  // The CPU synchronizes on a unit's all-gather before issuing its compute
  // (ZeRO-3's bounded fetch events).
  bool fetch_blocks_host = false;
  // The backpressure wait on the reductions (reduce_queue_*) blocks the CPU
  // as well as the compute stream (ZeRO-3's synchronize on reduce events).
  bool reduce_queue_blocks_host = false;

  // The element capacity for a model whose blocks hold `mean_block_params`
  // parameters on average (0: no limit).
  int64_t reduce_queue_elements(int64_t mean_block_params) const;
};

StrategyTraits strategy_traits(scenarios::Strategy strategy);

// FSDP1's pre-divide factor for a data-parallel world of `world_size` ranks:
// the largest power of two f with f * f <= world_size reached by doubling
// while f divides it (_get_gradient_predivide_factor); the post-divide is
// world_size / f. 1 means no pass.
int64_t gradient_predivide_factor(int64_t world_size);

}  // namespace ragged::planner
