// AdamW: against a double-precision reference of torch.optim.AdamW's formula,
// and bit-for-bit equality of a whole span with any split of it into shards.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "backend/optimizer_math.hpp"
#include "tests/backend/optimizer_test_util.hpp"
#include "common/errors.hpp"

namespace ragged::backend {
namespace {

using optimizer_test::bitwise_equal;
using optimizer_test::random_cuts;
using optimizer_test::random_vector;

// torch.optim.AdamW in double, straight from the formula.
struct ReferenceAdamW {
  std::vector<double> p, m, v;
  void step(const std::vector<float>& g, int64_t t, const AdamWParams& hp) {
    for (std::size_t i = 0; i < p.size(); ++i) {
      p[i] *= 1.0 - hp.lr * hp.weight_decay;
      m[i] = hp.beta1 * m[i] + (1.0 - hp.beta1) * g[i];
      v[i] = hp.beta2 * v[i] + (1.0 - hp.beta2) * double(g[i]) * g[i];
      const double mhat = m[i] / (1.0 - std::pow(hp.beta1, double(t)));
      const double vhat = v[i] / (1.0 - std::pow(hp.beta2, double(t)));
      p[i] -= hp.lr * mhat / (std::sqrt(vhat) + hp.eps);
    }
  }
};

AdamWParams reference_params() {
  AdamWParams hp;
  hp.lr = 1e-2;
  hp.weight_decay = 0.1;
  return hp;
}

// Parameters away from zero (so that an element-wise relative error is
// meaningful) and gradients of mixed scales (1e-3 .. 1e1) and signs.
std::vector<float> initial_params(std::size_t n, std::mt19937& rng) {
  std::vector<float> params = random_vector(n, rng, 0.5f, 1.5f);
  for (std::size_t i = 0; i < n; i += 2) params[i] = -params[i];
  return params;
}
std::vector<float> mixed_gradients(std::size_t n, std::mt19937& rng) {
  std::vector<float> g = random_vector(n, rng, -1.0f, 1.0f);
  for (std::size_t i = 0; i < n; ++i) g[i] *= std::pow(10.0f, float(int(i % 5) - 3));
  return g;
}

TEST(OptimizerAdamW, TrajectoryMatchesDoubleReference) {
  std::mt19937 rng(7);
  const std::size_t n = 4096;
  const AdamWParams hp = reference_params();
  std::vector<float> params = initial_params(n, rng);
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  ReferenceAdamW ref{std::vector<double>(params.begin(), params.end()), std::vector<double>(n, 0.0),
                     std::vector<double>(n, 0.0)};
  double worst = 0.0;
  for (int64_t t = 1; t <= 10; ++t) {
    const std::vector<float> g = mixed_gradients(n, rng);
    adamw_step(params, g, m, v, t, hp);
    ref.step(g, t, hp);
    for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(params[i] - ref.p[i]) / std::fabs(ref.p[i]));
  }
  std::printf("AdamW vs double reference, 10 steps from the same start: params within %.3g (relative)\n", worst);
  EXPECT_LT(worst, 1e-6);
}

TEST(OptimizerAdamW, EachStepMatchesDoubleReference) {
  // The double reference restarted from the float state before every step:
  // the error of one step, relative to the size of the terms it adds.
  std::mt19937 rng(8);
  const std::size_t n = 4096;
  const AdamWParams hp = reference_params();
  std::vector<float> params = initial_params(n, rng);
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  double worst_p = 0.0, worst_m = 0.0, worst_v = 0.0;
  for (int64_t t = 1; t <= 20; ++t) {
    const std::vector<float> g = mixed_gradients(n, rng);
    ReferenceAdamW ref{std::vector<double>(params.begin(), params.end()), std::vector<double>(m.begin(), m.end()),
                       std::vector<double>(v.begin(), v.end())};
    const std::vector<float> m_old = m, v_old = v;
    adamw_step(params, g, m, v, t, hp);
    ref.step(g, t, hp);
    for (std::size_t i = 0; i < n; ++i) {
      const double gi = g[i];
      worst_p = std::max(worst_p, std::fabs(params[i] - ref.p[i]) / std::fabs(ref.p[i]));
      worst_m = std::max(worst_m, std::fabs(m[i] - ref.m[i]) /
                                      (hp.beta1 * std::fabs(m_old[i]) + (1.0 - hp.beta1) * std::fabs(gi)));
      worst_v = std::max(worst_v, std::fabs(v[i] - ref.v[i]) / ref.v[i]);
    }
  }
  std::printf("AdamW vs double reference, per step: params %.3g, m %.3g, v %.3g (relative)\n", worst_p, worst_m,
              worst_v);
  EXPECT_LT(worst_p, 1e-6);
  EXPECT_LT(worst_m, 1e-6);
  EXPECT_LT(worst_v, 1e-6);
}

TEST(OptimizerAdamW, FirstStepMovesEachParamByAboutLr) {
  // With m = v = 0, step 1 gives mhat / sqrt(vhat) = sign(g): |delta| = lr (up to eps).
  AdamWParams hp;
  hp.lr = 1e-3;
  hp.weight_decay = 0.0;
  std::vector<float> params{1.0f, 1.0f, 1.0f, 1.0f};
  const std::vector<float> g{0.5f, -2.0f, 1e-3f, -7.0f};
  std::vector<float> m(4, 0.0f), v(4, 0.0f);
  adamw_step(params, g, m, v, 1, hp);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(params[i], 1.0f - std::copysign(1e-3f, g[i]), 1e-6) << i;
}

TEST(OptimizerAdamW, WeightDecayAloneScalesParams) {
  AdamWParams hp;
  hp.lr = 0.01;
  hp.weight_decay = 0.5;
  std::vector<float> params{2.0f, -4.0f, 0.25f};
  const std::vector<float> g(3, 0.0f);
  std::vector<float> m(3, 0.0f), v(3, 0.0f);
  adamw_step(params, g, m, v, 3, hp);
  const auto decay = static_cast<float>(1.0 - 0.01 * 0.5);
  EXPECT_EQ(params[0], 2.0f * decay);
  EXPECT_EQ(params[1], -4.0f * decay);
  EXPECT_EQ(params[2], 0.25f * decay);
}

TEST(OptimizerAdamW, WholeEqualsAnySplitBitwise) {
  std::mt19937 rng(11);
  const std::size_t n = 1531;
  const AdamWParams hp;
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<float> p_whole = random_vector(n, rng, -1.0f, 1.0f);
    std::vector<float> p_split = p_whole;
    std::vector<float> m_whole(n, 0.0f), v_whole(n, 0.0f), m_split(n, 0.0f), v_split(n, 0.0f);
    for (int64_t t = 1; t <= 4; ++t) {
      const std::vector<float> g = random_vector(n, rng, -3.0f, 3.0f);
      adamw_step(p_whole, g, m_whole, v_whole, t, hp);
      // A new random sharding each step: the math never depends on it.
      const std::vector<std::size_t> cuts = random_cuts(n, 1 + trial % 7, rng);
      for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
        const std::size_t b = cuts[k], len = cuts[k + 1] - cuts[k];
        adamw_step(std::span(p_split).subspan(b, len), std::span<const float>(g).subspan(b, len),
                   std::span(m_split).subspan(b, len), std::span(v_split).subspan(b, len), t, hp);
      }
    }
    EXPECT_TRUE(bitwise_equal(p_whole, p_split)) << "trial " << trial;
    EXPECT_TRUE(bitwise_equal(m_whole, m_split)) << "trial " << trial;
    EXPECT_TRUE(bitwise_equal(v_whole, v_split)) << "trial " << trial;
  }
}

TEST(OptimizerAdamW, RejectsMismatchedSpansAndStepZero) {
  std::vector<float> p(4), g(4), m(4), v(3);
  EXPECT_THROW(adamw_step(p, g, m, v, 1, AdamWParams{}), InternalError);
  v.resize(4);
  EXPECT_THROW(adamw_step(p, g, m, v, 0, AdamWParams{}), InternalError);
  EXPECT_NO_THROW(adamw_step(std::span<float>{}, std::span<const float>{}, std::span<float>{}, std::span<float>{}, 1,
                             AdamWParams{}));
}

}  // namespace
}  // namespace ragged::backend
