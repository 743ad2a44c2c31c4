// torchtitan's precision, activation checkpointing, torch.compile, float8
// and optimizer settings (torchtitan_import.cpp maps the model, the mesh and
// the batch).

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

scenarios::DType dtype_of(const ConfigDocument& doc, const std::string& path) {
  const std::string text = *doc.string(path);
  if (text == "bfloat16") return scenarios::BF16;
  if (text == "float32") return scenarios::FP32;
  if (text == "float16") return scenarios::FP16;
  doc.fail(path, fmt::format("\"{}\" is not a dtype torchtitan takes; give \"bfloat16\" or \"float32\"", text));
}

}  // namespace

void map_torchtitan_kernels(const ConfigDocument& doc, ScenarioDraft& draft, bool old_layout) {
  scenarios::Training& t = draft.training();
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

  // The model code, not the config: torchtitan's Attention copied the kv
  // heads to every query head (repeat_kv) until ff0829c10 (2026-01-27), a
  // month before its configs stopped being TOML files.
  t.set_kv_heads(scenarios::REPEATED_KV);
  draft.assumed("training.kv_heads", "REPEATED_KV",
                "torchtitan's repeat_kv before 2026-01-27 (ff0829c10); NATIVE_KV for a later torchtitan");

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
}

}  // namespace ragged::importers
