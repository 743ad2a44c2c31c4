#pragma once
// The documented range of every numeric field of scenario.proto, checked
// before any arithmetic on it (docs/RELIABILITY.md, "Input limits"). Fields
// are keyed by message and field name ("AdamW.lr"), so a message used in
// several places (AdamW inside Muon and Shampoo) has one range.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/message.h>

#include "scenarios/scenario_rules.hpp"

namespace ragged::scenarios {

struct FieldRange {
  std::string_view field;  // "Message.field"
  double min = 0;
  double max = 0;
  bool min_exclusive = false;  // (min, max] rather than [min, max]
  bool max_exclusive = false;  // [min, max) rather than [min, max]
  std::string_view why;        // what the field is, or why the bound
};

// Every range, in scenario.proto's order.
const std::vector<FieldRange>& field_ranges();
std::optional<FieldRange> field_range(std::string_view message, std::string_view field);

// Every numeric field that is set (or, in proto3, non-optional) and outside
// its range, and every enum holding a number its type does not name; fields
// inside unset messages are not visited. A numeric field without a range is
// reported too (as a bug in the table).
std::vector<FieldIssue> check_field_ranges(const google::protobuf::Message& message);

}  // namespace ragged::scenarios
