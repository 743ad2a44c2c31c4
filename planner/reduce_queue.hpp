#pragma once
// A strategy's backpressure of the gradient reductions on the backward
// (StrategyTraits::reduce_queue_units and reduce_queue_elements; the rules
// and their sources: docs/SIMULATOR.md section 4b). The queue holds the
// reductions in flight as far as the compute stream knows, oldest first.

#include <cstdint>
#include <deque>
#include <vector>

#include "models/model_spec.hpp"
#include "planner/strategy_traits.hpp"

namespace ragged::planner {

class ReduceQueue {
 public:
  ReduceQueue(const StrategyTraits& traits, const models::ModelSpec& model);

  // Before a unit's gradients are handed over, the oldest reductions leave
  // the queue until it has room; the compute stream waits for the last of
  // them to end (the others ended before it: reductions end in order on one
  // stream). Empty: no wait.
  std::vector<uint32_t> make_room();
  // A reduction of `elements` whose input is freed by op `ended` (the
  // reduction and its accumulation are done).
  void push(int64_t elements, uint32_t ended) { in_flight_.push_back({elements, ended}); }

 private:
  struct Reduction {
    int64_t elements;
    uint32_t ended;
  };
  int max_units_ = -1;
  int64_t max_elements_ = 0;
  std::deque<Reduction> in_flight_;
};

// The mean parameters of the model's blocks (of all units without blocks).
int64_t mean_block_params(const models::ModelSpec& model);

}  // namespace ragged::planner
