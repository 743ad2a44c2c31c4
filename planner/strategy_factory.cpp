#include "common/errors.hpp"
#include "planner/layout_strategy.hpp"

namespace ragged::planner {

std::unique_ptr<LayoutStrategy> make_strategy(scenarios::Strategy strategy) {
  switch (strategy) {
    case scenarios::RAGGED: return make_ragged_strategy();
    case scenarios::VESCALE_PAPER: return make_vescale_paper_strategy();
    case scenarios::FSDP1: return make_fsdp1_strategy();
    case scenarios::FSDP2: return make_fsdp2_strategy();
    case scenarios::ZERO3: return make_zero3_strategy();
    case scenarios::MEGATRON: return make_megatron_strategy();
    case scenarios::DDP: return make_ddp_strategy();
    case scenarios::MEGATRON_DDP: return make_megatron_ddp_strategy();
    default: break;
  }
  throw InputError("no layout strategy for an unspecified strategy");
}

}  // namespace ragged::planner
