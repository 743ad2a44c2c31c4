#include "traces/trace_names.hpp"

#include <array>
#include <cctype>
#include <string>
#include <vector>

namespace ragged::traces {
namespace {

constexpr std::string_view kUnspecified = "unspecified";
constexpr std::string_view kUnknown = "unknown";

// Lower-case names of every value of a protobuf enum, indexed by value; the
// zero value ("*_UNSPECIFIED") is "unspecified". Built once from the descriptor.
std::vector<std::string> lower_case_names(const google::protobuf::EnumDescriptor* descriptor) {
  std::vector<std::string> names;
  for (int i = 0; i < descriptor->value_count(); ++i) {
    const auto* value = descriptor->value(i);
    if (value->number() < 0) continue;
    auto index = static_cast<size_t>(value->number());
    if (names.size() <= index) names.resize(index + 1);
    std::string name = value->name();
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    names[index] = value->number() == 0 ? std::string(kUnspecified) : name;
  }
  return names;
}

const std::vector<std::string>& op_kind_names() {
  static const std::vector<std::string> names = lower_case_names(OpKind_descriptor());
  return names;
}

// Stream names are chosen, not derived: the enum values carry a "_STREAM"
// suffix that reads badly in reports.
constexpr std::array<std::string_view, 12> kStreamNames = {
    kUnspecified, "compute", "all_gather", "reduce_scatter", "all_reduce", "copy", "host",
    "tensor_parallel", "context_parallel", "expert_parallel", "pipeline_send", "pipeline_recv"};
static_assert(kStreamNames.size() == Stream_ARRAYSIZE, "name every Stream value");

constexpr std::array<std::string_view, 3> kSourceNames = {kUnspecified, "predicted", "measured"};
static_assert(kSourceNames.size() == Source_ARRAYSIZE, "name every Source value");

}  // namespace

std::string_view op_kind_name(OpKind kind) {
  const auto& names = op_kind_names();
  auto index = static_cast<size_t>(kind);
  if (kind < 0 || index >= names.size() || names[index].empty()) return kUnknown;
  return names[index];
}

std::optional<OpKind> parse_op_kind(std::string_view name) {
  const auto& names = op_kind_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (!names[i].empty() && names[i] == name) return static_cast<OpKind>(i);
  }
  OpKind kind{};
  if (OpKind_Parse(std::string(name), &kind)) return kind;
  return std::nullopt;
}

std::string_view stream_name(Stream stream) {
  if (!Stream_IsValid(stream)) return kUnknown;
  return kStreamNames[static_cast<size_t>(stream)];
}

std::optional<Stream> parse_stream(std::string_view name) {
  for (size_t i = 0; i < kStreamNames.size(); ++i) {
    if (kStreamNames[i] == name) return static_cast<Stream>(i);
  }
  Stream stream{};
  if (Stream_Parse(std::string(name), &stream)) return stream;
  return std::nullopt;
}

std::string_view source_name(Source source) {
  if (!Source_IsValid(source)) return kUnknown;
  return kSourceNames[static_cast<size_t>(source)];
}

}  // namespace ragged::traces
