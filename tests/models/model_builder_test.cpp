// build_model: units, tensor names, shapes and roles of each architecture kind.

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "models/catalog.hpp"
#include "test_helpers.hpp"

namespace ragged::models {
namespace {

using test_util::count_role;
using test_util::find_gemm;
using test_util::find_tensor;
using test_util::find_unit;
using test_util::Shape;
using test_util::shape_of;

TEST(ModelBuilderTest, Llama3_8bUnitsInOrder) {
  const ModelSpec model = catalog_model("llama3-8b");
  EXPECT_EQ(model.tensor_count(), 291);
  ASSERT_EQ(model.units.size(), 34u);
  EXPECT_EQ(model.units.front().name, "embed");
  EXPECT_EQ(model.units.front().kind, UnitKind::kEmbedding);
  for (int layer = 0; layer < 32; ++layer) {
    EXPECT_EQ(model.units[static_cast<size_t>(layer) + 1].name, "layers." + std::to_string(layer));
    EXPECT_EQ(model.units[static_cast<size_t>(layer) + 1].kind, UnitKind::kBlock);
  }
  EXPECT_EQ(model.units.back().name, "head");
  EXPECT_EQ(model.units.back().kind, UnitKind::kHead);
}

TEST(ModelBuilderTest, Llama3_8bLayerTensors) {
  const ModelSpec model = catalog_model("llama3-8b");
  const UnitSpec& layer = model.units[1];
  std::vector<std::string> names;
  for (const TensorSpec& tensor : layer.tensors) {
    names.push_back(tensor.name);
    EXPECT_EQ(tensor.dtype, DType::kBF16);
  }
  const std::vector<std::string> expected = {
      "layers.0.input_layernorm.weight",  "layers.0.self_attn.q_proj.weight",
      "layers.0.self_attn.k_proj.weight", "layers.0.self_attn.v_proj.weight",
      "layers.0.self_attn.o_proj.weight", "layers.0.post_attention_layernorm.weight",
      "layers.0.mlp.gate_proj.weight",    "layers.0.mlp.up_proj.weight",
      "layers.0.mlp.down_proj.weight"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(shape_of(model, "layers.0.self_attn.q_proj.weight"), (Shape{4096, 4096}));
  EXPECT_EQ(shape_of(model, "layers.0.self_attn.k_proj.weight"), (Shape{1024, 4096}));
  EXPECT_EQ(shape_of(model, "layers.0.self_attn.o_proj.weight"), (Shape{4096, 4096}));
  EXPECT_EQ(shape_of(model, "layers.31.mlp.down_proj.weight"), (Shape{4096, 14336}));
  EXPECT_EQ(shape_of(model, "embed_tokens.weight"), (Shape{128256, 4096}));
  EXPECT_EQ(shape_of(model, "lm_head.weight"), (Shape{128256, 4096}));
  EXPECT_EQ(shape_of(model, "norm.weight"), (Shape{4096}));
  EXPECT_EQ(count_role(layer, TensorRole::kNorm), 2);
  EXPECT_EQ(count_role(layer, TensorRole::kAttention), 4);
  EXPECT_EQ(count_role(layer, TensorRole::kMlp), 3);
  EXPECT_EQ(find_tensor(model, "lm_head.weight")->role, TensorRole::kHead);
  EXPECT_EQ(find_tensor(model, "embed_tokens.weight")->role, TensorRole::kEmbedding);
}

TEST(ModelBuilderTest, TiedEmbeddingsDropTheHeadTensorButNotItsGemm) {
  ArchConfig arch = find_catalog_entry("llama3-8b").arch;
  const ModelSpec untied = build_model(arch);
  arch.tie_embeddings = true;
  const ModelSpec tied = build_model(arch);
  EXPECT_EQ(tied.tensor_count(), 290);
  EXPECT_EQ(find_tensor(tied, "lm_head.weight"), nullptr);
  EXPECT_EQ(tied.params(), untied.params() - int64_t{128256} * 4096);
  const GemmShape* head = find_gemm(tied.units.back(), "lm_head");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->n, 128256);
  EXPECT_EQ(head->k, 4096);
  EXPECT_DOUBLE_EQ(tied.model_flops_per_token(4096), untied.model_flops_per_token(4096));
}

// The head's cross-entropy is the one element-wise op marked as the loss
// (its backward runs ahead of the head's GEMMs); no block op is, and none
// names its own eager kernel count but the experts' eager epilogue.
TEST(ModelBuilderTest, OnlyTheHeadsCrossEntropyIsTheLoss) {
  const ModelSpec model = build_model(find_catalog_entry("llama3-8b").arch);
  int losses = 0;
  for (const UnitSpec& unit : model.units) {
    for (const ElementwiseOp& op : unit.compute.elementwise) {
      EXPECT_EQ(op.eager_kernels, 0) << unit.name << " " << op.name;
      if (!op.loss) continue;
      ++losses;
      EXPECT_EQ(&unit, &model.units.back()) << op.name;
      EXPECT_EQ(op.name, "cross_entropy");
    }
  }
  EXPECT_EQ(losses, 1);
}

TEST(ModelBuilderTest, AttentionBiasesNormsAndSinks) {
  ArchConfig arch = find_catalog_entry("llama3-8b").arch;
  arch.qkv_bias = true;
  const ModelSpec qkv = build_model(arch);
  EXPECT_EQ(shape_of(qkv, "layers.0.self_attn.k_proj.bias"), (Shape{1024}));
  EXPECT_EQ(find_tensor(qkv, "layers.0.self_attn.o_proj.bias"), nullptr);

  const ModelSpec qwen = catalog_model("qwen3-235b-a22b");
  EXPECT_EQ(shape_of(qwen, "layers.0.self_attn.q_norm.weight"), (Shape{128}));
  EXPECT_EQ(shape_of(qwen, "layers.0.self_attn.k_norm.weight"), (Shape{128}));
  EXPECT_EQ(shape_of(qwen, "layers.0.self_attn.q_proj.weight"), (Shape{8192, 4096}));
  EXPECT_EQ(shape_of(qwen, "layers.93.mlp.experts.127.down_proj.weight"), (Shape{4096, 1536}));

  const ModelSpec oss = catalog_model("gpt-oss-20b");
  EXPECT_EQ(shape_of(oss, "layers.0.self_attn.o_proj.bias"), (Shape{2880}));
  EXPECT_EQ(shape_of(oss, "layers.0.self_attn.sinks"), (Shape{64}));
  EXPECT_EQ(find_tensor(oss, "layers.0.self_attn.sinks")->role, TensorRole::kAttention);
}

TEST(ModelBuilderTest, DeepSeekV3DenseThenMoeLayers) {
  const ModelSpec model = catalog_model("deepseek-v3");
  ASSERT_EQ(model.units.size(), 63u);
  EXPECT_EQ(shape_of(model, "layers.2.mlp.gate_proj.weight"), (Shape{18432, 7168}));
  EXPECT_EQ(find_tensor(model, "layers.2.mlp.gate.weight"), nullptr);

  const UnitSpec& layer3 = *find_unit(model, "layers.3");
  EXPECT_EQ(count_role(layer3, TensorRole::kExpert), 256 * 3);
  EXPECT_EQ(count_role(layer3, TensorRole::kSharedExpert), 3);
  EXPECT_EQ(count_role(layer3, TensorRole::kRouter), 2);
  EXPECT_EQ(count_role(layer3, TensorRole::kMlp), 0);
  EXPECT_EQ(shape_of(model, "layers.3.mlp.gate.weight"), (Shape{256, 7168}));
  EXPECT_EQ(shape_of(model, "layers.3.mlp.gate.e_score_correction_bias"), (Shape{256}));
  EXPECT_EQ(shape_of(model, "layers.3.mlp.experts.0.gate_proj.weight"), (Shape{2048, 7168}));
  EXPECT_EQ(shape_of(model, "layers.3.mlp.experts.255.up_proj.weight"), (Shape{2048, 7168}));
  EXPECT_EQ(shape_of(model, "layers.60.mlp.experts.255.down_proj.weight"), (Shape{7168, 2048}));
  EXPECT_EQ(shape_of(model, "layers.3.mlp.shared_experts.gate_proj.weight"), (Shape{2048, 7168}));
  EXPECT_EQ(shape_of(model, "layers.3.mlp.shared_experts.down_proj.weight"), (Shape{7168, 2048}));

  const GemmShape* experts = find_gemm(layer3, "mlp.experts.gate_proj");
  ASSERT_NE(experts, nullptr);
  EXPECT_EQ(experts->count, 256);
  EXPECT_DOUBLE_EQ(experts->token_fraction, 8.0 / 256.0);
  EXPECT_EQ(find_gemm(layer3, "mlp.gate")->n, 256);
  EXPECT_EQ(find_gemm(layer3, "mlp.shared_experts.down_proj")->count, 1);
  // 58 MoE layers of 256 experts: about 45,000 tensors.
  EXPECT_EQ(model.tensor_count(), 3 + 3 * 12 + 58 * (9 + 2 + 768 + 3));
}

TEST(ModelBuilderTest, DeepSeekV3LatentAttentionShapes) {
  const ModelSpec model = catalog_model("deepseek-v3");
  EXPECT_EQ(shape_of(model, "layers.0.self_attn.q_a_proj.weight"), (Shape{1536, 7168}));
  EXPECT_EQ(shape_of(model, "layers.0.self_attn.q_a_layernorm.weight"), (Shape{1536}));
  EXPECT_EQ(shape_of(model, "layers.0.self_attn.q_b_proj.weight"), (Shape{128 * 192, 1536}));
  EXPECT_EQ(shape_of(model, "layers.0.self_attn.kv_a_proj_with_mqa.weight"), (Shape{576, 7168}));
  EXPECT_EQ(shape_of(model, "layers.0.self_attn.kv_a_layernorm.weight"), (Shape{512}));
  EXPECT_EQ(shape_of(model, "layers.0.self_attn.kv_b_proj.weight"), (Shape{128 * 256, 512}));
  EXPECT_EQ(shape_of(model, "layers.0.self_attn.o_proj.weight"), (Shape{7168, 128 * 128}));
  const AttentionShape attention = *model.units[1].compute.attention;
  EXPECT_EQ(attention.heads, 128);
  EXPECT_EQ(attention.qk_head_dim, 192);
  EXPECT_EQ(attention.v_head_dim, 128);
  EXPECT_EQ(attention.window, 0);

  ArchConfig direct_q = model.arch;
  direct_q.q_lora_rank = 0;
  const ModelSpec without_lora = build_model(direct_q);
  EXPECT_EQ(shape_of(without_lora, "layers.0.self_attn.q_proj.weight"), (Shape{128 * 192, 7168}));
  EXPECT_EQ(find_tensor(without_lora, "layers.0.self_attn.q_a_proj.weight"), nullptr);
}

TEST(ModelBuilderTest, GptOss120bFusedExperts) {
  const ModelSpec model = catalog_model("gpt-oss-120b");
  EXPECT_EQ(model.units[1].tensors.size(), 17u);
  EXPECT_EQ(shape_of(model, "layers.0.mlp.router.weight"), (Shape{128, 2880}));
  EXPECT_EQ(shape_of(model, "layers.0.mlp.router.bias"), (Shape{128}));
  EXPECT_EQ(shape_of(model, "layers.0.mlp.experts.gate_up_proj"), (Shape{128, 2880, 5760}));
  EXPECT_EQ(shape_of(model, "layers.0.mlp.experts.gate_up_proj_bias"), (Shape{128, 5760}));
  EXPECT_EQ(shape_of(model, "layers.35.mlp.experts.down_proj"), (Shape{128, 2880, 2880}));
  EXPECT_EQ(shape_of(model, "layers.35.mlp.experts.down_proj_bias"), (Shape{128, 2880}));
  EXPECT_EQ(find_tensor(model, "layers.0.mlp.experts.gate_up_proj")->matrices(), 128);

  const GemmShape* gate_up = find_gemm(model.units[1], "mlp.experts.gate_up_proj");
  ASSERT_NE(gate_up, nullptr);
  EXPECT_EQ(gate_up->n, 5760);
  EXPECT_EQ(gate_up->k, 2880);
  EXPECT_EQ(gate_up->count, 128);
  EXPECT_DOUBLE_EQ(gate_up->token_fraction, 4.0 / 128.0);
  EXPECT_EQ(model.units[1].compute.attention->window, 128);  // layer 0 slides
  EXPECT_EQ(model.units[2].compute.attention->window, 0);    // layer 1 attends to everything
}

TEST(ModelBuilderTest, MixtralExpertNames) {
  const ModelSpec model = catalog_model("mixtral-8x7b");
  EXPECT_EQ(shape_of(model, "layers.0.block_sparse_moe.gate.weight"), (Shape{8, 4096}));
  EXPECT_EQ(shape_of(model, "layers.0.block_sparse_moe.experts.7.w1.weight"), (Shape{14336, 4096}));
  EXPECT_EQ(shape_of(model, "layers.0.block_sparse_moe.experts.7.w2.weight"), (Shape{4096, 14336}));
  EXPECT_EQ(shape_of(model, "layers.0.block_sparse_moe.experts.7.w3.weight"), (Shape{14336, 4096}));
  EXPECT_EQ(model.tensor_count(), 3 + 32 * (6 + 1 + 24));
  EXPECT_EQ(find_gemm(model.units[1], "block_sparse_moe.experts.w2")->n, 4096);
}

TEST(ModelBuilderTest, InvalidArchitectureIsAnInputError) {
  ArchConfig arch = find_catalog_entry("llama3-8b").arch;
  arch.layers = 0;
  EXPECT_THROW(build_model(arch), InputError);
}

// The time is printed, not bounded (no wall-clock bar in a unit test).
TEST(ModelBuilderTest, DeepSeekV3BuildsAndItsTimeIsPrinted) {
  const ArchConfig& arch = find_catalog_entry("deepseek-v3").arch;
  build_model(arch);  // warm the allocator
  const auto start = std::chrono::steady_clock::now();
  const ModelSpec model = build_model(arch);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("deepseek-v3: %lld tensors built in %.2f ms\n", static_cast<long long>(model.tensor_count()), ms);
  EXPECT_GT(model.tensor_count(), 0);
}

}  // namespace
}  // namespace ragged::models
