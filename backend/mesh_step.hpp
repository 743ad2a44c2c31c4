#pragma once
// Which workload exchange a mesh op of the Program is, decided once for both
// executors (the host's HostDevice and the GPU's CudaStepDevice run the same
// exchanges of the same buffers): a tp or cp collective (Op::group kTensor or
// kContext, no buffer) becomes a TpStep, and a block part knows which
// exchanges surround it (docs/MESH.md).

#include "backend/workload.hpp"
#include "planner/program.hpp"

namespace ragged::backend {

// The workload pass a mesh collective serves (recomputes: kAgain, the
// forward's exchange repeated).
TpPass tp_pass(planner::Pass pass);

// The exchange a tp/cp collective of `model_unit` runs: all-gathers gather
// (the keys and values under cp), reduce-scatters sum partial outputs (the
// keys' and values' gradients under cp), the head's all-reduce is the
// vocabulary-parallel loss's statistics. InternalError for another op.
TpStep tensor_parallel_step(const planner::Op& op, int model_unit, bool head);

// A reduce-scatter of partial sums (true) or an all-gather (false).
bool sums_partials(TpCollective collective);

// Whether a block part has the gather of its input before it and the
// reduce-scatter of its partial output after it, in the forward or the
// backward (cp alone runs them in place: a gather of one rank).
bool gathers_before(models::UnitPart part, bool backward);
bool scatters_after(models::UnitPart part, bool backward);

// A tensor-parallel rank's id of vocabulary row `id` (its rows are [rank x
// vocab, (rank + 1) x vocab)), -1 when another rank holds it.
int32_t local_vocabulary_id(int32_t id, int rank, int64_t vocab);

}  // namespace ragged::backend
