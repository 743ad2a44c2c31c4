#include "common/edit_distance.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ragged {
namespace {

TEST(EditDistance, CountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("llama3-8b", "llama3-8b"), 0u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("llama3-8b", "llama3-70b"), 2u);  // one substitution, one insertion
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("flaw", "lawn"), 2u);
  EXPECT_EQ(edit_distance("abc", "cba"), edit_distance("cba", "abc"));
}

TEST(EditDistance, SharedSuffixCountsTheCommonEnding) {
  EXPECT_EQ(shared_suffix("", "abc"), 0u);
  EXPECT_EQ(shared_suffix("llama3-405b", "llama3.1-405b"), 5u);
  EXPECT_EQ(shared_suffix("llama3-405b", "llama3-70b"), 1u);
  EXPECT_EQ(shared_suffix("abc", "abc"), 3u);
}

// Equal edit distances are settled by the common ending (where a model name
// keeps its size), then by order.
TEST(EditDistance, ClosestNamePrefersTheNameEndingLikeTheTypedOne) {
  const std::vector<std::string> catalog = {"llama3-8b", "llama3-70b", "llama3.1-405b"};
  EXPECT_EQ(edit_distance("llama3-405b", "llama3-70b"), edit_distance("llama3-405b", "llama3.1-405b"));
  EXPECT_EQ(closest_name("llama3-405b", catalog), "llama3.1-405b");
  // One edit from both 8b and 70b, ending alike: the first, as before.
  EXPECT_EQ(closest_name("llama3-7b", catalog), "llama3-8b");
  EXPECT_EQ(closest_name("x", {}), "");
}

}  // namespace
}  // namespace ragged
