#include "importers/config_document.hpp"

#include <cmath>

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged::importers {
namespace {

std::string kind_name(ConfigValue::Kind kind) {
  switch (kind) {
    case ConfigValue::Kind::kNull: return "empty";
    case ConfigValue::Kind::kBool: return "a boolean";
    case ConfigValue::Kind::kInt: return "an integer";
    case ConfigValue::Kind::kFloat: return "a number";
    case ConfigValue::Kind::kString: return "a string";
    case ConfigValue::Kind::kList: return "a list";
    case ConfigValue::Kind::kEmptyTable: return "a table";
  }
  return "a value";
}

}  // namespace

std::string value_text(const ConfigValue& value) {
  std::string text = value.kind == ConfigValue::Kind::kString ? fmt::format("\"{}\"", value.text) : value.text;
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return text.size() <= 60 ? text : text.substr(0, 56) + "...";
}

void ConfigDocument::add(std::string path, ConfigValue value) {
  if (const auto existing = index_.find(path); existing != index_.end()) {
    leaves_[existing->second].value = std::move(value);
    return;
  }
  if (leaves_.size() >= kMaxConfigLeaves) {
    throw InputError(fmt::format("{}: more than {} fields: not a training config this importer reads", origin_,
                                 kMaxConfigLeaves));
  }
  index_.emplace(path, leaves_.size());
  leaves_.push_back({std::move(path), std::move(value)});
  read_.push_back(false);
}

const ConfigLeaf* ConfigDocument::leaf(std::string_view path) const {
  const auto found = index_.find(std::string(path));
  if (found == index_.end()) return nullptr;
  read_[found->second] = true;
  return &leaves_[found->second];
}

const ConfigValue* ConfigDocument::find(std::string_view path) const {
  const ConfigLeaf* found = leaf(path);
  if (found == nullptr || found->value.kind == ConfigValue::Kind::kNull) return nullptr;
  return &found->value;
}

bool ConfigDocument::has_section(std::string_view prefix) const {
  for (const ConfigLeaf& l : leaves_) {
    if (l.path.size() > prefix.size() && l.path.starts_with(prefix) && l.path[prefix.size()] == '.') return true;
  }
  return false;
}

void ConfigDocument::mark_read(std::string_view path) const { leaf(path); }

bool ConfigDocument::was_read(const ConfigLeaf& l) const {
  return read_[static_cast<size_t>(&l - leaves_.data())];
}

std::string ConfigDocument::located(std::string_view path, const std::string& message) const {
  if (const auto found = index_.find(std::string(path)); found != index_.end()) {
    const ConfigValue& v = leaves_[found->second].value;
    if (v.line > 0) return fmt::format("{}:{}:{}: {}: {}", origin_, v.line, v.column, path, message);
  }
  return fmt::format("{}: {}: {}", origin_, path, message);
}

void ConfigDocument::fail(std::string_view path, const std::string& message) const {
  throw InputError(located(path, message));
}

std::string ConfigDocument::quoted(std::string_view path) const {
  if (const auto found = index_.find(std::string(path)); found != index_.end()) {
    const ConfigLeaf& l = leaves_[found->second];
    return l.value.line > 0 ? fmt::format("{} = {} (line {})", path, value_text(l.value), l.value.line)
                            : fmt::format("{} = {}", path, value_text(l.value));
  }
  return std::string(path);
}

std::optional<int64_t> ConfigDocument::integer(std::string_view path, int64_t min, int64_t max) const {
  const ConfigValue* v = find(path);
  if (v == nullptr) return std::nullopt;
  const std::string range = fmt::format("give a whole number from {} to {}", min, max);
  int64_t out = 0;
  if (v->kind == ConfigValue::Kind::kInt) {
    out = v->integer;
  } else if (v->kind == ConfigValue::Kind::kFloat && v->number == std::floor(v->number) && std::abs(v->number) < 9e15) {
    out = static_cast<int64_t>(v->number);  // 1e9 written as a float
  } else {
    fail(path, fmt::format("{} is {}, not a whole number; {}", value_text(*v), kind_name(v->kind), range));
  }
  if (out < min || out > max) fail(path, fmt::format("{} is out of range; {}", out, range));
  return out;
}

std::optional<double> ConfigDocument::number(std::string_view path, double min, double max) const {
  const ConfigValue* v = find(path);
  if (v == nullptr) return std::nullopt;
  if (v->kind != ConfigValue::Kind::kInt && v->kind != ConfigValue::Kind::kFloat) {
    fail(path, fmt::format("{} is {}, not a number; give a number from {} to {}", value_text(*v), kind_name(v->kind),
                           min, max));
  }
  if (!(v->number >= min && v->number <= max)) {
    fail(path, fmt::format("{} is out of range; give a number from {} to {}", v->text, min, max));
  }
  return v->number;
}

std::optional<bool> ConfigDocument::boolean(std::string_view path) const {
  const ConfigValue* v = find(path);
  if (v == nullptr) return std::nullopt;
  if (v->kind != ConfigValue::Kind::kBool) {
    fail(path, fmt::format("{} is {}, not a boolean; give true or false", value_text(*v), kind_name(v->kind)));
  }
  return v->boolean;
}

std::optional<std::string> ConfigDocument::string(std::string_view path) const {
  const ConfigValue* v = find(path);
  if (v == nullptr) return std::nullopt;
  if (v->kind == ConfigValue::Kind::kList || v->kind == ConfigValue::Kind::kEmptyTable) {
    fail(path, fmt::format("{} is {}; give one value", value_text(*v), kind_name(v->kind)));
  }
  return v->text;
}

std::vector<std::string> ConfigDocument::strings(std::string_view path) const {
  const ConfigValue* v = find(path);
  if (v == nullptr) return {};
  if (v->kind == ConfigValue::Kind::kString) return {v->text};
  if (v->kind != ConfigValue::Kind::kList) {
    fail(path, fmt::format("{} is {}; give a list of names, e.g. [\"a\", \"b\"]", value_text(*v), kind_name(v->kind)));
  }
  std::vector<std::string> out;
  for (const ConfigValue& item : v->items) out.push_back(item.text);
  return out;
}

bool ConfigDocument::is_auto(std::string_view path) const {
  const ConfigValue* v = find(path);
  return v != nullptr && v->kind == ConfigValue::Kind::kString && v->text == "auto";
}

}  // namespace ragged::importers
