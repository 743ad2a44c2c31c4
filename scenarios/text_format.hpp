#pragma once
// Protobuf text format into any message, with the first syntax error or
// unknown field reported as an InputError "origin:line:col: field.path: what",
// the field named from `locations` (scenario files and validation sets alike).

#include <string>
#include <string_view>

#include <google/protobuf/message.h>

#include "scenarios/field_locations.hpp"

namespace ragged::scenarios {

void parse_text_message(std::string_view text, const std::string& origin, const FieldLocations& locations,
                        google::protobuf::Message* message);

}  // namespace ragged::scenarios
