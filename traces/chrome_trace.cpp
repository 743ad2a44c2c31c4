#include "traces/chrome_trace.hpp"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/file_io.hpp"
#include "common/units.hpp"
#include "traces/trace_names.hpp"

namespace ragged::traces {
namespace {

using nlohmann::json;
namespace pb = google::protobuf;

double to_us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

// Thread names use hyphens ("all-gather") as the timeline reads better so.
std::string thread_label(Stream stream) {
  std::string label(stream_name(stream));
  std::replace(label.begin(), label.end(), '_', '-');
  return label;
}

json metadata_event(const char* name, int32_t pid, int tid, json args) {
  json event = {{"ph", "M"}, {"name", name}, {"pid", pid}, {"args", std::move(args)}};
  if (tid >= 0) event["tid"] = tid;
  return event;
}

// The singular fields of a message, by name; enums by their name. Reflection
// keeps this in step with fields added to the schema later.
json scalar_fields(const pb::Message& message, const std::set<std::string>& skip = {}) {
  json out = json::object();
  const pb::Reflection* reflection = message.GetReflection();
  const pb::Descriptor* descriptor = message.GetDescriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const pb::FieldDescriptor* field = descriptor->field(i);
    if (field->is_repeated() || skip.contains(field->name())) continue;
    json& value = out[field->name()];
    switch (field->cpp_type()) {
      case pb::FieldDescriptor::CPPTYPE_INT32: value = reflection->GetInt32(message, field); break;
      case pb::FieldDescriptor::CPPTYPE_INT64: value = reflection->GetInt64(message, field); break;
      case pb::FieldDescriptor::CPPTYPE_UINT32: value = reflection->GetUInt32(message, field); break;
      case pb::FieldDescriptor::CPPTYPE_UINT64: value = reflection->GetUInt64(message, field); break;
      case pb::FieldDescriptor::CPPTYPE_DOUBLE: value = reflection->GetDouble(message, field); break;
      case pb::FieldDescriptor::CPPTYPE_FLOAT: value = reflection->GetFloat(message, field); break;
      case pb::FieldDescriptor::CPPTYPE_BOOL: value = reflection->GetBool(message, field); break;
      case pb::FieldDescriptor::CPPTYPE_STRING: value = reflection->GetString(message, field); break;
      case pb::FieldDescriptor::CPPTYPE_ENUM: value = reflection->GetEnum(message, field)->name(); break;
      case pb::FieldDescriptor::CPPTYPE_MESSAGE: out.erase(field->name()); break;
    }
  }
  return out;
}

json metadata_object(const Trace& trace) {
  // The scenario text is long and the trace file keeps it; leave it out here.
  json out = scalar_fields(trace.metadata(), {"scenario_text"});
  out["traced_ranks"] = json(std::vector<int32_t>(trace.metadata().traced_ranks().begin(),
                                                  trace.metadata().traced_ranks().end()));
  out["summary"] = scalar_fields(trace.summary());
  return out;
}

}  // namespace

std::string to_chrome_trace(const Trace& trace) {
  std::set<int32_t> ranks(trace.metadata().traced_ranks().begin(), trace.metadata().traced_ranks().end());
  std::set<std::pair<int32_t, Stream>> threads;
  for (const Event& event : trace.events()) {
    ranks.insert(event.rank());
    threads.emplace(event.rank(), event.stream());
  }
  for (const MemorySample& sample : trace.memory()) ranks.insert(sample.rank());

  json events = json::array();
  for (int32_t rank : ranks) {
    events.push_back(metadata_event("process_name", rank, -1, {{"name", fmt::format("rank {}", rank)}}));
    events.push_back(metadata_event("process_sort_index", rank, -1, {{"sort_index", rank}}));
  }
  for (const auto& [rank, stream] : threads) {
    int tid = static_cast<int>(stream);
    events.push_back(metadata_event("thread_name", rank, tid, {{"name", thread_label(stream)}}));
    events.push_back(metadata_event("thread_sort_index", rank, tid, {{"sort_index", tid}}));
  }

  // Timed events, sorted by time; the stable sort keeps input order on ties.
  std::vector<std::pair<int64_t, json>> timed;
  timed.reserve(static_cast<size_t>(trace.events_size() + trace.memory_size()));
  for (const Event& event : trace.events()) {
    std::string_view kind = op_kind_name(event.kind());
    json args = {{"op_id", event.op_id()}, {"unit", event.unit()}, {"bytes", event.bytes()},
                 {"flops", event.flops()}, {"step", event.step()}};
    timed.emplace_back(event.start_ns(),
                       json{{"ph", "X"},
                            {"name", event.name().empty() ? std::string(kind) : event.name()},
                            {"cat", kind},
                            {"pid", event.rank()},
                            {"tid", static_cast<int>(event.stream())},
                            {"ts", to_us(event.start_ns())},
                            {"dur", to_us(event.end_ns() - event.start_ns())},
                            {"args", std::move(args)}});
  }
  for (const MemorySample& sample : trace.memory()) {
    json args = {{"allocated_gib", static_cast<double>(sample.allocated_bytes()) / kGiB},
                 {"reserved_gib", static_cast<double>(sample.reserved_bytes()) / kGiB}};
    timed.emplace_back(sample.time_ns(), json{{"ph", "C"},
                                              {"name", "memory"},
                                              {"pid", sample.rank()},
                                              {"ts", to_us(sample.time_ns())},
                                              {"args", std::move(args)}});
  }
  std::stable_sort(timed.begin(), timed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& entry : timed) events.push_back(std::move(entry.second));

  json out = {{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ns"},
              {"metadata", metadata_object(trace)}};
  // Replace rather than throw on names that are not valid UTF-8.
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

void write_chrome_trace(const Trace& trace, const std::filesystem::path& path) {
  write_file_atomically(path, to_chrome_trace(trace));
}

}  // namespace ragged::traces
