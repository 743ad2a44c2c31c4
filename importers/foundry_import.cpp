// An llm-foundry training YAML (scripts/train/yamls/pretrain/*.yaml) as a
// scenario. Composer wraps the model in PyTorch FSDP (FSDP1) with the
// fsdp_config block; this file maps that block, the precision, the batch and
// the optimizer (foundry_model.cpp: the model and its kernels).

#include <fmt/format.h>

#include "common/input_limits.hpp"
#include "importers/format_importers.hpp"
#include "importers/scenario_draft.hpp"

namespace ragged::importers {
namespace {

scenarios::DType dtype_of_precision(const ConfigDocument& doc, ScenarioDraft& draft) {
  const std::string precision = doc.string("precision").value_or("amp_bf16");
  if (precision == "amp_bf16") return scenarios::BF16;
  if (precision == "amp_fp16") return scenarios::FP16;
  if (precision == "fp32") return scenarios::FP32;
  if (precision == "amp_fp8") {
    draft.not_modelled("precision", "fp8 GEMMs (Transformer Engine) are not modelled: costed as bf16", true);
    return scenarios::BF16;
  }
  doc.fail("precision", fmt::format("\"{}\": give amp_bf16, amp_fp16, amp_fp8 or fp32", precision));
}

std::string foundry_why_ignored(std::string_view path) {
  if (path.starts_with("variables."))
    return "values the other fields refer to (${variables...}), mapped where referred to";
  if (path.starts_with("tokenizer.") || path.starts_with("train_loader.") || path.starts_with("eval_loader.") ||
      path.starts_with("icl_") || path.starts_with("eval_gauntlet")) {
    return "tokenizer, data loaders and evaluation, outside the training step";
  }
  if (path.starts_with("scheduler.") || path.starts_with("optimizer."))
    return "optimizer schedule, no bearing on a step";
  if (path.starts_with("callbacks.") || path.starts_with("loggers.") || path == "progress_bar" ||
      path == "log_to_console" || path == "console_log_interval" || path == "run_name" || path.starts_with("save_") ||
      path.starts_with("load_") || path == "autoresume") {
    return "logging, callbacks and checkpoints, outside the training step";
  }
  if (path.starts_with("algorithms."))
    return "Composer algorithms (gradient clipping: a norm over the shards), not modelled";
  if (path == "max_duration" || path.starts_with("eval_") || path == "seed" || path == "device_eval_batch_size" ||
      path == "dist_timeout" || path == "global_seed") {
    return "the run's length, seeds, timeouts and evaluation, no bearing on one step";
  }
  if (path.starts_with("model."))
    return "model settings with no bearing on shapes or kernels (initialization, dropout)";
  if (path.starts_with("fsdp_config.")) return "FSDP settings for checkpoints and initialization, no bearing on a step";
  return "not read by the importer (unknown to it)";
}

}  // namespace

ImportedConfig import_llm_foundry(const ConfigDocument& doc, const ImportOptions& options, const std::string& name) {
  ScenarioDraft draft(doc, options, name);
  scenarios::Training& t = draft.training();
  // The model and its kernels (foundry_model.cpp).
  const std::string sidecar = map_foundry_model(doc, draft, options, name);
  const bool mpt = !sidecar.empty();

  // The cluster: llm-foundry leaves the GPUs to the launcher.
  const int64_t gpus = draft.set_cluster(0, {}, "global_train_batch_size",
                                         "llm-foundry configs leave the GPU count to the launcher (composer -n)");

  // FSDP.
  t.set_strategy(scenarios::FSDP1);
  draft.assumed("training.strategy", "FSDP1", "Composer wraps the model in PyTorch FSDP (FullyShardedDataParallel)");
  const std::string sharding = doc.string("fsdp_config.sharding_strategy").value_or("FULL_SHARD");
  const int64_t per_node = draft.scenario().cluster().gpus_per_node();
  if (!doc.has_section("fsdp_config")) {
    t.set_shard_group_size(1);
    draft.assumed("training.shard_group_size", "1", "no fsdp_config: Composer runs DDP (every GPU a replica)");
  } else if (sharding == "FULL_SHARD" || sharding == "SHARD_GRAD_OP") {
    draft.mapped("training.shard_group_size", fmt::format("{} (every GPU)", gpus), {"fsdp_config.sharding_strategy"});
  } else if (sharding == "HYBRID_SHARD" || sharding == "_HYBRID_SHARD_ZERO2") {
    t.set_shard_group_size(static_cast<int32_t>(per_node));
    draft.mapped("training.shard_group_size", fmt::format("{} (a node)", per_node), {"fsdp_config.sharding_strategy"});
  } else if (sharding == "NO_SHARD") {
    t.set_shard_group_size(1);
    draft.mapped("training.shard_group_size", "1", {"fsdp_config.sharding_strategy"});
  } else {
    doc.fail(
        "fsdp_config.sharding_strategy",
        fmt::format("\"{}\": give FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD, _HYBRID_SHARD_ZERO2 or NO_SHARD", sharding));
  }
  if (sharding == "SHARD_GRAD_OP" || sharding == "_HYBRID_SHARD_ZERO2") {
    t.set_reshard_after_forward(false);
    draft.mapped("training.reshard_after_forward", "false", {"fsdp_config.sharding_strategy"});
  }

  // Precision: Composer's autocast dtype; fsdp_config.mixed_precision the FSDP policy.
  const scenarios::DType compute = dtype_of_precision(doc, draft);
  const std::string policy = doc.string("fsdp_config.mixed_precision").value_or("DEFAULT");
  scenarios::Precision* precision = t.mutable_precision();
  if (policy == "PURE") {
    precision->set_param(compute);
    precision->set_reduce(compute);
  } else if (policy == "DEFAULT") {
    precision->set_param(compute);
    precision->set_reduce(scenarios::FP32);
  } else if (policy == "FULL") {
    precision->set_param(scenarios::FP32);
    precision->set_reduce(scenarios::FP32);
  } else {
    doc.fail("fsdp_config.mixed_precision", fmt::format("\"{}\": give PURE, DEFAULT or FULL", policy));
  }
  precision->set_master(scenarios::FP32);
  draft.mapped("training.precision.param", enum_text(precision->param()), {"precision", "fsdp_config.mixed_precision"});
  draft.mapped("training.precision.reduce", enum_text(precision->reduce()),
               {"precision", "fsdp_config.mixed_precision"});
  draft.assumed("training.precision.master", "FP32", "FSDP keeps fp32 sharded parameters");

  if (auto ac = doc.boolean("fsdp_config.activation_checkpointing")) {
    t.set_activation_checkpointing(*ac ? scenarios::FULL : scenarios::NONE);
    draft.mapped("training.activation_checkpointing", *ac ? "FULL" : "NONE", {"fsdp_config.activation_checkpointing"});
  }
  draft.agrees("fsdp_config.activation_checkpointing_reentrant", "either way a block is recomputed whole");
  if (auto offload = doc.boolean("fsdp_config.activation_cpu_offload"); offload && *offload) {
    draft.not_modelled("fsdp_config.activation_cpu_offload", "activations offloaded to the CPU are not modelled", true);
  } else {
    draft.agrees("fsdp_config.activation_cpu_offload", "activations stay on the GPU");
  }
  if (auto limit = doc.boolean("fsdp_config.limit_all_gathers"); limit && !*limit) {
    draft.not_modelled("fsdp_config.limit_all_gathers",
                       "FSDP1's rate limiter is always modelled (two gathers in flight)");
  } else {
    draft.agrees("fsdp_config.limit_all_gathers", "FSDP1's rate limiter, as modelled");
  }
  if (auto prefetch = doc.string("fsdp_config.backward_prefetch")) {
    if (*prefetch == "BACKWARD_PRE") {
      draft.agrees("fsdp_config.backward_prefetch",
                   "the next unit gathered during a unit's backward (prefetch_depth 1)");
    } else if (*prefetch == "NONE") {
      t.set_prefetch_depth(0);
      draft.mapped("training.prefetch_depth", "0", {"fsdp_config.backward_prefetch"});
    } else {
      draft.not_modelled("fsdp_config.backward_prefetch", "only BACKWARD_PRE and NONE are modelled; BACKWARD_PRE used");
    }
  }
  if (auto forward = doc.boolean("fsdp_config.forward_prefetch"); forward && *forward) {
    draft.not_modelled("fsdp_config.forward_prefetch", "FSDP1's forward prefetch is not modelled");
  }
  draft.not_modelled("fsdp_config.cpu_offload", "parameters offloaded to the CPU are not modelled", true);
  if (auto expandable = doc.boolean("expandable_segments")) {
    t.mutable_allocator()->set_expandable_segments(*expandable);
    draft.mapped("training.allocator.expandable_segments", *expandable ? "true" : "false", {"expandable_segments"});
  }

  // The batch.
  int64_t micro = 0;
  if (doc.is_auto("device_train_microbatch_size") || !doc.has("device_train_microbatch_size")) {
    if (options.micro_batch == 0) {
      doc.fail("device_train_microbatch_size", doc.has("device_train_microbatch_size")
                                                   ? "\"auto\" leaves it to Composer's search; give --micro-batch N"
                                                   : "not in the config; give --micro-batch N");
    }
    micro = options.micro_batch;
    draft.from_command_line("training.micro_batch_size", fmt::format("{}", micro), "--micro-batch");
  } else {
    micro = *doc.integer("device_train_microbatch_size", 1, limits::kMaxMicroBatch);
    draft.mapped("training.micro_batch_size", fmt::format("{}", micro), {"device_train_microbatch_size"});
  }
  t.set_micro_batch_size(static_cast<int32_t>(micro));
  if (auto global = doc.integer("global_train_batch_size", 1, int64_t{1} << 40)) {
    if (*global % gpus != 0 || (*global / gpus) % micro != 0) {
      doc.fail("global_train_batch_size",
               fmt::format("{} sequences over {} GPUs of micro-batch {}: not a whole number of micro-batches per GPU; "
                           "give a --gpus that divides {} / {}",
                           *global, gpus, micro, *global, micro));
    }
    if (*global / gpus / micro > limits::kMaxAccumulation) {
      doc.fail("global_train_batch_size", fmt::format("{} makes {} accumulation steps; at most {}: give a smaller "
                                                      "global batch or more GPUs",
                                                      *global, *global / gpus / micro, limits::kMaxAccumulation));
    }
    t.set_gradient_accumulation_steps(static_cast<int32_t>(*global / gpus / micro));
    draft.mapped("training.gradient_accumulation_steps", fmt::format("{}", *global / gpus / micro),
                 {"global_train_batch_size", "device_train_microbatch_size"});
  }
  const char* seq_path = doc.has("max_seq_len") ? "max_seq_len" : "model.max_seq_len";
  if (auto seq = doc.integer(seq_path, 1, limits::kMaxSequence)) {
    t.set_sequence_length(static_cast<int32_t>(*seq));
    draft.mapped("training.sequence_length", fmt::format("{}", *seq), {seq_path});
  } else if (options.sequence_length > 0) {
    t.set_sequence_length(static_cast<int32_t>(options.sequence_length));
    draft.from_command_line("training.sequence_length", fmt::format("{}", options.sequence_length), "--seq-len");
  } else {
    doc.fail("max_seq_len", "not in the config; give --seq-len N");
  }

  // The optimizer: Composer's DecoupledAdamW loops over the parameters.
  if (auto optimizer = doc.string("optimizer.name")) {
    if (*optimizer == "decoupled_adamw" || *optimizer == "adamw") {
      scenarios::AdamW* adamw = t.mutable_optimizer()->mutable_adamw();
      const auto implementation = *optimizer == "adamw" ? scenarios::FOREACH : scenarios::PER_PARAMETER;
      adamw->set_implementation(implementation);
      draft.mapped("training.optimizer.adamw.implementation", scenarios::AdamWImplementation_Name(implementation),
                   {"optimizer.name"});
      if (auto lr = doc.number("optimizer.lr", 0, 1e6)) {
        adamw->set_lr(*lr);
        draft.mapped("training.optimizer.adamw.lr", fmt::format("{}", *lr), {"optimizer.lr"});
      }
      if (auto eps = doc.number("optimizer.eps", 0, 1)) {
        adamw->set_eps(*eps);
        draft.mapped("training.optimizer.adamw.eps", fmt::format("{}", *eps), {"optimizer.eps"});
      }
      if (auto decay = doc.number("optimizer.weight_decay", 0, 1e6)) {
        adamw->set_weight_decay(*decay);
        draft.mapped("training.optimizer.adamw.weight_decay", fmt::format("{}", *decay), {"optimizer.weight_decay"});
      }
      if (const ConfigValue* betas = doc.find("optimizer.betas")) {
        if (betas->kind != ConfigValue::Kind::kList || betas->items.size() != 2 ||
            betas->items[0].kind == ConfigValue::Kind::kString || betas->items[1].kind == ConfigValue::Kind::kString) {
          doc.fail("optimizer.betas", fmt::format("{}: give two numbers, e.g. [0.9, 0.95]", value_text(*betas)));
        }
        adamw->set_beta1(betas->items[0].number);
        adamw->set_beta2(betas->items[1].number);
        draft.mapped("training.optimizer.adamw.beta1/beta2",
                     fmt::format("{}, {}", betas->items[0].number, betas->items[1].number), {"optimizer.betas"});
      }
    } else {
      draft.not_modelled("optimizer.name", "only AdamW-style updates are costed here; DecoupledAdamW used", true);
      t.mutable_optimizer()->mutable_adamw()->set_implementation(scenarios::PER_PARAMETER);
    }
  }

  ImportedConfig out = draft.finish(ConfigFormat::kLlmFoundry, foundry_why_ignored);
  if (mpt) {
    out.model_config_json = sidecar;
    out.model_config_name = name + ".config.json";
  }
  return out;
}

}  // namespace ragged::importers
