#include "sim/attention_shape.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <string>

#include "sim/compute_model.hpp"

namespace ragged::sim {
namespace {

using planner::AttentionWork;

// Causal forward TFLOP/s of FlashAttention-2 and -3 on H100 as the
// FlashAttention-3 paper charts them (docs/SIMULATOR.md section 6,
// "Attention shape"), written out here so the expectations do not read the
// model's table back.
constexpr double kFa2Hd128At2k = 298, kFa2Hd128At4k = 319, kFa2Hd128At8k = 333, kFa2Hd128At16k = 335;
constexpr double kFa2Hd64At2k = 262, kFa2Hd128At512 = 191;
constexpr double kFa3Hd128At2k = 521, kFa3Hd128At8k = 602, kFa3Hd64At512 = 197;
// The backward charts (without mask): FA2 head dim 128 at 2k and 8k, 64 at 2k.
constexpr double kFa2BwdHd128At2k = 291, kFa2BwdHd128At8k = 318, kFa2BwdHd128At16k = 322, kFa2BwdHd64At2k = 264;
// NVIDIA cudnn-frontend's attention benchmark (@de355c7, head dim 128) at 4k,
// 8k, 16k, 32k and 64k: SDPA's FlashAttention-2 causal forward, causal and
// non-causal backward; cuDNN's causal and non-causal backward, causal forward.
constexpr double kSdpaFwdCausal16k = 327.17, kSdpaFwdCausal32k = 345.64, kSdpaFwdCausal64k = 338.85;
constexpr double kSdpaBwdCausal4k = 245.18, kSdpaBwdCausal8k = 275.40, kSdpaBwdCausal16k = 305.19;
constexpr double kSdpaBwdFull4k = 290.47, kSdpaBwdFull8k = 305.47, kSdpaBwdFull16k = 317.34;
constexpr double kCudnnBwdCausal8k = 461.89, kCudnnBwdCausal16k = 488.56;
constexpr double kCudnnBwdFull8k = 536.95, kCudnnBwdFull16k = 546.53;
constexpr double kCudnnFwdCausal16k = 649.99, kCudnnFwdCausal32k = 636.08;
constexpr double kFa3Hd128At16k = 616, kFa3BwdHd128At8k = 559, kFa3BwdHd128At16k = 561;
// The backward's causal share (causal over non-causal) at a length, over the
// same at 8k: what a causal backward gains on the charted non-causal one.
constexpr double kSdpaCausalGainAt4k = (kSdpaBwdCausal4k / kSdpaBwdFull4k) / (kSdpaBwdCausal8k / kSdpaBwdFull8k);
constexpr double kSdpaCausalGainAt16k = (kSdpaBwdCausal16k / kSdpaBwdFull16k) / (kSdpaBwdCausal8k / kSdpaBwdFull8k);

constexpr double kExact = 1e-12;

TEST(AttentionShape, TheReferenceShapeRunsAtTheTablesEfficiency) {
  EXPECT_DOUBLE_EQ(flash_attention_shape_factor(128, 8192, false, false), 1.0);
  EXPECT_DOUBLE_EQ(flash_attention_shape_factor(128, 8192, true, false), 1.0);
  EXPECT_DOUBLE_EQ(flash_attention_shape_factor(128, 8192, false, true), 1.0);
  EXPECT_DOUBLE_EQ(flash_attention_shape_factor(128, 8192, true, true), 1.0);
}

TEST(AttentionShape, MeasuredLengthsAndHeadDimsTakeTheirMeasuredShare) {
  std::printf("FA2 head dim 128 at 2k: expected %.4f, model %.4f\n", kFa2Hd128At2k / kFa2Hd128At8k,
              flash_attention_shape_factor(128, 2048, false, false));
  EXPECT_NEAR(flash_attention_shape_factor(128, 2048, false, false), kFa2Hd128At2k / kFa2Hd128At8k, kExact);
  EXPECT_NEAR(flash_attention_shape_factor(64, 2048, false, false), kFa2Hd64At2k / kFa2Hd128At8k, kExact);
  EXPECT_NEAR(flash_attention_shape_factor(128, 16384, false, false), kFa2Hd128At16k / kFa2Hd128At8k, kExact);
  EXPECT_NEAR(flash_attention_shape_factor(128, 2048, true, false), kFa3Hd128At2k / kFa3Hd128At8k, kExact);
  // The causal backward below the benchmark's 4k keeps its 4k share.
  EXPECT_NEAR(flash_attention_shape_factor(128, 2048, false, true),
              kFa2BwdHd128At2k / kFa2BwdHd128At8k * kSdpaCausalGainAt4k, kExact);
  EXPECT_NEAR(flash_attention_shape_factor(64, 2048, false, true),
              kFa2BwdHd64At2k / kFa2BwdHd128At8k * kSdpaCausalGainAt4k, kExact);
}

// The paper charts the backward without mask; a causal backward gains on it
// with the sequence, as the benchmark measured (SDPA's FlashAttention-2 from
// 0.845 of its non-causal rate at 4k to 0.962 at 16k), and FlashAttention-3
// and cuDNN take cuDNN's own gain.
TEST(AttentionShape, CausalBackwardGainsOnTheChartedNonCausalOneWithTheSequence) {
  const double fa2 = kFa2BwdHd128At16k / kFa2BwdHd128At8k * kSdpaCausalGainAt16k;
  std::printf("FA2 causal backward 16k over 8k: expected %.4f, model %.4f (non-causal chart %.4f)\n", fa2,
              flash_attention_shape_factor(128, 16384, false, true), kFa2BwdHd128At16k / kFa2BwdHd128At8k);
  EXPECT_NEAR(flash_attention_shape_factor(128, 16384, false, true), fa2, kExact);
  const double cudnn_gain = (kCudnnBwdCausal16k / kCudnnBwdFull16k) / (kCudnnBwdCausal8k / kCudnnBwdFull8k);
  EXPECT_NEAR(flash_attention_shape_factor(128, 16384, true, true), kFa3BwdHd128At16k / kFa3BwdHd128At8k * cudnn_gain, kExact);
  EXPECT_LT(flash_attention_shape_factor(128, 4096, false, true), 310.0 / 318.0);
}

// Past the paper's 16k the rates follow the benchmark's from 16k: the
// forward of SDPA's FlashAttention-2 5.6% faster at 32k, cuDNN's 2.1% slower.
TEST(AttentionShape, BeyondTheChartedLengthsTheBenchmarksGrowthFromSixteenK) {
  EXPECT_NEAR(flash_attention_shape_factor(128, 32768, false, false),
              kFa2Hd128At16k / kFa2Hd128At8k * kSdpaFwdCausal32k / kSdpaFwdCausal16k, kExact);
  EXPECT_NEAR(flash_attention_shape_factor(128, 32768, true, false),
              kFa3Hd128At16k / kFa3Hd128At8k * kCudnnFwdCausal32k / kCudnnFwdCausal16k, kExact);
}

TEST(AttentionShape, BetweenLengthsLinearInLogSequenceAndClampedOutside) {
  // 2896 is 2^11.5: halfway between 2k and 4k in log(sequence).
  const double halfway = (kFa2Hd128At2k + kFa2Hd128At4k) / 2 / kFa2Hd128At8k;
  EXPECT_NEAR(flash_attention_shape_factor(128, 2896, false, false), halfway, 1e-4);
  EXPECT_NEAR(flash_attention_shape_factor(128, 128, false, false), kFa2Hd128At512 / kFa2Hd128At8k, kExact);
  // Past the benchmark's 64k, its 64k rate.
  EXPECT_NEAR(flash_attention_shape_factor(128, 131072, false, false),
              kFa2Hd128At16k / kFa2Hd128At8k * kSdpaFwdCausal64k / kSdpaFwdCausal16k, kExact);
  // Head dims clamp to the measured 64..128 (DeepSeek's 192 runs as 128).
  EXPECT_DOUBLE_EQ(flash_attention_shape_factor(192, 2048, false, false),
                   flash_attention_shape_factor(128, 2048, false, false));
  EXPECT_DOUBLE_EQ(flash_attention_shape_factor(32, 2048, false, false),
                   flash_attention_shape_factor(64, 2048, false, false));
  const double between = flash_attention_shape_factor(96, 2048, false, false);
  EXPECT_GT(between, flash_attention_shape_factor(64, 2048, false, false));
  EXPECT_LT(between, flash_attention_shape_factor(128, 2048, false, false));
}

// The tile model behind sliding windows, fitted to the charted causal
// forward lengths, follows them: a window of the whole sequence is the
// causal sequence (every FA2 and FA3 row, head dims 64 and 128).
TEST(AttentionShape, TheTileModelFollowsTheChartedLengths) {
  constexpr std::array<int64_t, 6> kLengths = {512, 1024, 2048, 4096, 8192, 16384};
  const std::array<std::array<double, 6>, 4> charted = {{{180, 229, 262, 284, 295, 299},
                                                         {191, 260, 298, 319, 333, 335},
                                                         {197, 265, 371, 420, 460, 473},
                                                         {292, 423, 521, 579, 602, 616}}};
  for (size_t row = 0; row < charted.size(); ++row) {
    const bool flash3 = row >= 2;
    const int64_t head_dim = row % 2 == 0 ? 64 : 128;
    const double reference = flash3 ? kFa3Hd128At8k : kFa2Hd128At8k;
    for (size_t i = 0; i < kLengths.size(); ++i) {
      const double modelled = sliding_window_shape_factor(head_dim, kLengths[i], kLengths[i], flash3, false);
      const double measured = charted[row][i] / reference;
      std::printf("%s head %lld at %lld: charted %.3f, tile model %.3f\n", flash3 ? "FA3" : "FA2",
                  static_cast<long long>(head_dim), static_cast<long long>(kLengths[i]), measured, modelled);
      EXPECT_NEAR(modelled / measured, 1.0, 0.06);
    }
  }
}

// A window shorter than the sequence runs at its tiles' rate: the window's
// useful keys over the key tiles its query tiles visit (one more than the
// window's) and their fixed cost. cuDNN 9.19.1 on an H200 (cudnn-frontend
// @df73764, h200_919_only_cudnn, causal, 8,192 tokens, a window of 1,024 at
// head dim 64 against the whole context at 128) measured 349 / 644 forward
// and 300 / 541 backward; the tile model, fitted to FlashAttention-3's chart
// only, comes within 10%, where the window read as a sequence of its own
// length (the model until 2026-12-03) was 19% slow forward.
TEST(AttentionShape, ASlidingWindowRunsAtItsTilesRate) {
  AttentionWork windowed;
  windowed.kernel = models::AttentionKernel::kCudnn;
  windowed.seq_len = 8192, windowed.window = 1024, windowed.qk_head_dim = 64;
  const double forward = flash_attention_shape_factor(windowed, false);
  const double backward = flash_attention_shape_factor(windowed, true);
  std::printf("window 1024, head 64: forward %.3f (measured %.3f), backward %.3f (measured %.3f)\n", forward,
              349.0 / 644.0, backward, 300.0 / 541.0);
  EXPECT_NEAR(forward / (349.0 / 644.0), 1.0, 0.10);
  EXPECT_NEAR(backward / (300.0 / 541.0), 1.0, 0.10);
  // A short window pays for two key tiles a query tile: far below its own
  // length's charted rate (FA3 at 512, the chart's shortest, 197 / 602).
  windowed.window = 128;
  EXPECT_LT(flash_attention_shape_factor(windowed, false), 0.6 * kFa3Hd64At512 / kFa3Hd128At8k);
  // Shorter windows, lower rates; a window of the whole sequence changes nothing.
  EXPECT_LT(flash_attention_shape_factor(windowed, false), forward);
  windowed.window = 8192;
  AttentionWork whole = windowed;
  whole.window = 0;
  EXPECT_DOUBLE_EQ(flash_attention_shape_factor(windowed, false), flash_attention_shape_factor(whole, false));
}

// What the compute model makes of it: the same executed FLOPs at 2k take
// 333/298 of the time they take at 8k forward, 318/291 backward over the
// causal backward's smaller share at 4k and below.
TEST(AttentionShape, ComputeModelTimesShortSequencesSlower) {
  const ComputeModel model = ComputeModel::defaults("h100", 989.4e12, 3.35e12);
  const double launch = model.spec().launch_seconds;
  AttentionWork at8k, at2k;
  at8k.flops = at2k.flops = 1e12;
  at8k.qk_head_dim = at2k.qk_head_dim = 128;
  at8k.seq_len = 8192, at2k.seq_len = 2048;
  for (const bool backward : {false, true}) {
    const double ratio =
        (model.attention_seconds(at2k, backward) - launch) / (model.attention_seconds(at8k, backward) - launch);
    const double expected = backward ? kFa2BwdHd128At8k / kFa2BwdHd128At2k / kSdpaCausalGainAt4k
                                     : kFa2Hd128At8k / kFa2Hd128At2k;
    std::printf("%s 2k/8k time: expected %.4f, model %.4f\n", backward ? "backward" : "forward", expected, ratio);
    EXPECT_NEAR(ratio, expected, 1e-9);
  }
}

TEST(AttentionShape, KernelsRunAHeadBetweenTheirWidthsPadded) {
  using models::AttentionKernel;
  // FlashAttention-2's HEADDIM_SWITCH: 32, 64, 96, 128, 160, 192, 256.
  EXPECT_EQ(kernel_head_dim(AttentionKernel::kFlash2, 40), 64);
  EXPECT_EQ(kernel_head_dim(AttentionKernel::kFlash2, 80), 96);    // Pythia-2.8B, Phi-2
  EXPECT_EQ(kernel_head_dim(AttentionKernel::kFlash2, 112), 128);  // a 7,168-wide model of 64 heads
  EXPECT_EQ(kernel_head_dim(AttentionKernel::kFlash2, 128), 128);
  EXPECT_EQ(kernel_head_dim(AttentionKernel::kFlash2, 200), 256);
  EXPECT_EQ(kernel_head_dim(AttentionKernel::kFlash2, 320), 320);  // beyond the kernel: as it is
  // FlashAttention-3: 64, 96, 128, 192, 256 (no 160).
  EXPECT_EQ(kernel_head_dim(AttentionKernel::kFlash3, 40), 64);
  EXPECT_EQ(kernel_head_dim(AttentionKernel::kFlash3, 160), 192);
  EXPECT_EQ(kernel_head_dim(AttentionKernel::kFlash3, 192), 192);  // DeepSeek's query/key
  // The Triton kernel: the next power of two, at least 16.
  EXPECT_EQ(kernel_head_dim(AttentionKernel::kTritonFlash, 8), 16);
  EXPECT_EQ(kernel_head_dim(AttentionKernel::kTritonFlash, 64), 64);
  EXPECT_EQ(kernel_head_dim(AttentionKernel::kTritonFlash, 80), 128);
  EXPECT_EQ(kernel_head_dim(AttentionKernel::kTritonFlash, 96), 128);
  // The math backend's batched GEMMs run the head as it is.
  EXPECT_EQ(kernel_head_dim(AttentionKernel::kMath, 80), 80);

  AttentionWork work;
  work.qk_head_dim = work.v_head_dim = 128;
  EXPECT_DOUBLE_EQ(padded_head_work(work, false), 1.0);
  work.qk_head_dim = 192;  // DeepSeek's MLA: both widths compiled
  EXPECT_DOUBLE_EQ(padded_head_work(work, false), 1.0);
  work.qk_head_dim = work.v_head_dim = 80;
  EXPECT_DOUBLE_EQ(padded_head_work(work, false), 96.0 / 80.0);
  EXPECT_DOUBLE_EQ(padded_head_work(work, true), 96.0 / 80.0);  // both directions alike
  work.kernel = AttentionKernel::kTritonFlash;
  EXPECT_DOUBLE_EQ(padded_head_work(work, false), 128.0 / 80.0);
}

// SDPA's memory-efficient kernel pads only the GEMMs whose output columns are
// a head dim, to its tile: Phi-3's 96-wide heads run p v 128 wide forward
// (q k^T loops over the 96 in 32-wide steps), and dV, dQ and dK 128 wide
// backward, where q k^T again and dO v^T keep 96.
TEST(AttentionShape, TheMemoryEfficientKernelPadsTheGemmsThatOutputAHead) {
  AttentionWork work;
  work.kernel = models::AttentionKernel::kMemoryEfficient;
  work.qk_head_dim = work.v_head_dim = 96;
  EXPECT_DOUBLE_EQ(padded_head_work(work, false), (96.0 + 128.0) / (2 * 96.0));
  EXPECT_DOUBLE_EQ(padded_head_work(work, true), (96.0 + 96.0 + 3 * 128.0) / (5 * 96.0));
  // The kernels' own widths pad nothing.
  work.qk_head_dim = work.v_head_dim = 128;
  EXPECT_DOUBLE_EQ(padded_head_work(work, false), 1.0);
  EXPECT_DOUBLE_EQ(padded_head_work(work, true), 1.0);
  work.qk_head_dim = work.v_head_dim = 64;
  EXPECT_DOUBLE_EQ(padded_head_work(work, false), 1.0);
  EXPECT_DOUBLE_EQ(padded_head_work(work, true), 1.0);
  // 40 runs the 64-wide kernel forward and the 64-wide tiles backward.
  work.qk_head_dim = work.v_head_dim = 40;
  EXPECT_DOUBLE_EQ(padded_head_work(work, false), (40.0 + 64.0) / 80.0);
  EXPECT_DOUBLE_EQ(padded_head_work(work, true), (80.0 + 3 * 64.0) / 200.0);
  // The kernel is chosen by the wider head: a 64-wide value beside a 96-wide
  // query/key runs in the 128-wide kernel's tiles.
  work.qk_head_dim = 96;
  work.v_head_dim = 64;
  EXPECT_DOUBLE_EQ(padded_head_work(work, false), (96.0 + 128.0) / 160.0);
  // Beyond 128 the head is taken as it is.
  work.qk_head_dim = work.v_head_dim = 160;
  EXPECT_DOUBLE_EQ(padded_head_work(work, false), 1.0);
  EXPECT_DOUBLE_EQ(padded_head_work(work, true), 1.0);
}

// A padded head costs what the kernel's width costs: the same FLOPs of head
// dim 80 at 2k take (width / 80) x rate(128, 8k) / rate(width, 2k) of their
// time at the reference shape, the rates read off the charts (a width between
// the charted 64 and 128 linear in log2 of the head dim).
TEST(AttentionShape, ComputeModelTimesAPaddedHeadAsItsKernelsWidth) {
  const ComputeModel model = ComputeModel::defaults("a100-80g", 312e12, 2.039e12);
  const double launch = model.spec().launch_seconds;
  const double fa2_at_96 = kFa2Hd64At2k + std::log2(96.0 / 64.0) * (kFa2Hd128At2k - kFa2Hd64At2k);
  struct Case {
    models::AttentionKernel kernel;
    double width, rate_at_width;
  };
  for (const Case& c : {Case{models::AttentionKernel::kFlash2, 96, fa2_at_96},
                        Case{models::AttentionKernel::kTritonFlash, 128, kFa2Hd128At2k}}) {
    AttentionWork padded, reference;
    padded.kernel = reference.kernel = c.kernel;
    padded.flops = reference.flops = 1e12;
    padded.seq_len = 2048, reference.seq_len = 8192;
    padded.qk_head_dim = padded.v_head_dim = 80;
    reference.qk_head_dim = reference.v_head_dim = 128;
    const double ratio =
        (model.attention_seconds(padded, false) - launch) / (model.attention_seconds(reference, false) - launch);
    const double expected = c.width / 80.0 * kFa2Hd128At8k / c.rate_at_width;
    std::printf("%s, head dim 80 run at %.0f, 2k over 128 at 8k: expected %.6f, model %.6f\n",
                std::string(models::attention_kernel_name(c.kernel)).c_str(), c.width, expected, ratio);
    EXPECT_NEAR(ratio, expected, 1e-9);
  }
}

// cuDNN 9.19.1 on a GB200 and an H200 in one harness (cudnn-frontend @df73764,
// sdpa_benchmark_training/results/{gb200,h200}_919_only_cudnn), causal, 8,192
// tokens, TFLOP/s: head dim 64 (gpt_oss) and 128 (llama3.1), forward and backward.
constexpr double kGb200Hd64Fwd = 609, kGb200Hd64Bwd = 646, kGb200Hd128Fwd = 1598, kGb200Hd128Bwd = 1311;
constexpr double kH200Hd64Fwd = 349, kH200Hd64Bwd = 300, kH200Hd128Fwd = 644, kH200Hd128Bwd = 541;

// The time at head dim `narrow` over the time at 128, same FLOPs and length.
double narrow_over_wide(const ComputeModel& model, models::AttentionKernel kernel, int64_t narrow, bool backward) {
  const double launch = model.spec().launch_seconds;
  AttentionWork n, w;
  n.kernel = w.kernel = kernel;
  n.flops = w.flops = 1e12;
  n.seq_len = w.seq_len = 8192;
  n.qk_head_dim = n.v_head_dim = narrow;
  w.qk_head_dim = w.v_head_dim = 128;
  return (model.attention_seconds(n, backward) - launch) / (model.attention_seconds(w, backward) - launch);
}

TEST(AttentionShape, BlackwellsCudnnLosesMoreAtNarrowHeadsThanHoppersAsMeasured) {
  const ComputeModel b200 = ComputeModel::defaults("b200", 2250e12, 8e12);
  const ComputeModel h200 = ComputeModel::defaults("h200", 989.4e12, 4.8e12);
  for (const bool backward : {false, true}) {
    const double measured = backward ? (kGb200Hd128Bwd / kGb200Hd64Bwd) / (kH200Hd128Bwd / kH200Hd64Bwd)
                                     : (kGb200Hd128Fwd / kGb200Hd64Fwd) / (kH200Hd128Fwd / kH200Hd64Fwd);
    const double modelled = narrow_over_wide(b200, models::AttentionKernel::kCudnn, 64, backward) /
                            narrow_over_wide(h200, models::AttentionKernel::kCudnn, 64, backward);
    std::printf("%s: Blackwell's head-64 slowdown over Hopper's, measured %.4f, model %.4f\n",
                backward ? "backward" : "forward", measured, modelled);
    EXPECT_NEAR(modelled, measured, 1e-9);
    EXPECT_GT(modelled, 1.05);
    // Between the widths, log-linear in the head dim: 96 takes 0.585 of the way to 128.
    const double at_96 = narrow_over_wide(b200, models::AttentionKernel::kCudnn, 96, backward) /
                         narrow_over_wide(h200, models::AttentionKernel::kCudnn, 96, backward);
    const double share_64 = 1.0 / measured;
    EXPECT_NEAR(at_96, 1.0 / (share_64 + std::log2(96.0 / 64.0) * (1.0 - share_64)), 1e-9);
    // FlashAttention-2 on Blackwell (mma.sync at a sixth of the peak) keeps Hopper's shape.
    EXPECT_NEAR(narrow_over_wide(b200, models::AttentionKernel::kFlash2, 64, backward),
                narrow_over_wide(h200, models::AttentionKernel::kFlash2, 64, backward), 1e-9);
  }
}

}  // namespace
}  // namespace ragged::sim
