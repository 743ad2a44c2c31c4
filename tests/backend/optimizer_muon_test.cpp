// Muon: momentum and apply are element-wise (whole == any split, bit for bit);
// Newton-Schulz drives every singular value of a matrix into the quintic's
// band around 1, deterministically, and fast enough on a 512 x 2048 matrix.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
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
using optimizer_test::gaussian_vector;
using optimizer_test::random_cuts;

// Eigenvalues of a symmetric matrix (cyclic Jacobi, in double).
std::vector<double> symmetric_eigenvalues(std::vector<double> a, std::size_t n) {
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0.0;
    for (std::size_t p = 0; p < n; ++p)
      for (std::size_t q = p + 1; q < n; ++q) off += a[p * n + q] * a[p * n + q];
    if (off < 1e-26) break;
    for (std::size_t p = 0; p < n; ++p) {
      for (std::size_t q = p + 1; q < n; ++q) {
        const double apq = a[p * n + q];
        if (std::fabs(apq) < 1e-300) continue;
        const double theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
        const double t = std::copysign(1.0, theta) / (std::fabs(theta) + std::sqrt(theta * theta + 1.0));
        const double c = 1.0 / std::sqrt(t * t + 1.0), s = t * c;
        for (std::size_t k = 0; k < n; ++k) {  // columns p, q
          const double akp = a[k * n + p], akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (std::size_t k = 0; k < n; ++k) {  // rows p, q
          const double apk = a[p * n + k], aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
      }
    }
  }
  std::vector<double> ev(n);
  for (std::size_t i = 0; i < n; ++i) ev[i] = a[i * n + i];
  std::sort(ev.begin(), ev.end());
  return ev;
}

// Singular values of a rows x cols row-major matrix, from its smaller Gram matrix.
std::vector<double> singular_values(const std::vector<float>& x, std::size_t rows, std::size_t cols) {
  const bool wide = rows <= cols;
  const std::size_t k = wide ? rows : cols, inner = wide ? cols : rows;
  auto at = [&](std::size_t i, std::size_t j) {  // element (i, j) of the a x b orientation
    return double(wide ? x[i * cols + j] : x[j * cols + i]);
  };
  std::vector<double> gram(k * k, 0.0);
  for (std::size_t i = 0; i < k; ++i)
    for (std::size_t j = 0; j <= i; ++j) {
      double s = 0.0;
      for (std::size_t l = 0; l < inner; ++l) s += at(i, l) * at(j, l);
      gram[i * k + j] = gram[j * k + i] = s;
    }
  std::vector<double> ev = symmetric_eigenvalues(gram, k);
  for (double& e : ev) e = std::sqrt(std::max(e, 0.0));
  return ev;
}

TEST(OptimizerMuon, MomentumIsNesterov) {
  MuonParams hp;
  hp.momentum = 0.9;
  std::vector<float> m{1.0f, -2.0f}, u(2);
  const std::vector<float> g{0.5f, 4.0f};
  muon_momentum(g, m, u, hp);
  // m = 0.9 m + g; u = g + 0.9 m
  EXPECT_FLOAT_EQ(m[0], 1.4f);
  EXPECT_FLOAT_EQ(m[1], 2.2f);
  EXPECT_FLOAT_EQ(u[0], 0.5f + 0.9f * 1.4f);
  EXPECT_FLOAT_EQ(u[1], 4.0f + 0.9f * 2.2f);
}

TEST(OptimizerMuon, MomentumAndApplyWholeEqualsAnySplitBitwise) {
  std::mt19937 rng(21);
  const std::size_t rows = 48, cols = 37, n = rows * cols;
  MuonParams hp;
  hp.weight_decay = 0.01;
  for (int trial = 0; trial < 10; ++trial) {
    std::vector<float> m_whole(n, 0.0f), m_split(n, 0.0f), u_whole(n), u_split(n);
    std::vector<float> p_whole = gaussian_vector(n, rng), p_split = p_whole;
    for (int step = 0; step < 4; ++step) {
      const std::vector<float> g = gaussian_vector(n, rng);
      muon_momentum(g, m_whole, u_whole, hp);
      muon_apply(p_whole, u_whole, int64_t(rows), int64_t(cols), hp);
      const std::vector<std::size_t> cuts = random_cuts(n, 1 + trial % 6, rng);
      for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
        const std::size_t b = cuts[k], len = cuts[k + 1] - cuts[k];
        muon_momentum(std::span<const float>(g).subspan(b, len), std::span(m_split).subspan(b, len),
                      std::span(u_split).subspan(b, len), hp);
        muon_apply(std::span(p_split).subspan(b, len), std::span<const float>(u_split).subspan(b, len),
                   int64_t(rows), int64_t(cols), hp);
      }
    }
    EXPECT_TRUE(bitwise_equal(m_whole, m_split)) << trial;
    EXPECT_TRUE(bitwise_equal(u_whole, u_split)) << trial;
    EXPECT_TRUE(bitwise_equal(p_whole, p_split)) << trial;
  }
}

TEST(OptimizerMuon, ApplyScalesTallMatricesAndDecays) {
  MuonParams hp;
  hp.lr = 0.5;
  hp.weight_decay = 0.2;
  std::vector<float> p{1.0f, 1.0f};
  const std::vector<float> u{1.0f, -1.0f};
  muon_apply(p, u, 16, 4, hp);  // scale sqrt(16 / 4) = 2; decay 1 - 0.1
  EXPECT_FLOAT_EQ(p[0], 0.9f - 1.0f);
  EXPECT_FLOAT_EQ(p[1], 0.9f + 1.0f);
  std::vector<float> q{1.0f};
  hp.weight_decay = 0.0;
  muon_apply(q, std::vector<float>{1.0f}, 4, 16, hp);  // wide: scale 1
  EXPECT_FLOAT_EQ(q[0], 0.5f);
}

struct Shape {
  std::size_t rows, cols;
};

// The quintic f(s) = a s + b s^3 + c s^5 maps [0, 1] into [0, 1.2025] (its
// maximum, at s = 0.5545) and keeps [0.6817, 1.2025] inside itself (its local
// minimum, at s = 1.0500, is 0.6817): a singular value that has been lifted
// into the band oscillates there rather than converging to 1.
constexpr double kBandLo = 0.68;
constexpr double kBandHi = 1.21;

TEST(OptimizerNewtonSchulz, SingularValuesInTheQuinticBand) {
  std::mt19937 rng(31);
  // Rectangular Gaussian matrices are well conditioned (Marchenko-Pastur): 5
  // steps lift all their singular values into the band.
  double lo_all = 1e9, hi_all = 0.0;
  for (const Shape s : {Shape{64, 256}, Shape{256, 64}, Shape{32, 96}, Shape{96, 32}, Shape{100, 300},
                        Shape{300, 100}, Shape{1, 50}, Shape{50, 1}, Shape{128, 512}}) {
    std::vector<float> x = gaussian_vector(s.rows * s.cols, rng);
    newton_schulz(x, int64_t(s.rows), int64_t(s.cols), 5);
    const std::vector<double> sv = singular_values(x, s.rows, s.cols);
    std::printf("NS5 %zux%zu: singular values in [%.4f, %.4f]\n", s.rows, s.cols, sv.front(), sv.back());
    lo_all = std::min(lo_all, sv.front());
    hi_all = std::max(hi_all, sv.back());
    EXPECT_GT(sv.front(), kBandLo) << s.rows << "x" << s.cols;
    EXPECT_LT(sv.back(), kBandHi) << s.rows << "x" << s.cols;
  }
  std::printf("NS5 band over all rectangular shapes: [%.4f, %.4f]\n", lo_all, hi_all);
}

TEST(OptimizerNewtonSchulz, SquareMatricesConvergeExceptTheSmallestDirections) {
  // A square Gaussian matrix has singular values down to ~0 (relative to its
  // Frobenius norm ~n^-1.5), which 5 quintic steps (gain ~3.4445 each) cannot
  // all lift: the bulk lands in the band, none ever exceeds it.
  std::mt19937 rng(32);
  for (const std::size_t n : {32u, 64u, 128u}) {
    std::vector<float> x = gaussian_vector(n * n, rng);
    newton_schulz(x, int64_t(n), int64_t(n), 5);
    const std::vector<double> sv = singular_values(x, n, n);
    const auto in_band = std::count_if(sv.begin(), sv.end(), [](double v) { return v > kBandLo && v < kBandHi; });
    std::printf("NS5 %zux%zu: singular values in [%.4f, %.4f], %ld of %zu in the band\n", n, n, sv.front(),
                sv.back(), long(in_band), n);
    EXPECT_LT(sv.back(), kBandHi);
    EXPECT_GE(double(in_band), 0.9 * double(n));
  }
}

TEST(OptimizerNewtonSchulz, GramIsNearIdentity) {
  // diag(X X^T) is a weighted mean of the squared singular values: inside
  // [0.68^2, 1.21^2]; off the diagonal, X X^T = U S^2 U^T stays small.
  std::mt19937 rng(33);
  for (const Shape s : {Shape{96, 384}, Shape{384, 96}, Shape{200, 256}}) {
    std::vector<float> x = gaussian_vector(s.rows * s.cols, rng);
    newton_schulz(x, int64_t(s.rows), int64_t(s.cols), 5);
    // Gram of the wide orientation.
    const bool wide = s.rows <= s.cols;
    const std::size_t k = wide ? s.rows : s.cols, inner = wide ? s.cols : s.rows;
    auto at = [&](std::size_t i, std::size_t j) { return double(wide ? x[i * s.cols + j] : x[j * s.cols + i]); };
    double diag_lo = 1e9, diag_hi = 0.0, off_max = 0.0;
    for (std::size_t i = 0; i < k; ++i)
      for (std::size_t j = 0; j <= i; ++j) {
        double dot = 0.0;
        for (std::size_t l = 0; l < inner; ++l) dot += at(i, l) * at(j, l);
        if (i == j) {
          diag_lo = std::min(diag_lo, dot);
          diag_hi = std::max(diag_hi, dot);
        } else {
          off_max = std::max(off_max, std::fabs(dot));
        }
      }
    std::printf("NS5 %zux%zu: diag(X X^T) in [%.4f, %.4f], max |off-diagonal| %.4f\n", s.rows, s.cols, diag_lo,
                diag_hi, off_max);
    EXPECT_GT(diag_lo, kBandLo * kBandLo);
    EXPECT_LT(diag_hi, kBandHi * kBandHi);
    EXPECT_LT(off_max, 0.25);
  }
}

TEST(OptimizerNewtonSchulz, DeterministicAndTransposeExact) {
  std::mt19937 rng(34);
  const std::size_t rows = 200, cols = 72;
  const std::vector<float> g = gaussian_vector(rows * cols, rng);
  std::vector<float> a = g, b = g;
  newton_schulz(a, int64_t(rows), int64_t(cols), 5);
  newton_schulz(b, int64_t(rows), int64_t(cols), 5);
  EXPECT_TRUE(bitwise_equal(a, b));
  // NS(G^T) == NS(G)^T bit for bit: both run on the same wide orientation.
  std::vector<float> gt(g.size());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) gt[c * rows + r] = g[r * cols + c];
  newton_schulz(gt, int64_t(cols), int64_t(rows), 5);
  bool same = true;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) same = same && gt[c * rows + r] == a[r * cols + c];
  EXPECT_TRUE(same);
}

TEST(OptimizerNewtonSchulz, ScaleInvariantAndZeroSafe) {
  std::mt19937 rng(35);
  const std::vector<float> g = gaussian_vector(40 * 90, rng);
  std::vector<float> a = g, b = g;
  for (float& e : b) e *= 1024.0f;  // a power of two: the normalised X is identical
  newton_schulz(a, 40, 90, 5);
  newton_schulz(b, 40, 90, 5);
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::fabs(a[i] - b[i])));
  EXPECT_LT(worst, 1e-5);
  std::vector<float> zeros(12, 0.0f);
  newton_schulz(zeros, 3, 4, 5);
  for (float e : zeros) EXPECT_EQ(e, 0.0f);
  EXPECT_THROW(newton_schulz(zeros, 3, 5, 5), InternalError);
}

// The time is printed, not bounded (no wall-clock bar in a unit test).
TEST(OptimizerNewtonSchulz, Speed512x2048IsPrintedAndTheResultFinite) {
  std::mt19937 rng(36);
  std::vector<float> x = gaussian_vector(512 * 2048, rng);
  const auto start = std::chrono::steady_clock::now();
  newton_schulz(x, 512, 2048, 5);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("NS5 on 512x2048: %.3f s (~%.1f GFLOP/s)\n", seconds, 5 * 2.0 * (2.0 * 512 * 512 * 2048 + 512.0 * 512 * 512) / seconds / 1e9);
  EXPECT_TRUE(std::all_of(x.begin(), x.end(), [](float e) { return std::isfinite(e); }));
}

}  // namespace
}  // namespace ragged::backend
