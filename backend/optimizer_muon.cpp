// Muon (Keller Jordan): Nesterov momentum on a shard (element-wise), the
// Newton-Schulz quintic on a whole matrix (on its owner rank, after the
// gather), and the scaled, decoupled-decay apply on a shard (element-wise).

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "backend/optimizer_math.hpp"
#include "common/errors.hpp"

namespace ragged::backend {

namespace {

// Quintic coefficients of Muon's Newton-Schulz iteration.
constexpr float kNsA = 3.4445f;
constexpr float kNsB = -4.7750f;
constexpr float kNsC = 2.0315f;
constexpr double kNsNormEps = 1e-7;

// dst (cols x rows) = src (rows x cols)^T, both row-major.
void transpose(const float* src, int64_t rows, int64_t cols, float* dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
}

}  // namespace

void muon_momentum(std::span<const float> grads, std::span<float> m, std::span<float> update, const MuonParams& p) {
  RAGGED_ASSERT(m.size() == grads.size() && update.size() == grads.size(),
                "muon_momentum: grads, momentum and update must have the same length");
  const auto mu = static_cast<float>(p.momentum);
  const std::size_t n = grads.size();
  for (std::size_t i = 0; i < n; ++i) {
    m[i] = mu * m[i] + grads[i];
    update[i] = grads[i] + mu * m[i];
  }
}

void newton_schulz(std::span<float> matrix, int64_t rows, int64_t cols, int steps) {
  RAGGED_ASSERT(rows > 0 && cols > 0, "newton_schulz: the matrix must be non-empty");
  RAGGED_ASSERT(static_cast<int64_t>(matrix.size()) == rows * cols, "newton_schulz: matrix size is not rows * cols");
  RAGGED_ASSERT(steps >= 0, "newton_schulz: negative step count");
  // Work on X (a x b) with a <= b: the transpose of a tall matrix. Transposing
  // first (before the norm) makes NS(G^T) exactly NS(G)^T.
  const bool tall = rows > cols;
  const int64_t a = tall ? cols : rows;
  const int64_t b = tall ? rows : cols;
  const auto n = static_cast<std::size_t>(a * b);
  std::vector<float> x(n);
  if (tall) {
    transpose(matrix.data(), rows, cols, x.data());
  } else {
    std::copy(matrix.begin(), matrix.end(), x.begin());
  }
  // X = G / (||G||_F + 1e-7), the norm accumulated in double in row-major order of X.
  double sum_sq = 0.0;
  for (const float v : x) sum_sq += static_cast<double>(v) * static_cast<double>(v);
  const double denom = std::sqrt(sum_sq) + kNsNormEps;
  for (float& v : x) v = static_cast<float>(static_cast<double>(v) / denom);

  std::vector<float> gram(static_cast<std::size_t>(a * a));  // A = X X^T
  std::vector<float> poly(static_cast<std::size_t>(a * a));  // B = b A + c A A
  std::vector<float> next(n);                                // a X + B X
  RAGGED_ASSERT(b <= std::numeric_limits<int>::max(), "newton_schulz: a dimension exceeds the BLAS int range");
  const auto ia = static_cast<int>(a);
  const auto ib = static_cast<int>(b);
  for (int s = 0; s < steps; ++s) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, ia, ia, ib, 1.0f, x.data(), ib, x.data(), ib, 0.0f,
                gram.data(), ia);
    std::copy(gram.begin(), gram.end(), poly.begin());
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ia, ia, ia, kNsC, gram.data(), ia, gram.data(), ia, kNsB,
                poly.data(), ia);
    std::copy(x.begin(), x.end(), next.begin());
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ia, ib, ia, 1.0f, poly.data(), ia, x.data(), ib, kNsA,
                next.data(), ib);
    x.swap(next);
  }
  if (tall) {
    transpose(x.data(), a, b, matrix.data());
  } else {
    std::copy(x.begin(), x.end(), matrix.begin());
  }
}

void muon_apply(std::span<float> params, std::span<const float> update, int64_t rows, int64_t cols,
                const MuonParams& p) {
  RAGGED_ASSERT(update.size() == params.size(), "muon_apply: params and update must have the same length");
  RAGGED_ASSERT(rows > 0 && cols > 0, "muon_apply: the matrix must be non-empty");
  const double shape_scale = std::sqrt(std::max(1.0, static_cast<double>(rows) / static_cast<double>(cols)));
  const auto decay = static_cast<float>(1.0 - p.lr * p.weight_decay);
  const auto step = static_cast<float>(p.lr * shape_scale);
  const std::size_t n = params.size();
  for (std::size_t i = 0; i < n; ++i) {
    params[i] = params[i] * decay;
    params[i] = params[i] - step * update[i];
  }
}

}  // namespace ragged::backend
