// build_model under a ModelSplit: the tensors, GEMMs, activations and routed
// experts one rank of a tensor- and expert-parallel mesh holds, against the
// whole model's and the published shapes divided by hand.

#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "models/catalog.hpp"
#include "test_helpers.hpp"

namespace ragged::models {
namespace {

using test_util::find_gemm;
using test_util::find_tensor;
using test_util::find_unit;
using test_util::Shape;
using test_util::shape_of;

ModelSpec split_of(const std::string& name, int64_t tp, int64_t ep, bool sequence_parallel = true) {
  const ModelSpec whole = catalog_model(name);
  return build_model(whole.arch, whole.kernels, ModelSplit{tp, ep, sequence_parallel});
}

TEST(ModelSplit, TensorParallelCutsColumnsAndRowsMegatronStyle) {
  // Llama 3 8B (32 heads of 128, 8 key/value heads, MLP 14336, vocabulary
  // 128256) on tp 8: q/k/v and gate/up by their output features, o and
  // down by their input features, the vocabulary of both tables; norms whole.
  const ModelSpec local = split_of("llama3-8b", 8, 1);
  EXPECT_EQ(shape_of(local, "layers.0.self_attn.q_proj.weight"), (Shape{4096 / 8, 4096}));
  EXPECT_EQ(shape_of(local, "layers.0.self_attn.k_proj.weight"), (Shape{1024 / 8, 4096}));
  EXPECT_EQ(shape_of(local, "layers.0.self_attn.o_proj.weight"), (Shape{4096, 4096 / 8}));
  EXPECT_EQ(shape_of(local, "layers.0.mlp.gate_proj.weight"), (Shape{14336 / 8, 4096}));
  EXPECT_EQ(shape_of(local, "layers.0.mlp.down_proj.weight"), (Shape{4096, 14336 / 8}));
  EXPECT_EQ(shape_of(local, "layers.0.input_layernorm.weight"), (Shape{4096}));
  EXPECT_EQ(shape_of(local, "embed_tokens.weight"), (Shape{128256 / 8, 4096}));
  EXPECT_EQ(shape_of(local, "lm_head.weight"), (Shape{128256 / 8, 4096}));
  EXPECT_EQ(local.units[1].compute.attention->heads, 32 / 8);
  // Every parameter but the norms (65 vectors of 4096) is split eight ways.
  const double norms = 65.0 * 4096;
  const double whole = static_cast<double>(catalog_model("llama3-8b").params());
  std::printf("llama3-8b tp 8: expected %.0f parameters per rank, built %lld\n", (whole - norms) / 8 + norms,
              static_cast<long long>(local.params()));
  EXPECT_DOUBLE_EQ(static_cast<double>(local.params()), (whole - norms) / 8 + norms);
  EXPECT_EQ(local.name, "llama3-8b");
}

TEST(ModelSplit, EachTensorSaysWhereTensorParallelismCutIt) {
  const ModelSpec local = split_of("llama3-8b", 8, 1);
  const auto cut = [&](const std::string& name) {
    const TensorSpec* tensor = find_tensor(local, name);
    EXPECT_NE(tensor, nullptr) << name;
    return tensor == nullptr ? TensorCut::kWhole : tensor->tp_cut;
  };
  EXPECT_EQ(cut("layers.0.self_attn.q_proj.weight"), TensorCut::kRows);
  EXPECT_EQ(cut("layers.0.self_attn.v_proj.weight"), TensorCut::kRows);
  EXPECT_EQ(cut("layers.0.self_attn.o_proj.weight"), TensorCut::kColumns);
  EXPECT_EQ(cut("layers.0.mlp.up_proj.weight"), TensorCut::kRows);
  EXPECT_EQ(cut("layers.0.mlp.down_proj.weight"), TensorCut::kColumns);
  EXPECT_EQ(cut("layers.0.post_attention_layernorm.weight"), TensorCut::kWhole);
  EXPECT_EQ(cut("embed_tokens.weight"), TensorCut::kRows);
  EXPECT_EQ(cut("lm_head.weight"), TensorCut::kRows);
  EXPECT_EQ(cut("norm.weight"), TensorCut::kWhole);
  // Without tensor parallelism nothing is cut.
  for (const UnitSpec& unit : catalog_model("llama3-8b").units) {
    for (const TensorSpec& tensor : unit.tensors) EXPECT_EQ(tensor.tp_cut, TensorCut::kWhole) << tensor.name;
  }
}

TEST(ModelSplit, KeyValueHeadsAreReplicatedWhenTpExceedsThem) {
  // 8 key/value heads on 16 ranks: each rank holds one head of 128 dims.
  const ModelSpec local = split_of("llama3-8b", 16, 1);
  EXPECT_EQ(shape_of(local, "layers.0.self_attn.k_proj.weight"), (Shape{128, 4096}));
  EXPECT_EQ(shape_of(local, "layers.0.self_attn.q_proj.weight"), (Shape{256, 4096}));
}

TEST(ModelSplit, GemmFlopsAreTheRankShare) {
  const ModelSpec whole = catalog_model("llama3-70b");
  const ModelSpec local = split_of("llama3-70b", 4, 1);
  const double w = whole.units[1].compute.gemm_forward_flops_per_token();
  const double l = local.units[1].compute.gemm_forward_flops_per_token();
  std::printf("llama3-70b block GEMM FLOPs per token: whole / 4 = %.6g, rank %.6g\n", w / 4, l);
  EXPECT_DOUBLE_EQ(l, w / 4);
}

TEST(ModelSplit, SequenceParallelSpreadsEveryActivationOverTp) {
  const ModelSpec whole = catalog_model("llama3-8b");
  const ModelSpec sp = split_of("llama3-8b", 4, 1, true);
  const ModelSpec no_sp = split_of("llama3-8b", 4, 1, false);
  const ActivationBytes& w = whole.units[1].activations;
  std::printf("llama3-8b block activations per token: whole / 4 = %.1f, sp %.1f, no sp %.1f\n", w.saved_none / 4,
              sp.units[1].activations.saved_none, no_sp.units[1].activations.saved_none);
  EXPECT_DOUBLE_EQ(sp.units[1].activations.saved_none, w.saved_none / 4);
  EXPECT_DOUBLE_EQ(sp.units[1].activations.saved_full, w.saved_full / 4);
  EXPECT_DOUBLE_EQ(sp.units[1].compute.elementwise_bytes_per_token(),
                   whole.units[1].compute.elementwise_bytes_per_token() / 4);
  // Without it the block keeps its hidden-wide inputs whole on every rank:
  // four norm inputs and outputs of 4096 bf16 values above the split parts.
  EXPECT_DOUBLE_EQ(no_sp.units[1].activations.saved_none - sp.units[1].activations.saved_none, 4 * 4096 * 2 * 0.75);
}

// TorchTitan's op-level selective checkpointing, eager, caches every second
// mm's output and every reduce-scatter's. Llama 3 8B at tp 4 with sequence
// parallelism: of q, k, v, o, gate, up, down it saves q, v, gate and down;
// down is row-parallel, so what it saves is its partial sum over all the
// tokens, 4,096 bf16 values a token on every rank where the spread count has
// a quarter of them (+6,144 B); the reduce-scatters after o and down keep a
// quarter of the tokens at 4,096 wide each (+4,096 B). Compiled, the
// backward reads neither and the partitioner keeps neither.
TEST(ModelSplit, EagerSelectiveCheckpointingKeepsRowParallelPartialSumsAndScatters) {
  ModelSpec whole = catalog_model("llama3-8b");
  const ModelSpec compiled_sp = build_model(whole.arch, whole.kernels, ModelSplit{4, 1, true});
  whole.kernels.eager_blocks = true;
  whole = build_model(whole.arch, whole.kernels);
  const ModelSpec sp = build_model(whole.arch, whole.kernels, ModelSplit{4, 1, true});
  EXPECT_DOUBLE_EQ(compiled_sp.units[1].activations.saved_selective,
                   catalog_model("llama3-8b").units[1].activations.saved_selective / 4);
  const ActivationBytes& w = whole.units[1].activations;
  const ActivationBytes& local = sp.units[1].activations;
  const double by_hand = 4096 * 2 * (1 - 0.25) + 2 * 4096 * 2 * 0.25;
  std::printf("llama3-8b block at tp 4, kept per token under selective checkpointing: whole / 4 = %.1f, built %.1f "
              "(by hand +%.0f)\n", w.saved_selective / 4, local.saved_selective, by_hand);
  EXPECT_DOUBLE_EQ(local.saved_selective - w.saved_selective / 4, by_hand);
  // The other modes are what the spread count says.
  EXPECT_DOUBLE_EQ(local.saved_none, w.saved_none / 4);
  EXPECT_DOUBLE_EQ(local.saved_full, w.saved_full / 4);
}

TEST(ModelSplit, ExpertParallelGivesEachRankItsExpertsAsAUnit) {
  // DeepSeek-V3: 256 routed experts of width 2048, top 8, on ep 64: four
  // experts per rank in a unit after their block, each seeing 8 / 4 of the
  // tokens the group dispatches to it.
  const ModelSpec whole = catalog_model("deepseek-v3");
  const ModelSpec local = split_of("deepseek-v3", 1, 64);
  const UnitSpec* block = find_unit(local, "layers.3");
  const UnitSpec* experts = find_unit(local, "layers.3.experts");
  ASSERT_NE(block, nullptr);
  ASSERT_NE(experts, nullptr);
  EXPECT_EQ(experts->kind, UnitKind::kExperts);
  EXPECT_EQ(experts->tensors.size(), 4u * 3u);
  for (const TensorSpec& t : block->tensors) EXPECT_NE(t.role, TensorRole::kExpert) << t.name;
  const GemmShape* up = find_gemm(*experts, "mlp.experts.up_proj");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->count, 4);
  EXPECT_DOUBLE_EQ(up->token_fraction, 8.0 / 4.0);
  // The routed experts' FLOPs per token are the whole model's: each rank
  // runs its experts on every rank's tokens routed to them.
  const UnitSpec* whole_block = find_unit(whole, "layers.3");
  double routed = 0;
  for (const GemmShape& g : whole_block->compute.gemms) routed += g.routed_experts ? g.forward_flops_per_token() : 0;
  std::printf("deepseek-v3 routed-expert FLOPs per token: whole %.6g, ep 64 rank %.6g\n", routed,
              experts->compute.gemm_forward_flops_per_token());
  EXPECT_DOUBLE_EQ(experts->compute.gemm_forward_flops_per_token(), routed);
  // The block and its experts keep together what the whole block keeps.
  EXPECT_DOUBLE_EQ(block->activations.saved_none + experts->activations.saved_none,
                   whole_block->activations.saved_none);
  // 58 MoE layers of 256 experts x 3 x 2048 x 7168 parameters, a 64th each.
  double expert_params = 0;
  for (const UnitSpec& u : local.units)
    expert_params += u.kind == UnitKind::kExperts ? static_cast<double>(u.params()) : 0;
  EXPECT_DOUBLE_EQ(expert_params, 58.0 * 256 * 3 * 2048 * 7168 / 64);
}

TEST(ModelSplit, FusedExpertsSplitTheirExpertDimension) {
  const ModelSpec local = split_of("gpt-oss-120b", 1, 8);
  EXPECT_EQ(shape_of(local, "layers.0.mlp.experts.down_proj"), (Shape{128 / 8, 2880, 2880}));
}

TEST(ModelSplit, TrivialSplitIsTheWholeModel) {
  const ModelSpec whole = catalog_model("mixtral-8x7b");
  const ModelSpec same = build_model(whole.arch, whole.kernels, ModelSplit{});
  ASSERT_EQ(same.units.size(), whole.units.size());
  EXPECT_EQ(same.params(), whole.params());
  EXPECT_DOUBLE_EQ(same.units[1].activations.saved_none, whole.units[1].activations.saved_none);
  EXPECT_EQ(same.units[1].compute.elementwise.size(), whole.units[1].compute.elementwise.size());
}

TEST(ModelSplit, ProblemsNameTheMeshFieldAndTheFix) {
  const ArchConfig llama = catalog_model("llama3-8b").arch;
  std::vector<SplitProblem> p = check_split(llama, ModelSplit{3, 1, true});
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p.front().field, "tp");
  EXPECT_NE(p.front().message.find("attention heads (32)"), std::string::npos) << p.front().message;
  p = check_split(llama, ModelSplit{1, 2, true});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p.front().field, "ep");
  EXPECT_NE(p.front().message.find("no experts"), std::string::npos) << p.front().message;
  p = check_split(catalog_model("deepseek-v3").arch, ModelSplit{1, 3, true});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p.front().message.find("256 routed experts"), std::string::npos) << p.front().message;
  EXPECT_THROW(build_model(llama, {}, ModelSplit{3, 1, true}), InputError);
}

}  // namespace
}  // namespace ragged::models
