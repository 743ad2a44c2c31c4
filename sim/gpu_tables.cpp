// The default compute tables of each GPU class. Every number is either a
// datasheet peak, a published measurement or a stated assumption; the
// sources and derivations are in docs/SIMULATOR.md ("Compute model").

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "scenarios/gpu_presets.hpp"
#include "sim/compute_model.hpp"
#include "sim/gemm_depth.hpp"

namespace ragged::sim {
namespace {

// Every table is sampled at the same square bf16 GEMMs (m = n = k), from
// 2.7e8 to 2.1e12 FLOPs of one copy; rates outside are clamped.
constexpr std::array<int64_t, 6> kSizes = {512, 1024, 2048, 4096, 8192, 10240};

// H100 SXM, achieved TFLOP/s of torch.mm in bf16 (PyTorch 2.7, CUDA 12.8):
// the measurements of zzc0721/torch-performance-test-data issue #79, except
// 512^3, which is derived (16 output tiles of 128x128 on 132 SMs, at the
// 8192^3 per-SM rate, half of an 8-step K loop spent filling the pipeline:
// kGemmPipelineFillK, which also corrects non-square shapes).
// Datasheet peaks and HBM bandwidths come from the GPU presets
// (scenarios/gpu_presets.cpp), their one definition.
constexpr std::array<double, 6> kH100Tflops = {48.3, 176.62, 676.59, 788.72, 797.51, 719.72};

double preset_peak_tflops(std::string_view name) { return scenarios::find_gpu_preset(name).peak_bf16_tflops; }
double preset_hbm_bytes_per_s(std::string_view name) {
  return scenarios::find_gpu_preset(name).hbm_bandwidth_gbytes_per_s * 1e9;
}

// A100 SXM4 80GB: the same benchmark (torch.mm bf16 on squares of 1024 to
// 10240, PyTorch 2.8, CUDA 12.8) publishes only its best square, 264.53
// TFLOP/s (zzc0721/torch-performance-test-data database.md), so the H100
// curve is scaled so that its best square (8192^3) becomes that efficiency.
double a100_over_h100() {
  return (264.53 / preset_peak_tflops("a100-80g")) / (797.51 / preset_peak_tflops("h100"));
}

// FlashAttention-2 on H100 SXM (FlashAttention-3 paper, Shah et al. 2024,
// head dim 128, sequence 8k): forward 333 TFLOP/s causal; backward 318
// non-causal, scaled by the forward's causal/non-causal ratio 333/370; as
// fractions of the H100's peak.
double h100_attention_forward() { return 333.0 / preset_peak_tflops("h100"); }
double h100_attention_backward() { return 318.0 / preset_peak_tflops("h100") * (333.0 / 370.0); }
// FlashAttention-3 on H100 SXM, the same paper and charts (BF16, head dim
// 128, sequence 8k): forward 602 TFLOP/s causal (646 without mask); backward
// 559 without mask, scaled by FA3's own causal/non-causal forward ratio.
double h100_flash3_forward() { return 602.0 / preset_peak_tflops("h100"); }
double h100_flash3_backward() { return 559.0 / preset_peak_tflops("h100") * (602.0 / 646.0); }
// SDPA's cuDNN backend on Hopper runs at FlashAttention-3's rates: TritonBench
// on an H100 measured cuDNN at 631 and FlashAttention-3 at 632 TFLOP/s forward
// (pytorch/pytorch issue 142132), so the Hopper tables take FA3's fractions.
// On Blackwell, NVIDIA's cudnn-frontend training benchmark
// (benchmark/sdpa_benchmark_training/artifacts, sdpa_bf16_benchmark_results_NVIDIA_{GB200,B200}.csv):
// causal GQA attention (128 query heads, 8 kv heads, head dim 128, bf16, batch
// 1) at 8,192 tokens, delays between calls to keep the clock free (burst rates):
// - GB200 (cuDNN 9.17, torch 2.10 nv25.11, cudnn_fe): forward 1,584, backward 1,211 TFLOP/s;
// - B200 (cuDNN 9.10.2, torch 2.8 nv25.06, SDPA's cuDNN backend): forward 1,171.3, backward 942.5.
// Other lengths follow FlashAttention-3's curve (sim/attention_shape.cpp: the
// benchmark's batch of one sequence leaves short ones with too little work to
// stand for a training batch).
constexpr double kGb200CudnnForwardTflops = 1584.0;
constexpr double kGb200CudnnBackwardTflops = 1211.0;
constexpr double kB200CudnnForwardTflops = 1171.278;
constexpr double kB200CudnnBackwardTflops = 942.509;
// How much less of its head-dim-128 rate Blackwell's cuDNN keeps at head dim
// 64 than Hopper's does: the same benchmark harness and cuDNN 9.19.1 (backend
// 91901) on a GB200 and an H200 (cudnn-frontend @df73764, benchmark/
// sdpa_benchmark_training/results/{gb200,h200}_919_only_cudnn/: gpt_oss_*.csv,
// bf16, top-left causal, batch 2, 64 query and 8 kv heads of 64, a sliding
// window of 1,024; llama3.1_*.csv, batch 1, 64 and 8 heads of 128, full
// causal), TFLOP/s at 8,192 tokens. Each GPU's rate at head dim 64 over its
// rate at 128 puts the window and the batch in both terms, so the ratio of
// the two GPUs' ratios is the narrow head's own cost on Blackwell: forward
// 0.703, backward 0.889 (0.70-0.75 and 0.87-0.94 from 2,048 to 32,768
// tokens). The GB300 of the same run keeps the GB200's share (718 / 1,887
// against 609 / 1,598 forward), so this is taken for every Blackwell part.
struct HeadDimRates {
  double narrow_forward, narrow_backward, wide_forward, wide_backward;
};
constexpr HeadDimRates kGb200Cudnn919 = {609.0, 646.0, 1598.0, 1311.0};
constexpr HeadDimRates kH200Cudnn919 = {349.0, 300.0, 644.0, 541.0};
double blackwell_narrow_head_share(bool backward) {
  auto narrow_share = [backward](const HeadDimRates& r) {
    return backward ? r.narrow_backward / r.wide_backward : r.narrow_forward / r.wide_forward;
  };
  return narrow_share(kGb200Cudnn919) / narrow_share(kH200Cudnn919);
}
// FlashAttention-2 (SDPA's flash backend) in the same benchmark and shape:
// FlashAttention-2 issues Ampere's mma.sync, not Blackwell's tensor-core
// instructions, and reaches a sixth of the peak: GB200 414 forward, 338
// backward; B200 373.4 and 298.9 TFLOP/s.
constexpr double kGb200Flash2ForwardTflops = 414.0;
constexpr double kGb200Flash2BackwardTflops = 338.0;
constexpr double kB200Flash2ForwardTflops = 373.392;
constexpr double kB200Flash2BackwardTflops = 298.867;
// FlashAttention-2 on A100 (Dao 2023): up to 73% of peak forward, 63%
// backward, both scaled by the same causal/non-causal ratio.
constexpr double kA100AttentionForward = 0.73 * (333.0 / 370.0);
constexpr double kA100AttentionBackward = 0.63 * (333.0 / 370.0);

// cudaMemcpy device-to-device on H100 SXM, p2pBandwidthLatencyTest (read +
// write counted): 2.47-2.51 TB/s of 3.35 (NVIDIA/nccl issue #1264).
constexpr double kGpuMemoryEfficiency = 0.75;
// The same copy measured on an H200 (HBM3e; the H100's die) by
// ragged-gpu-validate on the lease of 2026-11-30: cudaMemcpy device to
// device, bytes read and written, 4.25 TB/s over the 4.81 its memory clock
// and bus give (docs/results/gpu/calibration-h200.json, memory_efficiency).
// A kernel measurement of the part, not a training run.
constexpr double kH200MemoryEfficiency = 0.8837273542702242;
// The time a dependent kernel adds besides its work (assumption; see doc).
constexpr double kGpuLaunchSeconds = 4e-6;
// The tensor-core clock a Hopper GPU sustains through a training loop, as a
// share of the clocks its microbenchmark rates above ran at (bursts of 30
// calls): calibrated, the two-digit value that brings TorchTitan's 8-GPU
// torch.compile point (../shared/reference/vescale.md, 6,674 tokens/s per
// GPU) closest, with the slowest of its 8 GPUs setting the pace
// (cluster.gpu.clock_spread), the calibration run with the fewest modelled
// costs besides GEMMs and attention (one node, compiled blocks). The
// calibration report recomputes the fit and its neighbours, and fails when
// another value fits better (docs/results/calibration.md). No Hopper
// measurement of sustained clocks under BF16 GEMM load was found; the
// mechanism's independent observations are in docs/SIMULATOR.md section 7.
constexpr double kHopperSustainedClock = 0.89;
// The clock an A100 sustains at its power limit under HPL's tensor-core
// DGEMM, 1305 of its 1410 MHz boost: the clock NVIDIA computed its A100
// systems' HPL Rpeak at (G. Lockwood, "peak FLOPS", Rpeak). Stated, not
// fitted; taken to hold under BF16 GEMM load too (an assumption).
constexpr double kA100SustainedClock = 1305.0 / 1410.0;
// The share of its burst rate a Blackwell GPU sustains under back-to-back
// tensor-core work: FlashAttention-4 (bf16, batch 4 x 8,192 tokens, 16 heads of
// 128) on a B200 at its 1,000 W limit ran 1,450 TFLOP/s over its 10th to 19th
// calls and 1,237 over its 70th to 79th, the SM clock down from 1,965 to about
// 1,580 MHz (flashinfer-ai/flashinfer pull request 2899, 2026-03-26, the
// benchmark before its cool-down fix). A kernel measurement of the part, not of
// a training run. Taken for every Blackwell GEMM and attention (a GEMM at a
// larger share of the peak draws at least as much power, so throttles at least
// as deep: an assumption) and for the GB200's GPU at its 1,200 W (not measured).
constexpr double kBlackwellSustainedRate = 1237.0 / 1450.0;

// Streaming multiprocessors (NVIDIA H100 and A100 datasheets / architecture
// whitepapers: 132 SMs on the H100 SXM5, and on the H800 and H200, which
// share its die; 108 on the A100) and the CTAs NCCL runs a ring collective
// with, one per channel (docs/SIMULATOR.md section 6b has the sources):
// - H100 and H200, one node (18 NVLinks): 24, as nsys shows for an FSDP
//   all-gather on H100 (NVIDIA developer forum, "Compute-communication
//   overlap causes severe GEMM performance degradation because of tail
//   effect", 2025);
// - H800, one node (8 NVLinks): 16 ("16 coll channels", NCCL issue #892);
// - A100, one node (12 NVLinks): 24 ("Channel 23/24", nccl-tests issue #100;
//   "12 nvlink and 24 cta for allreduce", NCCL issue #1225);
// - across nodes with 8 NICs: 16 ring channels (an H100 ring over 3 nodes of
//   8 GPUs and 8 NICs, "Channel 00/16", NCCL issue #1453); taken for every
//   GPU class (an assumption for A100 and H800).
// - persistent GEMMs: cuBLAS's Hopper matmuls in FSDP training launch one
//   CTA per SM (132) and loop over tiles; beside an NCCL kernel they run in
//   two waves and take about twice as long (pytorch/pytorch issue #143988,
//   PR #144974: "This wave quantization can double the latency of the
//   matmul kernels"). The A100's kernels launch a CTA per tile, several per
//   SM, in many waves (the same PR: earlier generations hid the per-tile
//   latency with several CTAs per SM).
struct Contention {
  int sms;
  int ctas_intra_node;
  int ctas_inter_node;
  bool persistent_gemms;
};
constexpr Contention kHopperContention = {132, 24, 16, true};
constexpr Contention kH800Contention = {132, 16, 16, true};
constexpr Contention kA100Contention = {108, 24, 16, false};
// Derived parts (issue 51), every count but the SMs an assumption:
// - B200 and GB200: 148 SMs (torch.cuda.get_device_properties on a B200,
//   multi_processor_count=148, in public logs; the GB200's GPU is taken to
//   have the B200's count, not checked); 18 NVLinks a GPU like the H100, so
//   NCCL's 24 and 16 CTAs are taken over; cuBLAS's Blackwell GEMMs are
//   persistent like Hopper's (an assumption).
// - MI300X: 304 compute units (AMD MI300X data sheet); RCCL runs NCCL's ring
//   algorithms, taken with NCCL's 24 and 16 CTAs (an assumption: RCCL's
//   channel counts on MI300X were not found); hipBLASLt's GEMMs taken to
//   launch a workgroup per tile like the A100's (an assumption).
constexpr Contention kBlackwellContention = {148, 24, 16, true};
constexpr Contention kMi300xContention = {304, 24, 16, false};

struct TableInput {
  std::string_view name;
  double peak_flops;
  double hbm_bytes_per_s;
  std::array<double, 6> efficiency;  // fraction of peak_flops at each of kSizes
  double attention_forward;
  double attention_backward;
  double memory_efficiency;
  double launch_seconds;
  std::string_view source;
  Contention contention = {0, 0, 0, false};
  double flash3_forward = 0;  // 0: FlashAttention-3 does not run here
  double flash3_backward = 0;
  double sustained_clock = 1.0;
  double cudnn_forward = 0;  // 0: no measured rate for SDPA's cuDNN backend here
  double cudnn_backward = 0;
  double cudnn_narrow_head_forward = 1.0;  // GpuComputeSpec::cudnn_narrow_head_*_share
  double cudnn_narrow_head_backward = 1.0;
};

GpuComputeSpec make_spec(const TableInput& in) {
  GpuComputeSpec spec;
  spec.name = in.name;
  spec.peak_flops = in.peak_flops;
  spec.hbm_bytes_per_s = in.hbm_bytes_per_s;
  // A larger GEMM is not slower per FLOP at the same clock (more output
  // tiles, the same work per tile), so the curve is the running maximum of
  // the measured points: H100's 10240^3 point (72.7% after 80.6% at 8192^3)
  // was the longest burst of its benchmark (30 calls, about 90 ms), run at a
  // clock that had fallen further, and the sustained clock below already
  // lowers every size to the clock of a training loop (docs/SIMULATOR.md
  // section 6, source [1]).
  double efficiency = 0;
  for (size_t i = 0; i < kSizes.size(); ++i) {
    efficiency = std::max(efficiency, in.efficiency[i]);
    spec.gemm.push_back({kSizes[i], kSizes[i], kSizes[i], efficiency * in.peak_flops});
  }
  spec.attention_forward_efficiency = in.attention_forward;
  spec.attention_backward_efficiency = in.attention_backward;
  spec.flash3_forward_efficiency = in.flash3_forward;
  spec.flash3_backward_efficiency = in.flash3_backward;
  spec.cudnn_forward_efficiency = in.cudnn_forward;
  spec.cudnn_backward_efficiency = in.cudnn_backward;
  spec.cudnn_narrow_head_forward_share = in.cudnn_narrow_head_forward;
  spec.cudnn_narrow_head_backward_share = in.cudnn_narrow_head_backward;
  spec.sustained_clock = in.sustained_clock;
  spec.memory_efficiency = in.memory_efficiency;
  spec.launch_seconds = in.launch_seconds;
  spec.source = in.source;
  spec.sms = in.contention.sms;
  spec.nccl_ctas_intra_node = in.contention.ctas_intra_node;
  spec.nccl_ctas_inter_node = in.contention.ctas_inter_node;
  spec.persistent_gemms = in.contention.persistent_gemms;
  spec.gemm_fill_k = gemm_fill_depth(in.name);
  return spec;
}

std::array<double, 6> scaled_h100_curve(double factor) {
  std::array<double, 6> out{};
  const double peak = preset_peak_tflops("h100");
  for (size_t i = 0; i < out.size(); ++i) out[i] = factor * kH100Tflops[i] / peak;
  return out;
}

// Hopper GPUs share the H100's SMs and clocks (one table), each with its own
// preset's peak and HBM bandwidth.
TableInput hopper(std::string_view name, std::string_view source, Contention contention = kHopperContention) {
  TableInput table{name,         preset_peak_tflops(name) * 1e12, preset_hbm_bytes_per_s(name), scaled_h100_curve(1.0),
                   h100_attention_forward(), h100_attention_backward(), kGpuMemoryEfficiency, kGpuLaunchSeconds,
                   source,       contention};
  table.flash3_forward = h100_flash3_forward();
  table.flash3_backward = h100_flash3_backward();
  table.cudnn_forward = table.flash3_forward;
  table.cudnn_backward = table.flash3_backward;
  table.sustained_clock = kHopperSustainedClock;
  return table;
}

// Maximum achievable matmul FLOPS (MAMF): the best bf16 torch.matmul rate a
// shape search found (mean of 100 calls after 50 warm-up calls), against the
// part's datasheet peak as the same table states it; one table, one method
// (stas00/ml-engineering @b9e2972, compute/accelerator/README.md, "Maximum
// Achievable Matmul FLOPS comparison table", BF16 rows). A kernel
// measurement of the part, not of a training run.
struct MamfRow {
  std::string_view gpu;
  double achieved_tflops;
  double theory_tflops;
};
constexpr std::array<MamfRow, 4> kMamf = {{
    {"h100", 794.5, 989.0},     // NVIDIA H100 SXM, torch 2.7.0+cu126
    {"b200", 1745.0, 2250.0},   // NVIDIA B200 SXM, torch 2.7.1+cu128
    {"gb200", 1822.0, 2500.0},  // NVIDIA GB200 SXM, torch 2.10.0.dev20250916+cu130
    {"mi300x", 668.4, 1300.0},  // AMD MI300X, torch 2.5.1 ROCm 6.3, TunableOp on
}};

// B200, achieved TFLOP/s of XLA's GEMMs in bf16 on squares (XLA's default
// matmul performance table, xla/service/gpu/model/matmul_interpolator_data.h,
// entries "sm_100_B200", b 1, bf16xbf16->bf16; read at ROCm/xla ea2c45f, a
// fork of openxla/xla, 2026-07-31) from 512 to 4,096; the table stops there,
// so 8,192 and 10,240 take the B200's best torch.mm square (kB200BestSquareTflops). The
// same table's H100 ("sm_90") agrees with kH100Tflops within 6% from 2,048 up
// (641 and 780 against 677 and 789): one method for both parts. A kernel
// measurement, not a training run. The B200 reaches a smaller share of its
// peak than the H100 until the problem is large: 0.50 of the H100's share at
// 1,024, 0.68 at 2,048, 0.80 at 4,096 (148 SMs and larger tiles to fill).
constexpr std::array<double, 4> kB200XlaTflops = {48.5, 288.0, 985.8, 1416.9};
// The B200's best bf16 torch.mm square of 1,024 to 10,240 in the benchmark
// whose H100 squares are kH100Tflops (zzc0721/torch-performance-test-data
// database.md, "NVIDIA B200 180GB", GCP a4-highgpu-8g, PyTorch 2.8.0; the
// same table's H100 and H200 rows: 789.24 and 790.29): the curve's large
// squares measured the way the H100's are, where the MAMF table's shape
// search found 1,745 (the best shape, not a square).
constexpr double kB200BestSquareTflops = 1696.03;

// A part the table does not list is taken to match the H100's share.
double mamf_share(std::string_view gpu) {
  const auto* row = std::find_if(kMamf.begin(), kMamf.end(), [&](const MamfRow& r) { return r.gpu == gpu; });
  if (row == kMamf.end()) row = kMamf.begin();
  return row->achieved_tflops / row->theory_tflops;
}

// A GPU without a table of its own (B200, GB200, MI300X): datasheet-scaled
// and uncalibrated. Its GEMM curve is `curve` (fractions of the part's peak:
// the H100's scaled by the MAMF ratio for the MI300X, build_tables; the
// B200's measured squares for Blackwell, below); FlashAttention-2 at the H100's fractions of
// peak unless the part's own is measured (Blackwell: blackwell() below;
// FlashAttention-3 is Hopper-only), the H100's share of HBM bandwidth and its
// launch cost; the GEMM rates are bursts, so `sustained` is the share of them
// the part keeps under load (Blackwell: kBlackwellSustainedRate, measured on a
// B200; MI300X: Hopper's calibrated kHopperSustainedClock, for want of a
// measurement). Nothing here is fitted to a training run (docs/SIMULATOR.md
// section 6, "Derived tables").
TableInput datasheet_scaled(std::string_view name, std::string_view source, Contention contention, double sustained,
                            const std::array<double, 6>& curve) {
  TableInput table{name,         preset_peak_tflops(name) * 1e12, preset_hbm_bytes_per_s(name),
                   curve,        h100_attention_forward(), h100_attention_backward(), kGpuMemoryEfficiency,
                   kGpuLaunchSeconds, source, contention};
  table.sustained_clock = sustained;
  return table;
}

// The B200's measured GEMM curve as fractions of a Blackwell part's peak,
// scaled by how the part's best matmul compares with the B200's in the MAMF
// table (1 for the B200; 0.940 for the GB200, whose GPU has the B200's die):
// the derivation the MI300X's table makes from the H100, made from the
// part's own generation.
std::array<double, 6> scaled_b200_curve(std::string_view name) {
  const double b200_peak = preset_peak_tflops("b200");
  std::array<double, 6> out{};
  out.fill(kB200BestSquareTflops / b200_peak);  // 8,192 and 10,240: the best square
  for (size_t i = 0; i < kB200XlaTflops.size(); ++i) out[i] = kB200XlaTflops[i] / b200_peak;
  const double factor = mamf_share(name) / mamf_share("b200");
  for (double& share : out) share *= factor;
  return out;
}

// A Blackwell part: the B200's measured GEMMs, with its own measured attention
// (FlashAttention-2 and cuDNN, forward and backward TFLOP/s at 8,192 tokens).
struct MeasuredAttention {
  double flash2_forward, flash2_backward, cudnn_forward, cudnn_backward;
};
TableInput blackwell(std::string_view name, std::string_view source, const MeasuredAttention& attention) {
  TableInput table =
      datasheet_scaled(name, source, kBlackwellContention, kBlackwellSustainedRate, scaled_b200_curve(name));
  const double peak = preset_peak_tflops(name);
  table.attention_forward = attention.flash2_forward / peak;
  table.attention_backward = attention.flash2_backward / peak;
  table.cudnn_forward = attention.cudnn_forward / peak;
  table.cudnn_backward = attention.cudnn_backward / peak;
  table.cudnn_narrow_head_forward = blackwell_narrow_head_share(false);
  table.cudnn_narrow_head_backward = blackwell_narrow_head_share(true);
  return table;
}

std::vector<GpuComputeSpec> build_tables() {
  constexpr std::string_view kHopper =
      "H100 SXM measurements (torch.mm bf16; FlashAttention-3 paper's FA2 numbers; cudaMemcpy D2D)";
  std::vector<GpuComputeSpec> tables;
  tables.push_back(make_spec(hopper("h100", kHopper)));
  // Same table: the lower TDP of TorchTitan's 96 GB H100 is not modeled.
  tables.push_back(make_spec(hopper("h100-sxm-95g", kHopper)));
  // H200 and H800 have the H100's SMs and clocks; H200 has 4.8 TB/s HBM3e,
  // whose copy share was measured on the part.
  TableInput h200 = hopper("h200", kHopper);
  h200.memory_efficiency = kH200MemoryEfficiency;  // its own copy measured, not the H100's
  tables.push_back(make_spec(h200));
  tables.push_back(make_spec(hopper("h800", kHopper, kH800Contention)));
  tables.push_back(make_spec({"a100-80g", preset_peak_tflops("a100-80g") * 1e12, preset_hbm_bytes_per_s("a100-80g"),
                              scaled_h100_curve(a100_over_h100()), kA100AttentionForward,
                              kA100AttentionBackward, kGpuMemoryEfficiency, kGpuLaunchSeconds,
                              "H100 curve scaled to A100's best square torch.mm; FlashAttention-2 paper; H100 memcpy efficiency",
                              kA100Contention, 0, 0, kA100SustainedClock}));
  // The A100 40GB has the 80GB's SMs and clocks: its table, at 1.555 TB/s.
  tables.push_back(make_spec({"a100-40g", preset_peak_tflops("a100-40g") * 1e12, preset_hbm_bytes_per_s("a100-40g"),
                              scaled_h100_curve(a100_over_h100()), kA100AttentionForward,
                              kA100AttentionBackward, kGpuMemoryEfficiency, kGpuLaunchSeconds,
                              "A100 80GB table (H100 curve scaled to A100's best square torch.mm; FlashAttention-2 "
                              "paper) at the 40GB's HBM bandwidth",
                              kA100Contention, 0, 0, kA100SustainedClock}));
  // No measured curve: derived from the H100's at each preset's datasheet peaks.
  constexpr std::string_view kDerived =
      "derived, uncalibrated: H100 measurements scaled to this GPU's datasheet peak, best matmul (MAMF) and HBM "
      "bandwidth";
  constexpr std::string_view kDerivedBlackwell =
      "derived, uncalibrated: B200 GEMM measurements (XLA's matmul table, MAMF) scaled to this GPU's best matmul "
      "(MAMF), H100 share of HBM bandwidth; attention measured on the part (NVIDIA cudnn-frontend's SDPA benchmark); "
      "B200's sustained share";
  tables.push_back(make_spec(blackwell("b200", kDerivedBlackwell,
                                       {kB200Flash2ForwardTflops, kB200Flash2BackwardTflops, kB200CudnnForwardTflops,
                                        kB200CudnnBackwardTflops})));
  tables.push_back(make_spec(blackwell("gb200", kDerivedBlackwell,
                                       {kGb200Flash2ForwardTflops, kGb200Flash2BackwardTflops,
                                        kGb200CudnnForwardTflops, kGb200CudnnBackwardTflops})));
  // The MI300X: the H100's curve scaled by how its best matmul compares with
  // the H100's in the MAMF table (0.640 of the H100's share of peak), the way
  // a100_over_h100 scales it by the A100's best square.
  tables.push_back(make_spec(datasheet_scaled("mi300x", kDerived, kMi300xContention, kHopperSustainedClock,
                                              scaled_h100_curve(mamf_share("mi300x") / mamf_share("h100")))));
  // A nominal host rank: BLAS at 50-70% of peak, half the stream bandwidth,
  // a function call per kernel (assumptions, like the preset's peaks).
  tables.push_back(make_spec({"cpu", preset_peak_tflops("cpu") * 1e12, preset_hbm_bytes_per_s("cpu"),
                              {0.50, 0.60, 0.65, 0.70, 0.70, 0.70}, 0.30, 0.25, 0.5, 1e-6,
                              "nominal CPU rank (assumptions)"}));
  return tables;
}

}  // namespace

double hopper_sustained_clock() { return kHopperSustainedClock; }

const GpuComputeSpec* find_gpu_table(std::string_view preset) {
  static const std::vector<GpuComputeSpec> tables = build_tables();
  for (const GpuComputeSpec& table : tables) {
    if (table.name == preset) return &table;
  }
  return nullptr;
}

}  // namespace ragged::sim
