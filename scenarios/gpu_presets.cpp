#include "scenarios/gpu_presets.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.hpp"

namespace ragged::scenarios {

// kDefaultClockSpread (gpu_presets.hpp): Sinha et al., "Not All GPUs Are
// Created Equal" (SC'22, arXiv 2208.11035) measured over 90% of the GPUs of
// four HPC clusters and found, for compute-bound kernels on one SKU, about 8%
// average performance variation, from power management over manufacturing
// variability. Read as the range a large fleet spans without its outliers
// (box-plot whiskers, about +-2.7 standard deviations of a normal spread),
// 8% / 5.4 = 1.5%. The reading and its transfer to A100 and H100 (the paper
// measured V100 and MI60 clusters) are **assumptions** (docs/SIMULATOR.md
// section 7 gives the sensitivity).

// Sources: NVIDIA H100/H200/A100 datasheets (dense bf16 tensor peak, FP32,
// HBM bandwidth, NVLink 4 at 900 GB/s bidirectional = 450 per direction, H800
// NVLink at 400 GB/s bidirectional); capacities as PyTorch reports them
// (torch.cuda.get_device_properties: 79.6 GiB for an 80 GB H100); board
// power (TDP) from the datasheets: 700 W for SXM5 Hopper, 400 W for A100 SXM4. The
// "h100-sxm-95g" is the H100 of TorchTitan's benchmarks (arXiv 2410.06511;
// torchtitan docs/performance.md: Grand Teton, 96 GB HBM2e at 2.4 TB/s, the
// default 500 W power limit instead of 700 W). H100, H200 and H800 are
// Hopper parts (compute capability 9.0). The cpu preset describes one host core group used by
// multi-process CPU runs; its numbers are nominal.
const std::vector<GpuPreset>& gpu_presets() {
  static const std::vector<GpuPreset> presets = {
      {"h100", "NVIDIA H100 SXM5 80 GB", 989.4, 66.9, 79.6, 3350, 450, 1.0, 700, 700, true},
      {"h100-sxm-95g", "NVIDIA H100 SXM5 96 GB HBM2e, 500 W (TorchTitan's Grand Teton)", 989.4, 66.9, 95.0, 2400, 450, 1.0, 700, 500, true},
      {"h200", "NVIDIA H200 SXM 141 GB", 989.4, 66.9, 140.4, 4800, 450, 1.0, 700, 700, true},
      {"h800", "NVIDIA H800 SXM5 80 GB", 989.4, 66.9, 79.6, 3350, 200, 1.0, 700, 700, true},
      {"a100-80g", "NVIDIA A100 SXM4 80 GB", 312.0, 19.5, 79.2, 2039, 300, 1.5, 400, 400},
      {"cpu", "host CPU rank (nominal)", 0.2, 0.2, 16.0, 20, 10, 5.0, 0, 0, false, 0.0, true},
  };
  return presets;
}

const GpuPreset* gpu_preset_or_null(std::string_view name) {
  for (const GpuPreset& preset : gpu_presets()) {
    if (preset.name == name) return &preset;
  }
  return nullptr;
}

bool is_host_rank(const std::string& preset) {
  const GpuPreset* found = gpu_preset_or_null(preset);
  return found != nullptr && found->host_rank;
}

const GpuPreset& find_gpu_preset(std::string_view name) {
  if (const GpuPreset* preset = gpu_preset_or_null(name)) return *preset;
  std::vector<std::string> names;
  for (const GpuPreset& preset : gpu_presets()) names.push_back(preset.name);
  throw InputError(fmt::format("unknown GPU preset '{}': use one of {}", name, fmt::join(names, ", ")));
}

}  // namespace ragged::scenarios
