#pragma once
// Import of a Hugging Face config.json (model_type llama, mistral, mixtral,
// qwen2, qwen3, qwen3_moe, gpt_oss, deepseek_v3, gpt2, gpt_neox, mpt, opt,
// falcon, bloom). An unsupported model_type, a missing field, or a value the
// model cannot represent is an InputError naming the file and the field.

#include <filesystem>
#include <string>
#include <string_view>

#include "models/arch_config.hpp"
#include "models/model_spec.hpp"

namespace ragged::models {

// `origin` names the source in error messages (usually the file path). An
// unnamed config (no _name_or_path) is named after the folder holding it.
ArchConfig arch_from_hf_json(std::string_view json_text, const std::string& origin);
// A config.json, or a folder holding one (a Hugging Face checkpoint).
ModelSpec load_hf_config(const std::filesystem::path& path);

// Whether a --model value names a config (a .json file, a path with a
// folder, ".", "..", or a folder holding a config.json) rather than a
// catalog model.
bool names_a_config(const std::string& model);
// The config.json `path` names (the file, or config.json in the folder).
std::filesystem::path config_file(const std::filesystem::path& path);
// The name of the folder holding `config` ("llama2-7b" for
// "./config.json" run from llama2-7b/), "model" when there is none (a bare
// "config.json" names no folder).
std::string config_folder_name(const std::filesystem::path& config);

}  // namespace ragged::models
