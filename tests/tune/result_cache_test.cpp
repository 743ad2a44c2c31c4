// The result cache: what is stored comes back marked as cached; another
// key, a damaged file or another scenario reads as a miss; the key names
// the scenario as defaulted, so equal scenarios share an entry.

#include "tune/result_cache.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "common/errors.hpp"
#include "tests/tune/tune_test_util.hpp"
#include "tune/candidate_scenario.hpp"

namespace ragged::tune {
namespace {

using testing::small_scenario;
using testing::TempDir;

Evaluation simulated(double tokens_per_s) {
  Evaluation e;
  e.outcome = Outcome::kSimulated;
  e.tokens_per_s_per_gpu = tokens_per_s;
  e.peak_reserved_bytes = 1234;
  e.floor_bytes = 1000;
  e.mode = "full";
  return e;
}

TEST(ResultCache, StoredComesBackMarkedCached) {
  TempDir dir("store");
  const ResultCache cache(dir.path() / "nested" / "folder");  // created on the way
  EXPECT_FALSE(cache.load("key").has_value());
  cache.store("key", simulated(42));
  const auto hit = cache.load("key");
  ASSERT_TRUE(hit.has_value());
  EXPECT_TRUE(hit->cached);
  EXPECT_EQ(hit->tokens_per_s_per_gpu, 42);
  EXPECT_EQ(hit->peak_reserved_bytes, 1234);
  EXPECT_EQ(hit->mode, "full");
  EXPECT_FALSE(cache.load("another key").has_value());
}

TEST(ResultCache, DamagedFileIsAMissAndIsOverwritten) {
  TempDir dir("damaged");
  const ResultCache cache(dir.path());
  cache.store("key", simulated(1));
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    std::ofstream(entry.path()) << "{ not json";
  }
  EXPECT_FALSE(cache.load("key").has_value());
  cache.store("key", simulated(2));
  EXPECT_EQ(cache.load("key")->tokens_per_s_per_gpu, 2);
}

TEST(ResultCache, KeyIsTheDefaultedScenario) {
  const Candidate a{scenarios::FSDP2, 8, 1, 2, scenarios::FULL, 1, true, ""};
  Candidate b = a;
  b.prefetch = 2;
  const std::string key_a = cache_key(candidate_scenario(small_scenario(), a, 1024));
  EXPECT_EQ(key_a, cache_key(candidate_scenario(small_scenario(), a, 1024)));
  EXPECT_NE(key_a, cache_key(candidate_scenario(small_scenario(), b, 1024)));
  EXPECT_NE(key_a.find("prefetch_depth: 1"), std::string::npos);
}

TEST(ResultCache, AFolderThatCannotBeMadeIsAnInputError) {
  TempDir dir("blocked");
  std::ofstream(dir.path() / "file") << "x";
  EXPECT_THROW(ResultCache{dir.path() / "file" / "cache"}, InputError);
}

}  // namespace
}  // namespace ragged::tune
