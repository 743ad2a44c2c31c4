#include "common/units.hpp"

#include <limits>

#include <gtest/gtest.h>

namespace ragged {
namespace {

TEST(Units, Bytes) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(81.9 * kGiB), "81.90 GiB");
  EXPECT_EQ(format_bytes(300.0 * kGiB), "300.0 GiB");
}

TEST(Units, Counts) {
  EXPECT_EQ(format_count(8030261248.0), "8.03B");
  EXPECT_EQ(format_count(512), "512");
  EXPECT_EQ(format_count(671e9), "671.0B");
}

TEST(Units, Seconds) {
  EXPECT_EQ(format_seconds(2.5), "2.5 s");
  EXPECT_EQ(format_seconds(0.0123), "12.3 ms");
  EXPECT_EQ(format_seconds(4.2e-6), "4.2 us");
  EXPECT_EQ(format_duration(2.5), "2.5 s");
  EXPECT_EQ(format_duration(234), "3.9 min");
  EXPECT_EQ(format_duration(11135), "3.09 h");
  EXPECT_EQ(format_duration(6.1e6), "70.6 days");
  EXPECT_EQ(format_duration(std::numeric_limits<double>::infinity()), "never");
}

TEST(Units, Integers) {
  EXPECT_EQ(format_integer(8030261248), "8,030,261,248");
  EXPECT_EQ(format_integer(999), "999");
  EXPECT_EQ(format_integer(-1000), "-1,000");
  EXPECT_EQ(format_integer(0), "0");
}

// Rounded values and throughputs: the nearest whole number from 100 up
// (halves away from zero), one decimal below, where digits still count.
TEST(Units, RoundedAndThroughputs) {
  EXPECT_EQ(format_rounded(3485.5), "3,486");
  EXPECT_EQ(format_rounded(-2.5), "-3");
  EXPECT_EQ(format_throughput(3486.0), "3,486");
  EXPECT_EQ(format_throughput(100.0), "100");
  EXPECT_EQ(format_throughput(99.96), "100.0");
  EXPECT_EQ(format_throughput(54.26), "54.3");
}

TEST(Units, Flops) { EXPECT_EQ(format_flops(1.5e12), "1.50 TFLOP"); }

}  // namespace
}  // namespace ragged
