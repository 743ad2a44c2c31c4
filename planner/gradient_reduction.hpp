#pragma once
// The backward's hand-over of a unit's gradients, a part of the Program
// builder (planner/program_builder.cpp): the unsharded gradient buffer
// autograd writes, then the strategy's way to the accumulated shard (FSDP1's
// concatenation, the pack or cast into the reduce dtype, the pre- and
// post-division, the reduce-scatter, HSDP's all-reduce, the accumulation),
// behind the strategy's backpressure (planner/reduce_queue.hpp).

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/model_spec.hpp"
#include "planner/loop_buffers.hpp"
#include "planner/plan.hpp"
#include "planner/program_writer.hpp"
#include "planner/reduce_queue.hpp"
#include "planner/strategy_traits.hpp"

namespace ragged::planner {

// Bytes per element of the parameters as gathered, of the reduction and of
// the master weights.
struct ElementBytes {
  int64_t param = 2;
  int64_t reduce = 4;
  int64_t master = 4;
  int64_t expert_reduce = 4;  // the routed experts' reduction (training.experts.reduce, else `reduce`)
};

class GradientReduction {
 public:
  // `compute_waits` collects what the compute stream's next op must wait
  // for (the backpressure); the builder hands it to that op.
  GradientReduction(ProgramWriter* writer, LoopBuffers* loop, const Plan& plan, const models::ModelSpec& model,
                    StrategyTraits traits, int64_t replicate_ranks, ElementBytes bytes,
                    std::vector<uint32_t>* compute_waits);

  // Unit u's unsharded gradient buffer, allocated now on the compute stream.
  // `element_bytes` > 0: held in that dtype (FSDP2's accumulation in the
  // reduce dtype while gradient sync is off).
  int unsharded_grads(int u, int64_t element_bytes = 0);
  // Gradients of unit u (buffer `grads`, written by op `grads_done`) to its
  // reduced, accumulated shard, after the strategy's backpressure wait.
  // Returns the accumulation.
  uint32_t reduce(int u, int mb, uint32_t grads_done, int grads);
  // Bytes per element of the sharded gradient accumulator.
  int64_t grad_shard_bytes() const { return traits_.grad_shard_in_param_dtype ? bytes_.param : bytes_.master; }
  // Bytes per element of unit u's reduction: the routed experts' may differ.
  int64_t reduce_bytes(int u) const;

 private:
  const UnitLayout& layout(int u) const { return plan_.units[static_cast<size_t>(u)].layout; }
  const std::string& name(int u) const;
  int64_t data_parallel_ranks() const { return plan_.ranks * std::max<int64_t>(1, replicate_ranks_); }
  std::pair<int, uint32_t> concatenate_grads(int u, int mb, int grads, uint32_t grads_done);
  void hand_over_on_host(int64_t first_reduce_op, uint32_t reduce_scatter, int u, const std::vector<uint32_t>& waits);
  HostWork& host(uint32_t op) { return w_.program().ops[op].host; }

  ProgramWriter& w_;
  LoopBuffers& loop_;
  const Plan& plan_;
  const models::ModelSpec& model_;
  StrategyTraits traits_;
  int64_t replicate_ranks_;
  ElementBytes bytes_;
  std::vector<uint32_t>& compute_waits_;
  ReduceQueue queue_;
};

}  // namespace ragged::planner
