// Per-unit compute (GEMMs, attention, element-wise bytes), model FLOPs and
// activation bytes, each checked against a formula computed here independently.

#include <algorithm>
#include <cstdio>

#include <gtest/gtest.h>

#include "models/catalog.hpp"
#include "test_helpers.hpp"

namespace ragged::models {
namespace {

using test_util::find_gemm;

double embedding_params(const ModelSpec& model) {
  return static_cast<double>(model.units.front().params());
}

TEST(ComputeTest, Llama3_8bModelFlopsFollowPaLM) {
  const ModelSpec model = catalog_model("llama3-8b");
  const double params = static_cast<double>(model.params());
  const double expected = 6.0 * (params - 128256.0 * 4096.0) + 12.0 * 32 * 32 * 128 * 8192;
  std::printf("llama3-8b model FLOPs/token at 8192: %.6e (expected %.6e)\n", model.model_flops_per_token(8192),
              expected);
  EXPECT_DOUBLE_EQ(model.model_flops_per_token(8192), expected);
}

TEST(ComputeTest, MoeModelFlopsCountActiveExperts) {
  const ModelSpec mixtral = catalog_model("mixtral-8x7b");
  const double expected = 6.0 * (mixtral.active_params() - embedding_params(mixtral)) + 12.0 * 32 * 32 * 128 * 4096;
  EXPECT_DOUBLE_EQ(mixtral.model_flops_per_token(4096), expected);

  // MLA: the attention term uses qk_head_dim = nope + rope = 192.
  const ModelSpec deepseek = catalog_model("deepseek-v3");
  const double ds_expected =
      6.0 * (deepseek.active_params() - embedding_params(deepseek)) + 12.0 * 61 * 128 * 192 * 4096;
  EXPECT_DOUBLE_EQ(deepseek.model_flops_per_token(4096), ds_expected);
}

TEST(ComputeTest, MeanContextFullAndSliding) {
  const AttentionShape full{32, 128, 128, 0};
  EXPECT_DOUBLE_EQ(full.mean_context(8192), 4096.5);
  EXPECT_DOUBLE_EQ(full.mean_context(1), 1.0);
  for (int64_t window : {1, 128, 1000}) {
    for (int64_t seq : {1, 100, 128, 129, 4096}) {
      double sum = 0;
      for (int64_t p = 1; p <= seq; ++p) sum += static_cast<double>(std::min(p, window));
      const AttentionShape sliding{64, 64, 64, window};
      EXPECT_NEAR(sliding.mean_context(seq), sum / static_cast<double>(seq), 1e-9)
          << "window " << window << " seq " << seq;
    }
  }
}

TEST(ComputeTest, AttentionAndGemmFlops) {
  const AttentionShape mla{128, 192, 128, 0};
  EXPECT_DOUBLE_EQ(mla.forward_flops_per_token(4096), 2.0 * 128 * (192 + 128) * 2048.5);
  const GemmShape experts{"mlp.experts.up_proj", 2048, 7168, 8.0 / 256.0, 256};
  EXPECT_DOUBLE_EQ(experts.forward_flops_per_token(), 2.0 * 2048 * 7168 * 8);
}

TEST(ComputeTest, BackwardIsTwiceGemmAndTwoAndAHalfAttention) {
  for (const char* name : {"llama3-8b", "gpt-oss-120b", "deepseek-v3"}) {
    for (const UnitSpec& unit : catalog_model(name).units) {
      const UnitCompute& c = unit.compute;
      const double gemm = c.gemm_forward_flops_per_token();
      const double attention = c.attention_forward_flops_per_token(8192);
      EXPECT_DOUBLE_EQ(c.forward_flops_per_token(8192), gemm + attention) << name << " " << unit.name;
      EXPECT_DOUBLE_EQ(c.backward_flops_per_token(8192), 2 * gemm + 2.5 * attention) << name << " " << unit.name;
      EXPECT_EQ(c.attention.has_value(), unit.kind == UnitKind::kBlock) << unit.name;
    }
  }
}

TEST(ComputeTest, Llama3_8bExecutedFlops) {
  const ModelSpec model = catalog_model("llama3-8b");
  // Every GEMM weight except the embedding table and the norms, once per token.
  const double matrix_params = static_cast<double>(model.params()) - 128256.0 * 4096 - (2 * 32 + 1) * 4096.0;
  const double attention = 2.0 * 32 * (128 + 128) * (8192 + 1) / 2.0;
  const double expected = 3.0 * 2.0 * matrix_params + 3.5 * 32 * attention;
  EXPECT_NEAR(model.executed_flops_per_token(8192) / expected, 1.0, 1e-12);
  const UnitSpec& layer = model.units[1];
  EXPECT_EQ(find_gemm(layer, "self_attn.k_proj")->n, 1024);
  EXPECT_EQ(find_gemm(layer, "mlp.down_proj")->k, 14336);
  EXPECT_EQ(find_gemm(model.units.back(), "lm_head")->n, 128256);
  EXPECT_TRUE(model.units.front().compute.gemms.empty());
}

TEST(ComputeTest, SlidingLayersDoLessAttention) {
  const ModelSpec model = catalog_model("gpt-oss-20b");
  const double sliding = model.units[1].compute.attention_forward_flops_per_token(8192);
  const double full = model.units[2].compute.attention_forward_flops_per_token(8192);
  EXPECT_NEAR(sliding / full, (128.0 * 129 / 2 + (8192 - 128) * 128.0) / 8192 / 4096.5, 1e-12);
}

TEST(ComputeTest, Llama3_8bElementwiseBytes) {
  const ModelSpec model = catalog_model("llama3-8b");
  const double b = 2, h = 4096, q = 4096, kv = 1024, ffn = 14336, vocab = 128256;
  // Two norms, two residual adds, rotary over q and k, SwiGLU.
  const double block = 2 * (2 * h * b) + 2 * (3 * h * b) + 2 * (q + kv) * b + 3 * ffn * b;
  EXPECT_DOUBLE_EQ(model.units[1].compute.elementwise_bytes_per_token(), block);
  // The final norm, and the fp32 loss fused: read the logits, write the fp32
  // log-softmax; backward: read it, write the logits' gradient.
  EXPECT_DOUBLE_EQ(model.units.back().compute.elementwise_bytes_per_token(), 2 * h * b + vocab * (b + 4));
  EXPECT_DOUBLE_EQ(model.units.back().compute.elementwise.back().backward_bytes(), vocab * (4 + b));
  EXPECT_GT(model.units.front().compute.elementwise_bytes_per_token(), 0);
}

// The loss kernels keep what their frameworks keep (docs/MODELS.md):
// flash-attn's fused cross-entropy the logits and a log-sum-exp, its
// backward one gradient of the logits; Liger's chunked one a chunk of logits
// in the forward and nothing in the backward.
TEST(ActivationTest, LossKernelsChangeTheHead) {
  const double b = 2, h = 4096, vocab = 128256;
  const ArchConfig arch = find_catalog_entry("llama3-8b").arch;
  const ModelSpec fused = build_model(arch, {AttentionKernel::kFlash2, LossKernel::kFused});
  const UnitSpec& head = fused.units.back();
  EXPECT_DOUBLE_EQ(head.activations.saved_none, b * 2 * h + b * vocab + 4);
  EXPECT_TRUE(head.activations.forward_pieces.empty());
  EXPECT_DOUBLE_EQ(head.activations.working, b * vocab);
  EXPECT_EQ(head.compute.elementwise.back().name, "fused_cross_entropy");
  EXPECT_DOUBLE_EQ(head.compute.elementwise.back().bytes_per_token, b * vocab);
  EXPECT_DOUBLE_EQ(head.compute.elementwise.back().backward_bytes(), 2 * b * vocab);

  const ModelSpec chunked = build_model(arch, {AttentionKernel::kFlash2, LossKernel::kChunked});
  const UnitSpec& chunked_head = chunked.units.back();
  EXPECT_DOUBLE_EQ(chunked_head.activations.saved_none, b * 2 * h);
  EXPECT_EQ(chunked_head.activations.forward_pieces, (std::vector<double>{b * h}));
  EXPECT_DOUBLE_EQ(chunked_head.activations.working, 0);
  EXPECT_DOUBLE_EQ(chunked_head.compute.elementwise.back().bytes_per_token, 3 * b * vocab);
  EXPECT_DOUBLE_EQ(chunked_head.compute.elementwise.back().backward_bytes(), 0);
  EXPECT_TRUE(find_gemm(chunked_head, "lm_head")->logits);
  // The blocks do not change.
  EXPECT_DOUBLE_EQ(chunked.units[1].activations.saved_none, catalog_model("llama3-8b").units[1].activations.saved_none);
}

// torch's F.cross_entropy over bf16 logits, eager: the log-softmax in bf16
// kept for the backward, the logits a forward transient (the model returns
// them when asked); the backward's nll_loss gradient and the logits'
// gradient, bf16 each. Compiled, it is lowered like the fp32 loss.
TEST(ActivationTest, LogSoftmaxLossKeepsItsOutputInTheLogitsDtype) {
  const double b = 2, h = 4096, vocab = 128256;
  const ArchConfig arch = find_catalog_entry("llama3-8b").arch;
  KernelChoices kernels{AttentionKernel::kFlash2, LossKernel::kLogSoftmax};
  const UnitSpec head = build_model(arch, kernels).units.back();
  EXPECT_DOUBLE_EQ(head.activations.saved_none, b * 2 * h + b * vocab);
  EXPECT_DOUBLE_EQ(head.activations.loss_logits, b * vocab);
  EXPECT_DOUBLE_EQ(head.activations.returned_logits, b * vocab);
  EXPECT_EQ(head.activations.working_pieces, (std::vector<double>{b * vocab, b * vocab}));
  EXPECT_DOUBLE_EQ(head.activations.logits_gradient, b * vocab);
  EXPECT_EQ(head.compute.elementwise.back().name, "log_softmax_cross_entropy");
  EXPECT_DOUBLE_EQ(head.compute.elementwise.back().bytes_per_token, 2 * b * vocab);
  EXPECT_EQ(loss_kernel_name(kernels.loss), "log-softmax");
  kernels.compiled_loss = true;
  EXPECT_EQ(effective_loss(kernels), LossKernel::kFused);
}

// torch's loss_parallel handlers, eager (torch/distributed/tensor/parallel/
// loss.py): beside FP32_LOGITS's pieces the forward holds _log_softmax's
// shifted logits, and the backward's zeros, exponential and their sum are
// three fp32 pieces at once where aten's cross_entropy has two.
TEST(ActivationTest, LossParallelHoldsOneMoreFp32CopyEachWay) {
  const double b = 2, vocab = 128256;
  const ArchConfig arch = find_catalog_entry("llama3-8b").arch;
  const UnitSpec plain = build_model(arch, {AttentionKernel::kFlash2, LossKernel::kFp32Logits}).units.back();
  const KernelChoices kernels{AttentionKernel::kFlash2, LossKernel::kLossParallel};
  const UnitSpec head = build_model(arch, kernels).units.back();
  EXPECT_DOUBLE_EQ(head.activations.saved_none, plain.activations.saved_none);  // the fp32 log-softmax
  EXPECT_EQ(head.activations.forward_pieces, (std::vector<double>{b * vocab, 4 * vocab}));
  EXPECT_DOUBLE_EQ(head.activations.loss_logits, plain.activations.loss_logits);
  EXPECT_EQ(head.activations.working_pieces, (std::vector<double>{4 * vocab, 4 * vocab, 4 * vocab}));
  EXPECT_DOUBLE_EQ(head.activations.working, plain.activations.working + 4 * vocab);
  EXPECT_DOUBLE_EQ(head.activations.logits_gradient, b * vocab);
  EXPECT_EQ(head.compute.elementwise.back().name, "loss_parallel_cross_entropy");
  EXPECT_EQ(loss_kernel_name(kernels.loss), "loss-parallel");
}

// A loss inside torch.compile (compile_scope WHOLE_MODEL) is lowered by
// Inductor to reductions over the compute-dtype logits: an fp32-logits loss
// then holds and moves what the fused kernel does, 4 bytes a vocabulary
// entry less kept to the backward and no fp32 working pieces; the kernel
// declared stays what `ragged run` checks.
TEST(ActivationTest, ACompiledLossHoldsNoFp32Logits) {
  const double b = 2, vocab = 128256;
  const ArchConfig arch = find_catalog_entry("llama3-8b").arch;
  KernelChoices eager{AttentionKernel::kFlash2, LossKernel::kFp32Logits};
  KernelChoices compiled = eager;
  compiled.compiled_loss = true;
  EXPECT_EQ(effective_loss(eager), LossKernel::kFp32Logits);
  EXPECT_EQ(effective_loss(compiled), LossKernel::kFused);
  KernelChoices shifted = compiled;
  shifted.loss = LossKernel::kShiftedFp32Logits;
  EXPECT_EQ(effective_loss(shifted), LossKernel::kFused);
  KernelChoices chunked = compiled;
  chunked.loss = LossKernel::kChunked;
  EXPECT_EQ(effective_loss(chunked), LossKernel::kChunked);
  const UnitSpec eager_head = build_model(arch, eager).units.back();
  const UnitSpec compiled_head = build_model(arch, compiled).units.back();
  const UnitSpec fused_head = build_model(arch, {AttentionKernel::kFlash2, LossKernel::kFused}).units.back();
  std::printf("head kept per token: fp32 logits %.0f bytes, compiled %.0f (fused kernel %.0f); working %.0f -> %.0f\n",
              eager_head.activations.saved_none, compiled_head.activations.saved_none,
              fused_head.activations.saved_none, eager_head.activations.working, compiled_head.activations.working);
  EXPECT_DOUBLE_EQ(compiled_head.activations.saved_none, fused_head.activations.saved_none);
  EXPECT_DOUBLE_EQ(eager_head.activations.saved_none - compiled_head.activations.saved_none, (4 - b) * vocab - 4);
  EXPECT_DOUBLE_EQ(eager_head.activations.working, 8 * vocab);
  EXPECT_DOUBLE_EQ(compiled_head.activations.working, b * vocab);
  EXPECT_EQ(compiled_head.compute.elementwise.back().name, "fused_cross_entropy");
}

// Hugging Face's causal-LM loss: logits.float() and a shifted contiguous
// fp32 copy in the forward (the compute-dtype logits are dropped by the
// reassignment); its backward holds two fp32 gradients at once, as
// TorchTitan's. A block's returned keys and values: its kv heads, before
// repeat_kv (Llama-3-8B: 8 x 128 each, bf16).
TEST(ActivationTest, ShiftedLossAndReturnedKeysAndValues) {
  const double b = 2, vocab = 128256;
  const ArchConfig arch = find_catalog_entry("llama3-8b").arch;
  const ModelSpec hf = build_model(arch, {AttentionKernel::kFlash2, LossKernel::kShiftedFp32Logits});
  const ActivationBytes& head = hf.units.back().activations;
  EXPECT_EQ(head.forward_pieces, (std::vector<double>{4 * vocab}));
  EXPECT_DOUBLE_EQ(head.loss_logits, 4 * vocab);
  EXPECT_EQ(head.working_pieces, (std::vector<double>{4 * vocab, 4 * vocab}));
  EXPECT_EQ(hf.units.back().compute.elementwise.back().name, "shifted_cross_entropy");
  EXPECT_DOUBLE_EQ(head.saved_none, catalog_model("llama3-8b").units.back().activations.saved_none);
  EXPECT_DOUBLE_EQ(hf.units[1].activations.returned_kv, 2 * 8 * 128 * b);
  EXPECT_DOUBLE_EQ(head.returned_kv, 0);
}

// The math attention backend keeps one B x heads x S x S probability tensor
// without checkpointing (heads x bytes per token per key); with checkpointing
// it is recomputed.
TEST(ActivationTest, MathAttentionKeepsTheScores) {
  const ArchConfig arch = find_catalog_entry("llama3-8b").arch;
  const ModelSpec flash = catalog_model("llama3-8b");
  const ModelSpec math = build_model(arch, {AttentionKernel::kMath, LossKernel::kFp32Logits});
  const ActivationBytes& block = math.units[1].activations;
  EXPECT_DOUBLE_EQ(block.scores_per_key, 32 * 2);
  EXPECT_DOUBLE_EQ(block.kept(Checkpointing::kNone, 8192), flash.units[1].activations.saved_none + 32 * 2 * 8192.0);
  EXPECT_DOUBLE_EQ(block.kept(Checkpointing::kSelective, 8192), flash.units[1].activations.saved_selective);
  EXPECT_DOUBLE_EQ(block.kept(Checkpointing::kFull, 8192), flash.units[1].activations.saved_full);
  EXPECT_DOUBLE_EQ(math.units.back().activations.scores_per_key, 0);
}

TEST(ActivationTest, Llama3_8bBlockAndHead) {
  const ModelSpec model = catalog_model("llama3-8b");
  const double b = 2, h = 4096, q = 4096, kv = 1024, ffn = 14336, vocab = 128256;
  const ActivationBytes& block = model.units[1].activations;
  const double none = b * (4 * h + q + 2 * kv + q) + 4 * 32 + b * 3 * ffn;
  EXPECT_DOUBLE_EQ(block.saved_none, none);
  // TorchTitan's op-level SAC saves the block's input, the outputs of the
  // 1st, 3rd, 5th and 7th mm (wq, wv, w1, w2; wk, wo and w3 are recomputed)
  // and the attention's output and log-sum-exp; compiled (a catalog model's
  // default), the partitioner keeps no w2 output: no backward reads it.
  EXPECT_DOUBLE_EQ(block.saved_selective, b * (h + q + kv + ffn) + b * q + 4 * 32);
  EXPECT_DOUBLE_EQ(block.saved_full, h * b);
  EXPECT_DOUBLE_EQ(block.working, b * 3 * ffn);

  const ActivationBytes& head = model.units.back().activations;
  EXPECT_DOUBLE_EQ(head.saved_none, b * 2 * h + 4 * vocab);  // the final norm's input and output, the fp32 log-softmax
  EXPECT_DOUBLE_EQ(head.saved_full, head.saved_none);
  // TorchTitan's loss: the forward makes the logits and their fp32 copy
  // (the loss's logits, which a model may return); the backward holds
  // nll_loss's and log_softmax's fp32 gradients at once.
  EXPECT_EQ(head.forward_pieces, (std::vector<double>{b * vocab}));
  EXPECT_DOUBLE_EQ(head.loss_logits, 4 * vocab);
  EXPECT_EQ(head.working_pieces, (std::vector<double>{4 * vocab, 4 * vocab}));
  EXPECT_DOUBLE_EQ(head.working, 8 * vocab);
  EXPECT_DOUBLE_EQ(block.scores_per_key, 0);  // FlashAttention keeps no scores
  EXPECT_DOUBLE_EQ(block.kept(Checkpointing::kNone, 8192), none);
  const ActivationBytes& embed = model.units.front().activations;
  EXPECT_EQ(embed.saved_none + embed.saved_selective + embed.saved_full + embed.working, 0);
}

TEST(ActivationTest, MixtureOfExpertsBlock) {
  const ModelSpec model = catalog_model("deepseek-v3");
  const double b = 2, h = 7168, f = 2048;
  const ActivationBytes& dense = model.units[1].activations;
  const ActivationBytes& moe = model.units[4].activations;
  // MLA: q_a output and its norm, q, kv_a output, its norm, k, v, attention output.
  const double attention = 2 * 1536.0 + 128 * 192 + 576 + 512 + 128 * 192 + 128 * 128 + 128 * 128;
  EXPECT_DOUBLE_EQ(dense.saved_none, b * (4 * h + attention) + 4 * 128 + b * 3 * 18432);
  const double mlp_none = b * (8 * (h + 3 * f) + 1 * 3 * f) + 4 * 256;
  EXPECT_DOUBLE_EQ(moe.saved_none, b * (4 * h + attention) + 4 * 128 + mlp_none);
  // An MoE block's selective recomputes the element-wise results only: both
  // norms' outputs and the products of its 8 routed and 1 shared experts.
  EXPECT_DOUBLE_EQ(moe.saved_none - moe.saved_selective, 2 * h * b + 9 * f * b);
  EXPECT_FALSE(moe.selective_recomputes_gemms);
  // The dense block before it: TorchTitan's policy saves the input, every
  // other GEMM's output (q_a, kv_a, o_proj, up_proj) and the attention's;
  // compiled, o_proj's output (read by no backward) is not kept.
  EXPECT_TRUE(dense.selective_recomputes_gemms);
  EXPECT_DOUBLE_EQ(dense.saved_selective, b * (h + 1536 + 576 + 18432) + b * 128 * 128 + 4 * 128);
  EXPECT_DOUBLE_EQ(moe.working, b * std::max(attention, 3 * 9 * f));
}

TEST(ActivationTest, CheckpointingOrdersEveryBlock) {
  for (const CatalogEntry& entry : catalog()) {
    const ModelSpec model = build_model(entry.arch);
    for (const UnitSpec& unit : model.units) {
      if (unit.kind != UnitKind::kBlock) continue;
      const ActivationBytes& a = unit.activations;
      EXPECT_GE(a.saved_none, a.saved_selective) << entry.arch.name << " " << unit.name;
      EXPECT_GE(a.saved_selective, a.saved_full) << entry.arch.name << " " << unit.name;
      EXPECT_DOUBLE_EQ(a.saved_full, 2.0 * static_cast<double>(entry.arch.hidden));
      EXPECT_GT(a.working, 0) << entry.arch.name << " " << unit.name;
    }
  }
}

}  // namespace
}  // namespace ragged::models
