// A stack that stores q/k/v as one projection and gate/up as one
// (KernelChoices::fused_projections: Megatron-Core's linear_qkv and
// linear_fc1, nanotron's qkv_proj and gate_up_proj), worked out by hand
// against the checkpoint's layout: the same parameters and FLOPs in fewer,
// wider tensors and GEMMs.

#include <gtest/gtest.h>

#include "models/catalog.hpp"
#include "test_helpers.hpp"

namespace ragged::models {
namespace {

ModelSpec with_projections(const std::string& name, bool fused, const ModelSplit& split = {}) {
  const ModelSpec whole = catalog_model(name);
  KernelChoices kernels = whole.kernels;
  kernels.fused_projections = fused;
  return build_model(whole.arch, kernels, split);
}

int64_t parameters(const ModelSpec& model) {
  int64_t n = 0;
  for (const UnitSpec& unit : model.units) {
    for (const TensorSpec& tensor : unit.tensors) n += tensor.numel();
  }
  return n;
}

// Llama 3 8B: q 32 heads and k, v 8 heads of 128 over hidden 4,096 become
// one [6,144, 4,096] tensor; gate and up (14,336 each) one [28,672, 4,096].
// The block runs 4 GEMMs instead of 7, the same FLOPs, and keeps the same
// activations (the fused outputs are the separate ones side by side).
TEST(FusedProjections, LlamaBlocksHoldOneQkvAndOneGateUpProjection) {
  const ModelSpec separate = with_projections("llama3-8b", false);
  const ModelSpec fused = with_projections("llama3-8b", true);
  const UnitSpec* block = test_util::find_unit(fused, "layers.0");
  const UnitSpec* checkpoint = test_util::find_unit(separate, "layers.0");
  ASSERT_NE(block, nullptr);
  ASSERT_NE(checkpoint, nullptr);
  const TensorSpec* qkv = test_util::find_tensor(*block, "layers.0.self_attn.qkv_proj.weight");
  const TensorSpec* gate_up = test_util::find_tensor(*block, "layers.0.mlp.gate_up_proj.weight");
  ASSERT_NE(qkv, nullptr);
  ASSERT_NE(gate_up, nullptr);
  EXPECT_EQ(qkv->shape, (std::vector<int64_t>{(32 + 2 * 8) * 128, 4096}));
  EXPECT_EQ(gate_up->shape, (std::vector<int64_t>{2 * 14336, 4096}));
  EXPECT_EQ(test_util::find_tensor(*block, "layers.0.self_attn.q_proj.weight"), nullptr);
  EXPECT_EQ(test_util::find_tensor(*block, "layers.0.mlp.gate_proj.weight"), nullptr);
  EXPECT_EQ(block->tensors.size() + 3, checkpoint->tensors.size());
  EXPECT_EQ(parameters(fused), parameters(separate));

  ASSERT_EQ(block->compute.gemms.size(), 4u);
  EXPECT_EQ(checkpoint->compute.gemms.size(), 7u);
  EXPECT_EQ(block->compute.gemms[0].n, 6144);
  EXPECT_EQ(block->compute.gemms[2].n, 2 * 14336);
  EXPECT_DOUBLE_EQ(block->compute.gemm_forward_flops_per_token(), checkpoint->compute.gemm_forward_flops_per_token());
  EXPECT_DOUBLE_EQ(block->activations.saved_none, checkpoint->activations.saved_none);
  EXPECT_DOUBLE_EQ(block->activations.saved_full, checkpoint->activations.saved_full);
  // The spec describes the checkpoint; its kernels say how the stack stores it.
  EXPECT_FALSE(fused.arch.qkv_fused);
  EXPECT_FALSE(fused.arch.gate_up_fused);
  EXPECT_TRUE(fused.kernels.fused_projections);
}

// Under tensor parallelism the fused projections are column-parallel like
// the separate ones: tp 4 holds 8 query and 2 kv heads of q/k/v, a quarter
// of gate/up, each cut along its rows.
TEST(FusedProjections, TensorParallelRanksHoldTheirRowsOfTheFusedProjections) {
  ModelSplit split;
  split.tp = 4;
  const ModelSpec fused = with_projections("llama3-8b", true, split);
  const UnitSpec* block = test_util::find_unit(fused, "layers.0");
  ASSERT_NE(block, nullptr);
  const TensorSpec* qkv = test_util::find_tensor(*block, "layers.0.self_attn.qkv_proj.weight");
  const TensorSpec* gate_up = test_util::find_tensor(*block, "layers.0.mlp.gate_up_proj.weight");
  ASSERT_NE(qkv, nullptr);
  ASSERT_NE(gate_up, nullptr);
  EXPECT_EQ(qkv->shape, (std::vector<int64_t>{(8 + 2 * 2) * 128, 4096}));
  EXPECT_EQ(gate_up->shape, (std::vector<int64_t>{2 * 14336 / 4, 4096}));
  EXPECT_EQ(qkv->tp_cut, TensorCut::kRows);
  EXPECT_EQ(gate_up->tp_cut, TensorCut::kRows);
  EXPECT_EQ(parameters(fused), parameters(with_projections("llama3-8b", false, split)));
}

// Routed experts: two tensors an expert (Transformer Engine's GroupedLinear
// fc1 holds gate and up), and two grouped GEMMs, the first twice as wide.
// Qwen3-235B-A22B: 128 experts of width 1,536 over hidden 4,096, 16 a rank
// at ep 8.
TEST(FusedProjections, EachRoutedExpertHoldsOneGateUpProjection) {
  ModelSplit split;
  split.ep = 8;
  const ModelSpec separate = with_projections("qwen3-235b-a22b", false, split);
  const ModelSpec fused = with_projections("qwen3-235b-a22b", true, split);
  const UnitSpec* experts = test_util::find_unit(fused, "layers.0.experts");
  const UnitSpec* checkpoint = test_util::find_unit(separate, "layers.0.experts");
  ASSERT_NE(experts, nullptr);
  ASSERT_NE(checkpoint, nullptr);
  EXPECT_EQ(test_util::count_role(*experts, TensorRole::kExpert), 2 * 16);
  EXPECT_EQ(test_util::count_role(*checkpoint, TensorRole::kExpert), 3 * 16);
  const TensorSpec* fc1 = test_util::find_tensor(*experts, "layers.0.mlp.experts.15.gate_up_proj.weight");
  ASSERT_NE(fc1, nullptr);
  EXPECT_EQ(fc1->shape, (std::vector<int64_t>{2 * 1536, 4096}));
  ASSERT_EQ(experts->compute.gemms.size(), 2u);
  EXPECT_EQ(experts->compute.gemms[0].n, 2 * 1536);
  EXPECT_EQ(experts->compute.gemms[0].count, 16);
  EXPECT_TRUE(experts->compute.gemms[0].routed_experts);
  EXPECT_DOUBLE_EQ(experts->compute.gemm_forward_flops_per_token(), checkpoint->compute.gemm_forward_flops_per_token());
  EXPECT_EQ(parameters(fused), parameters(separate));
}

// Multi-head latent attention keeps its own projections; DeepSeek-V3's
// shared experts and routed experts fuse gate and up.
TEST(FusedProjections, LatentAttentionKeepsItsProjections) {
  const ModelSpec separate = with_projections("deepseek-v3", false);
  const ModelSpec fused = with_projections("deepseek-v3", true);
  const UnitSpec* block = test_util::find_unit(fused, "layers.5");
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(test_util::find_tensor(*block, "layers.5.self_attn.qkv_proj.weight"), nullptr);
  EXPECT_NE(test_util::find_tensor(*block, "layers.5.mlp.shared_experts.gate_up_proj.weight"), nullptr);
  EXPECT_NE(test_util::find_tensor(*block, "layers.5.mlp.experts.0.gate_up_proj.weight"), nullptr);
  EXPECT_EQ(parameters(fused), parameters(separate));
}

}  // namespace
}  // namespace ragged::models
