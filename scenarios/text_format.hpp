#pragma once
// Protobuf text format into any message, with the first syntax error or
// unknown field reported as an InputError "origin:line:col: field.path: what",
// the field named from `locations` (scenario files and validation sets alike).

#include <optional>
#include <string>
#include <string_view>

#include <google/protobuf/message.h>

#include "scenarios/field_locations.hpp"

namespace ragged::scenarios {

void parse_text_message(std::string_view text, const std::string& origin, const FieldLocations& locations,
                        google::protobuf::Message* message);

// What is wrong with the string field `field_name`'s `value` as text a report
// prints: not valid UTF-8 (protobuf's parsers let any byte in; its serializer
// and nlohmann's dump then refuse it), or a control character that would
// steer the reader's terminal (tab and line feed are text). nullopt if none.
std::optional<std::string> text_field_problem(std::string_view field_name, std::string_view value);

// Every string field set in `message`, nested and repeated ones too, checked
// with text_field_problem; the first problem is an InputError
// "origin:line:col: path: problem" (a validation set's notes and reasons).
void check_text_fields(const google::protobuf::Message& message, const std::string& origin,
                       const FieldLocations& locations);

}  // namespace ragged::scenarios
