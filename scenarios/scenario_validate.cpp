#include <algorithm>
#include <cstring>
#include <unordered_set>

#include <fmt/format.h>

#include "common/input_limits.hpp"
#include "common/units.hpp"
#include "scenarios/field_ranges.hpp"
#include "scenarios/gpu_presets.hpp"
#include "scenarios/scenario_checker.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::scenarios {
namespace {

using validation::Checker;


void check_model(const ModelSource& model, Checker& c) {
  switch (model.source_case()) {
    case ModelSource::SOURCE_NOT_SET:
      c.fail("model", "no model given: set model { catalog: \"llama3-8b\" } (see `ragged models`), "
                      "hf_config: \"path/config.json\" or inline_spec { ... }");
      break;
    case ModelSource::kCatalog:
      if (model.catalog().empty()) c.fail("model.catalog", "empty catalog name: see `ragged models`");
      break;
    case ModelSource::kHfConfig:
      if (model.hf_config().empty()) c.fail("model.hf_config", "empty path: give the path of a config.json");
      break;
    case ModelSource::kInlineSpec: break;  // checked when the model is built
  }
}

void check_cluster(const Cluster& cluster, Checker& c) {
  const Gpu& gpu = cluster.gpu();
  if (!gpu.preset().empty()) {
    if (gpu_preset_or_null(gpu.preset()) == nullptr) {
      c.fail("cluster.gpu.preset", fmt::format("unknown GPU preset '{}': use one of {}, or leave it empty "
                                               "and give peak_bf16_tflops and hbm_capacity_gib",
                                               gpu.preset(), preset_names_where([](const GpuPreset&) { return true; })));
      return;
    }
  } else if (!gpu.has_peak_bf16_tflops() || !gpu.has_hbm_capacity_gib()) {
    c.fail("cluster.gpu", "no GPU given: set preset (h100, h200, h800, a100-80g, cpu, ...) or "
                          "peak_bf16_tflops and hbm_capacity_gib");
    return;
  }
  if (gpu.has_tdp_watts() && gpu.has_power_limit_watts()) {
    const double floor = limits::kMinPowerFraction * gpu.tdp_watts();
    if (gpu.power_limit_watts() > gpu.tdp_watts() || gpu.power_limit_watts() < floor) {
      c.fail("cluster.gpu.power_limit_watts",
             fmt::format("power_limit_watts is {}; it must be from {} (a quarter of tdp_watts: no GPU runs lower) to "
                         "tdp_watts ({})", gpu.power_limit_watts(), floor, gpu.tdp_watts()));
    }
  }
  if (gpu.has_locked_clock_mhz()) {
    const GpuPreset* preset = gpu.preset().empty() ? nullptr : gpu_preset_or_null(gpu.preset());
    if (preset == nullptr || preset->max_clock_mhz <= 0) {
      c.fail("cluster.gpu.locked_clock_mhz",
             fmt::format("a locked clock needs the GPU's maximum SM clock, which preset '{}' does not know: remove "
                         "locked_clock_mhz, or use a preset that knows it ({})",
                         gpu.preset(), preset_names_where([](const GpuPreset& p) { return p.max_clock_mhz > 0; })));
    } else if (gpu.locked_clock_mhz() > preset->max_clock_mhz) {
      c.fail("cluster.gpu.locked_clock_mhz",
             fmt::format("locked_clock_mhz is {}; the {}'s maximum SM clock is {} MHz: lock it at most there",
                         gpu.locked_clock_mhz(), gpu.preset(), preset->max_clock_mhz));
    }
  }
  // A collective reads and writes the GPU's memory as it sends: no GPU sends
  // over NVLink faster than its HBM delivers (the simulator shares HBM
  // between collectives and kernels by their demand; beyond this it would
  // starve the kernels of a bandwidth no link can use).
  if (gpu.has_hbm_bandwidth_gbytes_per_s() && cluster.has_intra_node() &&
      cluster.intra_node().bandwidth_gbytes_per_s() > gpu.hbm_bandwidth_gbytes_per_s()) {
    c.fail("cluster.intra_node.bandwidth_gbytes_per_s",
           fmt::format("{} GB/s per GPU and direction is more than the GPU's HBM bandwidth ({} GB/s): a GPU cannot "
                       "send faster than its memory delivers; set it at most cluster.gpu.hbm_bandwidth_gbytes_per_s",
                       cluster.intra_node().bandwidth_gbytes_per_s(), gpu.hbm_bandwidth_gbytes_per_s()));
  }
  if (cluster.intra_node().has_full_mesh_gpus() && cluster.intra_node().full_mesh_gpus() < cluster.gpus_per_node()) {
    c.fail("cluster.intra_node.full_mesh_gpus",
           fmt::format("full_mesh_gpus is {}, fewer than gpus_per_node ({}): the board holds every GPU of the node; "
                       "set it to the board's GPUs (4 on an HGX 4-GPU board) or remove it for an NVSwitch",
                       cluster.intra_node().full_mesh_gpus(), cluster.gpus_per_node()));
  }
  const int64_t gpus = int64_t{cluster.gpus_per_node()} * cluster.nodes();
  if (gpus > limits::kMaxGpus) {
    c.fail("cluster.nodes", fmt::format("gpus_per_node {} x nodes {} is {} GPUs; at most {} (2^20) are simulated",
                                        cluster.gpus_per_node(), cluster.nodes(), format_integer(gpus),
                                        format_integer(limits::kMaxGpus)));
  }
  const Topology& topology = cluster.topology();
  if (topology.has_fat_tree() && topology.fat_tree().switch_radix() % 2 != 0) {
    c.fail("cluster.topology.fat_tree.switch_radix",
           fmt::format("switch_radix is {}; it must be an even port count (half down, half up)",
                       topology.fat_tree().switch_radix()));
  }
}

void check_granularity_spec(const GranularitySpec& spec, const std::string& path, Checker& c) {
  switch (spec.kind()) {
    case ROWS: c.at_least(path + ".rows", spec.rows(), 1, "rows per shard-boundary granule"); break;
    case BLOCK:
      c.at_least(path + ".block_rows", spec.block_rows(), 1, "tile height");
      c.at_least(path + ".block_cols", spec.block_cols(), 1, "tile width");
      break;
    case GRANULARITY_UNSPECIFIED:
      c.fail(path + ".kind", "kind is not set: use ELEMENT, ROWS, BLOCK or MATRIX");
      break;
    default: break;
  }
}

// FlashAttention-3 uses Hopper's TMA and warpgroup MMA (Shah et al. 2024):
// it needs a Hopper preset, or a GPU given by its numbers.
// The memory outside the allocator must leave it some: a context and NCCL
// buffers as large as the GPU make every run an OOM for a reason no report shows.
void check_allocator(const Training& t, const Gpu& gpu, Checker& c) {
  if (!gpu.has_hbm_capacity_gib() || !t.allocator().has_outside_gib()) return;
  if (t.allocator().outside_gib() >= gpu.hbm_capacity_gib()) {
    c.fail("training.allocator.outside_gib",
           fmt::format("{} GiB outside PyTorch's allocator (CUDA context and NCCL buffers) leaves nothing of the "
                       "GPU's {} GiB (cluster.gpu.hbm_capacity_gib): set it below that, or leave it unset for the "
                       "measured default (about 1 GiB)",
                       t.allocator().outside_gib(), gpu.hbm_capacity_gib()));
  }
}

void check_metrics(const ModelOutputs& outputs, Checker& c) {
  if (outputs.metric_cross_entropies() > 0 && (!outputs.logits() || !outputs.held_until_next_forward())) {
    c.fail("training.outputs.metric_cross_entropies",
           "the metrics read the returned logits after the backward: set outputs.logits and "
           "outputs.held_until_next_forward true (Composer keeps state.outputs), or set it to 0");
  }
}

// What the training loop does around the model: what it holds of the
// outputs, whether it steps the optimizer, when it reduces, what it compiles.
void check_loop(const Training& t, Checker& c) {
  check_metrics(t.outputs(), c);
  if (!steps_optimizer(t)) {
    const bool sharded = t.strategy() == FSDP1 || t.strategy() == FSDP2 || t.strategy() == RAGGED ||
                         t.strategy() == VESCALE_PAPER || t.strategy() == ZERO3 || t.strategy() == STRATEGY_UNSPECIFIED;
    if (!sharded || t.mesh().pp() > 1) {
      c.fail("training.optimizer_step", "a loop without optimizer steps is modelled for FSDP1, FSDP2, RAGGED and ZERO3 "
                                        "without pipeline stages: remove it, or use one of those strategies");
    }
  }
  if (t.accumulation_gradient_sync() != EVERY_MICRO_BATCH && t.accumulation_gradient_sync() != LAST_MICRO_BATCH) {
    c.unknown_value("training.accumulation_gradient_sync", t.accumulation_gradient_sync(),
                    "EVERY_MICRO_BATCH or LAST_MICRO_BATCH", "EVERY_MICRO_BATCH");
  } else if (t.accumulation_gradient_sync() == LAST_MICRO_BATCH && t.strategy() != FSDP2 && t.strategy() != DDP) {
    c.fail("training.accumulation_gradient_sync", "LAST_MICRO_BATCH is FSDP2's set_requires_gradient_sync(False) or "
                                                  "DDP's no_sync() on the accumulation micro-batches: set strategy: "
                                                  "FSDP2 or DDP, or remove it");
  } else if (!steps_optimizer(t) && t.accumulation_gradient_sync() == LAST_MICRO_BATCH) {
    c.fail("training.accumulation_gradient_sync", "without optimizer steps no gradient is ever reduced: remove it");
  } else if (t.accumulation_gradient_sync() == LAST_MICRO_BATCH && t.mesh().pp() > 1) {
    c.fail("training.accumulation_gradient_sync", "with pipeline stages the schedule decides when gradients are "
                                                  "reduced (training.pipeline.gradient_sync): remove it");
  }
  if (t.compile_scope() != WHOLE_MODEL && t.compile_scope() != TRANSFORMER_BLOCKS &&
      t.compile_scope() != MODEL_WITHOUT_LOSS) {
    c.unknown_value("training.compile_scope", t.compile_scope(), "WHOLE_MODEL, TRANSFORMER_BLOCKS or MODEL_WITHOUT_LOSS",
                    "WHOLE_MODEL");
  } else if (t.compile_scope() != WHOLE_MODEL && !t.compiled()) {
    c.fail("training.compile_scope", fmt::format("compile_scope {} says what torch.compile covers, but compiled is "
                                                 "not true: set compiled: true, or remove compile_scope",
                                                 CompileScope_Name(t.compile_scope())));
  }
}

// FLASH_ATTENTION_3 runs on Hopper only; CUDNN_ATTENTION has measured rates on
// Hopper and Blackwell only (a GPU given by its numbers is not checked).
void check_kernel_runs_here(const Training& t, const Gpu& gpu, Checker& c) {
  if ((t.attention() != FLASH_ATTENTION_3 && t.attention() != CUDNN_ATTENTION) || gpu.preset().empty()) return;
  const bool flash3 = t.attention() == FLASH_ATTENTION_3;
  const auto runs = [flash3](const GpuPreset& p) { return flash3 ? p.hopper : runs_cudnn_attention(p); };
  const GpuPreset* preset = gpu_preset_or_null(gpu.preset());
  if (preset == nullptr || runs(*preset)) return;
  c.fail("training.attention",
         fmt::format("{} runs only on {} GPUs ({}), not on cluster.gpu.preset '{}': use FLASH_ATTENTION_2 (or MATH)",
                     flash3 ? "FLASH_ATTENTION_3" : "CUDNN_ATTENTION (measured rates)",
                     flash3 ? "Hopper" : "Hopper and Blackwell", preset_names_where(runs), gpu.preset()));
}

void check_kernels(const Training& t, const Gpu& gpu, Checker& c) {
  if (t.attention() != MATH && t.attention() != FLASH_ATTENTION_2 && t.attention() != FLASH_ATTENTION_3 &&
      t.attention() != TRITON_FLASH_ATTENTION && t.attention() != MEMORY_EFFICIENT &&
      t.attention() != CUDNN_ATTENTION) {
    c.unknown_value("training.attention", t.attention(),
                    "MATH, FLASH_ATTENTION_2, FLASH_ATTENTION_3, TRITON_FLASH_ATTENTION, MEMORY_EFFICIENT or "
                    "CUDNN_ATTENTION",
                    "FLASH_ATTENTION_2");
  }
  if (t.attention_mask() != ATTENTION_MASK_UNSPECIFIED && t.attention_mask() != CAUSAL &&
      t.attention_mask() != DENSE) {
    c.unknown_value("training.attention_mask", t.attention_mask(), "CAUSAL or DENSE", "CAUSAL");
  } else if (t.attention_mask() == DENSE && t.attention() != MATH && t.attention() != MEMORY_EFFICIENT) {
    c.fail("training.attention_mask", "a DENSE mask is an attn_mask tensor, which FlashAttention's kernels do not "
                                      "take (SDPA then runs its efficient backend): set attention: MEMORY_EFFICIENT, "
                                      "or MATH if the math backend runs");
  }
  if (t.loss() != FP32_LOGITS && t.loss() != FUSED && t.loss() != CHUNKED && t.loss() != SHIFTED_FP32_LOGITS &&
      t.loss() != LOG_SOFTMAX && t.loss() != LOSS_PARALLEL) {
    c.unknown_value("training.loss", t.loss(),
                    "FP32_LOGITS, FUSED, CHUNKED, SHIFTED_FP32_LOGITS, LOG_SOFTMAX or LOSS_PARALLEL", "FP32_LOGITS");
  } else if (t.outputs().logits() && t.loss() == CHUNKED) {
    c.fail("training.outputs.logits", "the CHUNKED loss never makes the whole logits for the model to return: set "
                                      "outputs.logits false, or use another loss");
  }
  if (t.norm() != EAGER_NORM && t.norm() != FUSED_NORM) {
    c.unknown_value("training.norm", t.norm(), "EAGER_NORM or FUSED_NORM", "EAGER_NORM");
  }
  if (t.kv_heads() != NATIVE_KV && t.kv_heads() != REPEATED_KV) {
    c.unknown_value("training.kv_heads", t.kv_heads(), "NATIVE_KV or REPEATED_KV", "NATIVE_KV");
  }
  if (t.projections() != CHECKPOINT_PROJECTIONS && t.projections() != FUSED_PROJECTIONS) {
    c.unknown_value("training.projections", t.projections(), "CHECKPOINT_PROJECTIONS or FUSED_PROJECTIONS",
                    "CHECKPOINT_PROJECTIONS");
  }
  // The busiest load's ceiling (experts / top_k) needs the model: planner/resolved_scenario.cpp.
  if (t.experts().kernel() != GROUPED && t.experts().kernel() != PADDED && t.experts().kernel() != MULTI_STREAM) {
    c.unknown_value("training.experts.kernel", t.experts().kernel(), "GROUPED, PADDED or MULTI_STREAM", "GROUPED");
  }
  if (t.experts().epilogue() != FUSED_EPILOGUE && t.experts().epilogue() != EAGER_EPILOGUE) {
    c.unknown_value("training.experts.epilogue", t.experts().epilogue(), "FUSED_EPILOGUE or EAGER_EPILOGUE",
                    "FUSED_EPILOGUE");
  }
  if (t.experts().checkpointing() == SAVED_NAMES) {
    c.fail("training.experts.checkpointing",
           "SAVED_NAMES names tensors of a whole block, not of its experts: use "
           "NONE, SELECTIVE or FULL, or leave it unset (the block's)");
  } else if (t.experts().checkpointing() != CHECKPOINTING_UNSPECIFIED && t.experts().checkpointing() != NONE &&
             t.experts().checkpointing() != SELECTIVE && t.experts().checkpointing() != FULL) {
    c.unknown_value("training.experts.checkpointing", t.experts().checkpointing(), "NONE, SELECTIVE or FULL",
                    "the block's (training.activation_checkpointing)");
  }
  if (!DType_IsValid(t.experts().reduce())) {
    c.unknown_value("training.experts.reduce", t.experts().reduce(), "FP32, BF16 or FP16",
                    "training.precision.reduce");
  } else if (t.experts().reduce() != DTYPE_UNSPECIFIED && !reduces_unit_by_unit(t.strategy())) {
    c.fail("training.experts.reduce", fmt::format("{} reduces every gradient in its buffers' one dtype: remove "
                                                  "experts.reduce, or use a strategy that reduces unit by unit "
                                                  "(ragged, fsdp1, fsdp2, zero3)",
                                                  strategy_name(t.strategy())));
  }
  check_kernel_runs_here(t, gpu, c);
}


// DDP (torch's DistributedDataParallel) replicates the whole model on every
// GPU and is data parallelism alone here.
void check_ddp(const Training& t, Checker& c) {
  if (t.strategy() != DDP) {
    if (t.has_ddp()) {
      c.fail("training.ddp", "the ddp block holds DistributedDataParallel's arguments: set strategy: DDP, or remove it");
    }
    return;
  }
  const Mesh& m = t.mesh();
  if (m.tp() > 1 || m.cp() > 1 || m.ep() > 1 || m.pp() > 1) {
    c.fail("training.mesh", fmt::format("DDP runs data parallelism alone, but the mesh has tp {}, cp {}, ep {}, pp {}: "
                                        "set them to 1, or use an FSDP strategy",
                                        m.tp(), m.cp(), m.ep(), m.pp()));
  } else if (t.shard_group_size() != 1) {
    c.fail("training.shard_group_size", fmt::format("DDP replicates every parameter on every GPU, but shard_group_size "
                                                    "is {}: set it to 1 or leave it unset",
                                                    t.shard_group_size()));
  }
  if (t.precision().reduce() != t.precision().master()) {
    c.fail("training.precision.reduce", fmt::format("DDP all-reduces the gradients in the parameters' dtype (master "
                                                    "{}), but reduce is {}: set reduce: {} or leave it unset",
                                                    DType_Name(t.precision().master()),
                                                    DType_Name(t.precision().reduce()),
                                                    DType_Name(t.precision().master())));
  }
}

// Megatron-LM's DistributedDataParallel with its distributed optimizer:
// Adam over contiguous shards of the main-grad buffer.
void check_megatron_ddp(const Training& t, Checker& c) {
  if (t.strategy() != MEGATRON_DDP) {
    if (t.has_megatron_ddp()) {
      c.fail("training.megatron_ddp", "the megatron_ddp block holds Megatron-LM's DistributedDataParallelConfig: set "
                                      "strategy: MEGATRON_DDP, or remove it");
    }
    return;
  }
  const MegatronDataParallel& d = t.megatron_ddp();
  if (d.overlap_param_gather() && !d.overlap_grad_reduce()) {
    c.fail("training.megatron_ddp.overlap_param_gather", "Megatron-LM overlaps the parameter all-gather only with "
                                                         "overlap_grad_reduce (arguments.py): set overlap_grad_reduce: "
                                                         "true, or overlap_param_gather: false");
  }
  if (t.precision().reduce() != FP32 && t.precision().reduce() != t.precision().param()) {
    c.fail("training.precision.reduce", fmt::format("Megatron's main gradients are FP32 (accumulate_allreduce_grads_in_"
                                                    "fp32) or the parameters' {} (grad_reduce_in_bf16), but reduce is "
                                                    "{}: set one of them",
                                                    DType_Name(t.precision().param()), DType_Name(t.precision().reduce())));
  }
  if (!t.optimizer().has_adamw()) {
    c.fail("training.optimizer", "Megatron's distributed optimizer steps Adam over contiguous shards of its buffers: "
                                 "set adamw, or use an FSDP strategy");
  }
}

void check_training(const Training& t, int64_t gpus, Checker& c) {
  check_mesh(t, gpus, c);
  check_ddp(t, c);
  check_megatron_ddp(t, c);
  const int64_t tokens = int64_t{t.micro_batch_size()} * t.sequence_length();
  if (tokens > limits::kMaxMicroBatchTokens) {
    c.fail("training.micro_batch_size",
           fmt::format("micro_batch_size {} x sequence_length {} is {} tokens per micro-batch; at most {} (2^26): "
                       "lower one of them", t.micro_batch_size(), t.sequence_length(), format_integer(tokens),
                       format_integer(limits::kMaxMicroBatchTokens)));
  }
  if (t.checkpoint_every() > 1 && t.activation_checkpointing() != FULL) {
    c.fail("training.checkpoint_every",
           fmt::format("checkpoint_every {} picks the blocks that full checkpointing recomputes, but "
                       "activation_checkpointing is not FULL: set activation_checkpointing: FULL, or remove "
                       "checkpoint_every", t.checkpoint_every()));
  }
  if (t.saved_activations_size() > 0 && t.activation_checkpointing() != SAVED_NAMES) {
    c.fail("training.saved_activations", "names what SAVED_NAMES checkpointing keeps, but activation_checkpointing is "
                                         "not SAVED_NAMES: set activation_checkpointing: SAVED_NAMES, or remove it");
  }
  if (t.precision().param() == FP16 && t.precision().master() != FP32) {
    c.fail("training.precision.master", "fp16 parameters need fp32 master weights: set master: FP32");
  }

  const Granularity& g = t.granularity();
  check_granularity_spec(g.default_spec(), "training.granularity.default_spec", c);
  for (int i = 0; i < g.overrides_size(); ++i) {
    std::string path = fmt::format("training.granularity.overrides[{}]", i);
    if (g.overrides(i).pattern().empty()) c.fail(path + ".pattern", "empty pattern: give a tensor-name glob such as '*.experts.*'");
    check_granularity_spec(g.overrides(i).granularity(), path + ".granularity", c);
  }

  const Optimizer& o = t.optimizer();
  if (o.has_adamw() && !AdamWImplementation_IsValid(o.adamw().implementation())) {
    c.unknown_value("training.optimizer.adamw.implementation", o.adamw().implementation(),
                    "FUSED_KERNEL, FOREACH or PER_PARAMETER", "FUSED_KERNEL");
  }
  // The AdamW inside 8-bit Adam, Muon and Shampoo gives their hyperparameters only.
  const auto nested_implementation = [&](const AdamW& a, const char* path) {
    if (a.implementation() != FUSED_KERNEL) {
      c.fail(path, "the kernels of an update are chosen for plain adamw only; remove implementation here");
    }
  };
  if (o.has_adam8bit()) nested_implementation(o.adam8bit().adam(), "training.optimizer.adam8bit.adam.implementation");
  if (o.has_muon()) nested_implementation(o.muon().adamw(), "training.optimizer.muon.adamw.implementation");
  if (o.has_shampoo()) nested_implementation(o.shampoo().adamw(), "training.optimizer.shampoo.adamw.implementation");
  // Tiles below 1 are refused by their range (field_ranges.cpp); no division by them here.
  if (o.has_adam8bit() && o.adam8bit().block_rows() >= 1 && o.adam8bit().block_cols() >= 1) {
    const Adam8bit& a = o.adam8bit();
    const GranularitySpec& spec = g.default_spec();
    bool whole_tiles = (spec.kind() == BLOCK && spec.block_rows() % a.block_rows() == 0) ||
                       (spec.kind() == ROWS && spec.rows() % a.block_rows() == 0) || spec.kind() == MATRIX;
    if (!whole_tiles) {
      c.fail("training.granularity.default_spec", fmt::format(
          "8-bit Adam quantizes {}x{} tiles on one rank: use kind: BLOCK with block_rows a multiple of {} (or "
          "no granularity)", a.block_rows(), a.block_cols(), a.block_rows()));
    }
  }
}

// `count` chosen at random or the listed `indices`, each below `limit`, once.
template <class Slow>
void check_choice(const Slow& slow, const google::protobuf::RepeatedField<int32_t>& indices, const std::string& path,
                  const char* list, const char* what, int64_t limit, Checker& c) {
  if (slow.count() > 0 && !indices.empty()) {
    c.fail(path + ".count", fmt::format("count and {} are both set; give one: a count chosen by seed, or the {}", list, what));
    return;
  }
  if (slow.count() == 0 && indices.empty()) {
    c.fail(path, fmt::format("no {} named: set count (chosen by seed) or {}", what, list));
    return;
  }
  if (slow.count() > limit) {
    c.fail(path + ".count", fmt::format("count is {}; the cluster has {} {}", slow.count(), format_integer(limit), what));
  }
  std::vector<int32_t> seen(indices.begin(), indices.end());
  std::sort(seen.begin(), seen.end());
  for (int i = 0; i < indices.size(); ++i) {
    const std::string at = fmt::format("{}.{}[{}]", path, list, i);
    if (indices[i] >= limit) {
      c.fail(at, fmt::format("{} is {}; the cluster's {} are numbered 0 to {}", list, indices[i], what, format_integer(limit - 1)));
    } else if (std::count(seen.begin(), seen.end(), indices[i]) > 1) {
      c.fail(at, fmt::format("{} {} is listed twice; list each once", std::string(list).substr(0, std::strlen(list) - 1),
                             indices[i]));
      return;
    }
  }
}

void check_whatif(const WhatIf& w, int64_t gpus, int64_t nodes, Checker& c) {
  if (w.has_slow_gpus()) check_choice(w.slow_gpus(), w.slow_gpus().ranks(), "whatif.slow_gpus", "ranks", "GPUs", gpus, c);
  if (w.has_slow_links()) check_choice(w.slow_links(), w.slow_links().nodes(), "whatif.slow_links", "nodes", "nodes", nodes, c);
  if (w.has_jitter() && w.jitter().distribution() != NORMAL && w.jitter().distribution() != LOGNORMAL) {
    c.unknown_value("whatif.jitter.distribution", w.jitter().distribution(), "NORMAL or LOGNORMAL", "NORMAL");
  }
}

}  // namespace

// Range problems first (field_ranges.cpp), then the rules between fields,
// leaving out a second problem with a field already reported.
std::vector<FieldIssue> validate_scenario(const Scenario& scenario) {
  std::vector<FieldIssue> issues = check_field_ranges(scenario);
  Checker c;
  check_model(scenario.model(), c);
  check_cluster(scenario.cluster(), c);
  if (scenario.cluster().gpus_per_node() >= 1 && scenario.cluster().nodes() >= 1) {
    check_training(scenario.training(), total_gpus(scenario), c);
  }
  check_kernels(scenario.training(), scenario.cluster().gpu(), c);
  check_loop(scenario.training(), c);
  check_allocator(scenario.training(), scenario.cluster().gpu(), c);
  if (scenario.has_whatif() && scenario.cluster().gpus_per_node() >= 1 && scenario.cluster().nodes() >= 1) {
    check_whatif(scenario.whatif(), total_gpus(scenario), scenario.cluster().nodes(), c);
  }
  // A field the range checks already reported keeps that one problem (a
  // set: a list of 400,000 bad entries must not cost their square).
  std::unordered_set<std::string> reported;
  for (const FieldIssue& issue : issues) reported.insert(issue.path);
  for (FieldIssue& issue : c.take()) {
    if (reported.insert(issue.path).second) issues.push_back(std::move(issue));
  }
  return issues;
}

}  // namespace ragged::scenarios
