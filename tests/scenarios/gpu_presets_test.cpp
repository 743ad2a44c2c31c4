// The GPU presets (scenarios/gpu_presets.cpp): the datasheet numbers of the
// parts added for issue 51, a source for every preset, and a scenario on each
// new preset that loads and validates.

#include <string>

#include <gtest/gtest.h>

#include "scenarios/gpu_presets.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenario_test_util.hpp"

namespace ragged::scenarios {
namespace {

TEST(GpuPresets, EveryPresetHasASource) {
  for (const GpuPreset& preset : gpu_presets()) {
    EXPECT_FALSE(preset.source.empty()) << preset.name;
    EXPECT_FALSE(preset.description.empty()) << preset.name;
    EXPECT_GE(preset.nvlink_domain_gpus, 1) << preset.name;
  }
}

// Datasheet figures (sources beside each preset in gpu_presets.cpp): dense
// bf16 is half the "with sparsity" figure the vendors print.
TEST(GpuPresets, B200IsTheHgxB200) {
  const GpuPreset& p = find_gpu_preset("b200");
  EXPECT_DOUBLE_EQ(p.peak_bf16_tflops, 4500.0 / 2);
  EXPECT_DOUBLE_EQ(p.peak_fp32_tflops, 75.0);
  EXPECT_DOUBLE_EQ(p.hbm_capacity_gib, 179.06);  // 183,359 MiB
  EXPECT_DOUBLE_EQ(p.hbm_bandwidth_gbytes_per_s, 7700);
  EXPECT_DOUBLE_EQ(p.intra_node_gbytes_per_s, 1800.0 / 2);  // NVLink 5, per direction
  EXPECT_DOUBLE_EQ(p.tdp_watts, 1000);
  EXPECT_FALSE(p.hopper);  // Blackwell: no FlashAttention-3
  EXPECT_EQ(p.nvlink_domain_gpus, 8);
}

TEST(GpuPresets, Gb200IsOneGpuOfAnNvl72Domain) {
  const GpuPreset& p = find_gpu_preset("gb200");
  EXPECT_DOUBLE_EQ(p.peak_bf16_tflops, 5000.0 / 2);
  EXPECT_DOUBLE_EQ(p.peak_bf16_tflops * 72, 360000.0 / 2);  // the rack's 360 PFLOPS sparse
  EXPECT_DOUBLE_EQ(p.peak_fp32_tflops * 72, 5760.0);
  EXPECT_DOUBLE_EQ(p.hbm_capacity_gib, 185.03);  // 189,471 MiB
  EXPECT_DOUBLE_EQ(p.hbm_bandwidth_gbytes_per_s, 8000);
  EXPECT_DOUBLE_EQ(p.intra_node_gbytes_per_s, 900);
  EXPECT_DOUBLE_EQ(p.tdp_watts, 1200);
  EXPECT_FALSE(p.hopper);
  EXPECT_EQ(p.nvlink_domain_gpus, 72);
}

TEST(GpuPresets, A100FortyGigabytesDiffersFromEightyOnlyInMemory) {
  const GpuPreset& small = find_gpu_preset("a100-40g");
  const GpuPreset& large = find_gpu_preset("a100-80g");
  EXPECT_DOUBLE_EQ(small.hbm_capacity_gib, 39.49);  // 42,405,855,232 bytes
  EXPECT_DOUBLE_EQ(small.hbm_bandwidth_gbytes_per_s, 1555);
  EXPECT_DOUBLE_EQ(small.peak_bf16_tflops, large.peak_bf16_tflops);
  EXPECT_DOUBLE_EQ(small.peak_fp32_tflops, large.peak_fp32_tflops);
  EXPECT_DOUBLE_EQ(small.intra_node_gbytes_per_s, large.intra_node_gbytes_per_s);
  EXPECT_DOUBLE_EQ(small.tdp_watts, large.tdp_watts);
}

TEST(GpuPresets, Mi300xCarriesItsInfinityFabricAggregate) {
  const GpuPreset& p = find_gpu_preset("mi300x");
  EXPECT_DOUBLE_EQ(p.peak_bf16_tflops, 1307.4);
  EXPECT_DOUBLE_EQ(p.peak_fp32_tflops, 163.4);
  EXPECT_NEAR(p.hbm_capacity_gib, 205822885888.0 / (1 << 30), 0.005);
  EXPECT_DOUBLE_EQ(p.hbm_bandwidth_gbytes_per_s, 5300);
  EXPECT_DOUBLE_EQ(p.intra_node_gbytes_per_s, 7 * 64.0);  // 7 xGMI links, 64 GB/s each way
  EXPECT_DOUBLE_EQ(p.tdp_watts, 750);
  EXPECT_FALSE(p.hopper);
}

TEST(GpuPresets, H200IsComplete) {
  const GpuPreset& p = find_gpu_preset("h200");
  const GpuPreset& h100 = find_gpu_preset("h100");
  EXPECT_DOUBLE_EQ(p.peak_bf16_tflops, h100.peak_bf16_tflops);
  EXPECT_DOUBLE_EQ(p.peak_fp32_tflops, h100.peak_fp32_tflops);
  EXPECT_DOUBLE_EQ(p.hbm_capacity_gib, 140.4);
  EXPECT_DOUBLE_EQ(p.hbm_bandwidth_gbytes_per_s, 4800);
  EXPECT_DOUBLE_EQ(p.intra_node_gbytes_per_s, 450);
  EXPECT_GT(p.intra_node_latency_us, 0);
  EXPECT_DOUBLE_EQ(p.tdp_watts, 700);
  EXPECT_DOUBLE_EQ(p.power_limit_watts, 700);
  EXPECT_TRUE(p.hopper);
}

// Generations compare the way their datasheets do.
TEST(GpuPresets, GenerationsOrderByPeakAndMemory) {
  EXPECT_GT(find_gpu_preset("gb200").peak_bf16_tflops, find_gpu_preset("b200").peak_bf16_tflops);
  EXPECT_GT(find_gpu_preset("b200").peak_bf16_tflops, find_gpu_preset("mi300x").peak_bf16_tflops);
  EXPECT_GT(find_gpu_preset("mi300x").peak_bf16_tflops, find_gpu_preset("h100").peak_bf16_tflops);
  EXPECT_GT(find_gpu_preset("mi300x").hbm_capacity_gib, 2 * find_gpu_preset("h100").hbm_capacity_gib);
}

std::string scenario_on(const std::string& preset, int gpus_per_node, int nodes) {
  return "model { catalog: \"llama3-8b\" }\n"
         "cluster { gpu { preset: \"" + preset + "\" } gpus_per_node: " + std::to_string(gpus_per_node) +
         " nodes: " + std::to_string(nodes) + " }\n"
         "training { strategy: FSDP2 }\n";
}

TEST(GpuPresets, ScenariosOnTheNewPresetsLoadAndTakeTheirNumbers) {
  for (const char* name : {"b200", "gb200", "a100-40g", "mi300x", "h200"}) {
    const GpuPreset& preset = find_gpu_preset(name);
    const Scenario s = parse_scenario(scenario_on(name, preset.nvlink_domain_gpus, 2), ScenarioFormat::kText,
                                      "preset.textproto", ".")
                           .scenario;
    EXPECT_DOUBLE_EQ(s.cluster().gpu().peak_bf16_tflops(), preset.peak_bf16_tflops) << name;
    EXPECT_DOUBLE_EQ(s.cluster().gpu().hbm_capacity_gib(), preset.hbm_capacity_gib) << name;
    EXPECT_DOUBLE_EQ(s.cluster().intra_node().bandwidth_gbytes_per_s(), preset.intra_node_gbytes_per_s) << name;
    EXPECT_DOUBLE_EQ(s.cluster().gpu().tdp_watts(), preset.tdp_watts) << name;
  }
  // The NVL72 rack as one node: 72 GPUs, one NIC each by default.
  const Scenario rack =
      parse_scenario(scenario_on("gb200", 72, 2), ScenarioFormat::kText, "preset.textproto", ".").scenario;
  EXPECT_EQ(rack.cluster().gpus_per_node(), 72);
  EXPECT_EQ(rack.cluster().nics().per_node(), 72);
}

// The MI300X's board is a full mesh of 8 (one Infinity Fabric link a peer):
// the default of a node that fits on it; NVIDIA's presets leave the NVSwitch.
TEST(GpuPresets, TheMi300xBoardIsAFullMeshOfEight) {
  const auto mesh_of = [](const std::string& preset, int gpus_per_node) {
    const Scenario s =
        parse_scenario(scenario_on(preset, gpus_per_node, 1), ScenarioFormat::kText, "preset.textproto", ".").scenario;
    return s.cluster().intra_node().has_full_mesh_gpus() ? s.cluster().intra_node().full_mesh_gpus() : 0;
  };
  EXPECT_EQ(find_gpu_preset("mi300x").full_mesh_gpus, 8);
  EXPECT_EQ(mesh_of("mi300x", 8), 8);
  EXPECT_EQ(mesh_of("mi300x", 4), 8);   // half a board
  EXPECT_EQ(mesh_of("mi300x", 16), 0);  // more than a board: not one mesh
  EXPECT_EQ(mesh_of("h100", 8), 0);
  EXPECT_EQ(mesh_of("h100", 4), 0);  // an NVSwitch slice unless the scenario says otherwise
}

TEST(GpuPresets, FlashAttention3IsRejectedOffHopper) {
  for (const char* name : {"b200", "gb200", "mi300x", "a100-40g"}) {
    std::string text = scenario_on(name, 8, 1);
    text.replace(text.find("strategy: FSDP2"), 15, "strategy: FSDP2 attention: FLASH_ATTENTION_3");
    EXPECT_NE(testing::parse_error(text).find("FLASH_ATTENTION_3 runs only on Hopper GPUs"), std::string::npos)
        << name;
  }
}

// NVLink above the GPU's own HBM bandwidth is refused by name (a what-if at
// 90 TB/s made a 12.9 s step 67 s: its collectives' HBM demand starved the
// kernels); every preset's link lies below its HBM.
TEST(GpuPresets, ALinkFasterThanTheGpusMemoryIsRefused) {
  for (const GpuPreset& preset : gpu_presets()) {
    EXPECT_LT(preset.intra_node_gbytes_per_s, preset.hbm_bandwidth_gbytes_per_s) << preset.name;
  }
  std::string text = testing::minimal_scenario();
  const std::string anchor = "  gpus_per_node: 8\n";
  text.insert(text.find(anchor) + anchor.size(), "  intra_node { bandwidth_gbytes_per_s: 90000 }\n");
  const std::string error = testing::parse_error(text);
  EXPECT_NE(error.find("cluster.intra_node.bandwidth_gbytes_per_s"), std::string::npos) << error;
  EXPECT_NE(error.find("more than the GPU's HBM bandwidth (3350 GB/s)"), std::string::npos) << error;
  text.replace(text.find("90000"), 5, "3350");
  EXPECT_EQ(testing::parse_error(text), "");
}

// A calibration file names its device as the driver does; the preset it
// describes is read from that name, and every answer is a preset.
TEST(GpuPresets, ADevicesDriverNameGivesItsPreset) {
  EXPECT_EQ(gpu_preset_for_device("NVIDIA H100 80GB HBM3"), "h100");
  EXPECT_EQ(gpu_preset_for_device("NVIDIA H200"), "h200");
  EXPECT_EQ(gpu_preset_for_device("NVIDIA H800"), "h800");
  EXPECT_EQ(gpu_preset_for_device("NVIDIA A100-SXM4-80GB"), "a100-80g");
  EXPECT_EQ(gpu_preset_for_device("NVIDIA A100-SXM4-40GB"), "a100-40g");
  EXPECT_EQ(gpu_preset_for_device("NVIDIA GB200"), "gb200");  // not b200, which its name contains
  EXPECT_EQ(gpu_preset_for_device("NVIDIA B200"), "b200");
  EXPECT_EQ(gpu_preset_for_device("AMD Instinct MI300X"), "mi300x");
  EXPECT_EQ(gpu_preset_for_device("nvidia h200"), "h200");  // case aside
  EXPECT_EQ(gpu_preset_for_device("NVIDIA L40S"), "");
  EXPECT_EQ(gpu_preset_for_device(""), "");
  for (const char* device : {"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB", "NVIDIA GB200", "AMD Instinct MI300X"}) {
    EXPECT_NE(gpu_preset_or_null(gpu_preset_for_device(device)), nullptr) << device;
  }
}

}  // namespace
}  // namespace ragged::scenarios
