#include "traces/trace_io.hpp"

#include <regex>
#include <string>

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "sample_trace.hpp"

namespace ragged::traces {
namespace {

using google::protobuf::util::MessageDifferencer;
using testing::make_sample_trace;
using testing::ScratchDir;

// The message of the InputError that `fn` throws; fails the test if none.
template <typename Fn>
std::string input_error(Fn fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected InputError";
  return "";
}

TEST(FormatForPath, ExtensionNamesTheFormat) {
  EXPECT_EQ(format_for_path("run.json"), TraceFormat::kJson);
  EXPECT_EQ(format_for_path("dir.d/run.JSON"), TraceFormat::kJson);
  EXPECT_EQ(format_for_path("run.textproto"), TraceFormat::kText);
  EXPECT_EQ(format_for_path("run.txtpb"), TraceFormat::kText);
  EXPECT_EQ(format_for_path("run.pbtxt"), TraceFormat::kText);
  EXPECT_EQ(format_for_path("run.pb"), TraceFormat::kBinary);
  EXPECT_EQ(format_for_path("run.trace"), TraceFormat::kBinary);
  EXPECT_EQ(format_for_path("run"), TraceFormat::kBinary);
  EXPECT_EQ(format_for_path("run.json.pb"), TraceFormat::kBinary);
}

class RoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTrip, WriteThenReadGivesTheSameTrace) {
  ScratchDir dir;
  const auto path = dir / ("run" + GetParam());
  const Trace original = make_sample_trace();
  write_trace(original, path);
  Trace back = read_trace(path);
  std::string diff;
  MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differencer.Compare(original, back)) << diff;
  EXPECT_TRUE(MessageDifferencer::Equals(original, back));
  EXPECT_EQ(dir.entry_count(), 1) << "a temporary file was left behind";
}

INSTANTIATE_TEST_SUITE_P(Extensions, RoundTrip,
                         ::testing::Values(".pb", ".trace", ".json", ".textproto", ".txtpb", ".pbtxt"),
                         [](const auto& param) { return param.param.substr(1); });

TEST(TraceIo, FileContentsAreInTheFormatTheExtensionNames) {
  ScratchDir dir;
  const Trace trace = make_sample_trace();
  write_trace(trace, dir / "a.json");
  write_trace(trace, dir / "a.textproto");
  write_trace(trace, dir / "a.pb");

  auto trace_json = nlohmann::json::parse(read_file(dir / "a.json"));
  EXPECT_EQ(trace_json["metadata"]["scenario_name"], "tiny-llama");
  EXPECT_EQ(trace_json["events"].size(), 18u);

  std::string text = read_file(dir / "a.textproto");
  EXPECT_NE(text.find("scenario_name: \"tiny-llama\""), std::string::npos) << text.substr(0, 300);
  EXPECT_NE(text.find("events {"), std::string::npos);

  Trace binary;
  ASSERT_TRUE(binary.ParseFromString(read_file(dir / "a.pb")));
  EXPECT_TRUE(MessageDifferencer::Equals(trace, binary));
}

TEST(TraceIo, JsonStringRoundTrip) {
  const Trace trace = make_sample_trace();
  EXPECT_TRUE(MessageDifferencer::Equals(trace, trace_from_json(trace_to_json(trace), "memory")));
}

TEST(TraceIo, OverwriteReplacesTheFileAndLeavesNoTemporary) {
  ScratchDir dir;
  Trace trace = make_sample_trace();
  write_trace(trace, dir / "a.pb");
  trace.mutable_events()->DeleteSubrange(2, trace.events_size() - 2);
  write_trace(trace, dir / "a.pb");
  EXPECT_EQ(read_trace(dir / "a.pb").events_size(), 2);
  EXPECT_EQ(dir.entry_count(), 1);
}

TEST(TraceIo, InvalidTraceIsNotWrittenAndTheOldFileIsKept) {
  ScratchDir dir;
  for (const char* name : {"a.pb", "a.json", "a.textproto"}) {
    write_trace(make_sample_trace(), dir / name);
    const std::string before = read_file(dir / name);
    Trace invalid = make_sample_trace();
    invalid.mutable_events(12)->set_end_ns(100);
    std::string message = input_error([&] { write_trace(invalid, dir / name); });
    EXPECT_NE(message.find(name), std::string::npos) << message;
    EXPECT_NE(message.find("events[12].end_ns (100) is before start_ns"), std::string::npos) << message;
    EXPECT_EQ(read_file(dir / name), before) << name;
  }
  EXPECT_EQ(dir.entry_count(), 3);
}

TEST(TraceIo, InvalidTraceIsNotCreated) {
  ScratchDir dir;
  Trace invalid = make_sample_trace();
  invalid.mutable_metadata()->set_source(SOURCE_UNSPECIFIED);
  EXPECT_THROW(write_trace(invalid, dir / "new.pb"), InputError);
  EXPECT_EQ(dir.entry_count(), 0);
}

TEST(TraceIo, MissingFileIsInputErrorNamingIt) {
  ScratchDir dir;
  std::string message = input_error([&] { read_trace(dir / "absent.pb"); });
  EXPECT_NE(message.find("absent.pb"), std::string::npos) << message;
}

TEST(TraceIo, TruncatedBinaryIsInputError) {
  ScratchDir dir;
  std::string bytes = make_sample_trace().SerializeAsString();
  // The last field is the summary, so cutting its tail leaves a broken submessage.
  write_file_atomically(dir / "cut.pb", bytes.substr(0, bytes.size() - 5));
  std::string message = input_error([&] { read_trace(dir / "cut.pb"); });
  EXPECT_NE(message.find("cut.pb"), std::string::npos) << message;
  EXPECT_NE(message.find("not a binary Trace"), std::string::npos) << message;
}

TEST(TraceIo, JsonUnderABinaryNameGetsAHint) {
  ScratchDir dir;
  write_file_atomically(dir / "run.pb", trace_to_json(make_sample_trace()));
  std::string message = input_error([&] { read_trace(dir / "run.pb"); });
  EXPECT_NE(message.find("run.pb"), std::string::npos) << message;
  EXPECT_NE(message.find("looks like JSON"), std::string::npos) << message;
}

TEST(TraceIo, MalformedJsonIsInputError) {
  ScratchDir dir;
  write_file_atomically(dir / "bad.json", R"({"metadata": {"scenario_name": "x",)");
  std::string message = input_error([&] { read_trace(dir / "bad.json"); });
  EXPECT_NE(message.find("bad.json"), std::string::npos) << message;
  EXPECT_NE(message.find("invalid JSON Trace"), std::string::npos) << message;
}

TEST(TraceIo, JsonWithUnknownFieldIsInputError) {
  ScratchDir dir;
  write_file_atomically(dir / "odd.json", R"({"metadata": {"scenario_nme": "x"}})");
  std::string message = input_error([&] { read_trace(dir / "odd.json"); });
  EXPECT_NE(message.find("odd.json"), std::string::npos) << message;
  EXPECT_NE(message.find("scenario_nme"), std::string::npos) << message;
}

TEST(TraceIo, TextWithUnknownFieldNamesFileLineAndColumn) {
  ScratchDir dir;
  write_file_atomically(dir / "odd.textproto",
                        "# a trace\n"
                        "metadata {\n"
                        "  source: MEASURED\n"
                        "  world_size: 1\n"
                        "  wrold_size: 2\n"
                        "}\n");
  std::string message = input_error([&] { read_trace(dir / "odd.textproto"); });
  // The column is where protobuf noticed the name, after it.
  EXPECT_TRUE(std::regex_search(message, std::regex(R"(odd\.textproto: line 5:\d+: )"))) << message;
  EXPECT_NE(message.find("wrold_size"), std::string::npos) << message;
}

TEST(TraceIo, ParsedButInvalidTraceIsInputError) {
  ScratchDir dir;
  write_file_atomically(dir / "empty.textproto", "metadata { world_size: 1 }\n");
  std::string message = input_error([&] { read_trace(dir / "empty.textproto"); });
  EXPECT_NE(message.find("empty.textproto: metadata.source is SOURCE_UNSPECIFIED"), std::string::npos) << message;
}

TEST(TraceIo, ParseTraceNamesTheOrigin) {
  std::string message = input_error([] { parse_trace("events { rank: }", TraceFormat::kText, "<stdin>"); });
  EXPECT_EQ(message.rfind("<stdin>: line 1:", 0), 0u) << message;
}

}  // namespace
}  // namespace ragged::traces
