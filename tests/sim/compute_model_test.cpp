#include "sim/compute_model.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "planner/compute_work.hpp"
#include "tests/sim/h100_compute_constants.hpp"

namespace ragged::sim {
namespace {

using planner::AttentionWork;
using planner::ComputeWork;
using planner::Gemm;
using planner::Op;
using planner::OpKind;

using namespace h100_constants;  // docs/SIMULATOR.md section 6's H100 numbers


// A spec whose GEMMs are always compute-bound (HBM at 1e30 B/s) and
// launch-free, so that a GEMM's time is exactly FLOPs / rate. Unsorted on purpose.
GpuComputeSpec rate_only_spec() {
  return {"test", 1e14, 1e30, {{100, 100, 1000000, 9e12}, {100, 100, 100, 1e12}, {100, 100, 10000, 3e12}},
          0.5, 0.4, 0.8, 0, "test"};
}

double rate_at(const ComputeModel& model, const Gemm& g) { return g.flops() / model.gemm_seconds(g); }

// The share of a K loop that does useful work when its first 256 elements of
// k (4 slices of 64) only fill the pipeline (docs/SIMULATOR.md section 6).
double k_loop(double k) { return k / (k + 256.0); }

Op op_of(OpKind kind, ComputeWork work = {}, int64_t bytes = 0) {
  Op op;
  op.kind = kind, op.work = std::move(work), op.bytes = bytes;
  return op;
}

TEST(ComputeGemm, RatesAtTablePointsAreExact) {
  const ComputeModel model(rate_only_spec());
  EXPECT_DOUBLE_EQ(rate_at(model, {100, 100, 100, 1}), 1e12);
  EXPECT_DOUBLE_EQ(rate_at(model, {100, 100, 10000, 1}), 3e12);
  // The same FLOPs at another depth: the measured rate scaled by the K loops.
  EXPECT_NEAR(rate_at(model, {100, 10000, 100, 1}), 3e12 * k_loop(100) / k_loop(10000), kExact * 3e12);
  EXPECT_DOUBLE_EQ(rate_at(model, {100, 100, 1000000, 1}), 9e12);
  EXPECT_EQ(model.spec().gemm.front().k, 100);  // sorted by FLOPs
}

TEST(ComputeGemm, RatesAreLinearInLogFlopsBetweenPointsAndClampedOutside) {
  const ComputeModel model(rate_only_spec());
  // 2e9 FLOPs is the log-midpoint of 2e8 (3e12 FLOP/s, k = 1e4) and 2e10
  // (9e12 FLOP/s, k = 1e6): the measured depth there is k = 1e5.
  EXPECT_NEAR(rate_at(model, {100, 100, 100000, 1}), 6e12, kExact * 6e12);
  EXPECT_NEAR(rate_at(model, {1000, 1000, 1000, 1}), 6e12 * k_loop(1000) / k_loop(1e5), kExact * 6e12);
  // 4e8 FLOPs: t = log(2) / log(100) of the way from 2e8 to 2e10, at depth 1e4 * 100^t = 2e4.
  const double t = std::log(2.0) / std::log(100.0);
  EXPECT_NEAR(rate_at(model, {100, 100, 20000, 1}), 3e12 + t * 6e12, kExact * 9e12);
  // 2e7 FLOPs: the log-midpoint of the first two points, depth 1000.
  EXPECT_NEAR(rate_at(model, {100, 100, 1000, 1}), 2e12, kExact * 2e12);
  // Outside the table the end points hold, at their own depths.
  EXPECT_NEAR(rate_at(model, {10, 10, 10, 1}), 1e12 * k_loop(10) / k_loop(100), kExact * 1e12);
  EXPECT_NEAR(rate_at(model, {1000, 1000, 100000, 1}), 9e12 * k_loop(1e5) / k_loop(1e6), kExact * 9e12);
}

TEST(ComputeGemm, ADeepGemmNeverRunsAboveTheFastestMeasuredRate) {
  // Two square points; a GEMM of the 2000^3 point's FLOPs 1e6 deep would be
  // lifted by its K loop to 8e12 * k_loop(1e6) / k_loop(2000) = 9.02e12,
  // above anything measured: it runs at the fastest point, 8e12.
  const ComputeModel model(
      GpuComputeSpec{"test", 1e14, 1e30, {{1000, 1000, 1000, 5e12}, {2000, 2000, 2000, 8e12}}, 0.5, 0.4, 0.8, 0, "test"});
  const Gemm deep{80, 100, 1000000, 1};
  const double lifted = 8e12 * k_loop(1e6) / k_loop(2000);
  std::printf("deep GEMM: K-loop lifted %.3e, fastest measured 8.000e+12, model %.3e FLOP/s\n", lifted,
              rate_at(model, deep));
  EXPECT_GT(lifted, 8e12);
  EXPECT_NEAR(rate_at(model, deep), 8e12, kExact * 8e12);
  // A shallow GEMM is still slowed by its K loop.
  const Gemm shallow{8000, 8000, 125, 1};
  EXPECT_NEAR(rate_at(model, shallow), 8e12 * k_loop(125) / k_loop(2000), kExact * 8e12);
}

TEST(ComputeParts, AddUpToTheOpsCostByResource) {
  const ComputeModel model = ComputeModel::defaults("h100", 989.4e12, 3.35e12);
  ComputeWork work;
  work.gemms = {{8192, 4096, 4096, 1}, {8192, 14336, 4096, 1}};
  work.attention = {2, 4096, 32, 128, 128, 0, 1e12, models::AttentionKernel::kFlash2};
  work.elementwise_bytes = 3e9;
  work.other_flops = 1e10;
  work.elementwise_kernels = 7;
  const Op op = op_of(OpKind::kComputeFwd, work);
  const ComputeParts p = model.parts(op);
  const OpCost c = model.cost(op);
  double persistent = 0;
  for (double kernel : c.persistent) persistent += kernel;
  EXPECT_DOUBLE_EQ(p.gemm + p.attention + p.other, c.sm + persistent);
  EXPECT_DOUBLE_EQ(p.memory, c.memory);
  EXPECT_DOUBLE_EQ(p.launches, c.fixed);
  EXPECT_DOUBLE_EQ(p.gemm_flops, work.gemms[0].flops() + work.gemms[1].flops());
  EXPECT_DOUBLE_EQ(p.attention_flops, 1e12);
  EXPECT_DOUBLE_EQ(p.memory_bytes, 3e9);
  EXPECT_EQ(p.kernels, 2 + 1 + 7);  // two GEMMs, the attention core, the element-wise kernels
  EXPECT_NEAR(p.gemm, model.gemm_seconds(work.gemms[0]) + model.gemm_seconds(work.gemms[1]) - 2 * model.spec().launch_seconds,
              1e-15);
}

TEST(ComputeGemm, EqualFlopPointsMergeIntoTheirMeanRate) {
  GpuComputeSpec spec = rate_only_spec();
  spec.gemm.push_back({100, 10000, 100, 5e12});  // same FLOPs as {100, 100, 10000}, 100 deep
  const ComputeModel model(spec);
  EXPECT_EQ(model.spec().gemm.size(), 3u);
  // The mean of 3e12 and the 5e12 taken to the first shape's depth.
  const double mean = (3e12 + 5e12 * k_loop(10000) / k_loop(100)) / 2;
  EXPECT_NEAR(rate_at(model, {100, 100, 10000, 1}), mean, kExact * mean);
}

TEST(ComputeGemm, BatchedExpertsScaleLinearlyWhenComputeBound) {
  const ComputeModel model = ComputeModel::defaults("h100", kH100Peak, kH100Hbm);
  const Gemm one{4096, 2048, 4096, 1};
  const Gemm eight{4096, 2048, 4096, 8};
  // 6.9e10 FLOPs, 4x the 2048^3 point and half the 4096^3 one: 2/3 of the way
  // from one to the other in log FLOPs.
  const double flops = 2.0 * 4096 * 2048 * 4096;
  // The table measured 2048- and 4096-deep cubes there: 2048 * 2^(2/3) deep.
  const double rate = (kH100Gemm2048 + 2.0 / 3.0 * (kH100Gemm4096 - kH100Gemm2048)) * k_loop(4096) /
                      k_loop(2048 * std::cbrt(4.0));
  const double bytes = (4096.0 * 4096 + 4096.0 * 2048 + 4096.0 * 2048) * 2;
  ASSERT_GT(flops / rate, bytes / (kH100Hbm * kH100MemoryEfficiency));  // compute-bound
  EXPECT_NEAR(model.gemm_seconds(one), flops / rate + kLaunch, kExact * (flops / rate));
  EXPECT_NEAR(model.gemm_seconds(eight), 8 * flops / rate + kLaunch, kExact * (8 * flops / rate));
}

TEST(ComputeGemm, TinyGemmsAreLaunchAndBandwidthBound) {
  const ComputeModel model = ComputeModel::defaults("h100", kH100Peak, kH100Hbm);
  // A one-row GEMM against a 4096 x 4096 weight reads the weight: 33.6 MB.
  const Gemm row{1, 4096, 4096, 1};
  const double bytes = (4096.0 + 4096.0 * 4096 + 4096.0) * 2;
  EXPECT_DOUBLE_EQ(model.gemm_seconds(row), bytes / (kH100Hbm * kH100MemoryEfficiency) + kLaunch);
  // An 8 x 8 x 8 GEMM is nearly all launch: its 1,024 FLOPs at the smallest
  // point's rate (512^3: 48.3 TFLOP/s) scaled from 512 to 8 deep take 0.47 ns,
  // longer than its 384 bytes take to move.
  const double tiny = 1024 / (48.3e12 * kH100SustainedClock * k_loop(8) / k_loop(512));
  ASSERT_GT(tiny, 384 / (kH100Hbm * kH100MemoryEfficiency));
  EXPECT_NEAR(model.gemm_seconds({8, 8, 8, 1}), tiny + kLaunch, kExact * kLaunch);
  EXPECT_EQ(model.gemm_seconds({0, 8, 8, 1}), 0.0);
}

// A 1 GB cast (and every other memory-bound kind) streams at the measured
// fraction of HBM bandwidth; collectives and alloc/free cost nothing here.
TEST(ComputeMemory, OneGigabyteCastOnH100) {
  const ComputeModel model = ComputeModel::defaults("h100", kH100Peak, kH100Hbm);
  EXPECT_DOUBLE_EQ(model.memory_seconds(1e9), 1e9 / (3.35e12 * kH100MemoryEfficiency));
  for (OpKind kind : {OpKind::kCast, OpKind::kCopyIn, OpKind::kCopyOut, OpKind::kScale, OpKind::kGradAccumulate}) {
    EXPECT_DOUBLE_EQ(model.seconds(op_of(kind, {}, 1'000'000'000)), 1e9 / (3.35e12 * kH100MemoryEfficiency) + kLaunch);
  }
  for (OpKind kind : {OpKind::kAlloc, OpKind::kFree, OpKind::kAllGather, OpKind::kReduceScatter,
                      OpKind::kAllReduce, OpKind::kAllToAll}) {
    EXPECT_EQ(model.seconds(op_of(kind, {}, 1'000'000'000)), 0.0);
  }
}

TEST(ComputeOp, AFullOpSumsItsParts) {
  const ComputeModel model = ComputeModel::defaults("h100", kH100Peak, kH100Hbm);
  ComputeWork work;
  work.gemms = {{8192, 4096, 4096, 1}, {8192, 1024, 4096, 2}, {512, 2048, 4096, 16}};
  work.attention.flops = 3e11;
  work.elementwise_bytes = 2e8;
  work.other_flops = 1e10;
  double gemms = 0;
  for (const Gemm& g : work.gemms) gemms += model.gemm_seconds(g);
  // Element-wise bytes stream at the memcpy rate in at least one kernel (a
  // launch); other FLOPs run at half the peak (assumption).
  const double rest = 2e8 / (kH100Hbm * kH100MemoryEfficiency) + kLaunch + 1e10 / (kH100Peak * 0.5);
  EXPECT_DOUBLE_EQ(model.seconds(op_of(OpKind::kComputeFwd, work)),
                   gemms + model.attention_seconds(work.attention, false) + rest);
  EXPECT_DOUBLE_EQ(model.seconds(op_of(OpKind::kRecompute, work)),
                   gemms + model.attention_seconds(work.attention, false) + rest);
  EXPECT_DOUBLE_EQ(model.seconds(op_of(OpKind::kComputeBwd, work)),
                   gemms + model.attention_seconds(work.attention, true) + rest);
  // An optimizer op carrying only traffic is a memory-bound kernel.
  ComputeWork update;
  update.elementwise_bytes = 4e9;
  EXPECT_DOUBLE_EQ(model.seconds(op_of(OpKind::kOptimizer, update, 4'000'000'000)),
                   4e9 / (kH100Hbm * kH100MemoryEfficiency) + kLaunch);
  // Eager element-wise ops launch a kernel each.
  work.elementwise_kernels = 26;
  EXPECT_DOUBLE_EQ(model.seconds(op_of(OpKind::kComputeFwd, work)),
                   gemms + model.attention_seconds(work.attention, false) + rest + 25 * kLaunch);
}

TEST(ComputeOp, CostSplitsLaunchesSmBoundAndHbmBoundWork) {
  // What the executor shares between streams (docs/SIMULATOR.md 6b): the
  // SM-bound part (GEMMs, attention, other math), the HBM-bound part
  // (element-wise traffic, copies) and the launches apart.
  const ComputeModel model = ComputeModel::defaults("h100", kH100Peak, kH100Hbm);
  ComputeWork work;
  work.gemms = {{4096, 4096, 4096, 1}, {2048, 2048, 2048, 3}};
  work.attention.flops = 3e11;
  work.elementwise_bytes = 2e8;
  work.elementwise_kernels = 5;
  const OpCost c = model.cost(op_of(OpKind::kComputeFwd, work));
  const double sm = 2.0 * 4096 * 4096 * 4096 / kH100Gemm4096 + 3 * 2.0 * 2048 * 2048 * 2048 / kH100Gemm2048 +
                    3e11 / (kH100Peak * kH100AttentionForward);
  double persistent = 0;  // Hopper's GEMMs are persistent kernels of their own
  for (double kernel : c.persistent) persistent += kernel;
  EXPECT_NEAR(c.sm + persistent, sm, kExact * sm);
  EXPECT_DOUBLE_EQ(c.memory, 2e8 / (kH100Hbm * kH100MemoryEfficiency));
  EXPECT_DOUBLE_EQ(c.fixed, (2 + 1 + 5) * kLaunch);  // two GEMM launches, the attention's, five element-wise
  EXPECT_DOUBLE_EQ(c.seconds(), model.seconds(op_of(OpKind::kComputeFwd, work)));
  // A cast per parameter (FSDP2) launches a kernel per parameter.
  Op cast = op_of(OpKind::kCast, {}, 1'000'000'000);
  cast.host.framework_ops = 9;
  EXPECT_DOUBLE_EQ(model.cost(cast).fixed, 9 * kLaunch);
  EXPECT_DOUBLE_EQ(model.cost(cast).memory, 1e9 / (kH100Hbm * kH100MemoryEfficiency));
  EXPECT_EQ(model.cost(op_of(OpKind::kAllGather, {}, 1'000'000'000)).seconds(), 0.0);
}

// Transformer Engine's GroupedLinear: one GEMM per local expert, each a
// launch of its own, round-robin over 4 streams. The work is the batched
// copies' (each at its own shape's rate); the launches on one stream, one
// after another, are ceil(experts / 4); the element-wise kernels beside them
// are still theirs alone.
TEST(ComputeOp, GemmsSpreadOverStreamsLaunchOneAfterAnotherPerStream) {
  const ComputeModel model = ComputeModel::defaults("h100", kH100Peak, kH100Hbm);
  ComputeWork batched;
  batched.gemms = {{1024, 1536, 4096, 16}};
  batched.elementwise_bytes = 1e7;
  batched.elementwise_kernels = 2;
  ComputeWork per_expert = batched;
  per_expert.gemms[0].launches = 16;
  per_expert.gemms[0].streams = 4;
  Op one = op_of(OpKind::kComputeFwd, batched);
  one.host.framework_ops = batched.kernels();
  Op many = op_of(OpKind::kComputeFwd, per_expert);
  many.host.framework_ops = per_expert.kernels();
  EXPECT_EQ(one.host.framework_ops, 1 + 2);
  EXPECT_EQ(many.host.framework_ops, 16 + 2);
  const ComputeParts a = model.parts(one);
  const ComputeParts b = model.parts(many);
  EXPECT_DOUBLE_EQ(a.gemm, b.gemm);
  EXPECT_DOUBLE_EQ(a.launches, (1 + 2) * kLaunch);
  std::printf("16 experts' GEMMs on 4 streams: launches %.1f us one after another (%.1f batched), kernels %lld\n",
              b.launches * 1e6, a.launches * 1e6, static_cast<long long>(b.kernels));
  EXPECT_DOUBLE_EQ(b.launches, (16 / 4 + 2) * kLaunch);
  EXPECT_EQ(b.kernels, 16 + 2);
  EXPECT_EQ(model.cost(many).memory_kernels, 2);
  EXPECT_EQ(model.cost(one).memory_kernels, 2);
}

TEST(ComputeDefaults, GpuClassesCarryTheirSmsAndNcclCtas) {
  // Section 6b: 132 SMs on Hopper, 108 on A100; NCCL's ring CTAs inside a
  // node (24 on H100/H200/A100, 16 on H800's 8 NVLinks) and across nodes (16).
  for (const char* hopper : {"h100", "h100-sxm-95g", "h200"}) {
    const GpuComputeSpec& s = *find_gpu_table(hopper);
    EXPECT_EQ(s.sms, 132) << hopper;
    EXPECT_EQ(s.nccl_ctas_intra_node, 24) << hopper;
    EXPECT_EQ(s.nccl_ctas_inter_node, 16) << hopper;
  }
  EXPECT_EQ(find_gpu_table("h800")->nccl_ctas_intra_node, 16);
  EXPECT_EQ(find_gpu_table("a100-80g")->sms, 108);
  EXPECT_EQ(find_gpu_table("a100-80g")->nccl_ctas_intra_node, 24);
  EXPECT_EQ(find_gpu_table("cpu")->sms, 0);  // no sharing on a CPU rank
  // cuBLAS's Hopper GEMMs are persistent (one CTA per SM), the A100's not.
  for (const char* hopper : {"h100", "h100-sxm-95g", "h200", "h800"}) {
    EXPECT_TRUE(find_gpu_table(hopper)->persistent_gemms) << hopper;
  }
  EXPECT_FALSE(find_gpu_table("a100-80g")->persistent_gemms);
  EXPECT_FALSE(find_gpu_table("cpu")->persistent_gemms);
}

TEST(ComputeOp, PersistentGemmsAreKernelsOfTheirOwn) {
  // On Hopper each GEMM is one persistent kernel (the executor runs it in
  // waves of CTAs); attention and other math stay SM-bound work.
  const ComputeModel model = ComputeModel::defaults("h100", kH100Peak, kH100Hbm);
  ComputeWork work;
  work.gemms = {{4096, 4096, 4096, 1}, {2048, 2048, 2048, 3}};
  work.attention.flops = 3e11;
  const OpCost c = model.cost(op_of(OpKind::kComputeFwd, work));
  ASSERT_EQ(c.persistent.size(), 2u);
  EXPECT_NEAR(c.persistent[0], 2.0 * 4096 * 4096 * 4096 / kH100Gemm4096, kExact * c.persistent[0]);
  EXPECT_NEAR(c.persistent[1], 3 * 2.0 * 2048 * 2048 * 2048 / kH100Gemm2048, kExact * c.persistent[1]);
  const double attention = 3e11 / (kH100Peak * kH100AttentionForward);
  EXPECT_NEAR(c.sm, attention, kExact * attention);
  // The A100's GEMMs are SM-bound work like the rest.
  const OpCost a100 = ComputeModel::defaults("a100-80g", 312e12, 2.039e12).cost(op_of(OpKind::kComputeFwd, work));
  EXPECT_TRUE(a100.persistent.empty());
  EXPECT_GT(a100.sm, 0.0);
}

// docs/SIMULATOR.md section 6, source [1]: a larger GEMM is not slower per
// FLOP at the same clock, so every table is the running maximum of its
// measured points; H100's 10240^3 burst (719.72 TFLOP/s, the longest, at a
// clock already falling) takes 8192^3's 797.51 before the sustained clock.
TEST(ComputeDefaults, GemmCurvesNeverFallWithSize) {
  for (const char* preset : {"h100", "h100-sxm-95g", "h200", "h800", "a100-80g", "cpu"}) {
    const GpuComputeSpec& s = *find_gpu_table(preset);
    for (size_t i = 1; i < s.gemm.size(); ++i) {
      EXPECT_GE(s.gemm[i].flops_per_s, s.gemm[i - 1].flops_per_s) << preset << " point " << i;
    }
  }
  const ComputeModel h100 = ComputeModel::defaults("h100", kH100Peak, kH100Hbm);
  const Gemm largest{10240, 10240, 10240, 1};
  const double rate = 797.51e12 * kH100SustainedClock;
  std::printf("H100 10240^3 GEMM: measured burst 719.72 TFLOP/s, table %.2f, model %.1f TFLOP/s at the sustained "
              "clock (analytic %.1f)\n",
              find_gpu_table("h100")->gemm.back().flops_per_s / 1e12,
              largest.flops() / (h100.gemm_seconds(largest) - kLaunch) / 1e12, rate / 1e12);
  EXPECT_NEAR(h100.gemm_seconds(largest), largest.flops() / rate + kLaunch, kExact * largest.flops() / rate);
}

TEST(ComputeDefaults, AnOverriddenPeakScalesGemmRates) {
  const ComputeModel base = ComputeModel::defaults("h100", kH100Peak, kH100Hbm);
  const ComputeModel doubled = ComputeModel::defaults("h100", 2 * kH100Peak, kH100Hbm);
  const Gemm big{8192, 8192, 8192, 1};
  // 8192^3 is a table point: 797.51 TFLOP/s measured at 989.4 peak (at the sustained clock), 2x at twice the peak.
  const double rate = 797.51e12 * kH100SustainedClock;
  EXPECT_NEAR(base.gemm_seconds(big), big.flops() / rate + kLaunch, kExact * big.flops() / rate);
  EXPECT_NEAR(doubled.gemm_seconds(big), big.flops() / (2 * rate) + kLaunch, kExact * big.flops() / (2 * rate));
  EXPECT_DOUBLE_EQ(doubled.spec().peak_flops, 2 * kH100Peak);
}

// A100's GEMMs and attention run at the clock NVIDIA states an A100 sustains
// at its power limit under HPL, 1305 of 1410 MHz (docs/SIMULATOR.md section
// 7); its memory-bound kernels keep the streaming rate.
TEST(ComputeDefaults, A100TensorCoresRunAtTheHplSustainedClock) {
  constexpr double kA100Peak = 312e12, kA100Hbm = 2.039e12, kClock = 1305.0 / 1410.0;
  const ComputeModel a100 = ComputeModel::defaults("a100-80g", kA100Peak, kA100Hbm);
  const Gemm big{8192, 8192, 8192, 1};
  // 8192^3: the best measured square, 264.53 TFLOP/s (docs/SIMULATOR.md section 6, source [2]).
  const double rate = 264.53e12 * kClock;
  std::printf("A100 8192^3 GEMM: analytic %.4f ms at %.1f TFLOP/s, model %.4f ms\n",
              1e3 * (big.flops() / rate + kLaunch), rate / 1e12, 1e3 * a100.gemm_seconds(big));
  EXPECT_NEAR(a100.gemm_seconds(big), big.flops() / rate + kLaunch, 1e-3 * big.flops() / rate);
  AttentionWork attention;
  attention.flops = 1e12;
  attention.seq_len = 8192;
  attention.qk_head_dim = 128;
  const double forward = attention.flops / (kA100Peak * 0.73 * (333.0 / 370.0) * kClock);
  EXPECT_NEAR(a100.attention_seconds(attention, false), forward + kLaunch, 1e-9 * forward);
  EXPECT_NEAR(a100.memory_seconds(1e9), 1e9 / (kA100Hbm * kH100MemoryEfficiency), 1e-15);
}

TEST(ComputeDefaults, DerivedPresetsScaleTheirGenerationsMeasuredCurveToTheirPeak) {
  const Gemm big{8192, 8192, 8192, 1};
  // The B200 at its own best torch.mm square (sim/gpu_tables.cpp: 1696.03 TFLOP/s),
  // at the share of its bursts a B200 sustains (1237 of 1450 TFLOP/s).
  const ComputeModel b200 = ComputeModel::defaults("b200", 2250e12, 8e12);
  const double b200_rate = 1696.03e12 * (1237.0 / 1450.0);
  EXPECT_NEAR(b200.gemm_seconds(big), big.flops() / b200_rate + kLaunch, kExact * big.flops() / b200_rate);
  EXPECT_EQ(b200.spec().name, "b200");
  EXPECT_NE(b200.spec().source.find("B200 GEMM measurements"), std::string::npos);
  // The MI300X, with no curve of its generation: the H100's 8192^3 share of
  // its peak at the MI300X's peak, times the two parts' best-matmul ratio
  // (668.4/1300 against 794.5/989), at Hopper's sustained clock.
  const ComputeModel mi300x = ComputeModel::defaults("mi300x", 1300e12, 5.3e12);
  const double mi300x_rate =
      797.51e12 * hopper_sustained_clock() * 1300 / 989.4 * (668.4 / 1300.0) / (794.5 / 989.0);
  EXPECT_NEAR(mi300x.gemm_seconds(big), big.flops() / mi300x_rate + kLaunch, kExact * big.flops() / mi300x_rate);
  EXPECT_NE(mi300x.spec().source.find("H100"), std::string::npos);
  EXPECT_THROW(ComputeModel::defaults("h100", 0, kH100Hbm), InputError);
}

TEST(ComputeDefaults, H800ComputesLikeH100AndH200MovesMemoryFaster) {
  const ComputeModel h100 = ComputeModel::defaults("h100", kH100Peak, kH100Hbm);
  const ComputeModel h800 = ComputeModel::defaults("h800", kH100Peak, kH100Hbm);
  const ComputeModel h200 = ComputeModel::defaults("h200", kH100Peak, 4.8e12);
  for (const Gemm& g : {Gemm{16384, 14336, 4096, 1}, Gemm{16384, 4096, 4096, 1}, Gemm{256, 2048, 7168, 8}}) {
    EXPECT_DOUBLE_EQ(h100.gemm_seconds(g), h800.gemm_seconds(g));
    EXPECT_DOUBLE_EQ(h100.gemm_seconds(g), h200.gemm_seconds(g));
  }
  EXPECT_LT(h200.memory_seconds(1e9), h100.memory_seconds(1e9));
  // Its bandwidth, and the share of it a copy reaches, measured on the part (0.884,
  // docs/results/gpu/calibration-h200.json) where the H100 keeps its own (0.75).
  EXPECT_NEAR(h100.memory_seconds(1e9) / h200.memory_seconds(1e9), (4.8 * 0.8837273542702242) / (3.35 * 0.75), 1e-12);
  EXPECT_DOUBLE_EQ(h800.memory_seconds(1e9), h100.memory_seconds(1e9));
}

TEST(ComputeDefaults, EveryPresetHasASourcedTableOfTheSameShape) {
  for (const char* preset :
       {"h100", "h100-sxm-95g", "h200", "h800", "a100-80g", "a100-40g", "b200", "gb200", "mi300x", "cpu"}) {
    const GpuComputeSpec* table = find_gpu_table(preset);
    ASSERT_NE(table, nullptr) << preset;
    EXPECT_FALSE(table->source.empty());
    ASSERT_EQ(table->gemm.size(), 6u);
    EXPECT_EQ(table->gemm.front().m, 512);
    for (const GemmPoint& p : table->gemm) EXPECT_LE(p.flops_per_s, table->peak_flops) << preset;
    EXPECT_GT(table->attention_forward_efficiency, table->attention_backward_efficiency);
    EXPECT_LE(table->memory_efficiency, 1.0);
    EXPECT_EQ(ComputeModel::defaults(preset, table->peak_flops, table->hbm_bytes_per_s).spec().gemm.size(), 6u);
  }
  EXPECT_EQ(find_gpu_table("b300"), nullptr);
}

// The calibration file tests write into a fresh temporary directory.
class ComputeCalibration : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = std::filesystem::temp_directory_path() / fmt::format("ragged_compute_{}_{}", ::getpid(), test);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static nlohmann::json valid() {
    return nlohmann::json::parse(R"({
      "device": "NVIDIA H100 80GB HBM3", "peak_flops": 9.894e14, "hbm_bytes_per_s": 3.35e12,
      "gemm": [{"m": 1024, "n": 1024, "k": 1024, "seconds": 1.2e-5},
               {"m": 4096, "n": 4096, "k": 4096, "seconds": 1.75e-4},
               {"m": 8192, "n": 8192, "k": 8192, "seconds": 1.38e-3}],
      "attention": {"forward_efficiency": 0.34, "backward_efficiency": 0.29},
      "memory_efficiency": 0.82, "launch_seconds": 3e-6, "source": "ragged gpu-validate 2026-01-01",
      "allocator": {"malloc_seconds": 8e-5, "malloc_seconds_per_gib": 2e-4, "free_seconds": 3e-5,
                    "free_seconds_per_gib": 4e-4}})");
  }

  std::filesystem::path write(const std::string& text) {
    const std::filesystem::path path = dir_ / "calibration.json";
    write_file_atomically(path, text);
    return path;
  }

  // Loads `doc` and returns the InputError message (empty when it loads).
  std::string error_of(const nlohmann::json& doc) {
    try {
      ComputeModel::from_calibration(write(doc.dump()));
      return "";
    } catch (const InputError& e) {
      return e.what();
    }
  }

  std::filesystem::path dir_;
};

TEST_F(ComputeCalibration, RoundTripKeepsTheMeasuredRates) {
  const ComputeModel model = ComputeModel::from_calibration(write(valid().dump(2)));
  const GpuComputeSpec& s = model.spec();
  EXPECT_EQ(s.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s.source, "ragged gpu-validate 2026-01-01");
  EXPECT_EQ(std::vector<double>({s.peak_flops, s.hbm_bytes_per_s, s.attention_forward_efficiency,
                                 s.attention_backward_efficiency, s.memory_efficiency, s.launch_seconds}),
            std::vector<double>({9.894e14, 3.35e12, 0.34, 0.29, 0.82, 3e-6}));
  ASSERT_EQ(s.gemm.size(), 3u);
  const double seconds[] = {1.2e-5, 1.75e-4, 1.38e-3};
  for (size_t i = 0; i < 3; ++i) {
    const double n = static_cast<double>(s.gemm[i].m);
    EXPECT_DOUBLE_EQ(s.gemm[i].flops_per_s, 2 * n * n * n / seconds[i]);
  }
  // At a measured shape the model's compute time is the measured time.
  EXPECT_NEAR(model.gemm_seconds({8192, 8192, 8192, 1}), 1.38e-3 + 3e-6, kExact * 1.38e-3);
  // Without SM and CTA counts the simulation takes the preset's.
  EXPECT_EQ(s.sms, 0);
  nlohmann::json doc = valid();
  doc["sms"] = 132, doc["nccl_ctas_intra_node"] = 32, doc["nccl_ctas_inter_node"] = 16;
  const GpuComputeSpec with = ComputeModel::from_calibration(write(doc.dump())).spec();
  EXPECT_EQ(std::vector<int>({with.sms, with.nccl_ctas_intra_node, with.nccl_ctas_inter_node}),
            std::vector<int>({132, 32, 16}));
  // Persistent GEMMs: the preset's GPU class unless the file says.
  EXPECT_TRUE(s.persistent_gemms);
  EXPECT_FALSE(ComputeModel::from_calibration(write(valid().dump()), "a100-80g").spec().persistent_gemms);
  doc["persistent_gemms"] = false;
  EXPECT_FALSE(ComputeModel::from_calibration(write(doc.dump())).spec().persistent_gemms);
  // The allocator's calls as measured; without them the simulator keeps its assumption.
  ASSERT_TRUE(s.driver_calls.has_value());
  EXPECT_EQ(std::vector<double>({s.driver_calls->malloc_seconds, s.driver_calls->malloc_seconds_per_gib,
                                 s.driver_calls->free_seconds, s.driver_calls->free_seconds_per_gib}),
            std::vector<double>({8e-5, 2e-4, 3e-5, 4e-4}));
  doc.erase("allocator");
  EXPECT_FALSE(ComputeModel::from_calibration(write(doc.dump())).spec().driver_calls.has_value());
  // A measured sustained share scales the points (absent: they are taken as sustained).
  EXPECT_EQ(s.sustained_clock, 1.0);
  doc["sustained_clock"] = 0.92;
  EXPECT_EQ(ComputeModel::from_calibration(write(doc.dump())).spec().sustained_clock, 0.92);
  doc["sustained_clock"] = 1.3;
  EXPECT_THROW(ComputeModel::from_calibration(write(doc.dump())), InputError);
}

TEST_F(ComputeCalibration, EveryBadFieldNamesTheFileAndTheField) {
  struct Case {
    std::string pointer;  // JSON pointer to change
    nlohmann::json value;  // null: remove the field
    std::string field;     // the name the message must carry
  };
  const nlohmann::json null;
  const std::vector<Case> cases = {
      {"/device", null, "device"}, {"/device", 3, "device"}, {"/peak_flops", null, "peak_flops"},
      {"/peak_flops", 0, "peak_flops"}, {"/peak_flops", "fast", "peak_flops"},
      {"/hbm_bytes_per_s", -1, "hbm_bytes_per_s"}, {"/gemm", null, "gemm"},
      {"/gemm", nlohmann::json::array(), "gemm"}, {"/gemm", nlohmann::json::object(), "gemm"},
      {"/gemm/1", 7, "gemm[1]"}, {"/gemm/2/m", null, "gemm[2].m"}, {"/gemm/0/n", 0, "gemm[0].n"},
      {"/gemm/1/k", 1.5, "gemm[1].k"}, {"/gemm/2/seconds", 0, "gemm[2].seconds"},
      {"/gemm/2/seconds", null, "gemm[2].seconds"}, {"/gemm/0/seconds", "1ms", "gemm[0].seconds"},
      {"/attention", 0.3, "attention"},
      {"/attention/forward_efficiency", 0, "attention.forward_efficiency"},
      {"/attention/backward_efficiency", 1.5, "attention.backward_efficiency"},
      {"/memory_efficiency", null, "memory_efficiency"}, {"/launch_seconds", 0, "launch_seconds"},
      {"/source", null, "source"}, {"/sms", 0, "sms"}, {"/nccl_ctas_intra_node", -2, "nccl_ctas_intra_node"},
      {"/nccl_ctas_inter_node", 2.5, "nccl_ctas_inter_node"}, {"/persistent_gemms", 1, "persistent_gemms"},
      {"/allocator", 5, "allocator"}, {"/allocator/malloc_seconds", -1e-6, "allocator.malloc_seconds"},
      {"/allocator/malloc_seconds_per_gib", null, "allocator.malloc_seconds_per_gib"},
      {"/allocator/free_seconds", "50us", "allocator.free_seconds"},
      {"/allocator/free_seconds_per_gib", null, "allocator.free_seconds_per_gib"},
      // Past what any device measures: refused, not simulated (a 1e303 s GEMM
      // made a 4.6e303 s step; 2^31 SMs wrapped to a negative count).
      {"/peak_flops", 1e300, "peak_flops"}, {"/hbm_bytes_per_s", 1e20, "hbm_bytes_per_s"},
      {"/gemm/0/m", int64_t{1} << 30, "gemm[0].m"}, {"/gemm/2/seconds", 1e303, "gemm[2].seconds"},
      {"/gemm/0/seconds", 1e-9, "gemm[0].seconds"},  // 2.1e18 FLOP/s: above the peak
      {"/launch_seconds", 1.0, "launch_seconds"}, {"/sms", int64_t{1} << 31, "sms"},
      {"/nccl_ctas_inter_node", uint64_t{1} << 63, "nccl_ctas_inter_node"},
      {"/allocator/free_seconds", 1e9, "allocator.free_seconds"},
  };
  for (const Case& c : cases) {
    nlohmann::json doc = valid();
    const nlohmann::json::json_pointer pointer(c.pointer);
    if (c.value.is_null()) {
      doc[pointer.parent_pointer()].erase(pointer.back());
    } else {
      doc[pointer] = c.value;
    }
    const std::string message = error_of(doc);
    EXPECT_NE(message.find("calibration.json: "), std::string::npos) << c.pointer << ": " << message;
    EXPECT_NE(message.find("field '" + c.field + "'"), std::string::npos) << c.pointer << ": " << message;
  }
  EXPECT_EQ(error_of(valid()), "");  // the unchanged document loads
}

// gpu-validate does not measure attention: a file without it takes the
// attention efficiencies of the scenario GPU's default table.
TEST_F(ComputeCalibration, WithoutAttentionTheScenarioGpusDefaultsApply) {
  nlohmann::json doc = valid();
  doc.erase("attention");
  for (const char* preset : {"h100", "a100-80g"}) {
    const ComputeModel model = ComputeModel::from_calibration(write(doc.dump()), preset);
    const GpuComputeSpec* table = find_gpu_table(preset);
    ASSERT_NE(table, nullptr);
    EXPECT_EQ(model.spec().attention_forward_efficiency, table->attention_forward_efficiency) << preset;
    EXPECT_EQ(model.spec().attention_backward_efficiency, table->attention_backward_efficiency) << preset;
    // FlashAttention-3's too (Hopper's; none on the A100), so a scenario
    // that runs it can be simulated with a measured file.
    EXPECT_EQ(model.spec().flash3_forward_efficiency, table->flash3_forward_efficiency) << preset;
    EXPECT_EQ(model.spec().flash3_backward_efficiency, table->flash3_backward_efficiency) << preset;
    EXPECT_EQ(model.spec().cudnn_forward_efficiency, table->cudnn_forward_efficiency) << preset;
    EXPECT_EQ(model.spec().cudnn_backward_efficiency, table->cudnn_backward_efficiency) << preset;
    EXPECT_NE(model.spec().source.find("attention not in the file: the simulator's " + std::string(preset)),
              std::string::npos);
  }
  EXPECT_GT(ComputeModel::from_calibration(write(doc.dump()), "h200").spec().flash3_forward_efficiency, 0);
}

TEST_F(ComputeCalibration, MalformedOrMissingFilesAreInputErrors) {
  EXPECT_THROW(ComputeModel::from_calibration(write("{\"device\": ")), InputError);
  EXPECT_THROW(ComputeModel::from_calibration(write("[1, 2]")), InputError);
  EXPECT_THROW(ComputeModel::from_calibration(dir_ / "absent.json"), InputError);
}

// The forward of one Llama-3-8B layer on H100 over 16,384 tokens (2 sequences
// of 8,192), printed beside the analytic bounds (SimGrid-style model test).
TEST(ComputeModelLlama, Llama3_8bLayerForwardOnH100) {
  const ComputeModel model = ComputeModel::defaults("h100", kH100Peak, kH100Hbm);
  const int64_t t = 16384;
  ComputeWork work;
  work.gemms = {{t, 4096, 4096, 1}, {t, 1024, 4096, 1}, {t, 1024, 4096, 1}, {t, 4096, 4096, 1},
                {t, 14336, 4096, 1}, {t, 14336, 4096, 1}, {t, 4096, 14336, 1}};
  work.attention.flops = 2.0 * 32 * (128 + 128) * ((8192 + 1) / 2.0) * t;
  const double gemm_flops = 2.0 * t * (4096.0 * 4096 * 2 + 4096.0 * 1024 * 2 + 3 * 4096.0 * 14336);
  double gemm_model = 0;
  for (const Gemm& g : work.gemms) gemm_model += model.gemm_seconds(g);
  const double at_peak = gemm_flops / kH100Peak;
  const double at_mamf = gemm_flops / 794.5e12;  // stas00's best-shape H100 rate
  const double attention = model.attention_seconds(work.attention, false);
  std::printf("Llama-3-8B layer forward, 16384 tokens, H100:\n"
              "  GEMMs %.3e FLOPs: at peak %.3f ms, at MAMF %.3f ms, model %.3f ms (%.1f%% of peak)\n"
              "  attention %.3e FLOPs: at peak %.3f ms, at %.3f of peak %.3f ms, model %.3f ms\n",
              gemm_flops, at_peak * 1e3, at_mamf * 1e3, gemm_model * 1e3, 100 * at_peak / gemm_model,
              work.attention.flops, work.attention.flops / kH100Peak * 1e3, model.spec().attention_forward_efficiency,
              work.attention.flops / (kH100Peak * model.spec().attention_forward_efficiency) * 1e3, attention * 1e3);
  EXPECT_DOUBLE_EQ(planner::total_flops(work), gemm_flops + work.attention.flops);
  EXPECT_GT(gemm_model, at_mamf / kH100SustainedClock);  // never faster than the best measured GEMM, sustained
  // within the measured 72-81% band of the microbenchmarks, at the sustained clock
  EXPECT_LT(gemm_model, at_peak / (0.70 * kH100SustainedClock));
  EXPECT_DOUBLE_EQ(model.seconds(op_of(OpKind::kComputeFwd, work)), gemm_model + attention);
}

}  // namespace
}  // namespace ragged::sim
