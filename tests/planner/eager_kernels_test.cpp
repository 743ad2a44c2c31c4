#include "planner/eager_kernels.hpp"

#include <gtest/gtest.h>

#include "models/catalog.hpp"
#include "planner/compute_work.hpp"

namespace ragged::planner {
namespace {

TEST(EagerKernels, FactorsFromTheReferenceImplementation) {
  EXPECT_DOUBLE_EQ(eager_traffic_factor("input_layernorm"), 9.0);
  EXPECT_DOUBLE_EQ(eager_traffic_factor("q_a_layernorm"), 9.0);
  EXPECT_DOUBLE_EQ(eager_traffic_factor("final_norm"), 9.0);
  EXPECT_DOUBLE_EQ(eager_traffic_factor("rotary"), 5.0);
  EXPECT_DOUBLE_EQ(eager_traffic_factor("swiglu"), 10.0 / 6.0);
  EXPECT_DOUBLE_EQ(eager_traffic_factor("cross_entropy"), 1.4);
  EXPECT_DOUBLE_EQ(eager_traffic_factor("attention_residual"), 1.0);
  // A LayerNorm (GPT-2 style families) and a GELU/ReLU are one eager kernel each.
  EXPECT_DOUBLE_EQ(eager_traffic_factor("attention_layer_norm"), 1.0);
  EXPECT_DOUBLE_EQ(eager_traffic_factor("final_layer_norm"), 1.0);
  EXPECT_DOUBLE_EQ(eager_traffic_factor("mlp_activation"), 1.0);
}

TEST(EagerKernels, EagerWorkMovesMoreBytesThanFused) {
  const models::ModelSpec model = models::catalog_model("llama3-8b");
  const models::UnitSpec& block = model.units[1];
  MicroBatch fused{2, 8192, true}, eager{2, 8192, false};
  double expected = 0;
  for (const auto& op : block.compute.elementwise) expected += op.bytes_per_token * eager_traffic_factor(op.name);
  EXPECT_DOUBLE_EQ(forward_work(block, fused).elementwise_bytes, block.compute.elementwise_bytes_per_token() * 16384);
  EXPECT_DOUBLE_EQ(forward_work(block, eager).elementwise_bytes, expected * 16384);
  EXPECT_GT(forward_work(block, eager).elementwise_bytes, 2 * forward_work(block, fused).elementwise_bytes);
  // GEMMs and attention do not change.
  EXPECT_DOUBLE_EQ(total_flops(forward_work(block, eager)), total_flops(forward_work(block, fused)));
}

TEST(EagerKernels, KernelCountsFromTheSameReferenceCode) {
  EXPECT_EQ(eager_kernel_count("input_layernorm"), 8);  // float, pow, mean, +eps, rsqrt, mul, type_as, *weight
  EXPECT_EQ(eager_kernel_count("q_a_layernorm"), 8);
  EXPECT_EQ(eager_kernel_count("rotary"), 6);            // float, complex mul, type_as; for q and for k
  EXPECT_EQ(eager_kernel_count("swiglu"), 2);
  EXPECT_EQ(eager_kernel_count("cross_entropy"), 3);
  EXPECT_EQ(eager_kernel_count("position_embedding"), 2);
  EXPECT_EQ(eager_kernel_count("attention_layer_norm"), 1);
  EXPECT_EQ(eager_kernel_count("attention_residual"), 1);
  EXPECT_EQ(eager_kernel_count("mlp_activation"), 1);
}

TEST(EagerKernels, ALlamaBlockLaunchesWhatTheReferenceLaunches) {
  // Llama-3-8B block: q, k, v, o, gate, up, down GEMMs; attention; two
  // RMSNorms (8 kernels each), rotary (6), SwiGLU (2), two residual adds.
  const models::ModelSpec model = models::catalog_model("llama3-8b");
  const models::UnitSpec& block = model.units[1];
  MicroBatch fused{2, 8192, true}, eager{2, 8192, false};
  EXPECT_EQ(forward_work(block, eager).elementwise_kernels, 8 + 6 + 1 + 8 + 2 + 1);
  EXPECT_EQ(forward_work(block, eager).kernels(), 7 + 1 + 26);
  EXPECT_EQ(forward_work(block, fused).kernels(), 7 + 1 + 6);  // one kernel per fused op
  // Backward: dX and dW per GEMM, one attention backward, twice the element-wise kernels.
  EXPECT_EQ(backward_work(block, eager).kernels(), 14 + 1 + 52);
  // Selective checkpointing recomputes every other GEMM and every element-wise op.
  EXPECT_EQ(recompute_work(block, eager, models::Checkpointing::kSelective).kernels(), 3 + 26);
}

}  // namespace
}  // namespace ragged::planner
