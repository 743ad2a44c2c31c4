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
StrategyTraits strategy_traits(scenarios::Strategy strategy) {
  StrategyTraits traits;
  switch (strategy) {
    case scenarios::FSDP1:
      traits.max_unsharded_units = 2;  // _max_num_inflight_all_gathers = 2
      traits.one_communicator = true;
      break;
    case scenarios::FSDP2:
      traits.one_communicator = true;
      traits.reduce_queue_units = 0;
      traits.reduce_copy_in_on_compute = true;
      break;
    case scenarios::ZERO3:
      traits.cast_before_gather = false;
      traits.grad_shard_in_param_dtype = true;
      traits.one_communicator = true;
      // max_param_reduce_events (2) buckets of reduce_bucket_size (5e8
      // elements): a Program reduces a unit at once, so the bucket count
      // becomes their elements.
      traits.reduce_queue_min_elements = 2 * 500'000'000LL;
      break;
    case scenarios::MEGATRON:
      traits.cast_before_gather = false;
      traits.grad_shard_in_param_dtype = true;
      traits.one_communicator = true;
      traits.reduce_queue_min_elements = 1'000'000'000;
      traits.reduce_queue_block_factor = 2;
      break;
    case scenarios::RAGGED:
    case scenarios::VESCALE_PAPER:
      traits.grads_in_reduce_dtype = true;
      traits.reduce_queue_units = 0;
      break;
    default: break;
  }
  return traits;
}

int64_t StrategyTraits::reduce_queue_elements(int64_t mean_block_params) const {
  if (reduce_queue_block_factor == 0 && reduce_queue_min_elements == 0) return 0;
  return std::max(reduce_queue_min_elements, reduce_queue_block_factor * mean_block_params);
}

}  // namespace ragged::planner
