// The GPT-2 style families (gpt2, gpt_neox, mpt, opt, falcon, bloom) imported
// from the config.json of real checkpoints: parameter totals against counts
// written out here per family and against the published ones, tensor names
// and shapes as the checkpoints store them, GEMMs, element-wise ops,
// activation bytes and model FLOPs, each from a formula computed here.

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/file_io.hpp"
#include "models/hf_config.hpp"
#include "test_helpers.hpp"

namespace ragged::models {
namespace {

using nlohmann::json;
using test_util::find_gemm;
using test_util::find_tensor;
using test_util::find_unit;
using test_util::fixture;
using test_util::fixture_json;
using test_util::import_error;
using test_util::shape_of;

ModelSpec load(const std::string& checkpoint) { return load_hf_config(fixture(checkpoint)); }

std::vector<std::string> op_names(const UnitSpec& unit) {
  std::vector<std::string> names;
  for (const ElementwiseOp& op : unit.compute.elementwise) names.push_back(op.name);
  return names;
}

// A block with LayerNorms (weight + bias), fused q/k/v, an MLP of 4h and
// biases everywhere: q/k/v 3h^2 + 3h, out h^2 + h, up 4h^2 + 4h, down 4h^2 + h,
// two norms 4h.
constexpr int64_t gpt_block(int64_t h) { return 12 * h * h + 13 * h; }

struct Expected {
  const char* checkpoint;
  int64_t params;    // from the shapes, written out per family below
  double published;  // as its authors state it
  double gap;        // (params - published) / published, explained in `why`
  const char* why;
};

TEST(GptFamiliesTest, ParameterTotalsAgainstHandCountsAndPublishedOnes) {
  constexpr int64_t kGpt2Vocab = 50257, kNeoxVocab = 50432, kPythiaVocab = 50304, kOptVocab = 50272;
  const Expected cases[] = {
      // GPT-2: wte [V, h], wpe [1024, h], blocks, ln_f; the head is tied.
      // OpenAI's GPT-2 model card: "124 million"; the 1.5B model was released as "1558M".
      {"gpt2", 12 * gpt_block(768) + kGpt2Vocab * 768 + 1024 * 768 + 2 * 768, 124e6, 0.0035, "rounded"},
      {"gpt2-xl", 48 * gpt_block(1600) + kGpt2Vocab * 1600 + 1024 * 1600 + 2 * 1600, 1558e6, -0.0002, "rounded"},
      // GPT-NeoX: embed_in and embed_out [V, h] (untied, V padded to 50432), final_layer_norm.
      // Model card: n_parameters 20554567680; Pythia card: total 1,414,647,808.
      {"gpt-neox-20b", 44 * gpt_block(6144) + 2 * kNeoxVocab * 6144 + 2 * 6144, 20554567680.0, 0, "exact"},
      {"pythia-1.4b", 24 * gpt_block(2048) + 2 * kPythiaVocab * 2048 + 2 * 2048, 1414647808.0, 0, "exact"},
      // MPT: no biases (no_bias), LayerNorm weights only, ALiBi (no wpe), tied.
      // Model cards: 6.7B and 29.95B; 6.7B is above the 6.65B the shapes hold.
      {"mpt-7b", 32 * (12 * 4096LL * 4096 + 2 * 4096) + kNeoxVocab * 4096 + 4096, 6.7e9, -0.0076,
       "the card's 6.7B is not a rounding of 6.65B"},
      {"mpt-30b", 48 * (12 * 7168LL * 7168 + 2 * 7168) + kNeoxVocab * 7168 + 7168, 29.95e9, 0.0002, "rounded"},
      // OPT: separate q/k/v/out with bias, fc1/fc2, embed_positions [2048 + 2, h], tied.
      // The OPT paper (Zhang et al. 2022, Table 1) names sizes 350M, 1.3B, 30B.
      {"opt-1.3b", 24 * gpt_block(2048) + kOptVocab * 2048 + 2050 * 2048 + 2 * 2048, 1.3e9, 0.0121,
       "the paper's size class"},
      {"opt-30b", 48 * gpt_block(7168) + kOptVocab * 7168 + 2050 * 7168 + 2 * 7168, 30e9, -0.0008, "rounded"},
      // OPT-350M: a 512-wide token table with project_in/out [1024, 512], post-norm blocks, no final norm.
      {"opt-350m", 24 * gpt_block(1024) + kOptVocab * 512 + 2050 * 1024 + 2 * 512 * 1024, 350e6, -0.0537,
       "the paper's size class"},
      // Falcon-7B: multi-query qkv [(71 + 2) * 64, h], dense, MLP 4h, no linear biases, one
      // LayerNorm per block; Falcon-40B: grouped qkv [(128 + 2 * 8) * 64, h], ln_attn and ln_mlp.
      // Both tie the head (FalconConfig's default). Model cards: "7B", "40B".
      {"falcon-7b", 32 * (4544LL * (4544 + 128) + 9 * 4544LL * 4544 + 2 * 4544) + 65024LL * 4544 + 2 * 4544, 7e9,
       -0.0112, "the card's size class"},
      {"falcon-40b", 60 * (8192LL * 9216 + 9 * 8192LL * 8192 + 4 * 8192) + 65024LL * 8192 + 2 * 8192, 40e9, 0.0326,
       "the card's size class"},
      // BLOOM: word_embeddings and their LayerNorm, GPT blocks, ln_f, tied.
      // Model card: 176,247,271,424 parameters.
      {"bloom-176b", 70 * gpt_block(14336) + 250880LL * 14336 + 4 * 14336, 176247271424.0, 0, "exact"},
  };
  for (const Expected& c : cases) {
    const ModelSpec model = load(c.checkpoint);
    const double gap = (static_cast<double>(model.params()) - c.published) / c.published;
    std::printf("%-13s built %15lld  expected %15lld  published %15.0f  %+.2f%% (%s)\n", c.checkpoint,
                static_cast<long long>(model.params()), static_cast<long long>(c.params), c.published, 100 * gap,
                c.why);
    EXPECT_EQ(model.params(), c.params) << c.checkpoint;
    EXPECT_NEAR(gap, c.gap, 0.0005) << c.checkpoint << ": " << c.why;
  }
}

TEST(GptFamiliesTest, PublishedBreakdowns) {
  // Pythia's card: 1,208,602,624 non-embedding parameters (without embed_in and embed_out).
  const ModelSpec pythia = load("pythia-1.4b");
  const int64_t tables = 2 * 50304LL * 2048;
  EXPECT_EQ(pythia.params() - tables, 1208602624);
  // BLOOM's card: 3,596,615,680 embedding parameters.
  const ModelSpec bloom = load("bloom-176b");
  EXPECT_EQ(find_tensor(bloom, "word_embeddings.weight")->numel(), 3596615680);
}

TEST(GptFamiliesTest, Gpt2TensorsAsTheCheckpointStoresThem) {
  const ModelSpec gpt2 = load("gpt2");
  EXPECT_EQ(gpt2.name, "gpt2");
  ASSERT_EQ(gpt2.units.size(), 14u);
  EXPECT_EQ(gpt2.units[1].name, "layers.0");  // units are named alike in every family
  EXPECT_EQ(shape_of(gpt2, "wte.weight"), (std::vector<int64_t>{50257, 768}));
  EXPECT_EQ(shape_of(gpt2, "wpe.weight"), (std::vector<int64_t>{1024, 768}));
  // Conv1D weights are [in, out].
  EXPECT_EQ(shape_of(gpt2, "h.0.attn.c_attn.weight"), (std::vector<int64_t>{768, 2304}));
  EXPECT_EQ(shape_of(gpt2, "h.0.attn.c_attn.bias"), (std::vector<int64_t>{2304}));
  EXPECT_EQ(shape_of(gpt2, "h.11.attn.c_proj.weight"), (std::vector<int64_t>{768, 768}));
  EXPECT_EQ(shape_of(gpt2, "h.11.mlp.c_fc.weight"), (std::vector<int64_t>{768, 3072}));
  EXPECT_EQ(shape_of(gpt2, "h.11.mlp.c_proj.weight"), (std::vector<int64_t>{3072, 768}));
  EXPECT_EQ(shape_of(gpt2, "h.5.ln_2.bias"), (std::vector<int64_t>{768}));
  EXPECT_EQ(shape_of(gpt2, "ln_f.bias"), (std::vector<int64_t>{768}));
  EXPECT_EQ(find_tensor(gpt2, "lm_head.weight"), nullptr);  // tied to wte
  EXPECT_EQ(gpt2.units[1].params(), gpt_block(768));
  EXPECT_EQ(find_tensor(gpt2, "wpe.weight")->role, TensorRole::kEmbedding);
}

TEST(GptFamiliesTest, TensorNamesOfTheOtherFamilies) {
  const ModelSpec neox = load("gpt-neox-20b");
  EXPECT_EQ(shape_of(neox, "embed_in.weight"), (std::vector<int64_t>{50432, 6144}));
  EXPECT_EQ(shape_of(neox, "layers.43.attention.query_key_value.weight"), (std::vector<int64_t>{18432, 6144}));
  EXPECT_EQ(shape_of(neox, "layers.43.attention.dense.bias"), (std::vector<int64_t>{6144}));
  EXPECT_EQ(shape_of(neox, "layers.0.mlp.dense_h_to_4h.weight"), (std::vector<int64_t>{24576, 6144}));
  EXPECT_EQ(shape_of(neox, "layers.0.post_attention_layernorm.bias"), (std::vector<int64_t>{6144}));
  EXPECT_EQ(shape_of(neox, "final_layer_norm.weight"), (std::vector<int64_t>{6144}));
  EXPECT_EQ(shape_of(neox, "embed_out.weight"), (std::vector<int64_t>{50432, 6144}));

  const ModelSpec mpt = load("mpt-7b");
  EXPECT_EQ(shape_of(mpt, "blocks.31.attn.Wqkv.weight"), (std::vector<int64_t>{12288, 4096}));
  EXPECT_EQ(shape_of(mpt, "blocks.0.ffn.up_proj.weight"), (std::vector<int64_t>{16384, 4096}));
  EXPECT_EQ(shape_of(mpt, "norm_f.weight"), (std::vector<int64_t>{4096}));
  EXPECT_EQ(find_tensor(mpt, "blocks.0.norm_1.bias"), nullptr);  // no_bias
  EXPECT_EQ(find_tensor(mpt, "blocks.0.attn.Wqkv.bias"), nullptr);
  EXPECT_EQ(find_tensor(mpt, "wpe.weight"), nullptr);  // ALiBi: no position table

  const ModelSpec opt = load("opt-1.3b");
  EXPECT_EQ(shape_of(opt, "embed_positions.weight"), (std::vector<int64_t>{2050, 2048}));  // offset of 2 rows
  EXPECT_EQ(shape_of(opt, "layers.0.self_attn.k_proj.bias"), (std::vector<int64_t>{2048}));
  EXPECT_EQ(shape_of(opt, "layers.0.self_attn.out_proj.weight"), (std::vector<int64_t>{2048, 2048}));
  EXPECT_EQ(shape_of(opt, "layers.0.fc1.weight"), (std::vector<int64_t>{8192, 2048}));
  EXPECT_EQ(shape_of(opt, "layers.0.self_attn_layer_norm.weight"), (std::vector<int64_t>{2048}));
  EXPECT_EQ(shape_of(opt, "final_layer_norm.bias"), (std::vector<int64_t>{2048}));

  const ModelSpec falcon7 = load("falcon-7b");
  EXPECT_EQ(shape_of(falcon7, "h.0.self_attention.query_key_value.weight"), (std::vector<int64_t>{4672, 4544}));
  EXPECT_EQ(shape_of(falcon7, "h.0.input_layernorm.bias"), (std::vector<int64_t>{4544}));
  EXPECT_EQ(find_tensor(falcon7, "h.0.post_attention_layernorm.weight"), nullptr);  // one norm per block
  EXPECT_EQ(find_tensor(falcon7, "h.0.self_attention.dense.bias"), nullptr);        // bias false
  EXPECT_EQ(shape_of(falcon7, "word_embeddings.weight"), (std::vector<int64_t>{65024, 4544}));

  const ModelSpec falcon40 = load("falcon-40b");
  EXPECT_EQ(shape_of(falcon40, "h.59.self_attention.query_key_value.weight"), (std::vector<int64_t>{9216, 8192}));
  EXPECT_EQ(shape_of(falcon40, "h.59.ln_attn.weight"), (std::vector<int64_t>{8192}));
  EXPECT_EQ(shape_of(falcon40, "h.59.ln_mlp.bias"), (std::vector<int64_t>{8192}));
  EXPECT_EQ(falcon40.arch.kv_heads, 8);

  const ModelSpec bloom = load("bloom-176b");
  EXPECT_EQ(shape_of(bloom, "word_embeddings_layernorm.bias"), (std::vector<int64_t>{14336}));
  EXPECT_EQ(shape_of(bloom, "h.69.self_attention.query_key_value.bias"), (std::vector<int64_t>{43008}));
  EXPECT_EQ(shape_of(bloom, "h.0.mlp.dense_4h_to_h.weight"), (std::vector<int64_t>{14336, 57344}));
}

TEST(GptFamiliesTest, Opt350mProjectsItsTokenTableAndHasNoFinalNorm) {
  const ModelSpec opt = load("opt-350m");
  EXPECT_EQ(shape_of(opt, "embed_tokens.weight"), (std::vector<int64_t>{50272, 512}));
  EXPECT_EQ(shape_of(opt, "project_in.weight"), (std::vector<int64_t>{1024, 512}));
  EXPECT_EQ(shape_of(opt, "project_out.weight"), (std::vector<int64_t>{512, 1024}));
  const UnitSpec& head = opt.units.back();
  ASSERT_EQ(head.tensors.size(), 1u);  // post-norm blocks: no final_layer_norm; the head is tied
  ASSERT_NE(find_gemm(head, "lm_head"), nullptr);
  EXPECT_EQ(find_gemm(head, "lm_head")->k, 512);
  EXPECT_EQ(find_gemm(head, "project_out")->n, 512);
  EXPECT_EQ(find_gemm(opt.units.front(), "project_in")->n, 1024);
  // The head keeps its input (h), project_out's output (512) and the fp32 softmax.
  EXPECT_DOUBLE_EQ(head.activations.saved_none, 2.0 * 1024 + 2.0 * 512 + 4.0 * 50272);
  // The embedding keeps project_in's input for its weight gradient.
  EXPECT_DOUBLE_EQ(opt.units.front().activations.saved_none, 2.0 * 512);
  // PaLM model FLOPs: the tied head is a vocab x 512 GEMM.
  const double embeddings = 50272.0 * 512 + 2050.0 * 1024;
  EXPECT_DOUBLE_EQ(opt.model_flops_per_token(2048),
                   6.0 * (static_cast<double>(opt.params()) - embeddings + 50272.0 * 512) + 12.0 * 24 * 16 * 64 * 2048);
}

TEST(GptFamiliesTest, GemmsFollowTheKernels) {
  // GPT-2: one fused q/k/v GEMM, the output projection, two MLP GEMMs: 24 h^2 FLOPs a token.
  // GEMMs are named after their weight, without the layer prefix.
  const ModelSpec gpt2_model = load("gpt2");
  const UnitSpec& gpt2 = gpt2_model.units[1];
  ASSERT_EQ(gpt2.compute.gemms.size(), 4u);
  ASSERT_NE(find_gemm(gpt2, "attn.c_attn"), nullptr);
  EXPECT_EQ(find_gemm(gpt2, "attn.c_attn")->n, 3 * 768);
  EXPECT_EQ(find_gemm(gpt2, "attn.c_attn")->k, 768);
  ASSERT_NE(find_gemm(gpt2, "mlp.c_proj"), nullptr);
  EXPECT_EQ(find_gemm(gpt2, "mlp.c_proj")->k, 3072);
  EXPECT_DOUBLE_EQ(gpt2.compute.gemm_forward_flops_per_token(), 24.0 * 768 * 768);
  ASSERT_TRUE(gpt2.compute.attention.has_value());
  EXPECT_EQ(gpt2.compute.attention->heads, 12);
  EXPECT_EQ(gpt2.compute.attention->qk_head_dim, 64);

  // Falcon-7B: q/k/v in one multi-query GEMM of (71 + 2) * 64 outputs.
  const ModelSpec falcon_model = load("falcon-7b");
  const UnitSpec& falcon = falcon_model.units[1];
  ASSERT_EQ(falcon.compute.gemms.size(), 4u);
  ASSERT_NE(find_gemm(falcon, "self_attention.query_key_value"), nullptr);
  EXPECT_EQ(find_gemm(falcon, "self_attention.query_key_value")->n, 73 * 64);
  EXPECT_DOUBLE_EQ(falcon.compute.gemm_forward_flops_per_token(), 2.0 * 4544 * (4672 + 4544 + 2 * 18176));

  // OPT: q, k, v, out separately.
  const ModelSpec opt_model = load("opt-1.3b");
  const UnitSpec& opt = opt_model.units[1];
  EXPECT_EQ(opt.compute.gemms.size(), 6u);
  EXPECT_NE(find_gemm(opt, "self_attn.v_proj"), nullptr);
}

TEST(GptFamiliesTest, ElementwiseOpsOfEachBlockForm) {
  using Names = std::vector<std::string>;
  // GPT-2: learned positions, so no rotary pass; LayerNorms and the GELU are single kernels.
  EXPECT_EQ(op_names(load("gpt2").units[1]),
            (Names{"attention_layer_norm", "attention_residual", "mlp_layer_norm", "mlp_activation", "mlp_residual"}));
  EXPECT_EQ(op_names(load("gpt2").units[0]), (Names{"embedding_lookup", "position_embedding"}));
  // MPT: ALiBi is a bias inside the attention kernel, no rotary pass either.
  EXPECT_EQ(op_names(load("mpt-7b").units[1]),
            (Names{"attention_layer_norm", "attention_residual", "mlp_layer_norm", "mlp_activation", "mlp_residual"}));
  // Falcon-7B: one shared norm, rotary on every dim of q and the one k head.
  const UnitSpec falcon = load("falcon-7b").units[1];
  EXPECT_EQ(op_names(falcon),
            (Names{"attention_layer_norm", "rotary", "attention_residual", "mlp_activation", "mlp_residual"}));
  EXPECT_DOUBLE_EQ(falcon.compute.elementwise[1].bytes_per_token, 2.0 * (71 + 1) * 64 * 2);
  // GPT-NeoX-20B: rotary on a quarter of each head (24 of 96 dims), fp16.
  const UnitSpec neox = load("gpt-neox-20b").units[1];
  EXPECT_EQ(op_names(neox)[1], "rotary");
  EXPECT_DOUBLE_EQ(neox.compute.elementwise[1].bytes_per_token, 2.0 * (64 + 64) * 24 * 2);
  // BLOOM: a LayerNorm right after the embedding.
  EXPECT_EQ(op_names(load("bloom-176b").units[0]), (Names{"embedding_lookup", "embedding_layer_norm"}));
}

TEST(GptFamiliesTest, ActivationBytesOfSequentialAndParallelBlocks) {
  // GPT-2 (bf16): norms keep input and output (4h); attention q, k, v and its
  // output (4h) plus an fp32 log-sum-exp per head; the MLP its up output and
  // the GELU's (2 * 4h). Selective keeps the block's input, the outputs of
  // c_attn and c_fc (the 1st and 3rd GEMMs) and the attention's.
  const double b = 2, h = 768, f = 3072;
  const ActivationBytes gpt2 = load("gpt2").units[1].activations;
  const double gpt2_attention = b * 4 * h + 4.0 * 12;
  EXPECT_DOUBLE_EQ(gpt2.saved_none, 4 * h * b + gpt2_attention + 2 * f * b);
  EXPECT_DOUBLE_EQ(gpt2.saved_selective, b * (h + 3 * h + f + h) + 4.0 * 12);
  EXPECT_DOUBLE_EQ(gpt2.saved_full, h * b);
  EXPECT_DOUBLE_EQ(gpt2.working, 2 * f * b);

  // Falcon-7B: attention and MLP share one norm (input and output: 2h); q is
  // 71 heads of 64, k and v one head each.
  const double fh = 4544, ff = 18176;
  const ActivationBytes falcon = load("falcon-7b").units[1].activations;
  const double falcon_attention = b * (fh + 2 * 64 + fh) + 4.0 * 71;
  EXPECT_DOUBLE_EQ(falcon.saved_none, 2 * fh * b + falcon_attention + 2 * ff * b);
  // Selective: the input, the fused qkv (1st GEMM) and h_to_4h (3rd) outputs, the attention's.
  EXPECT_DOUBLE_EQ(falcon.saved_selective, b * (fh + (fh + 2 * 64) + ff + fh) + 4.0 * 71);

  // GPT-NeoX-20B: parallel with two norms reading one input (3h).
  const double nh = 6144, nf = 24576;
  const ActivationBytes neox = load("gpt-neox-20b").units[1].activations;
  EXPECT_DOUBLE_EQ(neox.saved_none, 3 * nh * b + (b * 4 * nh + 4.0 * 64) + 2 * nf * b);
  EXPECT_DOUBLE_EQ(neox.saved_selective, b * (nh + 3 * nh + nf + nh) + 4.0 * 64);
}

TEST(GptFamiliesTest, ModelFlopsFollowPaLM) {
  // 6 N + 12 L h s with N the non-embedding parameters: the learned position
  // table is not a GEMM, the tied head is (a vocab x hidden GEMM).
  const ModelSpec gpt2 = load("gpt2");
  const double n = static_cast<double>(gpt2.params()) - 50257.0 * 768 - 1024.0 * 768;
  EXPECT_DOUBLE_EQ(gpt2.model_flops_per_token(1024), 6.0 * (n + 50257.0 * 768) + 12.0 * 12 * 768 * 1024);
  // Untied (GPT-NeoX): embed_out is counted once as a head tensor.
  const ModelSpec neox = load("gpt-neox-20b");
  EXPECT_DOUBLE_EQ(neox.model_flops_per_token(2048),
                   6.0 * (static_cast<double>(neox.params()) - 50432.0 * 6144) + 12.0 * 44 * 6144 * 2048);
  // Executed: forward GEMMs are 2 N_matrix per token; backward twice that.
  const double matrices = static_cast<double>(neox.params()) - 50432.0 * 6144 -
                          44 * (4 * 6144.0 + 3 * 6144 + 6144 + 4 * 6144 + 6144) - 2 * 6144.0;
  double gemm_forward = 0;
  for (const UnitSpec& unit : neox.units) gemm_forward += unit.compute.gemm_forward_flops_per_token();
  EXPECT_DOUBLE_EQ(gemm_forward, 2.0 * matrices);
}

void expect_error(const json& config, const std::string& part) {
  const std::string message = import_error(config);
  EXPECT_NE(message.find(part), std::string::npos) << message;
  EXPECT_EQ(message.rfind("bad/config.json: ", 0), 0u) << message;
}

TEST(GptFamiliesHfTest, DefaultsOfTheConfigClasses) {
  json gpt2 = fixture_json("gpt2");
  gpt2["n_inner"] = nullptr;  // null: 4 * n_embd
  gpt2.erase("n_positions");  // GPT2Config's 1024
  const ArchConfig arch = arch_from_hf_json(gpt2.dump(), "gpt2/config.json");
  EXPECT_EQ(arch.intermediate, 4 * 768);
  EXPECT_EQ(arch.max_positions, 1024);
  EXPECT_TRUE(arch.tie_embeddings);
  gpt2["tie_word_embeddings"] = false;
  EXPECT_NE(find_tensor(build_model(arch_from_hf_json(gpt2.dump(), "x/config.json")), "lm_head.weight"), nullptr);

  json neox = fixture_json("pythia-1.4b");
  neox["use_parallel_residual"] = false;
  neox["rotary_pct"] = 1.0;
  const ArchConfig sequential = arch_from_hf_json(neox.dump(), "x/config.json");
  EXPECT_FALSE(sequential.parallel_block);
  EXPECT_EQ(sequential.rotary_dim, 0);  // the whole head

  // MPT without ALiBi: a learned wpe table of max_seq_len rows; with biases.
  json mpt = fixture_json("mpt-7b");
  mpt["attn_config"]["alibi"] = false;
  mpt["no_bias"] = false;
  const ModelSpec learned = build_model(arch_from_hf_json(mpt.dump(), "x/config.json"));
  EXPECT_EQ(shape_of(learned, "wpe.weight"), (std::vector<int64_t>{2048, 4096}));
  EXPECT_NE(find_tensor(learned, "blocks.0.norm_1.bias"), nullptr);
  EXPECT_NE(find_tensor(learned, "blocks.0.attn.Wqkv.bias"), nullptr);
  mpt["attn_config"]["attn_type"] = "grouped_query_attention";
  mpt["attn_config"]["kv_n_heads"] = 8;
  EXPECT_EQ(shape_of(build_model(arch_from_hf_json(mpt.dump(), "x/config.json")), "blocks.0.attn.Wqkv.weight"),
            (std::vector<int64_t>{4096 + 2 * 8 * 128, 4096}));

  // Falcon: neither multi-query nor the new architecture: 3h q/k/v; sequential with two norms.
  json falcon = fixture_json("falcon-7b");
  falcon["multi_query"] = false;
  falcon["parallel_attn"] = false;
  falcon["alibi"] = true;
  const ModelSpec rw = build_model(arch_from_hf_json(falcon.dump(), "x/config.json"));
  EXPECT_EQ(shape_of(rw, "h.0.self_attention.query_key_value.weight"), (std::vector<int64_t>{3 * 4544, 4544}));
  EXPECT_NE(find_tensor(rw, "h.0.post_attention_layernorm.weight"), nullptr);
  EXPECT_EQ(rw.arch.positions, PositionKind::kAlibi);
  // The legacy names n_head / n_layer / n_head_kv.
  json legacy = fixture_json("falcon-40b");
  legacy.erase("num_attention_heads");
  legacy.erase("num_kv_heads");
  legacy["n_head"] = 128;
  legacy["n_head_kv"] = 8;
  EXPECT_EQ(arch_from_hf_json(legacy.dump(), "x/config.json").kv_heads, 8);
  legacy["num_ln_in_parallel_attn"] = 1;
  EXPECT_TRUE(arch_from_hf_json(legacy.dump(), "x/config.json").shared_block_norm);
}

TEST(GptFamiliesHfTest, FieldsTheModelCannotRepresentAreNamed) {
  json c = fixture_json("gpt2");
  c["add_cross_attention"] = true;
  expect_error(c, "'add_cross_attention'");
  c = fixture_json("gpt2");
  c["activation_function"] = "swiglu";
  expect_error(c, "field 'activation_function' is 'swiglu', a gated activation");
  c = fixture_json("gpt2");
  c.erase("n_embd");
  expect_error(c, "missing field 'n_embd' (required for model_type gpt2)");
  c = fixture_json("gpt2");
  c["n_head"] = 7;
  expect_error(c, "n_head (7) must divide n_embd (768)");

  c = fixture_json("gpt-neox-20b");
  c["rotary_pct"] = 1.5;
  expect_error(c, "field 'rotary_pct' must be in (0, 1]");
  c["rotary_pct"] = 0.01;
  expect_error(c, "field 'rotary_pct' (0.01) rotates 0 dims");

  c = fixture_json("mpt-7b");
  c["attn_config"]["rope"] = true;
  expect_error(c, "'attn_config.alibi' and 'attn_config.rope' are both true");
  c = fixture_json("mpt-7b");
  c["attn_config"]["attn_type"] = "sliding_attention";
  expect_error(c, "field 'attn_config.attn_type' is 'sliding_attention'");
  c = fixture_json("mpt-7b");
  c["attn_config"]["alibi"] = "yes";
  expect_error(c, "field 'attn_config.alibi' must be true or false");
  c = fixture_json("mpt-7b");
  c["attn_config"]["attn_type"] = "grouped_query_attention";
  expect_error(c, "missing field 'attn_config.kv_n_heads'");
  c = fixture_json("mpt-7b");
  c["ffn_config"] = {{"ffn_type", "mptglu"}};
  expect_error(c, "field 'ffn_config.ffn_type' is 'mptglu'");
  c = fixture_json("mpt-7b");
  c["expansion_ratio"] = 4.00001;
  expect_error(c, "field 'expansion_ratio'");
  c = fixture_json("mpt-7b");
  c["norm_type"] = "groupnorm";
  expect_error(c, "field 'norm_type' is 'groupnorm'");
  c = fixture_json("mpt-7b");
  c["attn_config"]["alibi"] = false;
  c["learned_pos_emb"] = false;
  expect_error(c, "no positions");

  c = fixture_json("opt-1.3b");
  c["layer_norm_elementwise_affine"] = false;
  expect_error(c, "'layer_norm_elementwise_affine' is false");
  c = fixture_json("opt-1.3b");
  c.erase("ffn_dim");
  expect_error(c, "missing field 'ffn_dim' (required for model_type opt)");

  c = fixture_json("falcon-40b");
  c["parallel_attn"] = false;
  expect_error(c, "'new_decoder_architecture' (true) and 'parallel_attn' (false) contradict");
  c = fixture_json("falcon-7b");
  c["num_ln_in_parallel_attn"] = 2;
  expect_error(c, "'num_ln_in_parallel_attn' is 2 without 'new_decoder_architecture'");
  c = fixture_json("falcon-40b");
  c["num_kv_heads"] = 7;
  expect_error(c, "num_kv_heads (7) must divide num_attention_heads (128)");
  c = fixture_json("falcon-40b");
  c["n_head"] = 64;
  expect_error(c, "fields 'num_attention_heads' (128) and 'n_head' (64) name the same setting but disagree");

  c = fixture_json("bloom-176b");
  c["n_embed"] = 1024;
  expect_error(c, "fields 'hidden_size' (14336) and 'n_embed' (1024)");
  c = fixture_json("bloom-176b");
  c.erase("n_layer");
  expect_error(c, "missing field 'n_layer' or 'num_hidden_layers' (required for model_type bloom)");
}

}  // namespace
}  // namespace ragged::models
