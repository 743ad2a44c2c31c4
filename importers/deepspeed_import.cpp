// A DeepSpeed config (ds_config.json) as a scenario. It says how ZeRO
// shards, batches and casts, not which model or how long a sequence, so
// --model and --seq-len supply those; the GPU count comes from --gpus or
// from train_batch_size / (train_micro_batch_size_per_gpu x
// gradient_accumulation_steps).

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "common/input_limits.hpp"
#include "importers/format_importers.hpp"
#include "importers/scenario_draft.hpp"

namespace ragged::importers {
namespace {

constexpr const char* kAuto = "\"auto\": filled in by the Hugging Face Trainer from its own arguments";

std::string deepspeed_why_ignored(std::string_view path) {
  if (path.starts_with("fp16.") || path.starts_with("bf16.") || path.starts_with("amp.")) {
    return "loss scaling and its window, no bearing on a step's time or memory";
  }
  if (path.starts_with("scheduler.") || path.starts_with("optimizer.")) {
    return "optimizer schedule and hyper-parameters, no bearing on a step's time or memory";
  }
  if (path == "steps_per_print" || path == "wall_clock_breakdown" || path.starts_with("tensorboard") ||
      path.starts_with("wandb") || path.starts_with("csv_monitor") || path.starts_with("flops_profiler") ||
      path.starts_with("comms_logger") || path == "dump_state") {
    return "logging and profiling, outside the training step";
  }
  if (path == "gradient_clipping" || path == "prescale_gradients" || path == "gradient_predivide_factor") {
    return "gradient clipping and scaling: a pass over the shards, not modelled";
  }
  if (path.find("on_model_save") != std::string_view::npos || path.starts_with("checkpoint")) {
    return "checkpoint saving, outside the training step";
  }
  if (path.starts_with("zero_optimization.")) {
    return "ZeRO's bucket, prefetch and persistence sizes: not scenario settings (Ragged's ZeRO-3 gathers each FSDP "
           "unit's parameters as its fetch groups)";
  }
  if (path.starts_with("activation_checkpointing.")) {
    return "activation checkpointing's bookkeeping, no bearing on what is recomputed";
  }
  return "not read by the importer (unknown to it)";
}

bool enabled(const ConfigDocument& doc, ScenarioDraft& draft, const std::string& path) {
  if (doc.is_auto(path)) {
    draft.not_modelled(path,
                       std::string(kAuto) +
                           " (--bf16/--fp16); bf16 assumed unless the other block is enabled "
                           "(--set training.precision.param=FP16 for fp16)",
                       true);
    return false;
  }
  return doc.boolean(path).value_or(false);
}

std::optional<int64_t> batch_field(const ConfigDocument& doc, ScenarioDraft& draft, const char* path) {
  if (doc.is_auto(path)) {
    draft.not_modelled(path, kAuto);
    return std::nullopt;
  }
  // Each at most 2^20 (accumulation at most limits::kMaxAccumulation): their products stay far inside int64.
  return doc.integer(path, 1,
                     std::string_view(path) == "gradient_accumulation_steps"
                         ? limits::kMaxAccumulation
                         : limits::kMaxGpus * limits::kMaxMicroBatch);
}

}  // namespace

ImportedConfig import_deepspeed(const ConfigDocument& doc, const ImportOptions& options, const std::string& name) {
  ScenarioDraft draft(doc, options, name);
  scenarios::Training& t = draft.training();

  draft.set_model("", {}, "model", "a DeepSpeed config does not name the model");
  if (options.sequence_length <= 0) {
    doc.fail("sequence_length", "a DeepSpeed config does not give the sequence length; give --seq-len N");
  }
  t.set_sequence_length(static_cast<int32_t>(options.sequence_length));
  draft.from_command_line("training.sequence_length", fmt::format("{}", options.sequence_length), "--seq-len");

  // ZeRO.
  const int64_t stage = doc.integer("zero_optimization.stage", 0, 3).value_or(0);
  t.set_strategy(scenarios::ZERO3);
  if (stage == 3) {
    draft.mapped("training.strategy", "ZERO3", {"zero_optimization.stage"});
  } else {
    const std::string why = fmt::format(
        "ZeRO stage {} keeps {} on every GPU; Ragged models fully sharded training only, so this is imported as ZeRO-3 "
        "(parameters sharded too): predicted memory is lower and each step adds the parameters' all-gathers",
        stage, stage == 2 ? "the parameters" : "the parameters and gradients");
    if (doc.has("zero_optimization.stage")) {
      draft.not_modelled("zero_optimization.stage", why, true);
    } else {
      draft.assumed("training.strategy", "ZERO3", "no zero_optimization.stage (stage 0, plain data parallel): " + why);
      draft.not_modelled_section("zero_optimization", "settings of a ZeRO stage below 3");
    }
  }
  for (const char* offload : {"zero_optimization.offload_optimizer", "zero_optimization.offload_param"}) {
    const std::string device_path = std::string(offload) + ".device";
    const std::string device = doc.string(device_path).value_or("none");
    if (device == "none") {
      draft.agrees(device_path, "on the GPU");
    } else {
      draft.not_modelled(
          device_path,
          fmt::format("offload to {} is not modelled: the prediction keeps the {} on the GPU (memory "
                      "overestimated, the transfers and the CPU optimizer left out)",
                      device, std::string(offload).ends_with("param") ? "parameters" : "optimizer states"),
          true);
      draft.not_modelled_section(offload, "offload settings, not modelled (see its device)");
    }
  }

  // Precision: bf16 or fp16 compute and reduction, fp32 master partitions.
  const bool bf16 = enabled(doc, draft, "bf16.enabled");
  const bool fp16 = enabled(doc, draft, "fp16.enabled");
  if (bf16 && fp16)
    doc.fail("fp16.enabled", "both fp16 and bf16 are enabled; DeepSpeed takes one: disable one of them");
  const bool any_auto = doc.is_auto("bf16.enabled") || doc.is_auto("fp16.enabled");
  const scenarios::DType compute = bf16       ? scenarios::BF16
                                   : fp16     ? scenarios::FP16
                                   : any_auto ? scenarios::BF16
                                              : scenarios::FP32;
  scenarios::Precision* precision = t.mutable_precision();
  precision->set_param(compute);
  precision->set_master(scenarios::FP32);
  std::vector<std::string> precision_from;
  for (const char* path : {"bf16.enabled", "fp16.enabled"}) {
    if (doc.has(path) && !doc.is_auto(path)) precision_from.push_back(path);
  }
  if (precision_from.empty()) {
    draft.assumed("training.precision.param", enum_text(compute),
                  any_auto ? "bf16/fp16 \"auto\": bf16 taken" : "neither bf16 nor fp16 enabled: fp32");
  } else {
    draft.mapped("training.precision.param", enum_text(compute), precision_from);
  }
  if (auto reduce = doc.string("communication_data_type")) {
    std::string text = *reduce;
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    const scenarios::DType value = text == "fp32" || text == "float32"    ? scenarios::FP32
                                   : text == "bf16" || text == "bfloat16" ? scenarios::BF16
                                   : text == "fp16" || text == "float16"  ? scenarios::FP16
                                                                          : scenarios::DTYPE_UNSPECIFIED;
    if (value == scenarios::DTYPE_UNSPECIFIED)
      doc.fail("communication_data_type", fmt::format("\"{}\": give fp32, bf16 or fp16", *reduce));
    precision->set_reduce(value);
    draft.mapped("training.precision.reduce", enum_text(value), {"communication_data_type"});
  } else {
    precision->set_reduce(compute);
    draft.assumed("training.precision.reduce", enum_text(compute), "DeepSpeed reduces gradients in their own dtype");
  }
  draft.assumed("training.precision.master", "FP32",
                "ZeRO keeps fp32 partitions of the parameters and optimizer states");
  if (doc.has("data_types.grad_accum_dtype")) {
    draft.not_modelled("data_types.grad_accum_dtype", "the accumulation buffer's dtype is not a scenario setting");
  }

  // The batch: train_batch_size = micro x accumulation x GPUs.
  const std::optional<int64_t> micro_config = batch_field(doc, draft, "train_micro_batch_size_per_gpu");
  const std::optional<int64_t> accumulation = batch_field(doc, draft, "gradient_accumulation_steps");
  const std::optional<int64_t> global = batch_field(doc, draft, "train_batch_size");
  int64_t micro = micro_config.value_or(options.micro_batch);
  if (micro <= 0) {
    doc.fail("train_micro_batch_size_per_gpu", doc.has("train_micro_batch_size_per_gpu")
                                                   ? "\"auto\": the Trainer's per-device batch; give --micro-batch N"
                                                   : "not in the config; give --micro-batch N");
  }
  if (micro > limits::kMaxMicroBatch)
    doc.fail("train_micro_batch_size_per_gpu",
             fmt::format("{} is out of range; give at most {}", micro, limits::kMaxMicroBatch));
  if (micro_config)
    draft.mapped("training.micro_batch_size", fmt::format("{}", micro), {"train_micro_batch_size_per_gpu"});
  else
    draft.from_command_line("training.micro_batch_size", fmt::format("{}", micro), "--micro-batch");
  t.set_micro_batch_size(static_cast<int32_t>(micro));

  int64_t config_gpus = 0;
  if (global && options.gpus <= 0) {
    const int64_t steps = accumulation.value_or(1);
    if (*global % (micro * steps) != 0) {
      doc.fail("train_batch_size", fmt::format("{} is not a multiple of micro-batch {} x accumulation {}; DeepSpeed "
                                               "requires train_batch_size = micro x accumulation x GPUs",
                                               *global, micro, steps));
    }
    config_gpus = *global / (micro * steps);
  }
  const int64_t gpus = draft.set_cluster(
      config_gpus, {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"},
      "train_batch_size", "the config does not fix the GPU count");
  int64_t steps = accumulation.value_or(0);
  if (global) {
    if (steps == 0) {
      if (*global % (micro * gpus) != 0) {
        doc.fail("train_batch_size",
                 fmt::format(
                     "{} sequences are not a whole number of micro-batches of {} on {} "
                     "GPUs; give --gpus {}",
                     *global, micro, gpus,
                     *global / micro == 1 ? "1 (the config's)" : fmt::format("N where N divides {}", *global / micro)));
      }
      steps = *global / (micro * gpus);
      if (steps > limits::kMaxAccumulation) {
        doc.fail("train_batch_size", fmt::format("{} makes {} accumulation steps; at most {}: give a smaller batch or "
                                                 "more GPUs",
                                                 *global, steps, limits::kMaxAccumulation));
      }
    } else if (*global != micro * steps * gpus) {
      doc.fail("train_batch_size", fmt::format("{} is not micro-batch {} x accumulation {} x {} GPUs = {}; give "
                                               "--gpus {}, or fix the batch fields",
                                               *global, micro, steps, gpus, micro * steps * gpus,
                                               *global % (micro * steps) == 0 ? *global / (micro * steps) : gpus));
    }
  }
  if (steps > 0) {
    t.set_gradient_accumulation_steps(static_cast<int32_t>(steps));
    draft.mapped("training.gradient_accumulation_steps", fmt::format("{}", steps),
                 accumulation ? std::vector<std::string>{"gradient_accumulation_steps"}
                              : std::vector<std::string>{"train_batch_size", "train_micro_batch_size_per_gpu"});
  }

  // Activation checkpointing: the block configures deepspeed.checkpointing, which the model's code calls.
  if (doc.has_section("activation_checkpointing")) {
    t.set_activation_checkpointing(scenarios::FULL);
    draft.assumed(
        "training.activation_checkpointing", "FULL",
        "an activation_checkpointing block: the model checkpoints each block through deepspeed.checkpointing");
    for (const char* flag :
         {"activation_checkpointing.cpu_checkpointing", "activation_checkpointing.partition_activations"}) {
      if (auto on = doc.boolean(flag); on && *on) {
        draft.not_modelled(flag, "checkpoints moved to the CPU or split over model-parallel ranks are not modelled",
                           true);
      } else if (on) {
        draft.agrees(flag, "checkpoints kept whole on the GPU");
      }
    }
  } else {
    draft.assumed("training.activation_checkpointing", "NONE",
                  "no activation_checkpointing block (the model's own code may still checkpoint: --checkpointing)");
  }

  // The optimizer: DeepSpeed's FusedAdam.
  if (auto type = doc.string("optimizer.type")) {
    std::string lower = *type;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower == "adam" || lower == "adamw") {
      scenarios::AdamW* adamw = t.mutable_optimizer()->mutable_adamw();
      draft.mapped("training.optimizer.adamw.implementation", "FUSED_KERNEL", {"optimizer.type"});
      auto set = [&](const char* path, const char* field, void (scenarios::AdamW::*setter)(double)) {
        if (doc.is_auto(path)) {
          draft.not_modelled(path, kAuto);
        } else if (auto value = doc.number(path, 0, 1e6)) {
          (adamw->*setter)(*value);
          draft.mapped(fmt::format("training.optimizer.adamw.{}", field), fmt::format("{}", *value), {path});
        }
      };
      set("optimizer.params.lr", "lr", &scenarios::AdamW::set_lr);
      set("optimizer.params.eps", "eps", &scenarios::AdamW::set_eps);
      set("optimizer.params.weight_decay", "weight_decay", &scenarios::AdamW::set_weight_decay);
      if (doc.is_auto("optimizer.params.betas")) draft.not_modelled("optimizer.params.betas", kAuto);
      if (auto torch_adam = doc.boolean("optimizer.params.torch_adam"); torch_adam && *torch_adam) {
        adamw->set_implementation(scenarios::FOREACH);
        draft.mapped("training.optimizer.adamw.implementation", "FOREACH", {"optimizer.params.torch_adam"});
      }
    } else {
      draft.not_modelled("optimizer.type", "only Adam-style updates are costed here; AdamW (fused) used", true);
    }
  }
  return draft.finish(ConfigFormat::kDeepSpeed, deepspeed_why_ignored);
}

}  // namespace ragged::importers
