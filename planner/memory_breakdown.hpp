#pragma once
// Static memory breakdown of one rank: the persistent state, and the
// transient buffers of the Program at the moment their sum peaks, over two
// executions of the Program: the ops one at a time in issue order, and the
// order in which the reductions lag as far as the dependencies let them
// (`reductions_last_order`, planner/program_order.hpp). The second holds
// what a strategy's backpressure rule lets pile up behind slow
// reduce-scatters (two gradient buffers where the reduce-scatter of one unit
// overlaps the backward of the next), which issue order never shows. The
// simulator replaces this with the timed schedule and the allocator's
// behaviour.

#include <cstdint>

#include "planner/program.hpp"

namespace ragged::planner {

struct MemoryBreakdown {
  PersistentMemory persistent;
  // Live at the peak:
  int64_t unsharded_params = 0;  // gathered parameters and their copies
  int64_t gradients_in_flight = 0;  // unsharded gradients and reduce-scatter inputs
  int64_t activations = 0;
  int64_t workspace = 0;   // recomputation, backward working memory, optimizer buffers
  int64_t grad_shards = 0;    // sharded gradients produced so far, when the loop frees them each step
  int64_t model_outputs = 0;  // what the model returned and the loop holds (training.outputs)
  int64_t peak_transient = 0;
  int64_t issue_order_peak = 0;  // the transient peak in issue order alone (<= peak_transient)

  int64_t peak_total() const { return persistent.total() + peak_transient; }
};

MemoryBreakdown memory_breakdown(const Program& program);

// The persistent state plus the most parameter and gradient buffers
// (is_parameter_or_gradient_buffer) live at once when the ops run one at a
// time in issue order: what an executor that allocates as it issues counts
// (both backends do), to set beside its measured peak.
int64_t issue_order_state_and_buffers_peak(const Program& program);

// A floor under the peak allocated memory of any execution of the Program:
// the persistent state plus the most bytes live at once among the buffers
// that the compute stream both allocates and frees (activations and
// workspaces). One stream runs its ops in issue order, so every execution,
// whatever the other streams do, passes through each of those states; what
// an allocator adds (rounding, cache) only raises the peak. `ragged tune`
// discards a configuration whose floor exceeds the memory it may use
// without simulating it.
struct MemoryFloor {
  int64_t persistent = 0;
  int64_t compute_stream_buffers = 0;  // activations and workspaces at their peak

  int64_t total() const { return persistent + compute_stream_buffers; }
};

MemoryFloor memory_floor(const Program& program);

}  // namespace ragged::planner
