// Shampoo: inverse fourth roots ((A^-1/4)^4 A = I, negative rounding clamped,
// epsilon added), preconditioned updates with closed forms (diagonal and
// rank-1 gradients: L^-1/4 G R^-1/4 = G / sqrt(s^2 + eps) along each singular
// pair), stale roots between refreshes, independent blocks, and a random
// multi-step case against a naive float64 implementation with its own Jacobi
// eigensolver. Everything expected here is computed without the code under
// test. And the host's per-tensor rule: Shampoo never falls back to AdamW.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <span>
#include <vector>

#include "backend/host_optimizer.hpp"
#include "backend/optimizer_math.hpp"
#include "common/errors.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "tests/backend/optimizer_test_util.hpp"

namespace ragged::backend {
namespace {

using optimizer_test::bitwise_equal;
using optimizer_test::gaussian_vector;
using optimizer_test::random_cuts;
using Matrix = std::vector<double>;  // row-major

// c (r x n) = a (r x k) b (k x n), naive.
Matrix multiply(const Matrix& a, const Matrix& b, std::size_t r, std::size_t k, std::size_t n) {
  Matrix c(r * n, 0.0);
  for (std::size_t i = 0; i < r; ++i)
    for (std::size_t l = 0; l < k; ++l)
      for (std::size_t j = 0; j < n; ++j) c[i * n + j] += a[i * k + l] * b[l * n + j];
  return c;
}

Matrix transposed(const Matrix& a, std::size_t r, std::size_t c) {
  Matrix t(r * c);
  for (std::size_t i = 0; i < r; ++i)
    for (std::size_t j = 0; j < c; ++j) t[j * r + i] = a[i * c + j];
  return t;
}

// (A + eps I)^-1/4 of a symmetric matrix by cyclic Jacobi: A = V D V^T,
// negative eigenvalues counted as 0 (the contract of inverse_root).
Matrix jacobi_inverse_fourth_root(Matrix a, std::size_t n, double eps) {
  Matrix v(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) v[i * n + i] = 1.0;
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0.0, scale = 0.0;
    for (std::size_t p = 0; p < n; ++p) {
      scale += a[p * n + p] * a[p * n + p];
      for (std::size_t q = p + 1; q < n; ++q) off += a[p * n + q] * a[p * n + q];
    }
    if (off <= 1e-30 * scale || off == 0.0) break;
    for (std::size_t p = 0; p < n; ++p) {
      for (std::size_t q = p + 1; q < n; ++q) {
        const double apq = a[p * n + q];
        if (apq == 0.0) continue;
        const double theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
        const double t = std::copysign(1.0, theta) / (std::fabs(theta) + std::sqrt(theta * theta + 1.0));
        const double c = 1.0 / std::sqrt(t * t + 1.0), s = t * c;
        for (std::size_t k = 0; k < n; ++k) {
          const double akp = a[k * n + p], akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (std::size_t k = 0; k < n; ++k) {
          const double apk = a[p * n + k], aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
        for (std::size_t k = 0; k < n; ++k) {
          const double vkp = v[k * n + p], vkq = v[k * n + q];
          v[k * n + p] = c * vkp - s * vkq;
          v[k * n + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  Matrix scaled(v);  // V diag(f)
  for (std::size_t j = 0; j < n; ++j) {
    const double f = std::pow(std::max(a[j * n + j], 0.0) + eps, -0.25);
    for (std::size_t k = 0; k < n; ++k) scaled[k * n + j] *= f;
  }
  return multiply(scaled, transposed(v, n, n), n, n, n);
}

// Shampoo as its definition reads, block by block, in float64.
struct NaiveShampoo {
  struct Block {
    std::size_t row, col, rows, cols;
    Matrix left, right, left_root, right_root;
  };
  std::size_t rows, cols;
  std::vector<Block> blocks;

  NaiveShampoo(std::size_t r, std::size_t c, std::size_t block) : rows(r), cols(c) {
    for (std::size_t i = 0; i < r; i += block)
      for (std::size_t j = 0; j < c; j += block) {
        const std::size_t br = std::min(block, r - i), bc = std::min(block, c - j);
        blocks.push_back({i, j, br, bc, Matrix(br * br, 0.0), Matrix(bc * bc, 0.0), {}, {}});
      }
  }

  std::vector<double> step(const std::vector<float>& grad, int64_t step, int64_t frequency, double eps) {
    std::vector<double> update(rows * cols);
    for (Block& b : blocks) {
      Matrix g(b.rows * b.cols);
      for (std::size_t i = 0; i < b.rows; ++i)
        for (std::size_t j = 0; j < b.cols; ++j) g[i * b.cols + j] = grad[(b.row + i) * cols + b.col + j];
      const Matrix gt = transposed(g, b.rows, b.cols);
      const Matrix ggt = multiply(g, gt, b.rows, b.cols, b.rows), gtg = multiply(gt, g, b.cols, b.rows, b.cols);
      for (std::size_t e = 0; e < ggt.size(); ++e) b.left[e] += ggt[e];
      for (std::size_t e = 0; e < gtg.size(); ++e) b.right[e] += gtg[e];
      if ((step - 1) % frequency == 0) {
        b.left_root = jacobi_inverse_fourth_root(b.left, b.rows, eps);
        b.right_root = jacobi_inverse_fourth_root(b.right, b.cols, eps);
      }
      const Matrix u = multiply(multiply(b.left_root, g, b.rows, b.rows, b.cols), b.right_root, b.rows, b.cols, b.cols);
      for (std::size_t i = 0; i < b.rows; ++i)
        for (std::size_t j = 0; j < b.cols; ++j) update[(b.row + i) * cols + b.col + j] = u[i * b.cols + j];
    }
    return update;
  }
};

ShampooParams params(double eps, int64_t block, int64_t frequency) {
  ShampooParams p;
  p.epsilon = eps;
  p.block_size = block;
  p.precondition_frequency = frequency;
  return p;
}

// One Shampoo step of a fresh state on `g` (rows x cols); returns the update.
std::vector<float> precondition_once(std::vector<float> g, int64_t rows, int64_t cols, const ShampooParams& p) {
  ShampooMatrix state = shampoo_matrix(rows, cols, p.block_size);
  shampoo_precondition(g, state, 1, p);
  return g;
}

TEST(ShampooInverseRoot, FourthPowerTimesMatrixIsIdentity) {
  std::mt19937 rng(41);
  for (const std::size_t n : {1u, 2u, 7u, 24u, 64u}) {
    // A = M M^T / n + 0.1 I: symmetric positive definite, condition ~ 50.
    const std::vector<float> m = gaussian_vector(n * n, rng);
    Matrix mm(m.begin(), m.end()), a = multiply(mm, transposed(mm, n, n), n, n, n);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) a[i * n + j] /= double(n);
      a[i * n + i] += 0.1;
    }
    const Matrix x = inverse_root(a, int64_t(n), 4, 1e-300);
    const Matrix x2 = multiply(x, x, n, n, n), product = multiply(multiply(x2, x2, n, n, n), a, n, n, n);
    double worst = 0.0, asymmetry = 0.0;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        worst = std::max(worst, std::fabs(product[i * n + j] - (i == j ? 1.0 : 0.0)));
        asymmetry = std::max(asymmetry, std::fabs(x[i * n + j] - x[j * n + i]));
      }
    std::printf("inverse_root n=%zu: max |X^4 A - I| = %.2e, max |X - X^T| = %.2e\n", n, worst, asymmetry);
    EXPECT_LT(worst, 1e-12) << n;
    EXPECT_LT(asymmetry, 1e-12) << n;
  }
}

TEST(ShampooInverseRoot, EpsilonOnTheNullSpaceAndNegativeRoundingClamped) {
  // A = s^2 u u^T (rank 1): (A + eps I)^-1/4 = (s^2 + eps)^-1/4 u u^T + eps^-1/4 (I - u u^T).
  const double u[3] = {1.0 / 3, 2.0 / 3, 2.0 / 3}, s2 = 9.0, eps = 1e-2;
  Matrix a(9);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) a[i * 3 + j] = s2 * u[i] * u[j];
  const Matrix x = inverse_root(a, 3, 4, eps);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const double expected = std::pow(s2 + eps, -0.25) * u[i] * u[j] + std::pow(eps, -0.25) * ((i == j) - u[i] * u[j]);
      EXPECT_NEAR(x[i * 3 + j], expected, 1e-12) << i << "," << j;
    }
  // A negative eigenvalue (rounding of a PSD matrix) counts as 0: diag(16, -1e-3)
  // with eps 1 gives diag(17^-1/4, 1).
  const Matrix d = inverse_root(Matrix{16.0, 0.0, 0.0, -1e-3}, 2, 4, 1.0);
  EXPECT_NEAR(d[0], std::pow(17.0, -0.25), 1e-15);
  EXPECT_NEAR(d[3], 1.0, 1e-15);
  EXPECT_EQ(d[1], 0.0);
  EXPECT_EQ(d[2], 0.0);
}

TEST(ShampooInverseRoot, NonFiniteInputGivesNaNAndBadArgumentsAssert) {
  const Matrix x = inverse_root(Matrix{1.0, NAN, NAN, 1.0}, 2, 4, 1e-12);
  for (double e : x) EXPECT_TRUE(std::isnan(e));
  EXPECT_THROW(inverse_root(Matrix{1.0, 0.0, 0.0}, 2, 4, 1e-12), InternalError);
  EXPECT_THROW(inverse_root(Matrix{1.0}, 1, 4, 0.0), InternalError);
}

TEST(ShampooPrecondition, DiagonalRectangularGradient) {
  // G = [[a, 0, 0], [0, b, 0]]: L = diag(a^2, b^2), R = diag(a^2, b^2, 0), so
  // U = [[a / sqrt(a^2 + eps), 0, 0], [0, b / sqrt(b^2 + eps), 0]].
  const double a = 3.0, b = -0.5, eps = 0.25;
  const std::vector<float> u = precondition_once({3.0f, 0.0f, 0.0f, 0.0f, -0.5f, 0.0f}, 2, 3, params(eps, 1024, 1));
  EXPECT_NEAR(u[0], a / std::sqrt(a * a + eps), 1e-6);
  EXPECT_NEAR(u[4], b / std::sqrt(b * b + eps), 1e-6);
  for (int i : {1, 2, 3, 5}) EXPECT_EQ(u[i], 0.0f) << i;
}

TEST(ShampooPrecondition, RankOneGradientIsScaledAlongItsSingularPair) {
  // G = s x y^T (|x| = |y| = 1): U = s / sqrt(s^2 + eps) x y^T.
  const double x[2] = {0.6, 0.8}, y[3] = {1.0 / 3, 2.0 / 3, -2.0 / 3}, s = 2.0, eps = 1e-3;
  std::vector<float> g(6);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) g[i * 3 + j] = float(s * x[i] * y[j]);
  const std::vector<float> u = precondition_once(g, 2, 3, params(eps, 1024, 1));
  const double gain = s / std::sqrt(s * s + eps) / s;
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(u[i], gain * g[i], 1e-6) << i;
}

TEST(ShampooPrecondition, StaleRootsBetweenRefreshes) {
  // Diagonal 2x2 gradients G_t = diag(a_t, b_t): L_t = R_t = diag(sum a^2, sum b^2),
  // so U_t = a_t / sqrt(sum over the steps up to the last refresh of a^2 + eps).
  const double a[3] = {2.0, 1.0, 0.5}, b[3] = {-1.0, 3.0, 2.0}, eps = 1e-4;
  auto run = [&](int64_t frequency) {
    ShampooMatrix state = shampoo_matrix(2, 2, 1024);
    std::vector<std::vector<float>> out;
    for (int t = 0; t < 3; ++t) {
      std::vector<float> g{float(a[t]), 0.0f, 0.0f, float(b[t])};
      shampoo_precondition(g, state, t + 1, params(eps, 1024, frequency));
      out.push_back(g);
    }
    return out;
  };
  const auto every = run(1), stale = run(2);
  double sa = 0, sb = 0;
  for (int t = 0; t < 3; ++t) {
    sa += a[t] * a[t];
    sb += b[t] * b[t];
    EXPECT_NEAR(every[t][0], a[t] / std::sqrt(sa + eps), 1e-6) << t;
    EXPECT_NEAR(every[t][3], b[t] / std::sqrt(sb + eps), 1e-6) << t;
  }
  // Frequency 2: roots at steps 1 and 3; step 2 reuses step 1's (from G_1 alone).
  EXPECT_NEAR(stale[0][0], a[0] / std::sqrt(a[0] * a[0] + eps), 1e-6);
  EXPECT_NEAR(stale[1][0], a[1] / std::sqrt(a[0] * a[0] + eps), 1e-6);
  EXPECT_NEAR(stale[1][3], b[1] / std::sqrt(b[0] * b[0] + eps), 1e-6);
  EXPECT_NEAR(stale[2][0], a[2] / std::sqrt(sa + eps), 1e-6);
  EXPECT_NEAR(stale[2][3], b[2] / std::sqrt(sb + eps), 1e-6);
  EXPECT_NE(stale[1][0], every[1][0]);
}

TEST(ShampooPrecondition, BlocksArePreconditionedIndependently) {
  // 3x3 with blocks of 2: [0,2)x[0,2) 2x2, [0,2)x[2,3) 2x1, [2,3)x[0,2) 1x2, [2,3)x[2,3) 1x1.
  const ShampooMatrix layout = shampoo_matrix(3, 3, 2);
  ASSERT_EQ(layout.blocks.size(), 4u);
  const int64_t expected[4][4] = {{0, 0, 2, 2}, {0, 2, 2, 1}, {2, 0, 1, 2}, {2, 2, 1, 1}};
  for (std::size_t i = 0; i < 4; ++i) {
    const ShampooBlock& b = layout.blocks[i];
    EXPECT_EQ((std::vector<int64_t>{b.row, b.col, b.rows, b.cols}),
              (std::vector<int64_t>(expected[i], expected[i] + 4)))
        << i;
  }
  // Top-left: 2 x y^T with x = (0.6, 0.8), y = (0.8, -0.6) (rank 1); a vector
  // block v gets v / sqrt(|v|^2 + eps); the corner g gets g / sqrt(g^2 + eps).
  const double eps = 1e-3;
  const std::vector<float> g{0.96f, -0.72f, 0.3f, 1.28f, -0.96f, -0.4f, 1.2f, 0.5f, -2.0f};
  const std::vector<float> u = precondition_once(g, 3, 3, params(eps, 2, 1));
  const double rank_one = 1.0 / std::sqrt(4.0 + eps);
  for (int i : {0, 1, 3, 4}) EXPECT_NEAR(u[i], rank_one * g[i], 1e-6) << i;
  const double column = 1.0 / std::sqrt(0.3 * 0.3 + 0.4 * 0.4 + eps), row = 1.0 / std::sqrt(1.2 * 1.2 + 0.5 * 0.5 + eps);
  EXPECT_NEAR(u[2], column * 0.3, 1e-6);
  EXPECT_NEAR(u[5], column * -0.4, 1e-6);
  EXPECT_NEAR(u[6], row * 1.2, 1e-6);
  EXPECT_NEAR(u[7], row * 0.5, 1e-6);
  EXPECT_NEAR(u[8], -2.0 / std::sqrt(4.0 + eps), 1e-6);
  // Another top-left block leaves the other blocks' updates bit for bit.
  std::vector<float> h = g;
  h[0] = 5.0f;
  h[4] = 0.25f;
  const std::vector<float> v = precondition_once(h, 3, 3, params(eps, 2, 1));
  for (int i : {2, 5, 6, 7, 8}) EXPECT_EQ(u[i], v[i]) << i;
  // One 3x3 block couples them: a different update.
  const std::vector<float> whole = precondition_once(g, 3, 3, params(eps, 3, 1));
  EXPECT_GT(std::fabs(whole[8] - u[8]), 1e-3);
}

TEST(ShampooPrecondition, MatchesANaiveFloat64ImplementationOverSteps) {
  std::mt19937 rng(42);
  const std::size_t rows = 7, cols = 5;
  for (const int64_t block : {3, 4, 16}) {
    for (const int64_t frequency : {1, 2, 3}) {
      const ShampooParams p = params(1e-6, block, frequency);
      ShampooMatrix state = shampoo_matrix(int64_t(rows), int64_t(cols), block);
      NaiveShampoo naive(rows, cols, std::size_t(block));
      double worst = 0.0;
      for (int64_t step = 1; step <= 4; ++step) {
        std::vector<float> g = gaussian_vector(rows * cols, rng);
        const std::vector<double> expected = naive.step(g, step, frequency, p.epsilon);
        shampoo_precondition(g, state, step, p);
        for (std::size_t e = 0; e < g.size(); ++e) {
          worst = std::max(worst, std::fabs(g[e] - expected[e]) / std::max(1.0, std::fabs(expected[e])));
        }
      }
      EXPECT_LT(worst, 1e-5) << "block " << block << " frequency " << frequency;
    }
  }
}

TEST(ShampooPrecondition, DeterministicAndRejectsAWrongSize) {
  std::mt19937 rng(43);
  const ShampooParams p = params(1e-12, 64, 2);
  const std::vector<std::vector<float>> grads{gaussian_vector(96 * 160, rng), gaussian_vector(96 * 160, rng)};
  ShampooMatrix a = shampoo_matrix(96, 160, 64), b = shampoo_matrix(96, 160, 64);
  for (int64_t step = 1; step <= 2; ++step) {
    std::vector<float> ga = grads[std::size_t(step - 1)], gb = ga;
    shampoo_precondition(ga, a, step, p);
    shampoo_precondition(gb, b, step, p);
    EXPECT_TRUE(bitwise_equal(ga, gb)) << step;
  }
  std::vector<float> wrong(10);
  EXPECT_THROW(shampoo_precondition(wrong, a, 3, p), InternalError);
}

TEST(ShampooApply, DecoupledWeightDecayAndWholeEqualsAnySplit) {
  ShampooParams p;
  p.lr = 0.5;
  p.weight_decay = 0.2;
  std::vector<float> q{1.0f, 2.0f};
  shampoo_apply(q, std::vector<float>{1.0f, -1.0f}, p);  // p (1 - 0.1) - 0.5 u
  EXPECT_FLOAT_EQ(q[0], 0.4f);
  EXPECT_FLOAT_EQ(q[1], 2.3f);
  std::mt19937 rng(44);
  const std::size_t n = 1000;
  const std::vector<float> u = gaussian_vector(n, rng);
  std::vector<float> whole = gaussian_vector(n, rng), split = whole;
  shampoo_apply(whole, u, p);
  const std::vector<std::size_t> cuts = random_cuts(n, 5, rng);
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    const std::size_t at = cuts[k], len = cuts[k + 1] - cuts[k];
    shampoo_apply(std::span(split).subspan(at, len), std::span<const float>(u).subspan(at, len), p);
  }
  EXPECT_TRUE(bitwise_equal(whole, split));
}

TEST(ShampooApply, DefaultsDescendOnLeastSquares) {
  // min 0.5 |W X - Y|^2 over W (8 x 12) with Y = W* X, W* of the tiny
  // models' weight scale (~0.05): the default lr and epsilon, roots every
  // step, bring the loss down at every step. (With roots every 100 steps the
  // same problem diverges from step 3: step 1's roots, from one gradient of
  // rank 8, blow up the directions it did not see.)
  std::mt19937 rng(45);
  const std::size_t rows = 8, inner = 12, samples = 40;
  const std::vector<float> target = gaussian_vector(rows * inner, rng, 0.05f), x = gaussian_vector(inner * samples, rng);
  const Matrix xd(x.begin(), x.end()), td(target.begin(), target.end());
  const Matrix y = multiply(td, xd, rows, inner, samples), xt = transposed(xd, inner, samples);
  const ShampooParams p;
  ShampooMatrix state = shampoo_matrix(int64_t(rows), int64_t(inner), p.block_size);
  std::vector<float> w(rows * inner, 0.0f);
  std::vector<double> losses;
  for (int64_t step = 1; step <= 300; ++step) {
    const Matrix r0 = multiply(Matrix(w.begin(), w.end()), xd, rows, inner, samples);
    Matrix residual(r0.size());
    double loss = 0.0;
    for (std::size_t e = 0; e < r0.size(); ++e) {
      residual[e] = r0[e] - y[e];
      loss += 0.5 * residual[e] * residual[e];
    }
    losses.push_back(loss);
    const Matrix grad = multiply(residual, xt, rows, samples, inner);
    std::vector<float> g(grad.begin(), grad.end());
    shampoo_precondition(g, state, step, p);
    shampoo_apply(w, g, p);
  }
  std::printf("least squares, Shampoo defaults: loss %.4g at step 1, %.4g at 100, %.4g at 300\n", losses[0],
              losses[99], losses[299]);
  for (std::size_t t = 1; t < losses.size(); ++t) ASSERT_LT(losses[t], losses[t - 1]) << "step " << t + 1;
  EXPECT_LT(losses[299], 0.05 * losses[0]);
}

TEST(ShampooRules, HiddenMatricesGetShampooTheRestShampoosAdamW) {
  scenarios::LoadedScenario loaded = scenarios::load_scenario("tiny-moe-4xcpu");
  loaded.written.mutable_training()->mutable_optimizer()->mutable_shampoo()->mutable_adamw()->set_lr(0.125);
  const planner::ResolvedScenario resolved = planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
  const scenarios::Optimizer& o = resolved.scenario().training().optimizer();
  int shampoo = 0, adamw = 0;
  for (const models::UnitSpec& unit : resolved.model.units) {
    for (const models::TensorSpec& t : unit.tensors) {
      const bool hidden = t.is_matrix() && t.role != models::TensorRole::kEmbedding && t.role != models::TensorRole::kHead;
      EXPECT_EQ(tensor_rule(o, t), hidden ? TensorRule::kShampoo : TensorRule::kAdamW) << t.name;
      (hidden ? shampoo : adamw) += 1;
    }
  }
  EXPECT_GT(shampoo, 0);
  EXPECT_GT(adamw, 0);
  EXPECT_EQ(adamw_params(o).lr, 0.125);
  EXPECT_EQ(adamw_params(o).beta2, 0.95);
  const ShampooParams p = shampoo_params(o);
  EXPECT_EQ(p.lr, 1e-2);
  EXPECT_EQ(p.epsilon, 1e-12);
  EXPECT_EQ(p.block_size, 1024);
  EXPECT_EQ(p.precondition_frequency, 1);
  // No kind: an internal error, never a silent AdamW.
  const scenarios::Optimizer unset;
  EXPECT_THROW(tensor_rule(unset, resolved.model.units.front().tensors.front()), InternalError);
  EXPECT_THROW(adamw_params(unset), InternalError);
  EXPECT_THROW(shampoo_params(unset), InternalError);
}

}  // namespace
}  // namespace ragged::backend
