#pragma once
// Reading and writing traces. The file extension names the format:
// ".json" is protobuf JSON, ".textproto"/".txtpb"/".pbtxt" is protobuf text
// format, anything else (".pb", ".trace") is binary protobuf. Readers and
// writers validate (trace_validate.hpp), so a trace on disk is always valid.

#include <filesystem>
#include <string>
#include <string_view>

#include "traces/trace.pb.h"

namespace ragged::traces {

enum class TraceFormat { kBinary, kJson, kText };

TraceFormat format_for_path(const std::filesystem::path& path);

// In-memory forms; they do not validate. parse_trace throws InputError
// "<origin>: <problem>" when `data` is not a Trace in `format`.
std::string serialize_trace(const Trace& trace, TraceFormat format);
Trace parse_trace(std::string_view data, TraceFormat format, const std::string& origin);

std::string trace_to_json(const Trace& trace);
Trace trace_from_json(std::string_view json, const std::string& origin);

// Validates, then writes atomically: on any failure the previous file, if
// any, is untouched. Throws InputError.
void write_trace(const Trace& trace, const std::filesystem::path& path);

// Reads, parses and validates; throws InputError "<file>: <problem>".
Trace read_trace(const std::filesystem::path& path);

}  // namespace ragged::traces
