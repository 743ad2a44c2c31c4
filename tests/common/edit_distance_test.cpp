#include "common/edit_distance.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ragged
