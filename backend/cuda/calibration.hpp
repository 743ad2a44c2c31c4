#pragma once
// The simulator's calibration file (docs/SIMULATOR.md, "Calibration file"),
// as gpu-validate writes it from its measurements, and the names and peaks
// of the GPUs it knows.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/line_fit.hpp"

namespace ragged::backend::gpu {

struct CalibrationGemm {
  int64_t m = 0, n = 0, k = 0;
  double seconds = 0;  // one call, kernel time (median of CUDA-event timings)
};

struct Calibration {
  std::string device;
  double peak_flops = 0;  // dense bf16 FLOP/s
  double hbm_bytes_per_s = 0;
  std::vector<CalibrationGemm> gemm;
  // 0 and 0: not measured, left out of the file (the simulator then takes
  // its defaults for the scenario's GPU).
  double attention_forward_efficiency = 0;
  double attention_backward_efficiency = 0;
  double memory_efficiency = 0;  // in (0, 1]
  double launch_seconds = 0;
  int sms = 0;  // 0: left out (the simulator takes the scenario preset's)
  // Whether a GEMM beside held SMs ran as a persistent kernel (gpu-validate's
  // section (e)); -1: not measured, left out (the preset's GPU class decides).
  int persistent_gemms = -1;
  // The caching allocator's cudaMalloc and cudaFree, each seconds (intercept)
  // + seconds per GiB (slope) (gpu-validate's section (f)); all four 0: not
  // measured, left out (the simulator keeps its assumption).
  LineFit malloc_calls, free_calls;
  // The rate a GEMM keeps over seconds of back-to-back calls against its
  // point in `gemm` (gpu-validate's section (b2)), in (0, 1]; 0: not
  // measured, left out (the simulator then takes the points as sustained).
  double sustained_clock = 0;
  std::string source;
};

// The calibration as JSON, every field the simulator requires, GEMM points
// sorted by FLOPs (the simulator interpolates between neighbours). Throws
// InternalError when a field is outside what the simulator accepts
// (ComputeModel::from_calibration would reject the file).
std::string calibration_json(const Calibration& calibration);

// Dense bf16 peak FLOP/s by device name: 989.4e12 for H100, H200 and H800
// (SXM), 312e12 for A100; 0 for a device Ragged does not know.
double dense_bf16_peak_flops(std::string_view device_name);
// The simulator's GPU class for a device name (scenarios::gpu_preset_for_device:
// "h100", "h200", "a100-40g", ...), "" when unknown.
std::string device_class(std::string_view device_name);
// A file-name-safe name: "NVIDIA H100 80GB HBM3" -> "h100-80gb-hbm3".
std::string device_slug(std::string_view device_name);

}  // namespace ragged::backend::gpu
