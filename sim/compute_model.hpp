#pragma once
// How long a compute, recompute, optimizer or memory-bound op takes on one
// GPU: FLOPs and bytes against the GPU's peaks, with efficiencies per op
// shape from a documented default table per GPU class (H100, H200, H800,
// A100, CPU) or from a calibration file measured by the backend.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/program.hpp"
#include "sim/memory_model.hpp"

namespace ragged::sim {

// One measured (or tabulated) point: a GEMM of this shape ran at this rate.
// A GEMM kernel's K loop: each output tile steps through k in slices of 64,
// and the first 4 slices only fill its pipeline (the same assumption that
// derives the 512^3 point of the H100 table, sim/gpu_tables.cpp). A GEMM
// shallower than the shapes its table measured at its FLOPs (a small hidden
// size, a narrow projection's input gradient) spends a larger share of its
// loop filling, a deeper one (a weight gradient over many tokens) a smaller.
// The H100's; a part whose kernels fill deeper has its own (gemm_depth.hpp).
constexpr double kGemmPipelineFillK = 4 * 64;
// k / (k + fill): the share of a tile's loop that does useful MACs.
double gemm_k_loop_efficiency(double k, double fill = kGemmPipelineFillK);

// A table's rate at some FLOPs and the depth k of the shapes measured there
// (interpolated geometrically between two points, as the rate is in log FLOPs).
struct GemmRate {
  double flops_per_s = 0;
  double k = 0;
};

struct GemmPoint {
  int64_t m = 0, n = 0, k = 0;
  double flops_per_s = 0;
};

struct GpuComputeSpec {
  std::string name;                  // "h100", "h800", ... or the device a calibration came from
  double peak_flops = 0;             // dense bf16 FLOP/s
  double hbm_bytes_per_s = 0;
  std::vector<GemmPoint> gemm;       // rates by shape; interpolated in log(FLOPs)
  double attention_forward_efficiency = 0;   // fraction of peak FlashAttention reaches, forward
  double attention_backward_efficiency = 0;  // and backward
  double memory_efficiency = 0;      // achieved fraction of HBM bandwidth for streaming kernels
  double launch_seconds = 0;         // per kernel launch that the GPU waits for
  std::string source;                // where the numbers come from
  // Sustained SM clock relative to the tables' (1: no power limit below the
  // TDP). Scales compute-bound rates (GEMMs, attention), not memory-bound ones.
  double clock_factor = 1.0;
  // Tensor-core clock of a GPU a training loop keeps busy for seconds,
  // relative to the short microbenchmark bursts its GEMM and attention
  // rates come from (docs/SIMULATOR.md section 7, "Sustained clock"): the
  // Hopper tables' is calibrated; 1 elsewhere, and for calibration files.
  double sustained_clock = 1.0;
  double flash3_forward_efficiency = 0;      // as attention_*_efficiency for FlashAttention-3; 0 where it
  double flash3_backward_efficiency = 0;     // does not run (not Hopper, or a calibration file)
  double cudnn_forward_efficiency = 0;       // as attention_*_efficiency for SDPA's cuDNN backend; 0 where no
  double cudnn_backward_efficiency = 0;      // rate is known (not Hopper or Blackwell, or a calibration file)
  // The share of the head-dim-64 rate the shape curve gives (FlashAttention-3's
  // on Hopper, sim/attention_shape.hpp) that the part's cuDNN attention keeps,
  // per direction; 1 at head dim 128 and wider, log-linear between (Blackwell:
  // measured against Hopper, sim/gpu_tables.cpp; 1 elsewhere).
  double cudnn_narrow_head_forward_share = 1.0;
  double cudnn_narrow_head_backward_share = 1.0;
  // What NCCL's kernels take from concurrent work (docs/SIMULATOR.md section
  // 6b): the GPU's streaming multiprocessors, and the CTAs (one per channel,
  // each holding an SM) a ring collective runs within one node and across
  // nodes. 0 SMs: no sharing modelled.
  int sms = 0;
  int nccl_ctas_intra_node = 0;
  int nccl_ctas_inter_node = 0;
  // The GPU's GEMM kernels are persistent: one CTA per SM, each looping over
  // its share of the output tiles (cuBLAS on Hopper). Beside a collective
  // that holds SMs, the CTAs that find none wait a whole CTA's work
  // (docs/SIMULATOR.md section 6b). Only with sms > 0.
  bool persistent_gemms = false;
  // The caching allocator's driver calls as a calibration file measured them
  // (ragged-gpu-validate section (f)); absent: the assumption of section 8.
  std::optional<DriverCallCosts> driver_calls = std::nullopt;
  // The depth of k its GEMM kernels spend filling their pipeline
  // (gemm_k_loop_efficiency; per part in gemm_depth.hpp).
  double gemm_fill_k = kGemmPipelineFillK;
};

// One op's time on its GPU, split by the resource that bounds it: a fixed
// part (kernel launches), a part bound by the SMs (GEMMs, attention, other
// math) and a part bound by HBM bandwidth (element-wise traffic, copies,
// casts). The GEMMs of a GPU whose GEMM kernels are persistent are kept
// apart, one entry per kernel, since each runs in waves of CTAs of its own;
// the other SM-bound work is listed by kernel too, and the HBM-bound part
// runs as `memory_kernels` equal kernels: a collective issued meanwhile waits
// for the kernel then dispatching CTAs, not for the op (section 6b).
// seconds = fixed + sm + persistent + memory when the op runs alone.
struct OpCost {
  double fixed = 0;
  double sm = 0;
  std::vector<double> sm_kernels;  // the SM-bound kernels' work, in issue order (sums to sm)
  std::vector<double> persistent;  // each persistent GEMM kernel's work
  double memory = 0;
  int64_t memory_kernels = 0;  // the kernels the HBM-bound part runs as (>= 1 when memory > 0)
  double seconds() const;
};

// An op's time by what runs it, with the work behind each part: what
// `ragged simulate --breakdown` prints. cost() is its sum by resource.
struct ComputeParts {
  double gemm = 0;               // GEMM kernels' work
  double gemm_flops = 0;
  double attention = 0;          // the attention core's work
  double attention_flops = 0;
  double other = 0;              // non-GEMM math
  double memory = 0;             // element-wise traffic, copies and casts at the HBM rate
  double memory_bytes = 0;
  double launches = 0;  // every kernel's launch (GEMM launches spread over streams overlap)
  int64_t kernels = 0;
  int64_t memory_kernels = 0;  // the element-wise kernels among them
};

// The sustained SM clock under a power limit, relative to the clock at the
// TDP: dynamic power goes as f * V^2 and V follows f in the DVFS range, so
// it goes as f^3; a fixed share of the TDP (memory, leakage, fans) does not
// scale. clock = ((limit - fixed) / (tdp - fixed))^(1/3), fixed = 20% of TDP
// (an assumption, docs/SIMULATOR.md). 1 when no limit below the TDP is set.
double power_limited_clock(double tdp_watts, double power_limit_watts);

// The expected largest of n independent standard normal draws (0 for n <= 1;
// 0.564 for 2, 1.424 for 8, 3.04 for 512), by numerical integration of
// n x phi(x) Phi(x)^(n-1).
double expected_max_standard_normal(int64_t n);

// The clock the slowest of `gpus` GPUs runs at, relative to the fleet's mean,
// when their sustained SM clocks spread normally with relative standard
// deviation `spread`: 1 - spread x expected_max_standard_normal(gpus), at
// least 0.1. Synchronous training meets at every collective, so every rank
// runs at this pace (docs/SIMULATOR.md section 7).
double slowest_gpu_clock(double spread, int64_t gpus);

// The documented default table of a preset (sim/gpu_tables.cpp) at the
// preset's datasheet peaks; nullptr for a name without a table.
const GpuComputeSpec* find_gpu_table(std::string_view preset);
// Hopper's calibrated sustained clock, which the tables derived from the
// H100's carry too (docs/results/calibration.md has its fit).
double hopper_sustained_clock();

class ComputeModel {
 public:
  explicit ComputeModel(GpuComputeSpec spec);

  // Defaults for a GPU preset name (h100, h100-sxm-95g, h200, h800, a100-80g,
  // a100-40g, b200, gb200, mi300x, cpu); unknown names scale the H100 table
  // to `peak_flops`. The peaks are
  // the scenario's (they may be overridden there).
  static ComputeModel defaults(const std::string& preset, double peak_flops, double hbm_bytes_per_s);
  // A calibration file written by the backend (JSON, format in
  // docs/SIMULATOR.md); throws InputError naming the file and field. A file
  // without "attention" (gpu-validate does not measure it) takes the
  // attention efficiencies of the default table of `preset`.
  static ComputeModel from_calibration(const std::filesystem::path& path, const std::string& preset = "h100");

  // Seconds of one op of the Program on one GPU (compute kinds use op.work;
  // memory-bound kinds use op.bytes; collectives and alloc/free are 0 here).
  double seconds(const planner::Op& op) const { return cost(op).seconds(); }
  OpCost cost(const planner::Op& op) const;
  ComputeParts parts(const planner::Op& op) const;
  double gemm_seconds(const planner::Gemm& gemm) const;
  double attention_seconds(const planner::AttentionWork& attention, bool backward) const;
  double memory_seconds(double bytes) const;
  // Achieved HBM bandwidth of streaming kernels (bytes/s): what memory-bound
  // work and collectives share.
  double memory_bytes_per_s() const { return spec_.hbm_bytes_per_s * spec_.memory_efficiency; }

  const GpuComputeSpec& spec() const { return spec_; }
  // The same model with compute-bound rates scaled to a power-limited clock.
  ComputeModel with_clock_factor(double factor) const;
  // The same model with the SM and NCCL CTA counts of `gpu`.
  ComputeModel with_contention(const GpuComputeSpec& gpu) const;
  // The same model with its tensor-core rates at another sustained clock
  // (a share of the microbenchmarks' clocks): the calibration report's fit.
  ComputeModel with_sustained_clock(double share) const;

 private:
  GemmRate gemm_rate(double flops) const;
  double fastest_gemm_rate() const;
  // Whether the GEMMs run as persistent kernels here (section 6b: only with SM sharing).
  bool persistent_gemms_run() const { return spec_.persistent_gemms && spec_.sms > 0; }
  // An op launched on the SMs a transfer leaves (Op::ctas >= 0: Transformer
  // Engine's sm_margin) runs its GEMMs SM-bound, not one CTA per SM.
  bool persistent_gemms_of(const planner::Op& op) const { return persistent_gemms_run() && op.ctas < 0; }
  // A GEMM's time without its launch.
  double gemm_work_seconds(const planner::Gemm& gemm) const;
  // parts(), and each GEMM kernel's work into `kernels` (its persistent or
  // its SM-bound list) when given.
  ComputeParts parts_of(const planner::Op& op, OpCost* kernels) const;
  double attention_work_seconds(const planner::AttentionWork& attention, bool backward) const;

  GpuComputeSpec spec_;
};

}  // namespace ragged::sim
