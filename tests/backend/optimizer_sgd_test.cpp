// SGD: torch.optim.SGD's rule by hand on a few elements (weight decay into the
// gradient, the first momentum buffer equal to the gradient), and bit-for-bit
// equality of a whole span with any split of it into shards.

#include <gtest/gtest.h>

#include <random>
#include <span>
#include <vector>

#include "backend/optimizer_math.hpp"
#include "tests/backend/optimizer_test_util.hpp"

namespace ragged::backend {
namespace {

using optimizer_test::bitwise_equal;
using optimizer_test::random_cuts;
using optimizer_test::random_vector;

TEST(OptimizerSgd, PlainStepIsMinusLrTimesTheGradient) {
  std::vector<float> p{1.0f, -2.0f, 0.5f};
  const std::vector<float> g{0.5f, 1.0f, -4.0f};
  sgd_step(p, g, {}, 1, SgdParams{0.25, 0.0, 0.0});
  EXPECT_EQ(p, (std::vector<float>{0.875f, -2.25f, 1.5f}));
}

TEST(OptimizerSgd, MomentumStartsFromTheGradientThenAccumulates) {
  const SgdParams hp{0.5, 0.5, 0.25};
  std::vector<float> p{2.0f}, buf{123.0f};  // a stale buffer is overwritten on step 1
  sgd_step(p, std::vector<float>{1.0f}, buf, 1, hp);
  // g' = 1 + 0.25 * 2 = 1.5; buf = 1.5; p = 2 - 0.5 * 1.5 = 1.25
  EXPECT_EQ(buf[0], 1.5f);
  EXPECT_EQ(p[0], 1.25f);
  sgd_step(p, std::vector<float>{1.0f}, buf, 2, hp);
  // g' = 1 + 0.25 * 1.25 = 1.3125; buf = 0.5 * 1.5 + 1.3125 = 2.0625; p = 1.25 - 1.03125
  EXPECT_EQ(buf[0], 2.0625f);
  EXPECT_EQ(p[0], 0.21875f);
}

TEST(OptimizerSgd, WholeEqualsAnySplitBitwise) {
  std::mt19937 rng(7);
  const std::size_t n = 1000;
  const SgdParams hp{0.013, 0.9, 0.07};
  const std::vector<float> p0 = random_vector(n, rng, -1, 1);
  std::vector<float> whole = p0, whole_buf(n, 0.0f);
  std::vector<float> split = p0, split_buf(n, 0.0f);
  for (int64_t step = 1; step <= 3; ++step) {
    const std::vector<float> g = random_vector(n, rng, -1, 1);
    sgd_step(whole, g, whole_buf, step, hp);
    const std::vector<std::size_t> cuts = random_cuts(n, 5, rng);
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
      const std::size_t a = cuts[i], len = cuts[i + 1] - cuts[i];
      sgd_step(std::span<float>(split).subspan(a, len), std::span<const float>(g).subspan(a, len),
               std::span<float>(split_buf).subspan(a, len), step, hp);
    }
  }
  EXPECT_TRUE(bitwise_equal(whole, split));
  EXPECT_TRUE(bitwise_equal(whole_buf, split_buf));
}

}  // namespace
}  // namespace ragged::backend
