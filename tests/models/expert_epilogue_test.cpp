// Megatron-Core's eager epilogue of the routed experts
// (KernelChoices::expert_epilogue, scenario training.experts.epilogue
// EAGER_EPILOGUE), worked out by hand for GPT-OSS 120B (hidden 2,880, experts
// of width 2,880, top 4, the GLU clamped at 7, biases on the experts): the
// clamp's passes, the down bias added expert by expert, and what each keeps.

#include <gtest/gtest.h>

#include "models/catalog.hpp"
#include "test_helpers.hpp"

namespace ragged::models {
namespace {

ModelSpec with_epilogue(const std::string& name, ExpertEpilogue epilogue, int64_t ep) {
  const ModelSpec whole = catalog_model(name);
  KernelChoices kernels = whole.kernels;
  kernels.expert_epilogue = epilogue;
  return build_model(whole.arch, kernels, ModelSplit{1, ep});
}

// Layer 0's routed experts unit with the fused and the eager epilogue.
struct ExpertsUnits {
  ModelSpec fused;
  ModelSpec eager;
  const UnitSpec* fused_unit() const { return test_util::find_unit(fused, "layers.0.experts"); }
  const UnitSpec* eager_unit() const { return test_util::find_unit(eager, "layers.0.experts"); }
};

ExpertsUnits experts_units(const std::string& name, int64_t ep) {
  return {with_epilogue(name, ExpertEpilogue::kFused, ep), with_epilogue(name, ExpertEpilogue::kEager, ep)};
}

const ElementwiseOp* find_op(const UnitSpec& unit, const std::string& name) {
  for (const ElementwiseOp& op : unit.compute.elementwise) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

TEST(ExpertEpilogue, GptOssClampsItsGluAtSevenFromTheCatalogAndItsConfig) {
  EXPECT_DOUBLE_EQ(catalog_model("gpt-oss-120b").arch.glu_clamp, 7.0);
  EXPECT_DOUBLE_EQ(catalog_model("qwen3-235b-a22b").arch.glu_clamp, 0.0);
}

// On EP 8 a rank holds 16 of the 128 experts. Per token of the block, top 4
// routed copies: the clamp 4 x 8 x 2,880 x 2 B forward (two clamps reading and
// writing f, the cat reading and writing 2 f) and 4 x 10 x 2,880 x 2 B
// backward, three kernels; the bias 4 x 6 x 2,880 x 2 B forward and 4 x 4 x
// 2,880 x 2 B backward, two kernels an expert and the cat: 33. The clamped
// copy (2 f a routed copy) is kept for the fused activation's backward and is
// what selective checkpointing reruns.
TEST(ExpertEpilogue, GptOssEagerEpilogueByHand) {
  const ExpertsUnits units = experts_units("gpt-oss-120b", 8);
  const UnitSpec* experts = units.eager_unit();
  const UnitSpec* plain = units.fused_unit();
  ASSERT_NE(experts, nullptr);
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(find_op(*plain, "moe_glu_clamp"), nullptr);
  EXPECT_EQ(find_op(*plain, "moe_down_bias"), nullptr);

  const ElementwiseOp* clamp = find_op(*experts, "moe_glu_clamp");
  const ElementwiseOp* bias = find_op(*experts, "moe_down_bias");
  ASSERT_NE(clamp, nullptr);
  ASSERT_NE(bias, nullptr);
  EXPECT_DOUBLE_EQ(clamp->bytes_per_token, 4.0 * 8.0 * 2880.0 * 2.0);
  EXPECT_DOUBLE_EQ(clamp->backward_bytes(), 4.0 * 10.0 * 2880.0 * 2.0);
  EXPECT_EQ(clamp->eager_kernels, 3);
  EXPECT_DOUBLE_EQ(bias->bytes_per_token, 4.0 * 6.0 * 2880.0 * 2.0);
  EXPECT_DOUBLE_EQ(bias->backward_bytes(), 4.0 * 4.0 * 2880.0 * 2.0);
  EXPECT_EQ(bias->eager_kernels, 2 * 16 + 1);

  const double clamped_copy = 4.0 * 2.0 * 2880.0 * 2.0;
  EXPECT_DOUBLE_EQ(experts->activations.saved_none - plain->activations.saved_none, clamped_copy);
  EXPECT_DOUBLE_EQ(experts->activations.saved_selective, plain->activations.saved_selective);
  // The GEMMs and the parameters do not change.
  EXPECT_DOUBLE_EQ(experts->compute.gemm_forward_flops_per_token(), plain->compute.gemm_forward_flops_per_token());
  EXPECT_EQ(experts->tensors.size(), plain->tensors.size());
}

// The bias loop launches two kernels an expert the rank holds: on EP 64 a
// rank holds two of the 128, and the bias bytes a token are the same.
TEST(ExpertEpilogue, TheBiasLoopsKernelsFollowTheLocalExperts) {
  const ModelSpec wide = with_epilogue("gpt-oss-120b", ExpertEpilogue::kEager, 64);
  const UnitSpec* experts = test_util::find_unit(wide, "layers.0.experts");
  ASSERT_NE(experts, nullptr);
  const ElementwiseOp* bias = find_op(*experts, "moe_down_bias");
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(bias->eager_kernels, 2 * 2 + 1);
  EXPECT_DOUBLE_EQ(bias->bytes_per_token, 4.0 * 6.0 * 2880.0 * 2.0);
}

// A model with neither a clamp nor expert biases (Qwen3-235B-A22B) has no
// epilogue to run eagerly: the choice changes nothing.
TEST(ExpertEpilogue, AModelWithoutClampOrExpertBiasIsUnchanged) {
  const ExpertsUnits units = experts_units("qwen3-235b-a22b", 8);
  const UnitSpec* a = units.fused_unit();
  const UnitSpec* b = units.eager_unit();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->compute.elementwise.size(), b->compute.elementwise.size());
  EXPECT_DOUBLE_EQ(a->activations.saved_none, b->activations.saved_none);
}

}  // namespace
}  // namespace ragged::models
