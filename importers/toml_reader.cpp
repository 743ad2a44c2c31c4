// TOML through toml++ (Debian's libtomlplusplus-dev).

#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "common/errors.hpp"
#include "importers/config_readers.hpp"

namespace ragged::importers {
namespace {

ConfigValue scalar_of(const toml::node& node) {
  ConfigValue v;
  v.line = static_cast<int>(node.source().begin.line);
  v.column = static_cast<int>(node.source().begin.column);
  if (const auto* s = node.as_string()) {
    v.kind = ConfigValue::Kind::kString;
    v.text = s->get();
  } else if (const auto* i = node.as_integer()) {
    v.kind = ConfigValue::Kind::kInt;
    v.integer = i->get();
    v.number = static_cast<double>(v.integer);
    v.text = fmt::format("{}", v.integer);
  } else if (const auto* f = node.as_floating_point()) {
    v.kind = ConfigValue::Kind::kFloat;
    v.number = f->get();
    v.text = fmt::format("{}", v.number);
  } else if (const auto* b = node.as_boolean()) {
    v.kind = ConfigValue::Kind::kBool;
    v.boolean = b->get();
    v.text = v.boolean ? "true" : "false";
  } else {  // dates and times: kept as text
    std::ostringstream text;
    node.visit([&text](const auto& n) { text << n; });
    v.kind = ConfigValue::Kind::kString;
    v.text = text.str();
  }
  return v;
}

void add_node(ConfigDocument& doc, const std::string& path, const toml::node& node, int depth) {
  if (depth > kMaxConfigNesting) {
    throw InputError(fmt::format("{}:{}:{}: {}: nested deeper than {} levels", doc.origin(), node.source().begin.line,
                                 node.source().begin.column, path, kMaxConfigNesting));
  }
  if (const auto* table = node.as_table()) {
    if (table->empty()) {
      ConfigValue v;
      v.kind = ConfigValue::Kind::kEmptyTable;
      v.text = "{}";
      v.line = static_cast<int>(node.source().begin.line);
      v.column = static_cast<int>(node.source().begin.column);
      doc.add(path, v);
      return;
    }
    for (const auto& [key, child] : *table) {
      add_node(doc, path.empty() ? std::string(key.str()) : path + "." + std::string(key.str()), child, depth + 1);
    }
    return;
  }
  if (const auto* array = node.as_array()) {
    bool scalars = true;
    for (const auto& item : *array) scalars = scalars && !item.is_table() && !item.is_array();
    if (scalars) {
      ConfigValue v;
      v.kind = ConfigValue::Kind::kList;
      v.line = static_cast<int>(node.source().begin.line);
      v.column = static_cast<int>(node.source().begin.column);
      std::string text;
      for (const auto& item : *array) {
        v.items.push_back(scalar_of(item));
        text += (text.empty() ? "" : ", ") + value_text(v.items.back());
      }
      v.text = "[" + text + "]";
      doc.add(path, v);
      return;
    }
    for (size_t i = 0; i < array->size(); ++i) add_node(doc, fmt::format("{}[{}]", path, i), *array->get(i), depth + 1);
    return;
  }
  doc.add(path, scalar_of(node));
}

}  // namespace

ConfigDocument read_toml(std::string_view text, const std::string& origin, const std::string& format) {
  ConfigDocument doc(origin, format);
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    throw InputError(fmt::format("{}:{}:{}: malformed TOML: {}", origin, e.source().begin.line,
                                 e.source().begin.column, clipped(std::string(e.description()))));
  }
  for (const auto& [key, child] : root) add_node(doc, std::string(key.str()), child, 1);
  return doc;
}

}  // namespace ragged::importers
