// A torchtitan job config (TOML, torchtitan/models/*/train_configs/*.toml
// up to torchtitan's move to Python configs in February 2026) as a scenario.
// torchtitan trains with FSDP2 on a device mesh pp x dp_replicate x dp_shard
// x cp x tp (ep carved out of dp_shard x cp), as Ragged's training.mesh does.

#include <algorithm>
#include <charconv>
#include <tuple>

#include <fmt/format.h>

#include "common/input_limits.hpp"
#include "importers/format_importers.hpp"
#include "importers/scenario_draft.hpp"

namespace ragged::importers {
namespace {

using scenarios::Checkpointing;

// torchtitan's model name and flavor -> the catalog model with its architecture.
std::string catalog_model(const std::string& name, const std::string& flavor) {
  struct Known {
    const char* name;
    const char* flavor;
    const char* catalog;
  };
  static constexpr Known kKnown[] = {
      {"llama3", "8B", "llama3-8b"},
      {"llama3", "70B", "llama3-70b"},
      {"llama3", "405B", "llama3.1-405b"},
      {"deepseek_v3", "671B", "deepseek-v3"},
  };
  for (const Known& k : kKnown) {
    if (name == k.name && flavor == k.flavor) return k.catalog;
  }
  return "";
}

scenarios::DType dtype_of(const ConfigDocument& doc, const std::string& path) {
  const std::string text = *doc.string(path);
  if (text == "bfloat16") return scenarios::BF16;
  if (text == "float32") return scenarios::FP32;
  if (text == "float16") return scenarios::FP16;
  doc.fail(path, fmt::format("\"{}\" is not a dtype torchtitan takes; give \"bfloat16\" or \"float32\"", text));
}

std::string why_ignored(std::string_view path) {
  if (path.starts_with("job.") || path.starts_with("profiling.") || path.starts_with("metrics.") ||
      path.starts_with("validation.")) {
    return "logging, profiling and evaluation, outside the training step";
  }
  if (path.starts_with("checkpoint.")) {
    return "checkpoint saving, outside the step (`ragged simulate --goodput` costs checkpoints from the scenario's "
           "goodput block)";
  }
  if (path.starts_with("lr_scheduler.") || path.starts_with("optimizer.")) {
    return "optimizer settings with no bearing on a step's time or memory";
  }
  for (std::string_view run : {"training.steps", "training.dataset", "training.dataset_path", "training.max_norm",
                               "training.seed", "training.deterministic", "training.gc_freq", "training.warmup_steps",
                               "training.gc_debug", "training.skip_nan_inf", "training.max_norm_type"}) {
    if (path == run) return "the run's length, data and numerics, no bearing on one step";
  }
  if (path == "model.hf_assets_path" || path == "model.tokenizer_path") return "model files (tokenizer, weights), not the architecture";
  if (path.starts_with("quantize.") || path.starts_with("float8.") || path.starts_with("mx.")) {
    return "quantization settings left unused: model.converters enables no quantization";
  }
  if (path.starts_with("comm.") || path.starts_with("fault_tolerance.") || path.starts_with("memory_estimation.")) {
    return "process-group timeouts, fault tolerance and estimation tools, outside the step";
  }
  if (path.starts_with("activation_checkpoint.")) return "settings of another activation_checkpoint.mode";
  if (path.starts_with("parallelism.pipeline") || path.starts_with("experimental.pipeline") ||
      path.starts_with("parallelism.context_parallel") || path.starts_with("experimental.context_parallel")) {
    return "settings of a parallelism this config does not use";
  }
  return "not read by the importer (unknown to it)";
}

}  // namespace

ImportedConfig import_torchtitan(const ConfigDocument& doc, const ImportOptions& options, const std::string& name) {
  ScenarioDraft draft(doc, options, name);
  scenarios::Scenario& s = draft.scenario();
  scenarios::Training& t = draft.training();
  if (auto description = doc.string("job.description")) {
    s.set_description(*description);
    draft.mapped("description", fmt::format("\"{}\"", *description), {"job.description"});
  }

  // The model: name and flavor, as the catalog has them.
  const std::string model_name = doc.string("model.name").value_or("");
  const std::string flavor = doc.string("model.flavor").value_or("");
  draft.set_model(catalog_model(model_name, flavor), {"model.name", "model.flavor"}, "model.flavor",
                  flavor.empty() ? std::string("the config names no model (model.name and model.flavor)")
                                 : fmt::format("torchtitan's {} flavor \"{}\" is not in Ragged's catalog (its llama3 8B, "
                                               "70B and 405B and deepseek_v3 671B are)",
                                               model_name, flavor));

  // The mesh. torchtitan before 2025 kept the degrees under [training]
  // (context and pipeline under [experimental]); [parallelism] since.
  auto key = [&doc](const char* field) {
    for (const char* section : {"parallelism.", "training.", "experimental."}) {
      const std::string path = std::string(section) + field;
      if (doc.has(path)) return path;
    }
    return std::string("parallelism.") + field;
  };
  // The 2024 layout: no [parallelism] table (its defaults differ: the optimizer).
  const bool old_layout = !doc.has_section("parallelism") && doc.has("training.batch_size");
  const std::string replicate_path = key("data_parallel_replicate_degree");
  const std::string shard_path = key("data_parallel_shard_degree");
  const std::string tp_path = key("tensor_parallel_degree");
  const std::string cp_path = key("context_parallel_degree");
  const std::string pp_path = key("pipeline_parallel_degree");
  const std::string ep_path = key("expert_parallel_degree");
  const int64_t replicate = doc.integer(replicate_path, 1, limits::kMaxGpus).value_or(1);
  const int64_t shard = doc.integer(shard_path, -1, limits::kMaxGpus).value_or(-1);
  if (shard == 0) doc.fail(shard_path, "0 shards nothing; give -1 (every GPU left) or N >= 1");
  const int64_t tp = doc.integer(tp_path, 1, limits::kMaxGpus).value_or(1);
  const int64_t cp = doc.integer(cp_path, 1, limits::kMaxGpus).value_or(1);
  const int64_t pp = doc.integer(pp_path, 1, limits::kMaxGpus).value_or(1);
  const int64_t ep = doc.integer(ep_path, 1, limits::kMaxGpus).value_or(1);
  // Each degree is at most 2^20, and so must their product be (a GPU count):
  // checked one factor at a time, so that no product overflows.
  int64_t product = 1;
  for (const auto& [path, degree] : {std::pair{&replicate_path, replicate}, std::pair{&tp_path, tp},
                                     std::pair{&cp_path, cp}, std::pair{&pp_path, pp},
                                     std::pair{&shard_path, std::max<int64_t>(shard, 1)}}) {
    product *= degree;
    if (product > limits::kMaxGpus) {
      doc.fail(*path, fmt::format("the degrees multiply to more than {} GPUs; give smaller degrees", limits::kMaxGpus));
    }
  }
  const int64_t others = replicate * tp * cp * pp;
  const std::vector<std::string> degrees = {replicate_path, shard_path, tp_path, cp_path, pp_path};
  if (shard > 0 && options.gpus > 0 && shard * others != options.gpus) {
    doc.fail(shard_path,
             fmt::format("{} with the other degrees makes {} GPUs, but --gpus is {}; give --gpus {}, or set it to -1 "
                         "(every GPU the other degrees leave)",
                         shard, shard * others, options.gpus, shard * others));
  }
  const int64_t gpus = draft.set_cluster(shard > 0 ? shard * others : 0, degrees, shard_path,
                                         "-1 (every GPU the other degrees leave), so the config does not fix the GPU count");
  if (gpus % others != 0) {
    doc.fail(tp_path, fmt::format("replicate {} x tp {} x cp {} x pp {} = {} does not divide the {} GPUs; give --gpus a "
                                  "multiple of {}",
                                  replicate, tp, cp, pp, others, gpus, others));
  }
  const int64_t dp_shard = gpus / others;
  t.set_strategy(scenarios::FSDP2);
  draft.assumed("training.strategy", "FSDP2", "torchtitan shards with FSDP2 (fully_shard)");
  scenarios::Mesh* mesh = t.mutable_mesh();
  auto set_degree = [&](const char* field, int64_t value, const std::string& path, void (scenarios::Mesh::*set)(int32_t)) {
    if (!doc.has(path)) return;
    if (value > 1) (mesh->*set)(static_cast<int32_t>(value));
    draft.mapped(fmt::format("training.mesh.{}", field), fmt::format("{}", value), {path});
  };
  set_degree("dp_replicate", replicate, replicate_path, &scenarios::Mesh::set_dp_replicate);
  if (shard > 0) mesh->set_dp_shard(static_cast<int32_t>(shard));
  draft.mapped("training.mesh.dp_shard", fmt::format("{}", dp_shard), {shard_path});
  set_degree("tp", tp, tp_path, &scenarios::Mesh::set_tp);
  set_degree("cp", cp, cp_path, &scenarios::Mesh::set_cp);
  set_degree("pp", pp, pp_path, &scenarios::Mesh::set_pp);
  set_degree("ep", ep, ep_path, &scenarios::Mesh::set_ep);
  if (auto etp = doc.integer("parallelism.expert_tensor_parallel_degree", 1, limits::kMaxGpus)) {
    if (*etp == 1) draft.agrees("parallelism.expert_tensor_parallel_degree", "experts not split by tp, as Ragged has them");
    else draft.not_modelled("parallelism.expert_tensor_parallel_degree", "tp inside experts is not modelled (experts are cut by ep only)", true);
  }
  if (auto async = doc.boolean("parallelism.enable_async_tensor_parallel")) {
    if (!*async || tp == 1) draft.agrees("parallelism.enable_async_tensor_parallel", "tp's collectives run as their own ops");
    else draft.not_modelled("parallelism.enable_async_tensor_parallel",
                            "async TP (collectives fused into micro-pipelined GEMMs) is not modelled: tp's all-gathers "
                            "and reduce-scatters run as their own ops, so exposed tp time is overestimated", true);
  }
  if (auto reshard = doc.string("parallelism.fsdp_reshard_after_forward")) {
    const bool value = *reshard == "always" || (*reshard == "default" && pp == 1);
    if (*reshard != "always" && *reshard != "never" && *reshard != "default") {
      doc.fail("parallelism.fsdp_reshard_after_forward", fmt::format("\"{}\": give \"default\", \"always\" or \"never\"", *reshard));
    }
    t.set_reshard_after_forward(value);
    draft.mapped("training.reshard_after_forward", value ? "true" : "false", {"parallelism.fsdp_reshard_after_forward"});
  }

  // The batch: local_batch_size sequences per data-parallel rank (split into
  // pipeline micro-batches under pp), global_batch_size by accumulation.
  const char* local_path = doc.has("training.local_batch_size") ? "training.local_batch_size" : "training.batch_size";
  int64_t local = doc.integer(local_path, 1, limits::kMaxMicroBatch).value_or(0);
  if (local == 0) {
    if (options.micro_batch == 0) doc.fail("training.local_batch_size", "not in the config; give --micro-batch N");
    local = options.micro_batch;
    draft.from_command_line("training.micro_batch_size", fmt::format("{}", local), "--micro-batch");
  }
  if (pp > 1) {
    const int64_t pipeline_micro =
        doc.integer("parallelism.pipeline_parallel_microbatch_size", 1, limits::kMaxMicroBatch).value_or(1);
    if (local % pipeline_micro != 0) {
      doc.fail("parallelism.pipeline_parallel_microbatch_size",
               fmt::format("{} does not divide {} = {}; give a divisor", pipeline_micro, local_path, local));
    }
    t.set_micro_batch_size(static_cast<int32_t>(pipeline_micro));
    t.mutable_pipeline()->set_micro_batches(static_cast<int32_t>(local / pipeline_micro));
    draft.mapped("training.micro_batch_size", fmt::format("{}", pipeline_micro),
                 {"parallelism.pipeline_parallel_microbatch_size"});
    draft.mapped("training.pipeline.micro_batches", fmt::format("{}", local / pipeline_micro),
                 {local_path, "parallelism.pipeline_parallel_microbatch_size"});
    const std::string schedule_path = key("pipeline_parallel_schedule");
    if (auto schedule = doc.string(schedule_path)) {
      scenarios::PipelineSchedule value = scenarios::PIPELINE_SCHEDULE_UNSPECIFIED;
      if (*schedule == "1F1B") value = scenarios::ONE_F_ONE_B;
      else if (*schedule == "GPipe") value = scenarios::GPIPE;
      else if (*schedule == "Interleaved1F1B") value = scenarios::INTERLEAVED_1F1B;
      if (value == scenarios::PIPELINE_SCHEDULE_UNSPECIFIED) {
        draft.not_modelled(schedule_path, "Ragged models GPipe, 1F1B, Interleaved1F1B and ZB-H1; 1F1B used", true);
      } else {
        t.mutable_pipeline()->set_schedule(value);
        draft.mapped("training.pipeline.schedule", scenarios::PipelineSchedule_Name(value), {schedule_path});
      }
    }
    for (const ConfigLeaf& leaf : doc.leaves()) {
      if ((leaf.path.starts_with("parallelism.pipeline_parallel") || leaf.path.starts_with("experimental.pipeline_parallel")) &&
          !doc.was_read(leaf)) {
        draft.not_modelled(leaf.path, "stage splits and micro-batch counts are Ragged's own (balanced compute)");
      }
    }
  } else if (local_path != nullptr && doc.has(local_path)) {
    t.set_micro_batch_size(static_cast<int32_t>(local));
    draft.mapped("training.micro_batch_size", fmt::format("{}", local), {local_path});
  } else {
    t.set_micro_batch_size(static_cast<int32_t>(local));
  }
  if (auto global = doc.integer("training.global_batch_size", -1, int64_t{1} << 40); global && *global > 0) {
    const int64_t per_step = local * replicate * dp_shard;
    if (*global % per_step != 0) {
      doc.fail("training.global_batch_size",
               fmt::format("{} is not a multiple of local_batch_size {} x {} data-parallel ranks = {}; give a multiple, "
                           "or -1",
                           *global, local, replicate * dp_shard, per_step));
    }
    if (*global / per_step > limits::kMaxAccumulation) {
      doc.fail("training.global_batch_size", fmt::format("{} makes {} accumulation steps; at most {}: give a smaller "
                                                         "global batch or more GPUs",
                                                         *global, *global / per_step, limits::kMaxAccumulation));
    }
    t.set_gradient_accumulation_steps(static_cast<int32_t>(*global / per_step));
    draft.mapped("training.gradient_accumulation_steps", fmt::format("{}", *global / per_step),
                 {"training.global_batch_size", local_path});
  }
  if (auto seq = doc.integer("training.seq_len", 1, limits::kMaxSequence)) {
    t.set_sequence_length(static_cast<int32_t>(*seq));
    draft.mapped("training.sequence_length", fmt::format("{}", *seq), {"training.seq_len"});
  } else if (options.sequence_length > 0) {
    t.set_sequence_length(static_cast<int32_t>(options.sequence_length));
    draft.from_command_line("training.sequence_length", fmt::format("{}", options.sequence_length), "--seq-len");
  } else {
    doc.fail("training.seq_len", "not in the config; give --seq-len N");
  }

  // Precision: FSDP2's MixedPrecisionPolicy (param, reduce), fp32 master shards.
  scenarios::Precision* precision = t.mutable_precision();
  precision->set_param(doc.has("training.mixed_precision_param") ? dtype_of(doc, "training.mixed_precision_param")
                                                                   : scenarios::BF16);
  precision->set_reduce(doc.has("training.mixed_precision_reduce") ? dtype_of(doc, "training.mixed_precision_reduce")
                                                                     : scenarios::FP32);
  precision->set_master(scenarios::FP32);
  for (const auto& [field, path, value] :
       {std::tuple{"training.precision.param", "training.mixed_precision_param", precision->param()},
        std::tuple{"training.precision.reduce", "training.mixed_precision_reduce", precision->reduce()}}) {
    if (doc.has(path)) draft.mapped(field, enum_text(value), {path});
    else draft.assumed(field, enum_text(value), fmt::format("torchtitan's {} default", path));
  }
  draft.assumed("training.precision.master", "FP32", "FSDP2 keeps fp32 sharded parameters");
  if (auto offload = doc.boolean("training.enable_cpu_offload"); offload && *offload) {
    draft.not_modelled("training.enable_cpu_offload", "FSDP2's CPU offload is not modelled: parameters and optimizer "
                                                      "states stay on the GPU", true);
  } else if (offload) {
    draft.agrees("training.enable_cpu_offload", "everything on the GPU");
  }

  // Activation checkpointing.
  if (auto mode = doc.string("activation_checkpoint.mode")) {
    Checkpointing value = scenarios::NONE;
    if (*mode == "none") {
      value = scenarios::NONE;
    } else if (*mode == "full") {
      value = scenarios::FULL;
    } else if (*mode == "selective") {
      const std::string option = doc.string("activation_checkpoint.selective_ac_option").value_or("op");
      if (option == "op") {
        value = scenarios::SELECTIVE;
      } else {
        // A layer count, written as a string ("2": every second block).
        int64_t every = 0;
        const auto [end, error] = std::from_chars(option.data(), option.data() + option.size(), every);
        if (error != std::errc() || end != option.data() + option.size() || every < 1 || every > limits::kMaxLayers) {
          doc.fail("activation_checkpoint.selective_ac_option", fmt::format("\"{}\": give \"op\" or a layer count such "
                                                                            "as \"2\"", option));
        }
        value = scenarios::FULL;
        t.set_checkpoint_every(static_cast<int32_t>(every));
        draft.mapped("training.checkpoint_every", fmt::format("{}", every), {"activation_checkpoint.selective_ac_option"});
      }
    } else {
      draft.not_modelled("activation_checkpoint.mode",
                         "Ragged models none, full, selective op and every-N-layers checkpointing; none used", true);
    }
    if (*mode == "none" || *mode == "full" || *mode == "selective") {
      t.set_activation_checkpointing(value);
      draft.mapped("training.activation_checkpointing", enum_text(value),
                   *mode == "selective" ? std::vector<std::string>{"activation_checkpoint.mode",
                                                                   "activation_checkpoint.selective_ac_option"}
                                        : std::vector<std::string>{"activation_checkpoint.mode"});
    }
  }

  // torch.compile: torchtitan compiles each transformer block.
  const bool old_compile = doc.has("training.compile");
  const char* compile_path = old_compile ? "training.compile" : "compile.enable";
  if (auto compile = doc.boolean(compile_path)) {
    const std::vector<std::string> components = doc.strings("compile.components");
    const bool model = old_compile || components.empty() ||
                       std::find(components.begin(), components.end(), "model") != components.end();
    t.set_compiled(*compile && model);
    std::vector<std::string> from = {compile_path};
    if (doc.has("compile.components")) from.push_back("compile.components");
    draft.mapped("training.compiled", *compile && model ? "true" : "false", from);
    if (*compile && model) {
      t.set_compile_scope(scenarios::TRANSFORMER_BLOCKS);
      draft.mapped("training.compile_scope", "TRANSFORMER_BLOCKS", {compile_path});
    }
    if (*compile && std::find(components.begin(), components.end(), "loss") != components.end()) {
      draft.not_modelled("compile.components", "a compiled loss is not modelled: the loss runs eager (FP32_LOGITS)");
    }
  }

  // float8 (torchao converters): not modelled.
  const std::vector<std::string> converters = doc.strings("model.converters");
  bool quantized = false;
  for (const std::string& converter : converters) quantized = quantized || converter.find("float8") != std::string::npos || converter.find("mx") != std::string::npos;
  if (quantized) {
    draft.not_modelled("model.converters",
                       "float8/MX linears are not modelled: every GEMM is costed in bf16 and fp8 all-gathers as bf16, "
                       "so the step is predicted slower than it runs",
                       true);
    draft.not_modelled_section("quantize", "float8/MX settings, not modelled (see model.converters)");
    draft.not_modelled_section("float8", "float8 settings, not modelled (see model.converters)");
  } else if (doc.has("model.converters")) {
    draft.agrees("model.converters", "no quantization");
  }
  // 2024's [float8] section.
  if (auto float8 = doc.boolean("float8.enable_float8_linear"); float8 && *float8) {
    draft.not_modelled("float8.enable_float8_linear",
                       "float8 linears are not modelled: every GEMM is costed in bf16, so the step is predicted slower "
                       "than it runs", true);
    draft.not_modelled_section("float8", "float8 settings, not modelled (see float8.enable_float8_linear)");
  } else if (float8) {
    draft.agrees("float8.enable_float8_linear", "no float8");
  }
  // 2024's model.norm_type: torchtitan's fused RMSNorm is one Triton kernel each way.
  if (auto norm = doc.string("model.norm_type")) {
    if (*norm == "rmsnorm") {
      draft.agrees("model.norm_type", "RMSNorm in PyTorch ops (training.norm EAGER_NORM)");
    } else if (*norm == "fused_rmsnorm") {
      t.set_norm(scenarios::FUSED_NORM);
      draft.mapped("training.norm", "FUSED_NORM", {"model.norm_type"});
    } else {
      draft.not_modelled("model.norm_type", "Llama's blocks use RMSNorm in Ragged's model; RMSNorm costed", true);
    }
  }

  // The optimizer.
  if (auto optimizer = doc.string("optimizer.name")) {
    if (*optimizer == "AdamW" || *optimizer == "Adam") {
      scenarios::AdamW* adamw = t.mutable_optimizer()->mutable_adamw();
      draft.mapped("training.optimizer", "adamw", {"optimizer.name"});
      auto set = [&](const char* path, const char* field, void (scenarios::AdamW::*setter)(double)) {
        if (auto value = doc.number(path, 0, 1e6)) {
          (adamw->*setter)(*value);
          draft.mapped(fmt::format("training.optimizer.adamw.{}", field), fmt::format("{}", *value), {path});
        }
      };
      set("optimizer.lr", "lr", &scenarios::AdamW::set_lr);
      set("optimizer.eps", "eps", &scenarios::AdamW::set_eps);
      set("optimizer.beta1", "beta1", &scenarios::AdamW::set_beta1);
      set("optimizer.beta2", "beta2", &scenarios::AdamW::set_beta2);
      set("optimizer.weight_decay", "weight_decay", &scenarios::AdamW::set_weight_decay);
      if (auto implementation = doc.string("optimizer.implementation")) {
        scenarios::AdamWImplementation value = scenarios::FUSED_KERNEL;
        if (*implementation == "foreach") value = scenarios::FOREACH;
        else if (*implementation == "for-loop") value = scenarios::PER_PARAMETER;
        else if (*implementation != "fused") {
          doc.fail("optimizer.implementation", fmt::format("\"{}\": give \"fused\", \"foreach\" or \"for-loop\"", *implementation));
        }
        adamw->set_implementation(value);
        draft.mapped("training.optimizer.adamw.implementation", scenarios::AdamWImplementation_Name(value),
                     {"optimizer.implementation"});
      } else if (auto fused = doc.boolean("optimizer.fused")) {  // 2024: optimizer.fused, default false (foreach)
        adamw->set_implementation(*fused ? scenarios::FUSED_KERNEL : scenarios::FOREACH);
        draft.mapped("training.optimizer.adamw.implementation", *fused ? "FUSED_KERNEL" : "FOREACH", {"optimizer.fused"});
      } else if (old_layout) {
        adamw->set_implementation(scenarios::FOREACH);
        draft.assumed("training.optimizer.adamw.implementation", "FOREACH",
                      "torchtitan of 2024 (this config's layout): optimizer.fused false, torch.optim.AdamW(foreach=True)");
      } else {
        draft.assumed("training.optimizer.adamw.implementation", "FUSED_KERNEL", "torchtitan's implementation \"fused\"");
      }
    } else {
      draft.not_modelled("optimizer.name", "only AdamW-style updates are costed here; AdamW used", true);
    }
  }
  return draft.finish(ConfigFormat::kTorchtitan, why_ignored);
}

}  // namespace ragged::importers
