#pragma once
// Where every transient buffer of a Program lives in one arena, decided
// before the step runs: the executors allocate one block once and carve it
// by these offsets, so a step never calls the allocator and never fragments.
//
// A buffer lives from its alloc op to its free op. A buffer may reuse the
// memory of another only when that one's free happens before its alloc in
// every execution of the Program (dependencies and stream order,
// planner/program_order.hpp), not merely earlier in issue order: on a
// device with several streams, reusing memory freed earlier in issue order
// would add a wait the Program does not have (the next unit's gradients
// waiting for the previous unit's reduce-scatter), and the GPU would run a
// different schedule from the simulator's. The plan also lists, for each
// buffer, the earlier buffers whose memory it reuses; the executors wait
// for their frees (implied by the Program, kept as a guard).
//
// Offsets come from greedy placement (each buffer at the best-fitting gap
// among the buffers it coexists with), the usual heuristic for this NP-hard
// problem (dynamic storage allocation), tried in several orders (largest,
// longest-lived, issue order, fullest moment, earliest freed first) keeping
// the smallest;
// `peak_live`, the most bytes live at once in issue order or with the
// reduce-scatters last, bounds `bytes` from below. Measured on the shipped
// scenarios: ragged and FSDP2 equal to it; FSDP1, ZeRO-3 and Megatron lose
// 3-15% on dense models and up to 78% on MoE ones (a 2x reduce-scatter
// input must fit beside the next unit's parameters and the gradients, and
// without a rule of their own, buffers the Program does not order cannot
// share memory). FSDP1 under HSDP (DeepSeek-V3, 256 x 8) needs 18x: nothing
// orders its all-reduces before later allocations, and the Program keeps
// each unit's whole reduce-scatter input until its all-reduced shard is
// accumulated.

#include <cstdint>
#include <functional>
#include <vector>

#include "planner/program.hpp"

namespace ragged::planner {

struct ArenaPlan {
  std::vector<int64_t> offsets;  // per Program buffer; -1 when it takes no memory
  std::vector<int64_t> sizes;    // per Program buffer: the bytes carved (rounded up to the alignment)
  int64_t bytes = 0;             // the arena the step needs: the highest end of any buffer
  int64_t peak_live = 0;         // the most carved bytes live at once in issue order or with the reductions last
  // Per buffer: the earlier buffers whose addresses it reuses and whose frees
  // its alloc must wait for (those already covered transitively left out).
  std::vector<std::vector<int>> reuses;

  // bytes / peak_live - 1: what the placement loses to fragmentation.
  double overhead() const { return peak_live > 0 ? static_cast<double>(bytes) / static_cast<double>(peak_live) - 1 : 0; }
};

// The bytes an executor needs for a buffer (by default the Program's).
using BufferBytes = std::function<int64_t(const Buffer&)>;


// Throws InternalError when a buffer is not allocated and freed exactly
// once, in that order. `alignment` is a power of two.
ArenaPlan plan_arena(const Program& program, int64_t alignment = 256, const BufferBytes& bytes_of = {});

// A buffer's bytes for an executor that keeps each unit's gradient shard
// with the unit's state for the whole run: the Program's per-step gradient
// shards (BufferKind::kGradShards) take no arena space.
int64_t bytes_beside_unit_state(const Buffer& buffer);

}  // namespace ragged::planner
