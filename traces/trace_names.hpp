#pragma once
// Names of the trace enums as they appear in reports, Chrome traces and flags.
// Op kinds are the enum names in lower snake case ("all_gather"); streams have
// short names of their own ("all_gather" for ALL_GATHER_STREAM, "copy").
// The zero values are "unspecified"; values outside the enum are "unknown".

#include <optional>
#include <string_view>

#include "traces/trace.pb.h"

namespace ragged::traces {

std::string_view op_kind_name(OpKind kind);
// Accepts the lower-case name or the enum name ("all_gather", "ALL_GATHER").
std::optional<OpKind> parse_op_kind(std::string_view name);

std::string_view stream_name(Stream stream);
std::optional<Stream> parse_stream(std::string_view name);

std::string_view source_name(Source source);  // "predicted", "measured"

}  // namespace ragged::traces
