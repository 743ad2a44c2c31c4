#include "planner/strategy_traits.hpp"

#include <algorithm>

namespace ragged::planner {

// Sources of the backpressure rules (upstream main branches):
// - FSDP2: torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py,
//   FSDPParamGroup.post_backward: the current stream waits for
//   comm_ctx.reduce_scatter_state.event (the previous group's reduce-scatter)
//   before foreach_reduce (_fsdp_collectives.py) copies the gradients into the
//   next reduce-scatter input with chunk_cat on the current stream.
// - FSDP1: torch/distributed/fsdp/_runtime_utils.py, _post_backward_hook:
//   the post-backward stream waits for the compute stream, nothing waits for
//   the reduce-scatter (the unsharded gradient is kept by record_stream);
//   only _limit_all_gathers (two all-gathers in flight) and the shared
//   process group bound the backward.
// - DeepSpeed ZeRO-3: deepspeed/runtime/zero/stage3.py,
//   __reduce_and_partition_ipg_grads: before a bucket's reduce, the CPU
//   synchronizes on the oldest entry of param_reduce_events when more than
//   max_param_reduce_events (2) are outstanding; buckets hold
//   reduce_bucket_size (5e8) elements (zero/config.py).
// - Megatron-FSDP: megatron_fsdp/param_and_grad_buffer.py,
//   GradReducePipeline.wait_for_previous_grad_reduce: before a bucket's
//   reduce-scatter, the current stream waits for the oldest queued reduce
//   events while the queue holds more than suggested_RS_queue_capacity
//   elements, max(1e9, 2 x the mean parameters of an FSDP unit module)
//   (megatron_fsdp.py).
// - ragged, vescale-paper: our DBuffer rule (the veScale paper leaves it
//   open): two gradient buffers, one reduced while the backward writes the
//   next; the next unit's backward starts once the previous reduction has
//   finished.
//
// Sources of FSDP1's passes over the unsharded gradients (grads_concatenated,
// divides_gradients; torch 2.0-2.5, the same in each):
// - _flat_param.py, _get_unflat_views_unaligned: a unit's parameters are
//   views made by torch.split of the FlatParameter (use_orig_params=False),
//   so autograd's split_with_sizes_backward (torch/csrc/autograd/
//   FunctionsManual.cpp) concatenates the parameters' gradients with at::cat
//   into the flat gradient that AccumulateGrad hands to _post_backward_hook.
// - _runtime_utils.py, _reduce_grad: _div_if_needed(padded_unsharded_grad,
//   _gradient_predivide_factor) before reduce_scatter_tensor and
//   _div_if_needed(new_sharded_grad, _gradient_postdivide_factor) after it,
//   on the post-backward stream; the factors from
//   DefaultState._get_gradient_predivide_factor (_init_utils.py). FSDP2
//   reduces fp32 and bf16 with NCCL's average, no pass
//   (_fsdp_collectives.py, _get_gradient_divide_factors).
//
// Sources of the micro-batch fence (root_fences_micro_batches):
// - FSDP1: _runtime_utils.py, _post_backward_final_callback (queued by the
//   root's pre-backward, run by autograd at the end of every backward):
//   current_stream.wait_stream(root_state._post_backward_stream) (and the
//   HSDP all-reduce stream); _root_pre_forward calls
//   _wait_for_computation_stream, unshard_stream.wait_stream(computation
//   stream).
// - FSDP2: _fsdp_state.py, _root_post_backward_final_callback: with
//   is_last_backward (the default) the current stream waits for the last
//   reduce-scatter's event; _root_pre_forward: all_gather_copy_in_stream and
//   all_gather_stream wait_stream(current_stream) ("Wait for optimizer
//   before implicitly prefetched all-gathers").
//
// Sources of the root group (root_group_outside_blocks): the loops wrap each
// block and then the model (torchtitan's apply_fsdp: fully_shard per block,
// then fully_shard(model); Hugging Face Accelerate's, Composer's and ATorch's
// transformer auto-wrap policies), so the root's group holds what no block
// holds: the embedding, the final norm and the head.
// - FSDP1: _runtime_utils.py, _post_forward_reshard: "Do not free the root's
//   parameters in the post-forward for FULL_SHARD"; the flat parameter's
//   post-backward hook runs on its AccumulateGrad, when its last gradient
//   (the embedding's, the first op of the forward) is accumulated.
// - FSDP2: _fsdp_state.py, _lazy_init: the root's post_forward_mesh_info =
//   None ("do not reshard after forward since for training, the parameters
//   would be freed and all-gathered immediately"); the root module's inputs
//   need no gradient, so its group's post_backward (one reduce-scatter of
//   every root parameter) runs in _root_post_backward_final_callback, at
//   the end of the backward.
//
// Source of accumulates_unsynced_grads_in_reduce_dtype:
// - FSDP2: _fsdp_param_group.py, post_backward: without reduce_grads each
//   FSDPParam runs to_accumulated_grad_if_needed (the first time: the
//   unsharded gradient cast to reduce_dtype, held as
//   _unsharded_param.grad's replacement) or accumulate_unsharded_grad_if_needed
//   (the later ones: added into it) (_fsdp_param.py); the held sum is what
//   the next reduce-scatter reads.
//
// Sources of the sharded gradients' lifetime (grad_shards_freed_each_step):
// - FSDP1: _runtime_utils.py, _post_backward_reshard/_reduce_grad: the
//   reduce-scatter output new_sharded_grad is allocated on the post-backward
//   stream and becomes flat_param.grad in _finalize_params.
// - FSDP2: _fsdp_collectives.py, foreach_reduce: reduce_output is allocated
//   on the reduce-scatter stream; each parameter's sharded grad is a view of
//   it (a cast of it when the reduce dtype differs).
// - Both: the loop's optimizer.zero_grad() sets them to None (torch 2.0's
//   default set_to_none=True; torchtitan, ATorch's fsdp_llama2.py, Composer).
// - ZeRO-3: stage3.py allocates grad_partitions_flat_buffer once;
//   Megatron-FSDP keeps main_grad buffers (param_and_grad_buffer.py).
//
// Sources of the host path (the per-parameter Python work and the CPU
// waits; docs/SIMULATOR.md, "The CPU issue path"):
// - FSDP1 (torch/distributed/fsdp/_flat_param.py, _runtime_utils.py,
//   _limiter_utils.py): unshard sets a view per original parameter
//   (_use_unsharded_views, timed per parameter in pytorch PR #96958); with
//   the default use_orig_params=False reshard frees the flat parameter only,
//   and the module's parameters, which the optimizer updates, are the flat
//   parameters;
//   _limit_all_gathers calls event.synchronize() on the oldest free event
//   before an all-gather when two are in flight.
// - FSDP2 (_fully_shard/_fsdp_param.py, _fsdp_collectives.py):
//   all_gather_inputs casts each parameter with _to_dtype_if_needed; copy-in
//   and copy-out are foreach/split ops over every parameter; to_unsharded and
//   to_sharded set each parameter; foreach_reduce wraps each reduced shard in
//   a DTensor. No host synchronization (events on streams).
// - DeepSpeed ZeRO-3 (runtime/zero/partitioned_param_coordinator.py,
//   partition_parameters.py, stage3.py): fetch_sub_module synchronizes the
//   oldest of __ongoing_fetch_events beyond __max_ongoing_fetch_events (2),
//   events recorded after each fetched parameter's wait, so the CPU reaches a
//   unit's compute only once its all-gather is done; each gathered parameter
//   gets its own copy and status, release partitions each parameter;
//   gradients are copied into the IPG bucket one parameter at a time; before
//   a bucket's reduce the CPU synchronizes the oldest of param_reduce_events;
//   the optimizer steps the flat fp32 partition of each sub-group
//   (fp32_partitioned_groups_flat).
// - Megatron-FSDP (megatron_fsdp/param_and_grad_buffer.py): the all-gather
//   sets each parameter's item of the bucket; each gradient is copied into
//   the bucket by its own copy_ (NVIDIA/Megatron-LM PR #6487 replaces that
//   loop by one foreach copy); the reduce queue's waits are
//   torch.cuda.Event.wait (reduce_scatter_stream.record_event() in
//   mark_bucket_ready): a stream waits, the CPU does not.
// - ragged, vescale-paper: DBuffer views are set up once; identical
//   element-wise kernels over a group are one launch
//   (../shared/reference/vescale.md); no host synchronization.
StrategyTraits strategy_traits(scenarios::Strategy strategy) {
  StrategyTraits traits;
  switch (strategy) {
    case scenarios::FSDP1:
      traits.max_unsharded_units = 2;  // _max_num_inflight_all_gathers = 2
      traits.one_communicator = true;
      traits.views_per_parameter = true;
      traits.gather_window_blocks_host = true;
      traits.optimizer_over_flat_shards = true;
      traits.grad_shards_freed_each_step = true;
      traits.grads_concatenated = true;
      traits.divides_gradients = true;
      traits.root_fences_micro_batches = true;
      traits.root_group_outside_blocks = true;
      break;
    case scenarios::FSDP2:
      traits.one_communicator = true;
      traits.root_fences_micro_batches = true;
      traits.root_group_outside_blocks = true;
      traits.accumulates_unsynced_grads_in_reduce_dtype = true;
      traits.grad_shards_freed_each_step = true;
      traits.reduce_queue_units = 0;
      traits.reduce_copy_in_on_compute = true;
      traits.views_per_parameter = true;
      traits.reshard_per_parameter = true;
      traits.grad_views_per_parameter = true;
      traits.cast_per_parameter = true;
      break;
    case scenarios::ZERO3:
      traits.cast_before_gather = false;
      traits.grad_shard_in_param_dtype = true;
      traits.one_communicator = true;
      // max_param_reduce_events (2) buckets of reduce_bucket_size (5e8
      // elements): a Program reduces a unit at once, so the bucket count
      // becomes their elements.
      traits.reduce_queue_min_elements = 2 * 500'000'000LL;
      traits.views_per_parameter = true;
      traits.reshard_per_parameter = true;
      traits.grad_views_per_parameter = true;
      traits.grad_copy_per_parameter = true;
      traits.copy_out_per_parameter = true;
      traits.fetch_blocks_host = true;
      traits.reduce_queue_blocks_host = true;
      traits.optimizer_over_flat_shards = true;
      break;
    case scenarios::MEGATRON:
      traits.cast_before_gather = false;
      traits.grad_shard_in_param_dtype = true;
      traits.one_communicator = true;
      traits.reduce_queue_min_elements = 1'000'000'000;
      traits.reduce_queue_block_factor = 2;
      traits.views_per_parameter = true;
      traits.grad_copy_per_parameter = true;
      break;
    case scenarios::RAGGED:
    case scenarios::VESCALE_PAPER:
      traits.grads_in_reduce_dtype = true;
      traits.reduce_queue_units = 0;
      break;
    case scenarios::DDP:
      // zero_grad(set_to_none=True) frees each .grad after the optimizer.
      traits.replicated_params = true;
      traits.grad_shards_freed_each_step = true;
      break;
    case scenarios::MEGATRON_DDP:
      // Every rank holds its parameters whole in the compute dtype
      // (Float16Module); the distributed optimizer copies its updated fp32
      // shard into them (_copy_main_params_to_model_params) before the
      // all-gather. The gradient reduce-scatters and the parameter
      // all-gathers share the dp_cp group's communicator.
      traits.replicated_params = true;
      traits.cast_before_gather = false;
      traits.one_communicator = true;
      break;
    default: break;
  }
  return traits;
}

int64_t gradient_predivide_factor(int64_t world_size) {
  int64_t factor = 1;
  while (world_size % factor == 0 && world_size / factor > factor) factor *= 2;
  return factor;
}

int64_t StrategyTraits::reduce_queue_elements(int64_t mean_block_params) const {
  if (reduce_queue_block_factor == 0 && reduce_queue_min_elements == 0) return 0;
  return std::max(reduce_queue_min_elements, reduce_queue_block_factor * mean_block_params);
}

}  // namespace ragged::planner
