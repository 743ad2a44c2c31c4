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
  // cast 2+4 and log_softmax 4+4 against one fused kernel's 2+4; backward
  // nll_loss 4, log_softmax 4+4+4, cast 4+2 against 4+2.
  EXPECT_DOUBLE_EQ(eager_traffic_factor("cross_entropy"), 14.0 / 6.0);
  EXPECT_DOUBLE_EQ(eager_traffic_factors("cross_entropy").backward, 22.0 / 6.0);
  EXPECT_DOUBLE_EQ(eager_traffic_factor("fused_cross_entropy"), 1.0);
  EXPECT_DOUBLE_EQ(eager_traffic_factors("log_softmax_cross_entropy").backward, 2.0);  // nll_loss's zero-filled gradient
  // loss_parallel: cast 2+4, amax 4, sub 4+4, exp 4+4, sum 4, sub 4+4;
  // backward zeros 4, exp 4+4, add 4+4+4, product 4+4, cast 4+2.
  EXPECT_DOUBLE_EQ(eager_traffic_factors("loss_parallel_cross_entropy").forward, 38.0 / 6.0);
  EXPECT_DOUBLE_EQ(eager_traffic_factors("loss_parallel_cross_entropy").backward, 38.0 / 6.0);
  EXPECT_EQ(eager_kernel_count("loss_parallel_cross_entropy"), 20);
  EXPECT_DOUBLE_EQ(eager_traffic_factor("chunked_cross_entropy"), 1.0);
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

// torchtitan compiles each transformer block, not the model: with
// fused_blocks_only the blocks' element-wise ops run fused and the head's
// (final RMSNorm, fp32 cross-entropy) at their eager traffic and kernels.
TEST(EagerKernels, CompilingTheBlocksOnlyLeavesTheHeadEager) {
  const models::ModelSpec model = models::catalog_model("llama3-8b");
  const models::UnitSpec& block = model.units[1];
  const models::UnitSpec& head = model.units.back();
  ASSERT_EQ(head.kind, models::UnitKind::kHead);
  MicroBatch whole{2, 8192, true}, blocks{2, 8192, true}, eager{2, 8192, false};
  blocks.fused_blocks_only = true;
  EXPECT_DOUBLE_EQ(forward_work(block, blocks).elementwise_bytes, forward_work(block, whole).elementwise_bytes);
  EXPECT_EQ(backward_work(block, blocks).elementwise_kernels, backward_work(block, whole).elementwise_kernels);
  for (bool backward : {false, true}) {
    double expected = 0;
    for (const auto& op : head.compute.elementwise) {
      const EagerFactors f = eager_traffic_factors(op.name);
      expected += backward ? op.backward_bytes() * f.backward : op.bytes_per_token * f.forward;
    }
    const ComputeWork work = backward ? backward_work(head, blocks) : forward_work(head, blocks);
    EXPECT_DOUBLE_EQ(work.elementwise_bytes, expected * 16384) << (backward ? "backward" : "forward");
    EXPECT_DOUBLE_EQ(work.elementwise_bytes,
                     (backward ? backward_work(head, eager) : forward_work(head, eager)).elementwise_bytes);
    EXPECT_GT(work.elementwise_bytes,
              2 * (backward ? backward_work(head, whole) : forward_work(head, whole)).elementwise_bytes);
  }
  EXPECT_EQ(forward_work(head, blocks).elementwise_kernels, forward_work(head, eager).elementwise_kernels);
}

// The math attention backend: two batched GEMMs of the full s x s square
// forward (4 s^2 d FLOPs per sequence and head), four backward, a mask add
// and a softmax over the scores (5 passes eager, 2 fused) and a softmax
// backward (3); FlashAttention's FLOPs are the causal half, 2.5x backward.
TEST(KernelWork, MathAttentionIsGemmsAndScorePasses) {
  const models::ArchConfig arch = models::find_catalog_entry("llama3-8b").arch;
  const models::ModelSpec math = models::build_model(arch, {models::AttentionKernel::kMath, models::LossKernel::kFp32Logits});
  const models::UnitSpec& block = math.units[1];
  const MicroBatch eager{2, 4096, false, math.kernels}, fused{2, 4096, true, math.kernels};
  const double s = 4096, d = 128, heads = 32, sequences = 2, b = 2;
  const double scores = s * s * b * heads * sequences;  // bytes of one B x heads x S x S tensor
  const ComputeWork plain = forward_work(block, MicroBatch{2, 4096, false});
  const ComputeWork forward = forward_work(block, eager);
  EXPECT_DOUBLE_EQ(forward.attention.flops, 0);
  EXPECT_DOUBLE_EQ(total_flops(forward) - total_flops(plain) + plain.attention.flops, 4 * s * s * d * heads * sequences);
  EXPECT_DOUBLE_EQ(forward.elementwise_bytes - plain.elementwise_bytes, 5 * scores);
  EXPECT_DOUBLE_EQ(forward_work(block, fused).elementwise_bytes - forward_work(block, MicroBatch{2, 4096, true}).elementwise_bytes,
                   2 * scores);
  const ComputeWork backward = backward_work(block, eager);
  const ComputeWork plain_backward = backward_work(block, MicroBatch{2, 4096, false});
  EXPECT_DOUBLE_EQ(total_flops(backward) - total_flops(plain_backward) + plain_backward.attention.flops,
                   8 * s * s * d * heads * sequences);
  EXPECT_DOUBLE_EQ(backward.elementwise_bytes - plain_backward.elementwise_bytes, 3 * scores);
  // Selective checkpointing does not save the math backend's matmuls: the attention is recomputed.
  const ComputeWork again = recompute_work(block, eager, models::Checkpointing::kSelective);
  const ComputeWork again_flash = recompute_work(block, MicroBatch{2, 4096, false}, models::Checkpointing::kSelective);
  EXPECT_DOUBLE_EQ(total_flops(again) - total_flops(again_flash), 4 * s * s * d * heads * sequences);
}

TEST(KernelWork, FlashAttention3MarksTheAttention) {
  const models::ArchConfig arch = models::find_catalog_entry("llama3-8b").arch;
  const models::ModelSpec fa3 = models::build_model(arch, {models::AttentionKernel::kFlash3, models::LossKernel::kFp32Logits});
  const ComputeWork work = forward_work(fa3.units[1], MicroBatch{2, 4096, false, fa3.kernels});
  EXPECT_EQ(work.attention.kernel, models::AttentionKernel::kFlash3);
  EXPECT_DOUBLE_EQ(work.attention.flops, forward_work(fa3.units[1], MicroBatch{2, 4096, false}).attention.flops);
}

// The Triton FlashAttention does FlashAttention-2's work (same FLOPs, same
// state), only slower: the op carries the mark, not more FLOPs.
TEST(KernelWork, TritonFlashAttentionMarksTheAttention) {
  const models::ArchConfig arch = models::find_catalog_entry("llama3-8b").arch;
  const models::ModelSpec triton =
      models::build_model(arch, {models::AttentionKernel::kTritonFlash, models::LossKernel::kFused});
  const models::ModelSpec flash2 = models::build_model(arch, {models::AttentionKernel::kFlash2, models::LossKernel::kFused});
  const ComputeWork work = forward_work(triton.units[1], MicroBatch{2, 4096, false, triton.kernels});
  EXPECT_EQ(work.attention.kernel, models::AttentionKernel::kTritonFlash);
  EXPECT_DOUBLE_EQ(work.attention.flops, forward_work(flash2.units[1], MicroBatch{2, 4096, false}).attention.flops);
  EXPECT_EQ(triton.units[1].activations.saved_none, flash2.units[1].activations.saved_none);
  EXPECT_EQ(triton.units[1].activations.working, flash2.units[1].activations.working);
}

// A dense attn_mask (SDPA without is_causal) scores every key of the
// sequence: 2 x heads x (qk + v) x s FLOPs a token forward, twice the causal
// kernel's (s + 1) / 2 keys on average, less one token's worth; the backward
// keeps its 2.5x and the memory-efficient kernel FlashAttention-2's state.
TEST(KernelWork, DenseMaskScoresTheWholeSquare) {
  const models::ArchConfig arch = models::find_catalog_entry("llama3-8b").arch;
  models::KernelChoices dense_kernels{models::AttentionKernel::kMemoryEfficient, models::LossKernel::kFused};
  dense_kernels.dense_attention_mask = true;
  const models::ModelSpec dense = models::build_model(arch, dense_kernels);
  const models::ModelSpec causal = models::build_model(arch, {models::AttentionKernel::kFlash2, models::LossKernel::kFused});
  const int64_t s = 4096, sequences = 2;
  const double heads = 32, qk = 128, v = 128;
  const double analytic = 2.0 * heads * (qk + v) * static_cast<double>(s) * static_cast<double>(s * sequences);
  const ComputeWork work = forward_work(dense.units[1], MicroBatch{sequences, s, false, dense.kernels});
  const ComputeWork flash = forward_work(causal.units[1], MicroBatch{sequences, s, false, causal.kernels});
  std::printf("dense mask: %.4g FLOPs forward (analytic 2 x heads x (qk + v) x s x tokens = %.4g), causal %.4g\n",
              work.attention.flops, analytic, flash.attention.flops);
  EXPECT_EQ(work.attention.kernel, models::AttentionKernel::kMemoryEfficient);
  EXPECT_DOUBLE_EQ(work.attention.flops, analytic);
  EXPECT_DOUBLE_EQ(work.attention.flops, flash.attention.flops * 2.0 * s / (s + 1));
  EXPECT_DOUBLE_EQ(backward_work(dense.units[1], MicroBatch{sequences, s, false, dense.kernels}).attention.flops,
                   2.5 * analytic);
  EXPECT_EQ(dense.units[1].activations.saved_none, causal.units[1].activations.saved_none);
  EXPECT_EQ(dense.units[1].activations.working, causal.units[1].activations.working);
}

// Liger's chunked loss runs the logits GEMM's gradient GEMMs in the forward.
TEST(KernelWork, ChunkedLossMovesTheHeadGradientGemmsToTheForward) {
  const models::ArchConfig arch = models::find_catalog_entry("llama3-8b").arch;
  const models::ModelSpec fp32 = models::catalog_model("llama3-8b");
  const models::ModelSpec chunked = models::build_model(arch, {models::AttentionKernel::kFlash2, models::LossKernel::kChunked});
  const MicroBatch batch{2, 8192, false, chunked.kernels};
  const double logits_gemm = 2.0 * 16384 * 128256 * 4096;
  EXPECT_DOUBLE_EQ(total_flops(forward_work(chunked.units.back(), batch)), 3 * logits_gemm);
  EXPECT_DOUBLE_EQ(total_flops(backward_work(chunked.units.back(), batch)), 0);
  EXPECT_DOUBLE_EQ(total_flops(forward_work(fp32.units.back(), MicroBatch{2, 8192, false})), logits_gemm);
  EXPECT_DOUBLE_EQ(total_flops(backward_work(fp32.units.back(), MicroBatch{2, 8192, false})), 2 * logits_gemm);
}

// Transformer Engine's RMSNorm (NormKernel::kFused) in an eager model: the
// norms move their fused bytes in one kernel each way, the rest (rotary,
// SwiGLU) stays eager.
TEST(EagerKernels, FusedNormsLeaveTheOtherOpsEager) {
  const models::ModelSpec model = models::catalog_model("llama3-8b");
  const models::UnitSpec& block = model.units[1];
  MicroBatch eager{2, 8192, false}, te_norm{2, 8192, false};
  te_norm.kernels.norm = models::NormKernel::kFused;
  for (bool backward : {false, true}) {
    double expected = 0;
    for (const auto& op : block.compute.elementwise) {
      const bool norm = op.name.find("norm") != std::string::npos;
      const EagerFactors f = eager_traffic_factors(op.name);
      expected += backward ? op.backward_bytes() * (norm ? 1.0 : f.backward) : op.bytes_per_token * (norm ? 1.0 : f.forward);
    }
    const ComputeWork work = backward ? backward_work(block, te_norm) : forward_work(block, te_norm);
    const ComputeWork all_eager = backward ? backward_work(block, eager) : forward_work(block, eager);
    std::printf("llama3-8b block %s, eager with TE RMSNorm: %.0f bytes a token by hand, %.0f computed (all eager %.0f)\n",
                backward ? "backward" : "forward", expected, work.elementwise_bytes / 16384,
                all_eager.elementwise_bytes / 16384);
    EXPECT_DOUBLE_EQ(work.elementwise_bytes, expected * 16384);
    EXPECT_LT(work.elementwise_bytes, all_eager.elementwise_bytes);
  }
  // Two RMSNorms of one kernel, rotary 6, residuals 1 each, SwiGLU 2.
  EXPECT_EQ(forward_work(block, te_norm).elementwise_kernels, 1 + 6 + 1 + 1 + 2 + 1);
  EXPECT_FALSE(fused_by_kernel_choice("attention_layer_norm", te_norm.kernels));  // a LayerNorm: one kernel anyway
  EXPECT_TRUE(fused_by_kernel_choice("qk_norm", te_norm.kernels));
  EXPECT_FALSE(fused_by_kernel_choice("qk_norm", eager.kernels));
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
