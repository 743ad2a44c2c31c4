// JSON through nlohmann-json; where each key is written comes from the
// scenario loader's JSON locator (scenarios/json_locator.cpp), which also
// refuses nesting deeper than 32 levels before anything is parsed.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "importers/config_readers.hpp"
#include "scenarios/field_locations.hpp"

namespace ragged::importers {
namespace {

// The locator's paths leave out "[0]".
std::string locator_path(const std::string& path) {
  std::string out = path;
  for (size_t at = out.find("[0]"); at != std::string::npos; at = out.find("[0]")) out.erase(at, 3);
  return out;
}

void set_scalar(ConfigValue& v, const nlohmann::json& node) {
  if (node.is_string()) {
    v.kind = ConfigValue::Kind::kString;
    v.text = node.get<std::string>();
  } else if (node.is_boolean()) {
    v.kind = ConfigValue::Kind::kBool;
    v.boolean = node.get<bool>();
    v.text = v.boolean ? "true" : "false";
  } else if (node.is_number_integer()) {
    v.kind = ConfigValue::Kind::kInt;
    v.integer = node.is_number_unsigned() && node.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                    ? INT64_MAX
                    : node.get<int64_t>();
    v.number = static_cast<double>(v.integer);
    v.text = node.dump();
  } else if (node.is_number()) {
    v.kind = ConfigValue::Kind::kFloat;
    v.number = node.get<double>();
    v.text = node.dump();
  } else {
    v.kind = ConfigValue::Kind::kNull;
    v.text = "null";
  }
}

void add_json(ConfigDocument& doc, const scenarios::FieldLocations& locations, const std::string& path,
              const nlohmann::json& node) {
  ConfigValue v;
  if (const auto at = locations.find(locator_path(path)); at && !path.empty()) {
    v.line = at->line;
    v.column = at->column;
  }
  if (node.is_object()) {
    if (node.empty() && !path.empty()) {
      v.kind = ConfigValue::Kind::kEmptyTable;
      v.text = "{}";
      doc.add(path, v);
    }
    for (const auto& [key, child] : node.items()) add_json(doc, locations, path.empty() ? key : path + "." + key, child);
    return;
  }
  if (node.is_array()) {
    bool scalars = true;
    for (const auto& item : node) scalars = scalars && !item.is_structured();
    if (!scalars) {
      for (size_t i = 0; i < node.size(); ++i) add_json(doc, locations, fmt::format("{}[{}]", path, i), node[i]);
      return;
    }
    v.kind = ConfigValue::Kind::kList;
    std::string text;
    for (const auto& item : node) {
      ConfigValue element;
      set_scalar(element, item);
      v.items.push_back(element);
      text += (text.empty() ? "" : ", ") + value_text(element);
    }
    v.text = "[" + text + "]";
    doc.add(path, v);
    return;
  }
  const int line = v.line;
  const int column = v.column;
  set_scalar(v, node);
  v.line = line;
  v.column = column;
  doc.add(path, v);
}

// Line and column of a byte offset (nlohmann reports the byte after the error).
std::pair<int, int> line_column(std::string_view text, size_t byte) {
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < std::min(byte, text.size()); ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return {line, static_cast<int>(std::min(byte, text.size()) - line_start) + 1};
}

// nlohmann refuses a number beyond a double ("number overflow parsing '1e400'")
// with no position: the number is found as a value in the text (after ':', ',' or
// '['), and the field is the last key read before it.
std::string number_overflow(std::string_view text, const std::string& origin, std::string_view what,
                            const std::string& key) {
  std::string number;
  if (const size_t open = what.find('\''); open != std::string_view::npos) {
    const size_t close = what.find('\'', open + 1);
    if (close != std::string_view::npos) number = std::string(what.substr(open + 1, close - open - 1));
  }
  std::string where = origin;
  for (size_t at = number.empty() ? std::string_view::npos : text.find(number); at != std::string_view::npos;
       at = text.find(number, at + 1)) {
    const size_t before = text.find_last_not_of(" \t\r\n", at == 0 ? 0 : at - 1);
    if (at > 0 && before != std::string_view::npos && (text[before] == ':' || text[before] == ',' || text[before] == '[')) {
      const auto [line, column] = line_column(text, at);
      where = fmt::format("{}:{}:{}", origin, line, column);
      break;
    }
  }
  return fmt::format("{}: {}: the number {} is beyond a double's range (about 1.8e308): write a smaller number",
                     where, key.empty() ? "a value" : clipped(key), clipped(number));
}

}  // namespace

ConfigDocument read_json(std::string_view text, const std::string& origin, const std::string& format) {
  const scenarios::FieldLocations locations = scenarios::locate_json_fields(text, origin);  // refuses deep nesting
  nlohmann::json root;
  std::string last_key;  // the field whose value is being read, for a number beyond a double
  const nlohmann::json::parser_callback_t note_key = [&last_key](int, nlohmann::json::parse_event_t event,
                                                                  nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key) last_key = parsed.get<std::string>();
    return true;
  };
  try {
    root = nlohmann::json::parse(text, note_key);
  } catch (const nlohmann::json::parse_error& e) {
    const auto [line, column] = line_column(text, e.byte > 0 ? e.byte - 1 : 0);
    // "[json.exception.parse_error.101] parse error at line 2, column 24: syntax error while parsing value -
    // invalid literal; last read: '"train_batch_size" : G'": the part after the position.
    std::string what = e.what();
    if (const size_t position = what.find("column "); position != std::string::npos) {
      if (const size_t colon = what.find(": ", position); colon != std::string::npos) what = what.substr(colon + 2);
    }
    throw InputError(fmt::format("{}:{}:{}: malformed JSON: {}", origin, line, column, clipped(what)));
  } catch (const nlohmann::json::out_of_range& e) {  // a number beyond a double (1e400): no byte offset of its own
    throw InputError(number_overflow(text, origin, e.what(), last_key));
  }
  if (!root.is_object()) {
    throw InputError(fmt::format("{}: the JSON's top level is not an object: not a DeepSpeed config", origin));
  }
  ConfigDocument doc(origin, format);
  add_json(doc, locations, "", root);
  return doc;
}

}  // namespace ragged::importers
