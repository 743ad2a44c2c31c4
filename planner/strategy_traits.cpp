#include "planner/strategy_traits.hpp"

namespace ragged::planner {

StrategyTraits strategy_traits(scenarios::Strategy strategy) {
  StrategyTraits traits;
  switch (strategy) {
    case scenarios::FSDP1:
      traits.max_unsharded_units = 2;  // _max_num_inflight_all_gathers = 2
      traits.one_communicator = true;
      break;
    case scenarios::FSDP2: traits.one_communicator = true; break;
    case scenarios::ZERO3:
    case scenarios::MEGATRON:
      traits.cast_before_gather = false;
      traits.grad_shard_in_param_dtype = true;
      traits.one_communicator = true;
      break;
    case scenarios::RAGGED:
    case scenarios::VESCALE_PAPER: traits.grads_in_reduce_dtype = true; break;
    default: break;
  }
  return traits;
}

}  // namespace ragged::planner
