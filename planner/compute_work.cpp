#include "planner/compute_work.hpp"

#include <cmath>

#include "planner/eager_kernels.hpp"

namespace ragged::planner {
namespace {

int64_t gemm_rows(const models::GemmShape& g, const MicroBatch& batch) {
  return std::max<int64_t>(1, std::llround(static_cast<double>(batch.tokens()) * g.token_fraction));
}

AttentionWork attention(const models::UnitSpec& unit, const MicroBatch& batch, double flops_factor) {
  AttentionWork a;
  if (!unit.compute.attention) return a;
  const models::AttentionShape& shape = *unit.compute.attention;
  a.batch = batch.sequences;
  a.seq_len = batch.seq_len;
  a.heads = shape.heads;
  a.qk_head_dim = shape.qk_head_dim;
  a.v_head_dim = shape.v_head_dim;
  a.window = shape.window;
  a.flops = flops_factor * shape.forward_flops_per_token(batch.seq_len) * static_cast<double>(batch.tokens());
  return a;
}

// Element-wise traffic of a unit's forward for the batch, eager or fused.
double elementwise_bytes(const models::UnitSpec& unit, const MicroBatch& batch) {
  double per_token = 0;
  for (const models::ElementwiseOp& op : unit.compute.elementwise) {
    per_token += op.bytes_per_token * (batch.fused_elementwise ? 1.0 : eager_traffic_factor(op.name));
  }
  return per_token * static_cast<double>(batch.tokens());
}

// The kernels of a unit's forward element-wise ops, eager or fused.
int64_t elementwise_kernels(const models::UnitSpec& unit, const MicroBatch& batch) {
  int64_t kernels = 0;
  for (const models::ElementwiseOp& op : unit.compute.elementwise) {
    kernels += batch.fused_elementwise ? 1 : eager_kernel_count(op.name);
  }
  return kernels;
}

}  // namespace

double total_flops(const ComputeWork& work) {
  double flops = work.attention.flops + work.other_flops;
  for (const Gemm& g : work.gemms) flops += g.flops();
  return flops;
}

ComputeWork forward_work(const models::UnitSpec& unit, const MicroBatch& batch) {
  ComputeWork work;
  for (const models::GemmShape& g : unit.compute.gemms) work.gemms.push_back({gemm_rows(g, batch), g.n, g.k, g.count});
  work.attention = attention(unit, batch, 1.0);
  work.elementwise_bytes = elementwise_bytes(unit, batch);
  work.elementwise_kernels = elementwise_kernels(unit, batch);
  return work;
}

ComputeWork backward_work(const models::UnitSpec& unit, const MicroBatch& batch) {
  ComputeWork work;
  for (const models::GemmShape& g : unit.compute.gemms) {
    const int64_t m = gemm_rows(g, batch);
    work.gemms.push_back({m, g.k, g.n, g.count});  // dX = dY @ W: [m x n] @ [n x k]
    work.gemms.push_back({g.n, g.k, m, g.count});  // dW = dY^T @ X: [n x m] @ [m x k]
  }
  work.attention = attention(unit, batch, 2.5);
  work.elementwise_bytes = 2.0 * elementwise_bytes(unit, batch);
  work.elementwise_kernels = 2 * elementwise_kernels(unit, batch);
  return work;
}

ComputeWork recompute_work(const models::UnitSpec& unit, const MicroBatch& batch, models::Checkpointing mode) {
  if (unit.kind != models::UnitKind::kBlock || mode == models::Checkpointing::kNone) return {};
  if (mode == models::Checkpointing::kFull) return forward_work(unit, batch);
  // Selective follows TorchTitan's op-level policy: matmul and attention
  // outputs are saved except every other matmul (the 2nd, 4th, ...), so
  // backward recomputes those GEMMs and every element-wise op.
  ComputeWork forward = forward_work(unit, batch);
  ComputeWork work;
  for (size_t i = 1; i < forward.gemms.size(); i += 2) work.gemms.push_back(forward.gemms[i]);
  work.elementwise_bytes = forward.elementwise_bytes;
  work.elementwise_kernels = forward.elementwise_kernels;
  return work;
}

}  // namespace ragged::planner
