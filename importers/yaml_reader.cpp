// YAML through yaml-cpp (Debian's libyaml-cpp-dev), with OmegaConf's
// "${a.b}" interpolations resolved (llm-foundry writes its shared values
// under `variables:` and refers to them).

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/errors.hpp"
#include "common/utf8.hpp"
#include "importers/config_readers.hpp"

namespace ragged::importers {
namespace {

// yaml-cpp parses recursively: input nested deeper than any config (flow
// brackets, indentation, "- - -" on one line) is refused before it is parsed,
// by a scan that can only overestimate the depth.
void check_nesting(std::string_view text, const std::string& origin) {
  constexpr int kMaxIndent = 256;
  int flow = 0;
  int line = 1;
  size_t line_start = 0;
  bool in_comment = false;
  char quote = 0;
  int dashes = 0;
  bool leading = true;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = i + 1;
      in_comment = false;
      dashes = 0;
      leading = true;
      if (quote == '\'') quote = 0;  // single-quoted scalars rarely span lines; never let one hide the rest
      continue;
    }
    if (in_comment) continue;
    const int column = static_cast<int>(i - line_start) + 1;
    if (leading && c == ' ') {
      if (column > kMaxIndent) {
        throw InputError(fmt::format("{}:{}:{}: indented more than {} columns: not a training config", origin, line,
                                     column, kMaxIndent));
      }
      continue;
    }
    leading = false;
    if (quote != 0) {
      if (c == quote) quote = 0;
      else if (c == '\\' && quote == '"') ++i;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    else if (c == '#') in_comment = true;
    else if (c == '[' || c == '{') ++flow;
    else if ((c == ']' || c == '}') && flow > 0) --flow;
    else if (c == '-' && (i + 1 == text.size() || text[i + 1] == ' ')) ++dashes;
    if (flow > kMaxConfigNesting || dashes > kMaxConfigNesting) {
      throw InputError(fmt::format("{}:{}:{}: nested deeper than {} levels: not a training config", origin, line,
                                   column, kMaxConfigNesting));
    }
  }
}

bool is_null_text(const std::string& s) { return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL"; }

// A plain scalar's YAML 1.2 core-schema type (what OmegaConf sees).
ConfigValue typed(const std::string& s, bool quoted) {
  ConfigValue v;
  v.text = s;
  v.kind = ConfigValue::Kind::kString;
  if (quoted) return v;
  if (is_null_text(s)) {
    v.kind = ConfigValue::Kind::kNull;
    v.text = "null";
    return v;
  }
  if (s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE") {
    v.kind = ConfigValue::Kind::kBool;
    v.boolean = s[0] == 't' || s[0] == 'T';
    return v;
  }
  char* end = nullptr;
  errno = 0;
  const long long integer = std::strtoll(s.c_str(), &end, 10);
  if (end == s.c_str() + s.size() && errno == 0 && s.find_first_not_of("+-0123456789") == std::string::npos) {
    v.kind = ConfigValue::Kind::kInt;
    v.integer = integer;
    v.number = static_cast<double>(integer);
    return v;
  }
  if (s.find_first_not_of("+-0123456789.eE") == std::string::npos && s.find_first_of("0123456789") != std::string::npos) {
    const double number = std::strtod(s.c_str(), &end);
    if (end == s.c_str() + s.size() && std::isfinite(number)) {
      v.kind = ConfigValue::Kind::kFloat;
      v.number = number;
      return v;
    }
  }
  return v;
}

class YamlFlattener {
 public:
  YamlFlattener(ConfigDocument& doc, const YAML::Node& root) : doc_(doc), root_(root) {}

  // `key` is where the field's key is written (a null value has no mark of its own).
  void add(const std::string& path, const YAML::Node& node, int depth, const YAML::Mark& key) {
    if (++visited_ > 4 * kMaxConfigLeaves) {
      throw InputError(fmt::format("{}: more than {} nodes (aliases expanded): not a training config", doc_.origin(),
                                   4 * kMaxConfigLeaves));
    }
    if (depth > kMaxConfigNesting) {
      throw InputError(fmt::format("{}:{}: {}: nested deeper than {} levels", doc_.origin(), key.line + 1, path,
                                   kMaxConfigNesting));
    }
    if (node.IsMap()) {
      if (node.size() == 0) {
        ConfigValue v = located(key);
        v.kind = ConfigValue::Kind::kEmptyTable;
        v.text = "{}";
        doc_.add(path, v);
        return;
      }
      for (const auto& entry : node) {
        const std::string name = entry.first.IsScalar() ? entry.first.Scalar() : "?";
        add(path.empty() ? name : path + "." + name, entry.second, depth + 1, entry.first.Mark());
      }
      return;
    }
    if (node.IsSequence()) {
      bool scalars = true;
      for (const auto& item : node) scalars = scalars && (item.IsScalar() || item.IsNull());
      if (scalars) {
        ConfigValue v = located(key);
        v.kind = ConfigValue::Kind::kList;
        std::string text;
        for (const auto& item : node) {
          v.items.push_back(scalar(item, 0));
          text += (text.empty() ? "" : ", ") + value_text(v.items.back());
        }
        v.text = "[" + text + "]";
        doc_.add(path, v);
        return;
      }
      for (size_t i = 0; i < node.size(); ++i) add(fmt::format("{}[{}]", path, i), node[i], depth + 1, node[i].Mark());
      return;
    }
    ConfigValue v = scalar(node, 0);
    v.line = key.line + 1;
    v.column = key.column + 1;
    doc_.add(path, v);
  }

 private:
  static ConfigValue located(const YAML::Mark& mark) {
    ConfigValue v;
    v.line = mark.line + 1;
    v.column = mark.column + 1;
    return v;
  }

  // The node at a dotted path from the root, or an invalid node.
  std::optional<YAML::Node> lookup(const std::string& dotted) const {
    YAML::Node at;
    at.reset(root_);  // rebinds: assigning one node to another would write into the tree
    size_t begin = 0;
    while (true) {
      const size_t dot = dotted.find('.', begin);
      const std::string key = dotted.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
      const YAML::Node& current = at;
      if (!current.IsMap()) return std::nullopt;
      const YAML::Node child = current[key];  // const lookup: inserts nothing
      if (!child) return std::nullopt;
      at.reset(child);
      if (dot == std::string::npos) return at;
      begin = dot + 1;
    }
  }

  ConfigValue scalar(const YAML::Node& node, int hops) {
    ConfigValue v = located(node.Mark());
    if (node.IsNull()) {
      v.kind = ConfigValue::Kind::kNull;
      v.text = "null";
      return v;
    }
    const std::string& s = node.Scalar();
    const bool quoted = node.Tag() == "!";
    if (!quoted && s.size() > 3 && s.starts_with("${") && s.back() == '}' && s.find('}') == s.size() - 1) {
      const std::string target = s.substr(2, s.size() - 3);
      const std::optional<YAML::Node> found = hops < 8 ? lookup(target) : std::nullopt;
      if (!found || !(found->IsScalar() || found->IsNull())) {
        throw InputError(fmt::format("{}:{}:{}: interpolation {}: {}", doc_.origin(), v.line, v.column, s,
                                     hops >= 8 ? "refers on and on (a cycle?)" : "names no value of this file"));
      }
      ConfigValue resolved = scalar(*found, hops + 1);
      resolved.line = v.line;
      resolved.column = v.column;
      return resolved;
    }
    ConfigValue out = typed(s, quoted);
    out.line = v.line;
    out.column = v.column;
    return out;
  }

  ConfigDocument& doc_;
  const YAML::Node& root_;
  size_t visited_ = 0;
};

}  // namespace

ConfigDocument read_yaml(std::string_view text, const std::string& origin, const std::string& format) {
  // yaml-cpp takes any bytes: an invalid one would reach the written scenario
  // (refused by its loader) or the MPT config.json (nlohmann's dump throws).
  if (const std::optional<size_t> at = invalid_utf8_at(text)) {
    size_t line_start = text.rfind('\n', *at == 0 ? 0 : *at - 1);
    line_start = line_start == std::string_view::npos || *at == 0 ? 0 : line_start + 1;
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(*at), '\n');
    throw InputError(fmt::format("{}:{}:{}: byte 0x{:02X} is not UTF-8: a YAML config is UTF-8 text; save the file as "
                                 "UTF-8", origin, line, *at - line_start + 1, static_cast<unsigned char>(text[*at])));
  }
  check_nesting(text, origin);
  ConfigDocument doc(origin, format);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}:{}:{}: malformed YAML: {}", origin, e.mark.line + 1, e.mark.column + 1,
                                 clipped(e.msg)));
  }
  if (!root.IsMap()) {
    throw InputError(fmt::format("{}: the YAML's top level is not a mapping of keys to values: not an llm-foundry "
                                 "training config", origin));
  }
  YamlFlattener flattener(doc, root);
  for (const auto& entry : root) {
    flattener.add(entry.first.IsScalar() ? entry.first.Scalar() : "?", entry.second, 1, entry.first.Mark());
  }
  return doc;
}

}  // namespace ragged::importers
