#include "traces/trace_names.hpp"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace ragged::traces {
namespace {

TEST(TraceNames, EveryOpKindRoundTrips) {
  const auto* descriptor = OpKind_descriptor();
  std::set<std::string_view> names;
  for (int i = 0; i < descriptor->value_count(); ++i) {
    auto kind = static_cast<OpKind>(descriptor->value(i)->number());
    std::string_view name = op_kind_name(kind);
    EXPECT_NE(name, "unknown") << descriptor->value(i)->name();
    EXPECT_EQ(parse_op_kind(name), kind) << name;
    EXPECT_EQ(parse_op_kind(descriptor->value(i)->name()), kind) << descriptor->value(i)->name();
    names.insert(name);
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(descriptor->value_count())) << "names must be distinct";
}

TEST(TraceNames, OpKindNamesAreLowerSnakeCase) {
  EXPECT_EQ(op_kind_name(ALL_GATHER), "all_gather");
  EXPECT_EQ(op_kind_name(REDUCE_SCATTER), "reduce_scatter");
  EXPECT_EQ(op_kind_name(COMPUTE_FWD), "compute_fwd");
  EXPECT_EQ(op_kind_name(GRAD_ACCUMULATE), "grad_accumulate");
  EXPECT_EQ(op_kind_name(SCALE), "scale");
  EXPECT_EQ(op_kind_name(OP_KIND_UNSPECIFIED), "unspecified");
  EXPECT_EQ(op_kind_name(static_cast<OpKind>(99)), "unknown");
  EXPECT_EQ(op_kind_name(static_cast<OpKind>(-3)), "unknown");
}

TEST(TraceNames, ParseOpKindRejectsOtherNames) {
  EXPECT_EQ(parse_op_kind("all-gather"), std::nullopt);
  EXPECT_EQ(parse_op_kind(""), std::nullopt);
  EXPECT_EQ(parse_op_kind("unknown"), std::nullopt);
  EXPECT_EQ(parse_op_kind("All_Gather"), std::nullopt);
}

TEST(TraceNames, StreamNamesAreTheListedOnes) {
  EXPECT_EQ(stream_name(COMPUTE), "compute");
  EXPECT_EQ(stream_name(ALL_GATHER_STREAM), "all_gather");
  EXPECT_EQ(stream_name(REDUCE_SCATTER_STREAM), "reduce_scatter");
  EXPECT_EQ(stream_name(ALL_REDUCE_STREAM), "all_reduce");
  EXPECT_EQ(stream_name(COPY_STREAM), "copy");
  EXPECT_EQ(stream_name(HOST), "host");
  EXPECT_EQ(stream_name(STREAM_UNSPECIFIED), "unspecified");
  EXPECT_EQ(stream_name(static_cast<Stream>(42)), "unknown");
}

TEST(TraceNames, EveryStreamRoundTrips) {
  const auto* descriptor = Stream_descriptor();
  for (int i = 0; i < descriptor->value_count(); ++i) {
    auto stream = static_cast<Stream>(descriptor->value(i)->number());
    EXPECT_EQ(parse_stream(stream_name(stream)), stream) << stream_name(stream);
    EXPECT_EQ(parse_stream(descriptor->value(i)->name()), stream);
  }
  EXPECT_EQ(parse_stream("gpu"), std::nullopt);
}

TEST(TraceNames, SourceNames) {
  EXPECT_EQ(source_name(PREDICTED), "predicted");
  EXPECT_EQ(source_name(MEASURED), "measured");
  EXPECT_EQ(source_name(SOURCE_UNSPECIFIED), "unspecified");
  EXPECT_EQ(source_name(static_cast<Source>(9)), "unknown");
}

}  // namespace
}  // namespace ragged::traces
