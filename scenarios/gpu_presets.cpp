#include "scenarios/gpu_presets.hpp"

#include <cctype>

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
//
// The presets added for issue 51 (b200, gb200, a100-40g, mi300x) give each
// number's source beside it. Conventions, as for the presets above:
// - peak_bf16_tflops is the dense tensor peak: NVIDIA's and AMD's tables
//   print FP16/BF16 "with sparsity" (2:4 structured), twice the dense rate,
//   so their figure is halved;
// - peak_fp32_tflops is the non-tensor (vector) FP32 peak;
// - hbm_capacity_gib is the device memory the driver reports, in GiB
//   (nvidia-smi memory.total / 1024, or the HIP/ROCm total in bytes / 2^30):
//   a few tenths below the marketing GB figure;
// - intra_node_gbytes_per_s is per GPU per direction, what the simulator's
//   star of NVLink links carries (sim/platform.cpp, docs/SIMULATOR.md section 2);
// - intra_node_latency_us is an assumption for every preset (no datasheet
//   gives it): 1.0 us for NVSwitch parts as for Hopper, 1.5 us otherwise;
// - tdp_watts is the board's maximum TDP, and power_limit_watts the same
//   (the part as shipped).
//
// b200: NVIDIA HGX B200, 8 Blackwell GPUs on NVSwitch.
//   NVIDIA HGX platform, technical specifications, per GPU of HGX B200
//   (https://www.nvidia.com/en-us/data-center/hgx/): FP16/BF16 tensor 4.5
//   PFLOPS with sparsity -> 2,250 TFLOP/s dense; FP32 75 TFLOP/s; 180 GB
//   HBM3e at 7.7 TB/s (62 TB/s for the 8; early announcements said 8 TB/s);
//   5th-generation NVLink 1.8 TB/s bidirectional -> 900 GB/s per direction;
//   TDP configurable up to 1,000 W. Cross-checked: G. Lockwood, "B200"
//   (https://glennklockwood.com/garden/processors/B200): 2,250 dense BF16 at
//   1,000 W, 2x 900 GB/s NVLink 5. Capacity: nvidia-smi memory.total
//   183,359 MiB = 179.06 GiB ("NVIDIA B200, 183359 MiB" in public run logs;
//   torch's total_memory is 182,6xx MiB, 178.4 GiB).
// gb200: the Blackwell GPU of a GB200 NVL72 rack (36 Grace CPUs, 72 GPUs in
//   one NVLink domain through the NVLink Switch trays).
//   NVIDIA GB200 NVL72 specifications
//   (https://www.nvidia.com/en-us/data-center/gb200-nvl72/): per GPU
//   FP16/BF16 5 PFLOPS with sparsity -> 2,500 dense (360 PFLOPS sparse for
//   the rack / 72); FP32 80 TFLOP/s (5,760 for the rack); 186 GB HBM3e at
//   8 TB/s (576 TB/s for the rack); NVLink 1.8 TB/s bidirectional per GPU
//   (130 TB/s for the rack) -> 900 GB/s per direction; TDP configurable up to
//   1,200 W. Capacity: nvidia-smi memory.total 189,471 MiB = 185.03 GiB
//   ("NVIDIA GB200, 189471 MiB" in public run logs). nvlink_domain_gpus 72:
//   a scenario models the rack as one node of 72 GPUs (docs/SIMULATOR.md
//   section 2, "NVLink domains larger than a node").
// a100-40g: NVIDIA A100 SXM4 40 GB.
//   NVIDIA A100 datasheet
//   (https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf):
//   BF16 tensor 312 TFLOP/s dense (624 sparse); FP32 19.5; 40 GB HBM2 at
//   1,555 GB/s; NVLink 3 600 GB/s bidirectional -> 300 per direction; 400 W.
//   Capacity: CUDA deviceQuery on an A100-SXM4-40GB, totalGlobalMem
//   42,405,855,232 bytes = 39.49 GiB (Paderborn PC2 "NVIDIA A100 40GB with
//   NVLINK" page, https://upb-pc2.atlassian.net/wiki/spaces/PC2DOK/pages/1900609).
// mi300x: AMD Instinct MI300X OAM, 8 on a platform board, each linked to the
//   seven others by Infinity Fabric (xGMI): a fully connected mesh, no switch.
//   AMD Instinct MI300X data sheet
//   (https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/amd-instinct-mi300x-data-sheet.pdf):
//   304 compute units; peak BF16 matrix 1,307.4 TFLOP/s dense (2,614.9 with
//   sparsity); peak FP32 vector 163.4 TFLOP/s; 192 GB HBM3 at 5.3 TB/s;
//   7 Infinity Fabric links per GPU at 128 GB/s bidirectional each; 750 W.
//   Per GPU per direction: 7 x 64 = 448 GB/s. AMD's "Understanding RCCL
//   Bandwidth and xGMI Performance on AMD Instinct MI300X" (ROCm blog,
//   2025-03, https://rocm.blogs.amd.com/software-tools-optimization/mi300x-rccl-xgmi/README.html):
//   64 GB/s per link per direction, about 48 usable after CRC and protocol
//   overhead (75%; the simulator's NCCL share of NVLink is 80%). A ring over
//   all 8 GPUs of the board spreads its channels over all 7 links, so the
//   448 GB/s aggregate is the GPU's NVLink-like bandwidth; a group of k < 8
//   GPUs has only k - 1 links to its members, which the full mesh gives it
//   (full_mesh_gpus 8, the default of cluster.intra_node.full_mesh_gpus on a
//   node of at most 8; docs/SIMULATOR.md section 2). Capacity: ROCm reports
//   205,822,885,888 bytes (rocm-smi "VRAM Total Memory", HIP totalGlobalMem)
//   = 191.69 GiB.
//   RCCL implements NCCL's ring algorithms; the simulator treats it as NCCL.
// h200 (checked for issue 51): NVIDIA H200 SXM, https://www.nvidia.com/en-us/data-center/h200/:
//   FP16/BF16 1,979 TFLOP/s with sparsity -> 989.5 dense (the H100's
//   989.4, the same die and clocks); FP32 67 (66.9 as the H100); 141 GB
//   HBM3e at 4.8 TB/s; NVLink 900 GB/s bidirectional; up to 700 W.
//   Capacity: nvidia-smi memory.total 143,771 MiB = 140.40 GiB.
// Maximum SM clocks (MHz), what `nvidia-smi -q -d CLOCK` prints as Max Clocks:
// H200 1,980 in our own lease's device log (docs/results/gpu/device-h200.txt),
// the H100 and H800 sharing its die; A100 1,410 (its boost, NVIDIA's A100
// datasheet and HPL Rpeak note, sim/gpu_tables.cpp); B200 1,965
// (flashinfer-ai/flashinfer pull request 2899: "SM clocks drop from 1965 MHz");
// MI300X 2,100 (AMD's "Measuring Max-Achievable FLOPs - Part 2": default max
// frequency 2,100 MHz). The GB200's is not published: 0.
constexpr double kHopperMaxClock = 1980;
constexpr double kA100MaxClock = 1410;
constexpr double kB200MaxClock = 1965;
constexpr double kMi300xMaxClock = 2100;

// The GB200's Grace CPU issues eager PyTorch ops at a third of the pace of a
// DGX H100's Xeon Platinum 8480C: a torch Linear forward (bf16, hidden 2,048,
// 8,192 tokens) takes 37.08 us of CPU on a GB200 and 13.48 us on the DGX,
// with the same script (NVIDIA/TransformerEngine issue 2053, 2025-08-11,
// "High CPU overhead on Grace systems"; 33.17 us on a GH200).
constexpr double kGraceHostIssueSlowdown = 37.08 / 13.48;

const std::vector<GpuPreset>& gpu_presets() {
  constexpr const char* kHopperSource =
      "NVIDIA H100 Tensor Core GPU datasheet (https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet)";
  static const std::vector<GpuPreset> presets = {
      {"h100", "NVIDIA H100 SXM5 80 GB", 989.4, 66.9, 79.6, 3350, 450, 1.0, 700, 700, true, kDefaultClockSpread, false,
       8, kHopperSource, false, kHopperMaxClock},
      {"h100-sxm-95g", "NVIDIA H100 SXM5 96 GB HBM2e, 500 W (TorchTitan's Grand Teton)", 989.4, 66.9, 95.0, 2400, 450,
       1.0, 700, 500, true, kDefaultClockSpread, false, 8,
       "NVIDIA H100 datasheet; torchtitan docs/performance.md (Grand Teton, 96 GB HBM2e, 2.4 TB/s, 500 W)", false,
       kHopperMaxClock},
      {"h200", "NVIDIA H200 SXM 141 GB", 989.4, 66.9, 140.4, 4800, 450, 1.0, 700, 700, true, kDefaultClockSpread, false,
       8, "NVIDIA H200 specifications (https://www.nvidia.com/en-us/data-center/h200/)", false, kHopperMaxClock},
      {"h800", "NVIDIA H800 SXM5 80 GB", 989.4, 66.9, 79.6, 3350, 200, 1.0, 700, 700, true, kDefaultClockSpread, false,
       8, "NVIDIA H100 datasheet (the H800 has its die; NVLink 400 GB/s bidirectional)", false, kHopperMaxClock},
      {"a100-80g", "NVIDIA A100 SXM4 80 GB", 312.0, 19.5, 79.2, 2039, 300, 1.5, 400, 400, false, kDefaultClockSpread,
       false, 8,
       "NVIDIA A100 datasheet "
       "(https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
       "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf)",
       false, kA100MaxClock},
      {"a100-40g", "NVIDIA A100 SXM4 40 GB", 312.0, 19.5, 39.49, 1555, 300, 1.5, 400, 400, false, kDefaultClockSpread,
       false, 8,
       "NVIDIA A100 datasheet "
       "(https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
       "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf); "
       "capacity: deviceQuery totalGlobalMem 42,405,855,232 bytes",
       false, kA100MaxClock},
      {"b200", "NVIDIA B200 (HGX B200, 180 GB HBM3e, 1,000 W)", 2250.0, 75.0, 179.06, 7700, 900, 1.0, 1000, 1000, false,
       kDefaultClockSpread, false, 8,
       "NVIDIA HGX specifications, HGX B200 per GPU (https://www.nvidia.com/en-us/data-center/hgx/); "
       "capacity: nvidia-smi memory.total 183,359 MiB",
       true, kB200MaxClock},
      {"gb200", "NVIDIA GB200 NVL72 Blackwell GPU (186 GB HBM3e, 1,200 W; 72 per NVLink domain)", 2500.0, 80.0, 185.03,
       8000, 900, 1.0, 1200, 1200, false, kDefaultClockSpread, false, 72,
       "NVIDIA GB200 NVL72 specifications, per GPU (https://www.nvidia.com/en-us/data-center/gb200-nvl72/); "
       "capacity: nvidia-smi memory.total 189,471 MiB; host: NVIDIA/TransformerEngine issue 2053",
       true, 0, 0, kGraceHostIssueSlowdown},
      {"mi300x", "AMD Instinct MI300X OAM 192 GB (Infinity Fabric mesh of 8)", 1307.4, 163.4, 191.69, 5300, 448, 1.5,
       750, 750, false, kDefaultClockSpread, false, 8,
       "AMD Instinct MI300X data sheet "
       "(https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/"
       "amd-instinct-mi300x-data-sheet.pdf); "
       "AMD ROCm blog 'Understanding RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X' (7 x 64 GB/s per "
       "direction); "
       "capacity: ROCm VRAM total 205,822,885,888 bytes",
       false, kMi300xMaxClock, 8},
      {"cpu", "host CPU rank (nominal)", 0.2, 0.2, 16.0, 20, 10, 5.0, 0, 0, false, 0.0, true, 1,
       "nominal host CPU rank (assumptions)", false, 0},
  };
  return presets;
}

const GpuPreset* gpu_preset_or_null(std::string_view name) {
  for (const GpuPreset& preset : gpu_presets()) {
    if (preset.name == name) return &preset;
  }
  return nullptr;
}

bool runs_cudnn_attention(const GpuPreset& preset) { return preset.hopper || preset.blackwell; }

bool is_host_rank(const std::string& preset) {
  const GpuPreset* found = gpu_preset_or_null(preset);
  return found != nullptr && found->host_rank;
}

std::string preset_names_where(const std::function<bool(const GpuPreset&)>& keep) {
  std::vector<std::string> names;
  for (const GpuPreset& preset : gpu_presets()) {
    if (keep(preset)) names.push_back(preset.name);
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

const GpuPreset& find_gpu_preset(std::string_view name) {
  if (const GpuPreset* preset = gpu_preset_or_null(name)) return *preset;
  throw InputError(fmt::format("unknown GPU preset '{}': use one of {}", name,
                               preset_names_where([](const GpuPreset&) { return true; })));
}

std::string gpu_preset_for_device(std::string_view device_name) {
  std::string name(device_name);
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto has = [&](std::string_view part) { return name.find(part) != std::string::npos; };
  if (has("H100")) return "h100";
  if (has("H200")) return "h200";
  if (has("H800")) return "h800";
  if (has("A100")) return has("40GB") ? "a100-40g" : "a100-80g";
  if (has("GB200")) return "gb200";  // before B200, which its name contains
  if (has("B200")) return "b200";
  if (has("MI300X")) return "mi300x";
  return "";
}

}  // namespace ragged::scenarios
