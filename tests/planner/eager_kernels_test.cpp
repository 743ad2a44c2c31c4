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

}  // namespace
}  // namespace ragged::planner
