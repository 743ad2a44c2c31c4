// The clocks the compute model scales tensor-core work by: the power limit's
// (DVFS law) and the slowest of the cluster's GPUs (docs/SIMULATOR.md section 7).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numbers>
#include <utility>
#include <vector>

#include "planner/compute_work.hpp"
#include "sim/compute_model.hpp"
#include "tests/sim/h100_compute_constants.hpp"

namespace ragged::sim {
namespace {

using namespace h100_constants;

TEST(ComputePowerLimit, ClockFollowsTheCubeOfTheDynamicPower) {
  EXPECT_DOUBLE_EQ(power_limited_clock(700, 700), 1.0);
  EXPECT_DOUBLE_EQ(power_limited_clock(700, 0), 1.0);  // no limit given
  // 500 W of 700 W with 140 W fixed: (360 / 560)^(1/3).
  EXPECT_NEAR(power_limited_clock(700, 500), std::cbrt(360.0 / 560.0), kExact);
  EXPECT_LT(power_limited_clock(700, 400), power_limited_clock(700, 500));
}

TEST(ComputePowerLimit, SlowsComputeBoundWorkOnly) {
  const ComputeModel full = ComputeModel::defaults("h100", 989.4e12, 3.35e12);
  const ComputeModel capped = full.with_clock_factor(0.8);
  const planner::Gemm big{8192, 8192, 8192, 1};
  const double gemm = big.flops() / (797.51e12 * kH100SustainedClock * 0.8);
  EXPECT_NEAR(capped.gemm_seconds(big), gemm + kLaunch, kExact * gemm);
  planner::AttentionWork attention;
  attention.flops = 1e12;
  const double forward = 1e12 / (kH100Peak * kH100AttentionForward * 0.8);
  EXPECT_NEAR(capped.attention_seconds(attention, false), forward + kLaunch, kExact * forward);
  EXPECT_DOUBLE_EQ(capped.memory_seconds(1e9), full.memory_seconds(1e9));
}

// Expected maxima of n standard normals: closed forms for 2 and 3 (1/sqrt(pi),
// 3 / (2 sqrt(pi))), Harter's tables (1961) for 5, 10, 100 and 1,000.
TEST(ComputeClockSpread, ExpectedMaximumOfNormalsMatchesItsClosedFormsAndTables) {
  const std::vector<std::pair<int64_t, double>> known = {
      {2, 1.0 / std::sqrt(std::numbers::pi)}, {3, 1.5 / std::sqrt(std::numbers::pi)},
      {5, 1.162964}, {10, 1.538753}, {100, 2.507594}, {1000, 3.241436}};
  EXPECT_EQ(expected_max_standard_normal(1), 0.0);
  for (const auto& [n, expected] : known) {
    const double computed = expected_max_standard_normal(n);
    std::printf("expected max of %5lld normals   analytic %.6f  computed %.6f  (%+.1e)\n", static_cast<long long>(n),
                expected, computed, computed - expected);
    EXPECT_NEAR(computed, expected, 2e-6) << n;
  }
}

TEST(ComputeClockSpread, TheSlowestOfMoreGpusIsSlower) {
  EXPECT_EQ(slowest_gpu_clock(0.0, 16384), 1.0);  // identical GPUs
  EXPECT_EQ(slowest_gpu_clock(0.015, 1), 1.0);     // one GPU waits for nobody
  double previous = 1.0;
  for (int64_t gpus : {2, 8, 128, 512, 16384}) {
    const double clock = slowest_gpu_clock(0.015, gpus);
    EXPECT_LT(clock, previous) << gpus;
    EXPECT_NEAR(clock, 1.0 - 0.015 * expected_max_standard_normal(gpus), kExact) << gpus;
    previous = clock;
  }
  // 0.3 x 6.0 (the maximum of 2^30 draws) would stop the clock: floored at 0.1.
  EXPECT_EQ(slowest_gpu_clock(0.3, int64_t{1} << 30), 0.1);
}

}  // namespace
}  // namespace ragged::sim
