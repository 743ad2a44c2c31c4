// Size suffixes mean the same everywhere (issue 51): every option that takes
// a count reads 4M, 4m, 16Mi, 1Ki, 15T, in any case, as its number; a plain
// number that is not whole is still refused.

#include <gtest/gtest.h>

#include <string>

#include "cli/validators.hpp"
#include "common/errors.hpp"

namespace ragged::cli {
namespace {

// The text a validator leaves for the option to convert, or its refusal.
std::string transformed(const CLI::Validator& validator, std::string text) {
  const std::string why = validator(text);
  return why.empty() ? text : "refused: " + why;
}

TEST(CountSuffix, TokenCountsTakeEverySuffixInAnyCase) {
  EXPECT_DOUBLE_EQ(parse_token_count("4M", "--x"), 4e6);
  EXPECT_DOUBLE_EQ(parse_token_count("4m", "--x"), 4e6);
  EXPECT_DOUBLE_EQ(parse_token_count("16Mi", "--x"), 16.0 * 1048576);
  EXPECT_DOUBLE_EQ(parse_token_count("16mi", "--x"), 16.0 * 1048576);
  EXPECT_DOUBLE_EQ(parse_token_count("15t", "--x"), 15e12);
  EXPECT_THROW(parse_token_count("4x", "--x"), InputError);
  EXPECT_THROW(parse_token_count("-4M", "--x"), InputError);
}

TEST(CountSuffix, WholeNumberOptionsTakeASuffixedCountAsItsNumber) {
  const CLI::Validator gpus = whole_number(1, 1 << 20);
  EXPECT_EQ(transformed(gpus, "1Ki"), "1024");
  EXPECT_EQ(transformed(gpus, "1K"), "1000");
  EXPECT_EQ(transformed(gpus, "1.5k"), "1500");
  EXPECT_EQ(transformed(gpus, "64"), "64");
  EXPECT_NE(transformed(gpus, "1.5").find("is not a whole number"), std::string::npos);
  EXPECT_NE(transformed(gpus, "1e300").find("is not a whole number"), std::string::npos);
  EXPECT_NE(transformed(gpus, "2Gi").find("out of range"), std::string::npos);
}

TEST(CountSuffix, NumbersAndListsTakeSuffixesToo) {
  EXPECT_EQ(transformed(number_between(1, 1e18), "15T"), "15000000000000");
  EXPECT_EQ(parse_count_list("1Ki,2K,8", "--gpus", "GPU count", 1, INT64_MAX, nullptr),
            (std::vector<int64_t>{1024, 2000, 8}));
  EXPECT_EQ(transformed(count_and_fraction(1 << 20, 0.1), "1K:0.5"), "1000:0.5");
}

}  // namespace
}  // namespace ragged::cli
