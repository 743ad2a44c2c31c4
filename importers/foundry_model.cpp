// The model of an llm-foundry YAML and the kernels it runs: an MPT model
// (mpt_causal_lm) becomes a Hugging Face config.json of model_type mpt
// beside the scenario, a Hugging Face model (hf_causal_lm) a catalog name or
// a local checkpoint's config.json. The loss and what Composer's loop keeps
// are those of the validation rows of llm-foundry's benchmark table
// (validation/scenarios/foundry-*).

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "importers/format_importers.hpp"
#include "importers/scenario_draft.hpp"
#include "models/catalog.hpp"
#include "models/hf_config.hpp"

namespace ragged::importers {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// A Hugging Face repository id -> the catalog model of that architecture.
std::string catalog_for_hf_id(const std::string& id) {
  // Llama 3.1 changed the rope scaling and the context, not a tensor's shape.
  static const std::pair<const char*, const char*> kAliases[] = {
      {"meta-llama/meta-llama-3.1-8b", "llama3-8b"},   {"meta-llama/llama-3.1-8b", "llama3-8b"},
      {"meta-llama/meta-llama-3.1-70b", "llama3-70b"}, {"meta-llama/llama-3.1-70b", "llama3-70b"},
      {"meta-llama/meta-llama-3.1-405b", "llama3.1-405b"},
  };
  const std::string wanted = lower(id);
  for (const auto& [alias, name] : kAliases) {
    if (wanted == alias) return name;
  }
  for (const models::CatalogEntry& entry : models::catalog()) {
    if (lower(entry.source) == wanted) return entry.arch.name;
  }
  return "";
}

// A local checkpoint (a folder holding config.json, or the file) as an absolute path; "" otherwise.
std::string local_config(const std::string& id) {
  if (id.empty() || !models::names_a_config(id)) return "";
  std::error_code error;
  const std::filesystem::path config = models::config_file(id);
  if (!std::filesystem::is_regular_file(config, error)) return "";
  return std::filesystem::absolute(config, error).lexically_normal().string();
}

// The MPT fields a config.json of model_type mpt takes as they are.
constexpr const char* kMptFields[] = {
    "d_model", "n_heads", "n_layers", "expansion_ratio", "max_seq_len", "vocab_size", "no_bias", "norm_type",
    "learned_pos_emb", "tie_word_embeddings", "head_dim", "attn_config.alibi", "attn_config.attn_type",
    "attn_config.kv_n_heads", "attn_config.qk_ln", "attn_config.qk_gn", "attn_config.rope",
    "ffn_config.ffn_type", "ffn_config.ffn_hidden_size"};

nlohmann::json json_of(const ConfigValue& v) {
  switch (v.kind) {
    case ConfigValue::Kind::kBool: return v.boolean;
    case ConfigValue::Kind::kInt: return v.integer;
    case ConfigValue::Kind::kFloat: return v.number;
    default: return v.text;
  }
}

std::string mpt_config(const ConfigDocument& doc, ScenarioDraft& draft, const std::string& name) {
  nlohmann::json config = {{"_comment", fmt::format("written by `ragged scenario import` from {}'s model block",
                                                    doc.origin())},
                           {"_name_or_path", name},
                           {"architectures", {"MPTForCausalLM"}},
                           {"model_type", "mpt"}};
  std::vector<std::string> from = {"model.name"};
  for (const char* field : kMptFields) {
    const std::string path = std::string("model.") + field;
    const ConfigValue* v = doc.find(path);
    if (v == nullptr) continue;
    const std::string key(field);
    const size_t dot = key.find('.');
    if (dot == std::string::npos) config[key] = json_of(*v);
    else config[key.substr(0, dot)][key.substr(dot + 1)] = json_of(*v);
    from.push_back(path);
  }
  draft.mapped("model.hf_config", "(an MPT config.json)", from);
  // The YAML is UTF-8 (read_yaml checks); the file's name in _comment may not be.
  std::string text = config.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  // Checked as the planner will read it, the error located in the YAML:
  // "<origin>: field 'n_layers' must be >= 1" is model.n_layers's.
  const std::string origin = "the model block";
  try {
    models::arch_from_hf_json(text, origin);
  } catch (const InputError& e) {
    std::string message = e.what();
    if (message.starts_with(origin + ": ")) message = message.substr(origin.size() + 2);
    std::string path = "model.name";
    if (const size_t open = message.find("field '"); open != std::string::npos) {
      const size_t close = message.find('\'', open + 7);
      const std::string field = "model." + message.substr(open + 7, close - open - 7);
      if (close != std::string::npos && doc.has(field)) path = field;
    }
    doc.fail(path, message);
  }
  return text;
}

}  // namespace

std::string map_foundry_model(const ConfigDocument& doc, ScenarioDraft& draft, const ImportOptions& options,
                              const std::string& name) {
  std::string sidecar;
  scenarios::Training& t = draft.training();

  // The model.
  const std::string model_name = doc.string("model.name").value_or("");
  bool mpt = false;
  if (!options.model.empty()) {
    draft.set_model("", {"model.name"}, "model.name", "");
    for (const char* field : kMptFields) draft.not_modelled(std::string("model.") + field, "replaced by --model");
    draft.not_modelled("model.pretrained_model_name_or_path", "replaced by --model");
  } else if (model_name == "mpt_causal_lm") {
    mpt = true;
    doc.mark_read("model.name");
    sidecar = mpt_config(doc, draft, name);
    draft.scenario().mutable_model()->set_hf_config(name + ".config.json");
  } else if (const std::string local = local_config(doc.string("model.pretrained_model_name_or_path").value_or(""));
             model_name == "hf_causal_lm" && !local.empty()) {
    draft.scenario().mutable_model()->set_hf_config(local);
    draft.mapped("model.hf_config", fmt::format("\"{}\"", local), {"model.name", "model.pretrained_model_name_or_path"});
  } else if (model_name == "hf_causal_lm") {
    const std::string id = doc.string("model.pretrained_model_name_or_path").value_or("");
    draft.set_model(catalog_for_hf_id(id), {"model.name", "model.pretrained_model_name_or_path"},
                    "model.pretrained_model_name_or_path",
                    fmt::format("\"{}\" has the architecture of no catalog model", id));
  } else {
    doc.fail("model.name", fmt::format("\"{}\": the importer reads mpt_causal_lm and hf_causal_lm models", model_name));
  }

  // Kernels: the attention implementation, llm-foundry's fused loss, and what Composer's loop keeps.
  if (mpt) {
    const std::string impl = doc.string("model.attn_config.attn_impl").value_or("flash");
    scenarios::AttentionKernel kernel = scenarios::FLASH_ATTENTION_2;
    if (impl == "triton") kernel = scenarios::TRITON_FLASH_ATTENTION;
    else if (impl == "torch") kernel = scenarios::MATH;
    else if (impl != "flash") doc.fail("model.attn_config.attn_impl", fmt::format("\"{}\": give flash, triton or torch", impl));
    t.set_attention(kernel);
    if (doc.has("model.attn_config.attn_impl")) {
      draft.mapped("training.attention", scenarios::AttentionKernel_Name(kernel), {"model.attn_config.attn_impl"});
    } else {
      draft.assumed("training.attention", "FLASH_ATTENTION_2", "llm-foundry's attn_impl flash");
    }
    const std::string loss = doc.string("model.loss_fn").value_or("fused_crossentropy");
    if (loss == "fused_crossentropy") {
      t.set_loss(scenarios::FUSED);
      if (doc.has("model.loss_fn")) draft.mapped("training.loss", "FUSED", {"model.loss_fn"});
      else draft.assumed("training.loss", "FUSED", "llm-foundry's loss_fn fused_crossentropy (flash-attn's)");
    } else {
      draft.not_modelled("model.loss_fn", "only the fused cross-entropy is modelled for MPT; FUSED used", true);
      t.set_loss(scenarios::FUSED);
    }
  } else if (model_name == "hf_causal_lm") {
    if (auto flash = doc.boolean("model.use_flash_attention_2")) {
      draft.mapped("training.attention", "FLASH_ATTENTION_2", {"model.use_flash_attention_2"});
    }
    t.set_attention(scenarios::FLASH_ATTENTION_2);
    t.set_loss(scenarios::SHIFTED_FP32_LOGITS);
    draft.assumed("training.loss", "SHIFTED_FP32_LOGITS", "Hugging Face's causal-LM loss over fp32 logits");
  }
  scenarios::ModelOutputs* outputs = t.mutable_outputs();
  outputs->set_logits(true);
  outputs->set_held_until_next_forward(true);
  outputs->set_metric_cross_entropies(2);
  draft.assumed("training.outputs", "logits held until the next forward, 2 metric cross-entropies",
                "Composer keeps state.outputs; llm-foundry's train metrics LanguageCrossEntropy and LanguagePerplexity");

  return sidecar;
}

}  // namespace ragged::importers
