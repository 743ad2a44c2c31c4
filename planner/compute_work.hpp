#pragma once
// The compute of one unit for one micro-batch, as GEMMs, attention and
// element-wise traffic: what compute, recompute ops carry.

#include <cstdint>

#include "models/model_spec.hpp"
#include "planner/program.hpp"

namespace ragged::planner {

struct MicroBatch {
  int64_t sequences = 1;  // micro_batch_size
  int64_t seq_len = 1;
  bool fused_elementwise = true;  // false: eager kernels (eager_kernels.hpp)
  int64_t tokens() const { return sequences * seq_len; }
};

ComputeWork forward_work(const models::UnitSpec& unit, const MicroBatch& batch);
// dX and dW GEMMs for every forward GEMM, 2.5x the attention FLOPs, twice
// the element-wise traffic (gradients read and written).
ComputeWork backward_work(const models::UnitSpec& unit, const MicroBatch& batch);
// What activation checkpointing recomputes before a unit's backward: the
// whole forward (full); for selective, TorchTitan's op-level policy: every
// element-wise op and every other matmul; nothing for none.
ComputeWork recompute_work(const models::UnitSpec& unit, const MicroBatch& batch, models::Checkpointing mode);

double total_flops(const ComputeWork& work);

}  // namespace ragged::planner
