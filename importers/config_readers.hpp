#pragma once
// TOML (toml++), YAML (yaml-cpp) and JSON (nlohmann-json) text into a
// ConfigDocument. A syntax error is one InputError "origin:line:col: what";
// input nested deeper than a config ever is, or with more than
// kMaxConfigLeaves fields, is refused before it can cost more than linear
// time. The caller has already capped the size (read_file's 16 MiB).

#include <string>
#include <string_view>

#include "importers/config_document.hpp"

namespace ragged::importers {

ConfigDocument read_toml(std::string_view text, const std::string& origin, const std::string& format);
// Resolves OmegaConf interpolations "${a.b}" against the document (llm-foundry's
// ${variables.max_seq_len}).
ConfigDocument read_yaml(std::string_view text, const std::string& origin, const std::string& format);
ConfigDocument read_json(std::string_view text, const std::string& origin, const std::string& format);

// The deepest nesting a config may have (tables in tables, lists in lists);
// llm-foundry's deepest is 4.
inline constexpr int kMaxConfigNesting = 32;

}  // namespace ragged::importers
