// Hugging Face config.json import: the fields every supported model_type
// shares, then one small reader per family (the GPT-2 / GPT-NeoX / MPT / OPT /
// Falcon / BLOOM readers are in hf_gpt_families.cpp).

#include "models/hf_config.hpp"

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "common/utf8.hpp"
#include "models/hf_fields.hpp"
#include "models/hf_readers.hpp"

namespace ragged::models {
namespace {

using detail::HfFields;
using nlohmann::json;

// The widths every Llama-style and MoE family names alike.
void read_llama_dims(const HfFields& f, ArchConfig& arch) {
  arch.hidden = f.require_int("hidden_size", 1);
  arch.layers = f.require_int("num_hidden_layers", 1);
  arch.vocab = f.require_int("vocab_size", 1);
  arch.heads = f.require_int("num_attention_heads", 1);
  arch.kv_heads = f.int_or("num_key_value_heads", arch.heads, 1);
  if (arch.heads % arch.kv_heads != 0) {
    f.fail(fmt::format("num_key_value_heads ({}) must divide num_attention_heads ({})", arch.kv_heads, arch.heads));
  }
  arch.tie_embeddings = f.bool_or("tie_word_embeddings", false);
}

void read_common(const HfFields& f, ArchConfig& arch) {
  arch.family = f.model_type();
  // transformers >= 4.56 writes "dtype" where older versions wrote "torch_dtype".
  const char* dtype_field = f.has("torch_dtype") ? "torch_dtype" : "dtype";
  const std::string dtype = f.string_or(dtype_field, "bfloat16");
  if (dtype == "bfloat16") {
    arch.dtype = DType::kBF16;
  } else if (dtype == "float16") {
    arch.dtype = DType::kF16;
  } else if (dtype == "float32") {
    arch.dtype = DType::kF32;
  } else {
    f.fail(fmt::format("field '{}' must be bfloat16, float16 or float32 (got '{}')", dtype_field, dtype));
  }
}

void read_head_dim(const HfFields& f, ArchConfig& arch) {
  if (f.has("head_dim")) {
    arch.head_dim = f.require_int("head_dim", 1);
  } else if (arch.hidden % arch.heads == 0) {
    arch.head_dim = arch.hidden / arch.heads;
  } else {
    f.fail(fmt::format("num_attention_heads ({}) must divide hidden_size ({}) when head_dim is not given",
                       arch.heads, arch.hidden));
  }
}

void mark_sliding(ArchConfig& arch, int64_t window, int64_t first_sliding_layer) {
  arch.sliding_window = window;
  arch.sliding_layers.assign(static_cast<size_t>(arch.layers), false);
  for (int64_t layer = first_sliding_layer; layer < arch.layers; ++layer) {
    arch.sliding_layers[static_cast<size_t>(layer)] = true;
  }
}

// layer_types ("sliding_attention" / "full_attention" per layer), when the config lists them.
bool read_layer_types(const HfFields& f, ArchConfig& arch) {
  const json* types = f.find("layer_types");
  if (types == nullptr) return false;
  if (!types->is_array()) f.fail_type("layer_types", "an array of strings", *types);
  if (static_cast<int64_t>(types->size()) != arch.layers) {
    f.fail(fmt::format("field 'layer_types' must have num_hidden_layers ({}) entries (got {})", arch.layers,
                       types->size()));
  }
  arch.sliding_layers.clear();
  for (const json& type : *types) {
    if (type == "sliding_attention") {
      arch.sliding_layers.push_back(true);
    } else if (type == "full_attention") {
      arch.sliding_layers.push_back(false);
    } else {
      f.fail_type("layer_types", "an array of \"sliding_attention\" or \"full_attention\"", type);
    }
  }
  arch.sliding_window = f.int_or("sliding_window", 0, 0);
  return true;
}

// The routed experts and how many each token uses, checked in config.json's names
// (validate_arch checks again, in the scenario's names).
void read_experts(const HfFields& f, ArchConfig& arch, const char* experts_field, const char* top_k_field) {
  arch.experts = f.require_int(experts_field, 1);
  arch.experts_per_token = f.require_int(top_k_field, 1);
  if (arch.experts_per_token > arch.experts) {
    f.fail(fmt::format("{} ({}) must be at most {} ({})", top_k_field, arch.experts_per_token, experts_field,
                       arch.experts));
  }
}

void read_dense(const HfFields& f, ArchConfig& arch) {
  read_head_dim(f, arch);
  arch.intermediate = f.require_int("intermediate_size", 1);
}

void read_llama(const HfFields& f, ArchConfig& arch) {
  read_dense(f, arch);
  arch.attention_bias = f.bool_or("attention_bias", false);
}

// Mistral and Mixtral: a non-null sliding_window applies to every layer.
void read_mistral_window(const HfFields& f, ArchConfig& arch) {
  if (read_layer_types(f, arch)) return;
  const int64_t window = f.int_or("sliding_window", 0, 0);
  if (window > 0) mark_sliding(arch, window, 0);
}

void read_mistral(const HfFields& f, ArchConfig& arch) {
  read_dense(f, arch);
  read_mistral_window(f, arch);
}

void read_mixtral(const HfFields& f, ArchConfig& arch) {
  read_head_dim(f, arch);
  read_experts(f, arch, "num_local_experts", "num_experts_per_tok");
  arch.moe_intermediate = f.require_int("intermediate_size", 1);  // each expert's width
  read_mistral_window(f, arch);
}

// Qwen2/Qwen3: the window applies from layer max_window_layers on, and only with use_sliding_window.
void read_qwen_window(const HfFields& f, ArchConfig& arch) {
  if (read_layer_types(f, arch)) return;
  if (!f.bool_or("use_sliding_window", false)) return;
  const int64_t window = f.int_or("sliding_window", 0, 0);
  if (window > 0) mark_sliding(arch, window, f.int_or("max_window_layers", arch.layers, 0));
}

void read_qwen2(const HfFields& f, ArchConfig& arch) {
  read_dense(f, arch);
  arch.qkv_bias = true;
  read_qwen_window(f, arch);
}

void read_qwen3(const HfFields& f, ArchConfig& arch) {
  read_dense(f, arch);
  arch.qk_norm = true;
  arch.attention_bias = f.bool_or("attention_bias", false);
  read_qwen_window(f, arch);
}

void read_qwen3_moe(const HfFields& f, ArchConfig& arch) {
  read_head_dim(f, arch);
  arch.qk_norm = true;
  arch.attention_bias = f.bool_or("attention_bias", false);
  arch.intermediate = f.int_or("intermediate_size", 0, 0);
  read_experts(f, arch, "num_experts", "num_experts_per_tok");
  arch.moe_intermediate = f.require_int("moe_intermediate_size", 1);
  const int64_t step = f.int_or("decoder_sparse_step", 1, 1);
  if (step != 1) {
    f.fail(fmt::format("decoder_sparse_step {} is unsupported: only configs where every layer is sparse "
                       "(decoder_sparse_step 1) can be imported", step));
  }
  const json* dense_layers = f.find("mlp_only_layers");
  if (dense_layers != nullptr && !(dense_layers->is_array() && dense_layers->empty())) {
    f.fail(fmt::format("mlp_only_layers {} is unsupported: only an empty list can be imported",
                       dense_layers->dump()));
  }
  read_qwen_window(f, arch);
}

void read_gpt_oss(const HfFields& f, ArchConfig& arch) {
  read_head_dim(f, arch);
  arch.attention_bias = f.bool_or("attention_bias", true);
  arch.attention_sinks = true;
  read_experts(f, arch, "num_local_experts",
               f.has("num_experts_per_tok") ? "num_experts_per_tok" : "experts_per_token");
  arch.moe_intermediate = f.require_int("intermediate_size", 1);
  arch.expert_storage = ExpertStorage::kFused;
  arch.expert_bias = true;
  arch.router_bias = true;
  arch.glu_clamp = f.number_or("swiglu_limit", 7.0);  // transformers' GptOssConfig default
  if (!read_layer_types(f, arch)) {
    // transformers' default: even layers slide, odd layers attend to everything.
    arch.sliding_window = f.int_or("sliding_window", 0, 0);
    arch.sliding_layers.assign(static_cast<size_t>(arch.layers), false);
    for (int64_t layer = 0; layer < arch.layers; layer += 2) arch.sliding_layers[static_cast<size_t>(layer)] = true;
  }
}

void read_deepseek_v3(const HfFields& f, ArchConfig& arch) {
  arch.attention = AttentionKind::kMla;
  arch.attention_bias = f.bool_or("attention_bias", false);
  arch.q_lora_rank = f.int_or("q_lora_rank", 0, 0);
  arch.kv_lora_rank = f.require_int("kv_lora_rank", 1);
  arch.qk_nope_head_dim = f.require_int("qk_nope_head_dim", 1);
  arch.qk_rope_head_dim = f.require_int("qk_rope_head_dim", 1);
  arch.v_head_dim = f.require_int("v_head_dim", 1);
  arch.intermediate = f.require_int("intermediate_size", 1);
  read_experts(f, arch, "n_routed_experts", "num_experts_per_tok");
  arch.shared_experts = f.int_or("n_shared_experts", 0, 0);
  arch.moe_intermediate = f.require_int("moe_intermediate_size", 1);
  arch.first_dense_layers = f.int_or("first_k_dense_replace", 0, 0);
  if (arch.first_dense_layers > arch.layers) {
    f.fail(fmt::format("first_k_dense_replace ({}) must be at most num_hidden_layers ({})", arch.first_dense_layers,
                       arch.layers));
  }
  arch.router_bias = true;  // the router's e_score_correction_bias
  const int64_t frequency = f.int_or("moe_layer_freq", 1, 1);
  if (frequency != 1) {
    f.fail(fmt::format("moe_layer_freq {} is unsupported: only configs where every layer after "
                       "first_k_dense_replace is sparse (moe_layer_freq 1) can be imported", frequency));
  }
}

struct FamilyReader {
  std::string_view model_type;
  void (*read)(const HfFields&, ArchConfig&);
  bool llama_dims;  // hidden_size, num_hidden_layers, ... read before `read`
};

constexpr std::array<FamilyReader, 14> kFamilies = {{
    {"llama", read_llama, true},
    {"mistral", read_mistral, true},
    {"mixtral", read_mixtral, true},
    {"qwen2", read_qwen2, true},
    {"qwen3", read_qwen3, true},
    {"qwen3_moe", read_qwen3_moe, true},
    {"gpt_oss", read_gpt_oss, true},
    {"deepseek_v3", read_deepseek_v3, true},
    {"gpt2", detail::read_gpt2, false},
    {"gpt_neox", detail::read_gpt_neox, false},
    {"mpt", detail::read_mpt, false},
    {"opt", detail::read_opt, false},
    {"falcon", detail::read_falcon, false},
    {"bloom", detail::read_bloom, false},
}};

const FamilyReader& family_reader(const std::string& model_type, const std::string& origin) {
  std::vector<std::string_view> supported;
  for (const FamilyReader& family : kFamilies) {
    if (family.model_type == model_type) return family;
    supported.push_back(family.model_type);
  }
  throw InputError(fmt::format("{}: unsupported model_type '{}' (supported: {})", origin, model_type,
                               fmt::join(supported, ", ")));
}

// nlohmann's what() starts with "[json.exception.parse_error.101] "; the readable part follows.
std::string_view readable(std::string_view what) {
  if (const size_t bracket = what.find("] "); bracket != std::string_view::npos) what.remove_prefix(bracket + 2);
  return what;
}

json parse_object(std::string_view json_text, const std::string& origin) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& error) {
    throw InputError(fmt::format("{}: malformed JSON at byte {}: {}", origin, error.byte, readable(error.what())));
  } catch (const json::out_of_range& error) {  // a number beyond a double: 1e400
    throw InputError(fmt::format("{}: malformed JSON: {}", origin, readable(error.what())));
  }
  if (!root.is_object()) {
    throw InputError(fmt::format("{}: expected a JSON object (a Hugging Face config.json), got {}", origin,
                                 root.type_name()));
  }
  return root;
}

// Reports, JSON and traces print the name: one from _name_or_path or from
// the folder's name (any bytes) is shown escaped ("cfg\xff": a raw 0xFF
// ended `inspect --json` in nlohmann's type_error, an ESC reached the terminal).
std::string model_name(const HfFields& f) {
  std::string name = f.string_or("_name_or_path", "");
  if (name.empty()) {
    name = config_folder_name(f.origin());
    if (name == "model") return f.model_type();
  }
  return printable(name);
}

}  // namespace

ArchConfig arch_from_hf_json(std::string_view json_text, const std::string& origin) {
  const json root = parse_object(json_text, origin);
  const json* type = root.contains("model_type") ? &root["model_type"] : nullptr;
  if (type == nullptr || type->is_null()) throw InputError(fmt::format("{}: missing field 'model_type'", origin));
  if (!type->is_string()) {
    throw InputError(fmt::format("{}: field 'model_type' must be a string (got {})", origin, type->type_name()));
  }
  const std::string model_type = type->get<std::string>();
  const FamilyReader& family = family_reader(model_type, origin);

  const HfFields fields(root, origin, model_type);
  ArchConfig arch;
  read_common(fields, arch);
  if (family.llama_dims) read_llama_dims(fields, arch);
  family.read(fields, arch);
  arch.name = model_name(fields);
  try {
    validate_arch(arch, "");
  } catch (const InputError& error) {
    throw InputError(fmt::format("{}: {}", origin, error.what()));
  }
  return arch;
}

ModelSpec load_hf_config(const std::filesystem::path& path) {
  const std::filesystem::path file = config_file(path);
  return build_model(arch_from_hf_json(read_file(file), file.string()));
}

bool names_a_config(const std::string& model) {
  if (model.ends_with(".json") || model.find('/') != std::string::npos || model == "." || model == "..") return true;
  // A folder holding a config.json (a catalog name that is also a folder of
  // something else stays a catalog name); a name too long to be a path is a
  // catalog name, refused there.
  std::error_code error;
  return std::filesystem::is_directory(model, error) &&
         std::filesystem::is_regular_file(std::filesystem::path(model) / "config.json", error);
}

std::filesystem::path config_file(const std::filesystem::path& path) {
  std::error_code error;  // a name too long or unreadable is read as a file, and refused there
  return std::filesystem::is_directory(path, error) ? path / "config.json" : path;
}

std::string config_folder_name(const std::filesystem::path& config) {
  if (config.parent_path().empty()) return "model";  // a bare origin ("config.json", a test's text) names no folder
  std::error_code error;
  std::filesystem::path whole = std::filesystem::absolute(config, error);
  if (error) whole = config;
  const std::string name = whole.lexically_normal().parent_path().filename().string();
  return name.empty() || name == "." || name == ".." ? "model" : name;
}

}  // namespace ragged::models
