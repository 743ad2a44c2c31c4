#include "traces/trace_io.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

#include <fmt/format.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "traces/protobuf_log.hpp"
#include "traces/trace_validate.hpp"

namespace ragged::traces {
namespace {

namespace pb = google::protobuf;

// Keeps the first text-format error with its 1-based line and column.
class FirstErrorCollector : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (error_.empty()) error_ = fmt::format("line {}:{}: {}", line + 1, column + 1, message);
  }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

Trace parse_binary(std::string_view data, const std::string& origin) {
  if (data.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw InputError(fmt::format("{}: {} bytes is over the 2 GiB limit of a protobuf message", origin, data.size()));
  }
  Trace trace;
  take_protobuf_log();
  if (trace.ParseFromArray(data.data(), static_cast<int>(data.size()))) return trace;
  if (const std::string logged = take_protobuf_log(); !logged.empty()) {
    throw InputError(fmt::format("{}: not a binary Trace: {}", origin, logged));
  }
  // A text file under a binary name is a common slip; say what it looks like.
  auto first = std::find_if(data.begin(), data.end(),
                            [](char c) { return !std::isspace(static_cast<unsigned char>(c)); });
  std::string hint;
  if (first != data.end() && *first == '{') {
    hint = ": it looks like JSON, name it .json";
  } else if (first != data.end() && std::all_of(first, data.end(), [](char c) {
               return std::isprint(static_cast<unsigned char>(c)) || std::isspace(static_cast<unsigned char>(c));
             })) {
    hint = ": it looks like text, name it .textproto if it is protobuf text format";
  }
  throw InputError(fmt::format("{}: not a binary Trace (truncated or another kind of file){}", origin, hint));
}

Trace parse_text(std::string_view data, const std::string& origin) {
  Trace trace;
  FirstErrorCollector errors;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(data), &trace)) {
    throw InputError(fmt::format("{}: {}", origin, errors.error().empty() ? "invalid text format" : errors.error()));
  }
  return trace;
}

}  // namespace

TraceFormat format_for_path(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".json") return TraceFormat::kJson;
  if (ext == ".textproto" || ext == ".txtpb" || ext == ".pbtxt") return TraceFormat::kText;
  return TraceFormat::kBinary;
}

std::string serialize_trace(const Trace& trace, TraceFormat format) {
  std::string out;
  bool ok = true;
  switch (format) {
    case TraceFormat::kBinary:
      ok = trace.SerializeToString(&out);
      break;
    case TraceFormat::kJson:
      return trace_to_json(trace);
    case TraceFormat::kText: {
      std::string body;
      ok = pb::TextFormat::PrintToString(trace, &body);
      out = "# proto-file: traces/trace.proto\n# proto-message: ragged.traces.Trace\n" + body;
      break;
    }
  }
  RAGGED_ASSERT(ok, "serializing a Trace failed");
  return out;
}

Trace parse_trace(std::string_view data, TraceFormat format, const std::string& origin) {
  switch (format) {
    case TraceFormat::kBinary:
      return parse_binary(data, origin);
    case TraceFormat::kJson:
      return trace_from_json(data, origin);
    case TraceFormat::kText:
      return parse_text(data, origin);
  }
  RAGGED_ASSERT(false, "unknown TraceFormat");
  return {};
}

std::string trace_to_json(const Trace& trace) {
  pb::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  std::string out;
  auto status = pb::util::MessageToJsonString(trace, &out, options);
  RAGGED_ASSERT(status.ok(), "JSON serialization of a Trace failed: " + std::string(status.message()));
  return out;
}

Trace trace_from_json(std::string_view json, const std::string& origin) {
  Trace trace;
  auto status = pb::util::JsonStringToMessage(pb::StringPiece(json.data(), json.size()), &trace,
                                              pb::util::JsonParseOptions());
  if (!status.ok()) {
    // protobuf's message runs over lines (the text, then a caret): keep the first.
    std::string message = status.message().ToString();
    message = message.substr(0, message.find('\n'));
    throw InputError(fmt::format("{}: invalid JSON Trace: {}", origin, message));
  }
  return trace;
}

void write_trace(const Trace& trace, const std::filesystem::path& path) {
  check_trace(trace, path.string());
  write_file_atomically(path, serialize_trace(trace, format_for_path(path)));
}

Trace read_trace(const std::filesystem::path& path) {
  std::string data = read_file(path, kMaxTraceBytes);
  Trace trace = parse_trace(data, format_for_path(path), path.string());
  check_trace(trace, path.string());
  return trace;
}

}  // namespace ragged::traces
