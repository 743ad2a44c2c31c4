// Shampoo on the owner rank: per block, float64 Kronecker factors, inverse
// fourth roots by a symmetric eigendecomposition (LAPACK dsyevd, which
// OpenBLAS exports), the two-sided preconditioned update; the decoupled-decay
// apply on a shard (element-wise).

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "backend/optimizer_math.hpp"
#include "common/errors.hpp"

// LAPACK's symmetric eigensolver (Fortran ABI; the trailing lengths of the two
// character arguments, as LAPACK's own lapack.h declares them).
extern "C" void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
                        double* work, const int* lwork, int* iwork, const int* liwork, int* info, std::size_t jobz_len,
                        std::size_t uplo_len);

namespace ragged::backend {

namespace {

int blas_int(int64_t n) {
  RAGGED_ASSERT(n > 0 && n <= INT_MAX, "shampoo: a block dimension is outside the BLAS int range");
  return static_cast<int>(n);
}

// Eigenvalues (ascending) of a symmetric n x n matrix; `a` becomes its
// eigenvectors, eigenvector j in a[j * n, (j + 1) * n) (LAPACK's column j).
std::vector<double> symmetric_eigen(std::vector<double>& a, int n) {
  std::vector<double> values(static_cast<std::size_t>(n));
  int info = 0, lwork = -1, liwork = -1, iwork_size = 0;
  double work_size = 0;
  dsyevd_("V", "U", &n, a.data(), &n, values.data(), &work_size, &lwork, &iwork_size, &liwork, &info, 1, 1);
  RAGGED_ASSERT(info == 0, "shampoo: dsyevd workspace query failed");
  lwork = static_cast<int>(work_size);
  liwork = iwork_size;
  std::vector<double> work(static_cast<std::size_t>(lwork));
  std::vector<int> iwork(static_cast<std::size_t>(liwork));
  dsyevd_("V", "U", &n, a.data(), &n, values.data(), work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
  RAGGED_ASSERT(info == 0, "shampoo: dsyevd did not converge on a finite symmetric matrix");
  return values;
}

}  // namespace

ShampooMatrix shampoo_matrix(int64_t rows, int64_t cols, int64_t block_size) {
  RAGGED_ASSERT(rows > 0 && cols > 0 && block_size > 0, "shampoo_matrix: empty matrix or block");
  ShampooMatrix m{rows, cols, {}};
  for (int64_t r = 0; r < rows; r += block_size) {
    for (int64_t c = 0; c < cols; c += block_size) {
      ShampooBlock b;
      b.row = r;
      b.col = c;
      b.rows = std::min(block_size, rows - r);
      b.cols = std::min(block_size, cols - c);
      b.left.assign(static_cast<std::size_t>(b.rows * b.rows), 0.0);
      b.right.assign(static_cast<std::size_t>(b.cols * b.cols), 0.0);
      m.blocks.push_back(std::move(b));
    }
  }
  return m;
}

std::vector<double> inverse_root(std::span<const double> a, int64_t n, int root, double epsilon) {
  const int in = blas_int(n);
  RAGGED_ASSERT(static_cast<int64_t>(a.size()) == n * n, "inverse_root: matrix size is not n * n");
  RAGGED_ASSERT(root >= 1 && epsilon > 0, "inverse_root: the root must be >= 1 and epsilon positive");
  const auto size = static_cast<std::size_t>(n * n);
  if (!std::all_of(a.begin(), a.end(), [](double x) { return std::isfinite(x); })) {
    return std::vector<double>(size, std::numeric_limits<double>::quiet_NaN());
  }
  std::vector<double> vectors(a.begin(), a.end());
  const std::vector<double> values = symmetric_eigen(vectors, in);
  // A^(-1/root) = E^T diag(f) E with E's rows the eigenvectors: scale row j
  // by f_j, multiply by E^T.
  std::vector<double> scaled(vectors);
  for (int64_t j = 0; j < n; ++j) {
    const double f = std::pow(std::max(values[static_cast<std::size_t>(j)], 0.0) + epsilon, -1.0 / root);
    for (int64_t k = 0; k < n; ++k) scaled[static_cast<std::size_t>(j * n + k)] *= f;
  }
  std::vector<double> out(size);
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, in, in, in, 1.0, vectors.data(), in, scaled.data(), in, 0.0,
              out.data(), in);
  return out;
}

void shampoo_precondition(std::span<float> matrix, ShampooMatrix& state, int64_t step, const ShampooParams& p) {
  RAGGED_ASSERT(static_cast<int64_t>(matrix.size()) == state.rows * state.cols,
                "shampoo_precondition: matrix size is not rows * cols of its state");
  RAGGED_ASSERT(step >= 1 && p.precondition_frequency >= 1, "shampoo_precondition: steps count from 1");
  const bool refresh = (step - 1) % p.precondition_frequency == 0;
  std::vector<double> g, left_g, u;
  for (ShampooBlock& b : state.blocks) {
    const int r = blas_int(b.rows), c = blas_int(b.cols);
    const auto n = static_cast<std::size_t>(b.rows * b.cols);
    g.resize(n);
    left_g.resize(n);
    u.resize(n);
    for (int64_t i = 0; i < b.rows; ++i) {
      const float* row = &matrix[static_cast<std::size_t>((b.row + i) * state.cols + b.col)];
      std::copy(row, row + b.cols, &g[static_cast<std::size_t>(i * b.cols)]);
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r, r, c, 1.0, g.data(), c, g.data(), c, 1.0, b.left.data(),
                r);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, c, c, r, 1.0, g.data(), c, g.data(), c, 1.0, b.right.data(),
                c);
    // A block without roots yet computes them whatever the step (a state
    // first used after step 1 must not precondition with nothing).
    if (refresh || b.left_root.empty()) {
      b.left_root = inverse_root(b.left, b.rows, 4, p.epsilon);
      b.right_root = inverse_root(b.right, b.cols, 4, p.epsilon);
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, c, r, 1.0, b.left_root.data(), r, g.data(), c, 0.0,
                left_g.data(), c);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, c, c, 1.0, left_g.data(), c, b.right_root.data(), c, 0.0,
                u.data(), c);
    for (int64_t i = 0; i < b.rows; ++i) {
      float* row = &matrix[static_cast<std::size_t>((b.row + i) * state.cols + b.col)];
      for (int64_t j = 0; j < b.cols; ++j) row[j] = static_cast<float>(u[static_cast<std::size_t>(i * b.cols + j)]);
    }
  }
}

void shampoo_apply(std::span<float> params, std::span<const float> update, const ShampooParams& p) {
  RAGGED_ASSERT(update.size() == params.size(), "shampoo_apply: params and update must have the same length");
  const auto decay = static_cast<float>(1.0 - p.lr * p.weight_decay);
  const auto step = static_cast<float>(p.lr);
  const std::size_t n = params.size();
  for (std::size_t i = 0; i < n; ++i) {
    params[i] = params[i] * decay;
    params[i] = params[i] - step * update[i];
  }
}

}  // namespace ragged::backend
