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

// Scanners: they do not validate (protobuf's parsers do); they only record
// where each key appears. Keys in lowerCamelCase (JSON names) are recorded in
// snake_case so that paths match the proto field names.
FieldLocations locate_json_fields(std::string_view text);
FieldLocations locate_textproto_fields(std::string_view text);

// "gpusPerNode" -> "gpus_per_node"; snake_case input is returned unchanged.
std::string to_snake_case(std::string_view name);

}  // namespace ragged::scenarios
