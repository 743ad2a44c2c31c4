#include "common/line_fit.hpp"

#include <gtest/gtest.h>

#include "common/errors.hpp"

namespace ragged {
namespace {

TEST(LineFit, RecoversALineAndRejectsOneX) {
  const LineFit exact =
      fit_line({0.002, 0.02, 1.0, 4.0}, {5e-5 + 0.002 * 4e-4, 5e-5 + 0.02 * 4e-4, 5e-5 + 4e-4, 5e-5 + 4.0 * 4e-4});
  EXPECT_NEAR(exact.intercept, 5e-5, 1e-15);
  EXPECT_NEAR(exact.slope, 4e-4, 1e-15);
  // Noise symmetric about the line leaves it.
  const LineFit noisy = fit_line({1, 1, 3, 3}, {1.9, 2.1, 3.9, 4.1});
  EXPECT_NEAR(noisy.intercept, 1.0, 1e-12);
  EXPECT_NEAR(noisy.slope, 1.0, 1e-12);
  EXPECT_THROW(fit_line({2, 2}, {1, 3}), InternalError);
}

TEST(LineFit, RejectsMismatchedLengths) { EXPECT_THROW(fit_line({1, 2}, {1}), InternalError); }

}  // namespace
}  // namespace ragged
