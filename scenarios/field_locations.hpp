#pragma once
// Where each field of a scenario file is written, so that any error found
// after parsing (a bad value, an impossible combination) can still name the
// file, the line and the field path. Paths use proto field names:
// "training.granularity.overrides[1].pattern".

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ragged::scenarios {

struct FieldLocation {
  int line = 0;    // 1-based
  int column = 0;  // 1-based
};

// Paths are kept with the index [0] left out ("a.b[0].c" is "a.b.c", the
// same field when b is repeated), and looked up the same way.
class FieldLocations {
 public:
  void add(const std::string& path, FieldLocation location);
  // The location of `path`, or of its nearest written ancestor ("a.b.c" -> "a.b" -> "a").
  std::optional<FieldLocation> find(std::string_view path) const;
  // The path of the last field whose key starts at or before `location`.
  std::optional<std::string> path_at(FieldLocation location) const;
  size_t size() const { return by_path_.size(); }

 private:
  std::map<std::string, FieldLocation, std::less<>> by_path_;
};

// The deepest nesting of messages (or JSON objects and arrays) a scenario
// file may have: a scenario nests at most 5 levels; deeper input is refused
// before it is parsed, so that no input costs more than linear time.
inline constexpr int kMaxNesting = 32;

// Scanners: they do not validate (protobuf's parsers do); they only record
// where each key appears, in time linear in the text. Keys in lowerCamelCase
// (JSON names) are recorded in snake_case so that paths match the proto field
// names. Nesting deeper than kMaxNesting is an InputError at its line and
// column, prefixed by `origin`.
FieldLocations locate_json_fields(std::string_view text, std::string_view origin = "");
FieldLocations locate_textproto_fields(std::string_view text, std::string_view origin = "");

// Throws InputError "<origin>:<line>:<column>: ... nested deeper than 32 levels".
[[noreturn]] void throw_too_deep(std::string_view origin, FieldLocation at);

// "gpusPerNode" -> "gpus_per_node"; snake_case input is returned unchanged.
std::string to_snake_case(std::string_view name);

}  // namespace ragged::scenarios
