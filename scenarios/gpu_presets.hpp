#pragma once
// Published GPU characteristics used when a scenario names a preset. Every
// number carries its source in gpu_presets.cpp; a scenario may override any.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ragged::scenarios {

// The spread of the sustained SM clock across GPUs of one SKU
// (cluster.gpu.clock_spread; source and derivation in gpu_presets.cpp).
inline constexpr double kDefaultClockSpread = 0.015;

struct GpuPreset {
  std::string name;
  std::string description;
  double peak_bf16_tflops = 0;   // dense tensor-core peak
  double peak_fp32_tflops = 0;   // non-tensor-core FP32
  double hbm_capacity_gib = 0;   // what the framework sees as total device memory
  double hbm_bandwidth_gbytes_per_s = 0;
  double intra_node_gbytes_per_s = 0;  // NVLink per GPU per direction
  double intra_node_latency_us = 0;
  double tdp_watts = 0;
  double power_limit_watts = 0;  // as shipped or as the cluster runs it
  bool hopper = false;           // SM 9.0: runs FlashAttention-3 (training.attention)
  double clock_spread = kDefaultClockSpread;  // 0 for the nominal cpu rank
  // A nominal host CPU rank: no CUDA context, no NCCL communicator, no eager
  // PyTorch issuing its kernels.
  bool host_rank = false;
  // The GPUs of one NVLink (or Infinity Fabric) domain as the part is sold:
  // 8 on an HGX/OAM baseboard, 72 in a GB200 NVL72 rack. A scenario models
  // the domain as one node (cluster.gpus_per_node); this is the value to give
  // it, not a default the loader applies.
  int nvlink_domain_gpus = 8;
  // Where the numbers come from (vendor datasheet names and addresses; the
  // derivations are in the comments of gpu_presets.cpp).
  std::string source;
  bool blackwell = false;  // SM 10.0: runs SDPA's cuDNN backend at measured rates (training.attention), as Hopper does
  // The maximum SM clock (nvidia-smi's Max Clocks, MHz), the clock the
  // compute tables' bursts ran at; 0 where not known (cluster.gpu.locked_clock_mhz is refused there).
  double max_clock_mhz = 0;
  // The board joins its GPUs in a full mesh of this many, no switch (the
  // MI300X's Infinity Fabric: one link to each of seven peers): the default
  // of cluster.intra_node.full_mesh_gpus where the node fits on one board.
  // 0: an NVSwitch.
  int full_mesh_gpus = 0;
  // How much longer the CPU the part ships beside takes to issue an eager
  // PyTorch op than the x86 host of a DGX H100 (Xeon Platinum 8480C), whose
  // pace the simulator's host costs have (docs/SIMULATOR.md section 6c).
  double host_issue_slowdown = 1.0;
};

// Whether SDPA's cuDNN backend has measured rates on `preset` (Hopper and
// Blackwell parts; sim/gpu_tables.cpp).
bool runs_cudnn_attention(const GpuPreset& preset);

const std::vector<GpuPreset>& gpu_presets();
// The names of the presets `keep` accepts, joined by ", " (for the errors
// that say which presets to use instead).
std::string preset_names_where(const std::function<bool(const GpuPreset&)>& keep);
// nullptr when `name` is not a preset (a GPU given by its numbers).
const GpuPreset* gpu_preset_or_null(std::string_view name);
// Whether `preset` names the nominal host rank (GpuPreset::host_rank).
bool is_host_rank(const std::string& preset);
// Throws InputError listing the presets when `name` is unknown.
const GpuPreset& find_gpu_preset(std::string_view name);
// The preset of a device as its driver names it ("NVIDIA H200" -> "h200",
// "NVIDIA A100-SXM4-40GB" -> "a100-40g"); "" for a device no preset describes.
// What a calibration file measured on the device applies to.
std::string gpu_preset_for_device(std::string_view device_name);

}  // namespace ragged::scenarios
