#include "traces/trace_metadata.hpp"

#include <cstdlib>
#include <ctime>
#include <regex>

#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "common/version.hpp"

namespace ragged::traces {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;

TEST(TraceMetadata, Iso8601Utc) {
  EXPECT_EQ(iso8601_utc(system_clock::time_point{}), "1970-01-01T00:00:00Z");
  EXPECT_EQ(iso8601_utc(system_clock::time_point{seconds{1700000000}}), "2023-11-14T22:13:20Z");
  EXPECT_EQ(iso8601_utc(system_clock::time_point{seconds{1700000000} + std::chrono::milliseconds{999}}),
            "2023-11-14T22:13:20Z");
}

TEST(TraceMetadata, Iso8601IsUtcWhateverTheLocalZone) {
  const char* old = std::getenv("TZ");
  std::string saved = old != nullptr ? old : "";
  // A POSIX rule, so the test needs no tzdata: UTC-5 with US daylight saving.
  ::setenv("TZ", "EST5EDT,M3.2.0,M11.1.0", 1);
  ::tzset();
  std::string text = iso8601_utc(system_clock::time_point{seconds{1700000000}});
  if (old != nullptr) {
    ::setenv("TZ", saved.c_str(), 1);
  } else {
    ::unsetenv("TZ");
  }
  ::tzset();
  EXPECT_EQ(text, "2023-11-14T22:13:20Z");
}

TEST(TraceMetadata, StampFillsProvenanceAndKeepsTheRest) {
  Metadata metadata;
  metadata.set_scenario_name("tiny");
  metadata.set_world_size(4);
  auto before = std::chrono::floor<seconds>(system_clock::now());
  stamp_metadata(&metadata, MEASURED);
  auto after = system_clock::now();

  EXPECT_EQ(metadata.source(), MEASURED);
  EXPECT_EQ(metadata.ragged_version(), kVersion);
  EXPECT_FALSE(metadata.ragged_version().empty());
  EXPECT_EQ(metadata.scenario_name(), "tiny");
  EXPECT_EQ(metadata.world_size(), 4);

  ASSERT_TRUE(std::regex_match(metadata.created_at(), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << metadata.created_at();
  std::tm tm{};
  ASSERT_NE(strptime(metadata.created_at().c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm), nullptr);
  auto stamped = system_clock::from_time_t(timegm(&tm));
  EXPECT_LE(before, stamped);
  EXPECT_LE(stamped, after);
}

TEST(TraceMetadata, StampNeedsAMetadata) { EXPECT_THROW(stamp_metadata(nullptr, PREDICTED), InternalError); }

}  // namespace
}  // namespace ragged::traces
