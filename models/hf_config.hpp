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

// `origin` names the source in error messages (usually the file path).
ArchConfig arch_from_hf_json(std::string_view json_text, const std::string& origin);
ModelSpec load_hf_config(const std::filesystem::path& path);

}  // namespace ragged::models
