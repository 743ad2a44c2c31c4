#include "common/checked_math.hpp"

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace ragged {
namespace {

std::string field_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const FieldError& e) {
    return e.path() + " | " + e.what();
  }
  return "";
}

TEST(CheckedMath, ExactResultsPass) {
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31, "x"), int64_t{1} << 62);
  EXPECT_EQ(checked_mul(-3, 4, "x"), -12);
  EXPECT_EQ(checked_add(std::numeric_limits<int64_t>::max() - 1, 1, "x"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(checked_count(1e15, "x"), 1000000000000000);
}

TEST(CheckedMath, OverflowNamesTheField) {
  EXPECT_EQ(field_error_of([] { checked_mul(int64_t{1} << 32, int64_t{1} << 31, "training.micro_batch_size"); }),
            "training.micro_batch_size | 4294967296 x 2147483648 in training.micro_batch_size does not fit in 64 bits; "
            "use smaller values (docs/RELIABILITY.md, \"Input limits\")");
  EXPECT_NE(field_error_of([] { checked_add(std::numeric_limits<int64_t>::max(), 1, "f"); }), "");
}

TEST(CheckedMath, CountsRefuseWhatIsNotACount) {
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -1.0, 1e300, 9.1e15}) {
    EXPECT_NE(field_error_of([bad] { checked_count(bad, "cluster.gpu.hbm_capacity_gib"); }).find("cluster.gpu.hbm_capacity_gib"),
              std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace ragged
