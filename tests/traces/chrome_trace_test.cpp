#include "traces/chrome_trace.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/file_io.hpp"
#include "sample_trace.hpp"

namespace ragged::traces {
namespace {

using nlohmann::json;
using testing::make_sample_trace;

constexpr double kGiBytes = 1024.0 * 1024.0 * 1024.0;

std::vector<json> events_with_phase(const json& chrome, const std::string& ph) {
  std::vector<json> out;
  for (const json& event : chrome["traceEvents"]) {
    if (event["ph"] == ph) out.push_back(event);
  }
  return out;
}

class ChromeTrace : public ::testing::Test {
 protected:
  Trace trace_ = make_sample_trace();
  json chrome_ = json::parse(to_chrome_trace(trace_));
};

TEST_F(ChromeTrace, TopLevelShape) {
  ASSERT_TRUE(chrome_["traceEvents"].is_array());
  EXPECT_EQ(chrome_["displayTimeUnit"], "ns");
  const json& metadata = chrome_["metadata"];
  EXPECT_EQ(metadata["scenario_name"], "tiny-llama");
  EXPECT_EQ(metadata["source"], "PREDICTED");
  EXPECT_EQ(metadata["world_size"], 2);
  EXPECT_EQ(metadata["traced_ranks"], json::array({0, 1}));
  EXPECT_FALSE(metadata.contains("scenario_text"));
  EXPECT_DOUBLE_EQ(metadata["summary"]["mfu"].get<double>(), 0.41);
  EXPECT_EQ(metadata["summary"]["hbm_capacity_bytes"], 80LL << 30);
}

TEST_F(ChromeTrace, OneProcessPerRankOneThreadPerStream) {
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::string> threads;
  for (const json& event : events_with_phase(chrome_, "M")) {
    if (event["name"] == "process_name") processes[event["pid"]] = event["args"]["name"];
    if (event["name"] == "thread_name") threads[{event["pid"], event["tid"]}] = event["args"]["name"];
  }
  EXPECT_EQ(processes, (std::map<int, std::string>{{0, "rank 0"}, {1, "rank 1"}}));
  std::map<std::pair<int, int>, std::string> expected;
  for (int rank : {0, 1}) {
    expected[{rank, COMPUTE}] = "compute";
    expected[{rank, ALL_GATHER_STREAM}] = "all-gather";
    expected[{rank, REDUCE_SCATTER_STREAM}] = "reduce-scatter";
  }
  EXPECT_EQ(threads, expected);
}

TEST_F(ChromeTrace, CompleteEventsCarryTimesInMicrosecondsAndArgs) {
  std::vector<json> complete = events_with_phase(chrome_, "X");
  ASSERT_EQ(complete.size(), static_cast<size_t>(trace_.events_size()));
  // Match each trace event to its export by (rank, op_id).
  std::map<std::pair<int, uint64_t>, json> by_op;
  for (const json& event : complete) by_op[{event["pid"], event["args"]["op_id"]}] = event;
  ASSERT_EQ(by_op.size(), complete.size());
  for (const Event& event : trace_.events()) {
    const json& x = by_op.at({event.rank(), event.op_id()});
    EXPECT_EQ(x["tid"], static_cast<int>(event.stream()));
    EXPECT_DOUBLE_EQ(x["ts"].get<double>(), event.start_ns() / 1000.0);
    EXPECT_DOUBLE_EQ(x["dur"].get<double>(), (event.end_ns() - event.start_ns()) / 1000.0);
    EXPECT_EQ(x["args"]["unit"], event.unit());
    EXPECT_EQ(x["args"]["bytes"], event.bytes());
    EXPECT_DOUBLE_EQ(x["args"]["flops"].get<double>(), event.flops());
    EXPECT_EQ(x["args"]["step"], event.step());
  }
  const json& reduce_scatter = by_op.at({1, 6});
  EXPECT_EQ(reduce_scatter["name"], "layers.1 reduce_scatter");
  EXPECT_EQ(reduce_scatter["cat"], "reduce_scatter");
  EXPECT_DOUBLE_EQ(reduce_scatter["ts"].get<double>(), 17.25);
  EXPECT_DOUBLE_EQ(reduce_scatter["dur"].get<double>(), 2.5);
  // Rank 1's optimizer event has no name: the kind stands in.
  EXPECT_EQ(by_op.at({1, 9})["name"], "optimizer");
  EXPECT_EQ(by_op.at({0, 9})["name"], "adamw");
}

TEST_F(ChromeTrace, MemorySamplesAreCounters) {
  std::vector<json> counters = events_with_phase(chrome_, "C");
  ASSERT_EQ(counters.size(), static_cast<size_t>(trace_.memory_size()));
  std::set<std::pair<int, double>> seen;
  for (const json& c : counters) {
    EXPECT_EQ(c["name"], "memory");
    seen.insert({c["pid"].get<int>(), c["ts"].get<double>()});
  }
  for (const MemorySample& s : trace_.memory()) {
    EXPECT_TRUE(seen.contains({s.rank(), s.time_ns() / 1000.0})) << s.ShortDebugString();
  }
  // memory[6]: rank 1 at 17250 ns, (5 << 20) + 1 allocated of 6 MiB reserved.
  bool found = false;
  for (const json& c : counters) {
    if (c["pid"] == 1 && c["ts"] == 17.25) {
      found = true;
      EXPECT_DOUBLE_EQ(c["args"]["allocated_gib"].get<double>(), ((5 << 20) + 1) / kGiBytes);
      EXPECT_DOUBLE_EQ(c["args"]["reserved_gib"].get<double>(), (6 << 20) / kGiBytes);
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(ChromeTrace, MetadataFirstThenTimedEventsSortedByTimestamp) {
  const json& events = chrome_["traceEvents"];
  size_t i = 0;
  while (i < events.size() && events[i]["ph"] == "M") ++i;
  ASSERT_GT(i, 0u);
  size_t timed = events.size() - i;
  EXPECT_EQ(timed, static_cast<size_t>(trace_.events_size() + trace_.memory_size()));
  double previous = -1;
  for (; i < events.size(); ++i) {
    EXPECT_NE(events[i]["ph"], "M") << "metadata event after a timed one at " << i;
    double ts = events[i]["ts"];
    EXPECT_LE(previous, ts) << "event " << i << " is out of order";
    previous = ts;
  }
}

TEST_F(ChromeTrace, UnsortedInputComesOutSorted) {
  std::reverse(trace_.mutable_events()->begin(), trace_.mutable_events()->end());
  json chrome = json::parse(to_chrome_trace(trace_));
  std::vector<json> complete = events_with_phase(chrome, "X");
  ASSERT_EQ(complete.size(), 18u);
  for (size_t i = 1; i < complete.size(); ++i) {
    EXPECT_LE(complete[i - 1]["ts"].get<double>(), complete[i]["ts"].get<double>());
  }
  EXPECT_EQ(complete.front()["ts"], 0.0);
  EXPECT_EQ(complete.back()["ts"], 27.25);
}

TEST(ChromeTraceFile, WritesTheSameJson) {
  testing::ScratchDir dir;
  Trace trace = make_sample_trace();
  write_chrome_trace(trace, dir / "run.chrome.json");
  EXPECT_EQ(read_file(dir / "run.chrome.json"), to_chrome_trace(trace));
  EXPECT_EQ(dir.entry_count(), 1);
}

}  // namespace
}  // namespace ragged::traces
