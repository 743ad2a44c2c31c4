#include "sim/plausible_inputs.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "scenarios/gpu_presets.hpp"
#include "scenarios/scenario_rules.hpp"
#include "sim/prediction_regime.hpp"

namespace ragged::sim {
namespace {

using scenarios::FieldOverride;

std::string number(double value) { return fmt::format("{:g}", value); }

InputValue set_one(const std::string& label, const std::string& field, const std::string& value) {
  return {label, {FieldOverride{field, value}}};
}

// NIC bandwidth per GPU generation, per NIC and direction: what clusters of
// that generation were built with. Ampere: AWS p4d's 100 Gb/s EFA adapters to
// DGX A100's 200 Gb/s HDR; Hopper: 200 Gb/s HDR to DGX H100's 400 Gb/s NDR;
// Blackwell: 400 Gb/s NDR to ConnectX-8's 800 Gb/s.
std::pair<double, double> nic_range(const std::string& generation) {
  if (generation == "ampere") return {100, 200};
  if (generation == "blackwell") return {400, 800};
  return {200, 400};
}

void add_network(const scenarios::LoadedScenario& loaded, std::vector<PlausibleInput>& out) {
  const scenarios::Cluster& cluster = loaded.scenario.cluster();
  const scenarios::Nics& written = loaded.written.cluster().nics();
  if (cluster.nodes() < 2) return;  // one node: the network carries nothing
  const int per_node = cluster.gpus_per_node();
  const int fewer = std::max(1, per_node / 2);
  if (fewer < per_node) {
    // One NIC per GPU (DGX, HGX) down to one per two GPUs (AWS p4d: 4 for 8 A100s).
    out.push_back({"NICs per node", "cluster.nics.per_node", number(cluster.nics().per_node()),
                   !written.has_per_node(), true, true,
                   {set_one(number(fewer), "cluster.nics.per_node", number(fewer)),
                    set_one(number(per_node), "cluster.nics.per_node", number(per_node))}});
  }
  const auto [low, high] = nic_range(gpu_generation(cluster.gpu().preset()));
  const std::string field = "cluster.nics.bandwidth_gbits_per_s";
  out.push_back({"NIC bandwidth", field, number(cluster.nics().bandwidth_gbits_per_s()) + " Gb/s",
                 !written.has_bandwidth_gbits_per_s(), true, true,
                 {set_one(number(low) + " Gb/s", field, number(low)), set_one(number(high) + " Gb/s", field, number(high))}});
}

// Two to four NVIDIA GPUs a node: an NVSwitch board's slice (a cloud
// instance of half an HGX 8-GPU) or an HGX 4-GPU board, whose NVLink is a
// full mesh (docs/SIMULATOR.md section 2): collectives over fewer than the
// board's four GPUs get fewer links.
void add_nvlink_board(const scenarios::LoadedScenario& loaded, std::vector<PlausibleInput>& out) {
  const scenarios::Cluster& cluster = loaded.scenario.cluster();
  const scenarios::GpuPreset* preset = scenarios::gpu_preset_or_null(cluster.gpu().preset());
  if (!preset || preset->host_rank || preset->full_mesh_gpus > 0 || preset->nvlink_domain_gpus != 8) return;
  // A scenario that states the board has no other to offer (an override cannot unset it).
  if (cluster.gpus_per_node() < 2 || cluster.gpus_per_node() > 4 || cluster.intra_node().has_full_mesh_gpus()) return;
  const std::string field = "cluster.intra_node.full_mesh_gpus";
  out.push_back({"NVLink between the node's GPUs",
                 field,
                 "NVSwitch",
                 true,
                 true,
                 false,
                 {set_one("HGX 4-GPU board (NVLink full mesh of 4)", field, "4")}});
}

// A power cap from 70% of the board's TDP (H100s run at 490-500 W in
// TorchTitan's Grand Teton, A100s at 280 W) to the TDP itself.
void add_power(const scenarios::LoadedScenario& loaded, std::vector<PlausibleInput>& out) {
  const scenarios::Gpu& gpu = loaded.scenario.cluster().gpu();
  const scenarios::GpuPreset* preset = scenarios::gpu_preset_or_null(gpu.preset());
  if (!preset || preset->host_rank || gpu.tdp_watts() <= 0) return;
  const double tdp = gpu.tdp_watts();
  const double capped = std::round(0.7 * tdp);
  // A preset that states its own cap (h100-sxm-95g: 500 W) states the value.
  const bool left = !loaded.written.cluster().gpu().has_power_limit_watts() && preset->power_limit_watts >= tdp;
  const std::string field = "cluster.gpu.power_limit_watts";
  out.push_back({"GPU power limit", field, number(gpu.power_limit_watts()) + " W", left, true, true,
                 {set_one(number(capped) + " W", field, number(capped)), set_one(number(tdp) + " W", field, number(tdp))}});
}

// The memory variants of the scenario's GPU: the other presets of its die,
// as capacity and bandwidth (the scenario's other GPU fields kept).
void add_memory_variant(const scenarios::LoadedScenario& loaded, std::vector<PlausibleInput>& out) {
  const scenarios::Gpu& gpu = loaded.scenario.cluster().gpu();
  static const std::vector<std::vector<std::string>> families = {{"a100-40g", "a100-80g"},
                                                                 {"h100", "h100-sxm-95g", "h200"}};
  for (const auto& family : families) {
    if (std::find(family.begin(), family.end(), gpu.preset()) == family.end()) continue;
    PlausibleInput input{"GPU memory variant", "cluster.gpu.hbm_capacity_gib",
                         fmt::format("{:.1f} GiB, {} GB/s", gpu.hbm_capacity_gib(), number(gpu.hbm_bandwidth_gbytes_per_s())),
                         false, true, false, {}};
    for (const std::string& name : family) {
      const scenarios::GpuPreset& variant = scenarios::find_gpu_preset(name);
      if (std::abs(variant.hbm_capacity_gib - gpu.hbm_capacity_gib()) < 0.5) continue;
      input.values.push_back({fmt::format("{} ({:.1f} GiB, {} GB/s)", name, variant.hbm_capacity_gib,
                                          number(variant.hbm_bandwidth_gbytes_per_s)),
                              {FieldOverride{"cluster.gpu.hbm_capacity_gib", number(variant.hbm_capacity_gib)},
                               FieldOverride{"cluster.gpu.hbm_bandwidth_gbytes_per_s",
                                             number(variant.hbm_bandwidth_gbytes_per_s)}}});
    }
    if (!input.values.empty()) out.push_back(std::move(input));
  }
}

PlausibleInput choice(const std::string& name, const std::string& field, const std::string& simulated, bool left,
                      const std::vector<std::string>& choices) {
  PlausibleInput input{name, field, simulated, left, false, false, {}};
  for (const std::string& c : choices) {
    if (c != simulated) input.values.push_back(set_one(c, field, c));
  }
  return input;
}

void add_software(const scenarios::LoadedScenario& loaded, std::vector<PlausibleInput>& out) {
  const scenarios::Training& t = loaded.scenario.training();
  const scenarios::Training& w = loaded.written.training();
  const scenarios::GpuPreset* preset = scenarios::gpu_preset_or_null(loaded.scenario.cluster().gpu().preset());
  if (preset && preset->host_rank) return;  // the nominal CPU rank runs no GPU kernels
  std::vector<std::string> attention = {"FLASH_ATTENTION_2", "TRITON_FLASH_ATTENTION"};
  if (preset && preset->hopper) attention.push_back("FLASH_ATTENTION_3");
  // cuDNN's Hopper rates are FlashAttention-3's: a choice of its own on Blackwell only
  if (preset && preset->blackwell) attention.push_back("CUDNN_ATTENTION");
  out.push_back(choice("attention kernel", "training.attention", scenarios::AttentionKernel_Name(t.attention()),
                       w.attention() == scenarios::ATTENTION_KERNEL_UNSPECIFIED, attention));
  std::vector<std::string> losses = {"FP32_LOGITS", "FUSED", "CHUNKED"};
  // torch's loss_parallel where the logits are sharded by vocabulary (torchtitan's loss under tp)
  if (scenarios::vocabulary_sharded_logits(t.mesh())) losses.push_back("LOSS_PARALLEL");
  out.push_back(choice("loss kernel", "training.loss", scenarios::LossKernel_Name(t.loss()),
                       w.loss() == scenarios::LOSS_KERNEL_UNSPECIFIED, losses));
  out.push_back(choice("torch.compile", "training.compiled", t.compiled() ? "true" : "false", !w.has_compiled(),
                       {"false", "true"}));
  // How the sequence-parallel collectives meet the GEMMs (docs/SIMULATOR.md
  // section 11): a stack's choice the scenario may not know.
  if (t.mesh().tp() > 1 && t.mesh().sequence_parallel()) {
    out.push_back(choice("tensor-parallel overlap", "training.mesh.tp_overlap",
                         scenarios::TpOverlap_Name(t.mesh().tp_overlap()),
                         w.mesh().tp_overlap() == scenarios::TP_OVERLAP_UNSPECIFIED,
                         {"TP_OVERLAP_NONE", "ASYNC_TP", "USERBUFFERS"}));
  }
  // The routed experts split over tp or whole (docs/MESH.md, "Whole
  // experts"): a stack's choice the scenario may not know, offered where the
  // shard group holds whole ep groups either way.
  const scenarios::Mesh& mesh = t.mesh();
  if (mesh.tp() > 1 && mesh.ep() > 1 && mesh.sequence_parallel() && t.shard_group_size() % mesh.ep() == 0) {
    out.push_back(choice("expert tensor parallelism", "training.mesh.expert_tp", std::to_string(mesh.expert_tp()),
                         !w.mesh().has_expert_tp(), {std::to_string(mesh.tp()), "1"}));
  }
  // Megatron-Core's overlap of the expert all-to-alls with another
  // micro-batch's compute (docs/MESH.md): a stack's choice, offered where the
  // scenario could run it.
  const bool full_recompute =
      t.activation_checkpointing() == scenarios::FULL || t.experts().checkpointing() == scenarios::FULL;
  if (scenarios::expert_overlap_runs(t.strategy(), mesh.ep(), mesh.pp(), t.pipeline().schedule(), full_recompute)) {
    out.push_back(choice("expert all-to-all overlap", "training.experts.overlap_all_to_all",
                         t.experts().overlap_all_to_all() ? "true" : "false", !w.experts().has_overlap_all_to_all(),
                         {"false", "true"}));
  }
  // When a pipeline stage reduces its FSDP gradients (docs/SIMULATOR.md
  // section 12): the runtime's choice (its own post-backward hooks, torch's
  // pipelining, or every micro-batch), which a scenario often leaves to the
  // default. Listed, not widening the band: the validation rows set it where
  // their source says.
  if (mesh.pp() > 1 && scenarios::reduces_unit_by_unit(t.strategy())) {
    std::vector<std::string> syncs = {"PER_UNIT_GRADIENT_SYNC", "AFTER_CHUNK_BACKWARD"};
    if (t.pipeline().schedule() != scenarios::ZERO_BUBBLE_H1 && t.loss() != scenarios::CHUNKED) {
      syncs.push_back("EVERY_MICRO_BATCH_GRADIENT_SYNC");
    }
    out.push_back(choice("pipeline gradient sync", "training.pipeline.gradient_sync",
                         scenarios::StageGradientSync_Name(t.pipeline().gradient_sync()), false, syncs));
  }
  out.push_back(choice("allocator expandable segments", "training.allocator.expandable_segments",
                       t.allocator().expandable_segments() ? "true" : "false",
                       !w.allocator().has_expandable_segments(), {"false", "true"}));
  // The CUDA context and NCCL's buffers: the default's estimate to 1 GiB more
  // (more communicators, a larger NCCL_BUFFSIZE).
  const double outside = t.allocator().outside_gib();
  const std::string field = "training.allocator.outside_gib";
  out.push_back({"memory outside the allocator", field, fmt::format("{:.2f} GiB", outside),
                 !w.allocator().has_outside_gib(), false, true,
                 {set_one(fmt::format("{:.2f} GiB", outside), field, number(outside)),
                  set_one(fmt::format("{:.2f} GiB", outside + 1), field, number(outside + 1))}});
}

// A mixture of experts' router, from balanced to collapsed (every token on
// the same top_k experts): a state of the training run, not of its
// configuration (an untrained router can collapse; KempnerForge's MoE report
// logs a near-zero smallest/largest expert count over its first steps), so it
// moves the prediction without widening its band.
void add_expert_load(const planner::ResolvedScenario& resolved, std::vector<PlausibleInput>& out) {
  const models::ArchConfig& arch = resolved.model.arch;
  if (!arch.is_moe()) return;
  const scenarios::Training& t = resolved.loaded.scenario.training();
  const double collapsed = models::max_expert_load(arch);
  if (collapsed <= 1.0) return;
  const std::string field = "training.experts.busiest_load";
  out.push_back({"expert load (busiest / mean)", field, number(t.experts().busiest_load()),
                 !resolved.loaded.written.training().experts().has_busiest_load(), false, true,
                 {set_one("1 (balanced)", field, "1"),
                  set_one(fmt::format("{} (collapsed: {} experts / top {})", number(collapsed), arch.experts,
                                      arch.experts_per_token),
                          field, number(collapsed))}});
}

// A grouped-query attention's keys and values, read as kv heads or copied
// to every query head first (docs/MODELS.md, "Repeated keys and values"): a
// choice of the stack's model code the scenario may not know.
void add_kv_heads(const planner::ResolvedScenario& resolved, std::vector<PlausibleInput>& out) {
  const models::ArchConfig& arch = resolved.model.arch;
  if (arch.attention == models::AttentionKind::kMla || arch.kv_heads >= arch.heads) return;
  const scenarios::Training& t = resolved.loaded.scenario.training();
  out.push_back(choice("keys and values (grouped-query)", "training.kv_heads", scenarios::KeyValueHeads_Name(t.kv_heads()),
                       resolved.loaded.written.training().kv_heads() == scenarios::KEY_VALUE_HEADS_UNSPECIFIED,
                       {"NATIVE_KV", "REPEATED_KV"}));
}

// q/k/v and a gated MLP's gate and up, stored as the checkpoint's
// projections or fused (docs/MODELS.md, "Fused projections"): Megatron-Core
// and nanotron fuse them, Hugging Face and torchtitan do not.
void add_projections(const planner::ResolvedScenario& resolved, std::vector<PlausibleInput>& out) {
  const models::ArchConfig& arch = resolved.model.arch;
  models::KernelChoices fused = resolved.model.kernels;
  fused.fused_projections = true;
  const models::ArchConfig stored = models::stored_arch(arch, fused);
  const bool fusable = stored.qkv_fused != arch.qkv_fused || stored.gate_up_fused != arch.gate_up_fused;
  const scenarios::Training& t = resolved.loaded.scenario.training();
  if (!fusable && t.projections() != scenarios::FUSED_PROJECTIONS) return;
  out.push_back(choice("q/k/v and gate/up projections", "training.projections",
                       scenarios::Projections_Name(t.projections()),
                       resolved.loaded.written.training().projections() == scenarios::PROJECTIONS_UNSPECIFIED,
                       {"CHECKPOINT_PROJECTIONS", "FUSED_PROJECTIONS"}));
}

// The routed experts' clamp and down-projection bias, fused or Megatron-Core's
// eager passes (docs/MESH.md, "Expert epilogues"): an input only of a model
// that asks for either (GPT-OSS).
void add_expert_epilogue(const planner::ResolvedScenario& resolved, std::vector<PlausibleInput>& out) {
  const models::ArchConfig& arch = resolved.model.arch;
  if (!arch.is_moe() || (arch.glu_clamp <= 0 && !arch.expert_bias)) return;
  const scenarios::Training& t = resolved.loaded.scenario.training();
  out.push_back(
      choice("the experts' clamp and bias", "training.experts.epilogue",
             scenarios::ExpertEpilogue_Name(t.experts().epilogue()),
             resolved.loaded.written.training().experts().epilogue() == scenarios::EXPERT_EPILOGUE_UNSPECIFIED,
             {"FUSED_EPILOGUE", "EAGER_EPILOGUE"}));
}

}  // namespace

std::vector<PlausibleInput> plausible_inputs(const planner::ResolvedScenario& resolved) {
  const scenarios::LoadedScenario& loaded = resolved.loaded;
  std::vector<PlausibleInput> out;
  add_network(loaded, out);
  add_nvlink_board(loaded, out);
  add_power(loaded, out);
  add_memory_variant(loaded, out);
  add_software(loaded, out);
  add_expert_load(resolved, out);
  add_kv_heads(resolved, out);
  add_projections(resolved, out);
  add_expert_epilogue(resolved, out);
  return out;
}

}  // namespace ragged::sim
