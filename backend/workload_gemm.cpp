// GEMMs through CBLAS, RMSNorm, and the small reductions gradients need.

#include <algorithm>
#include <cmath>

#include <cblas.h>

#include "backend/workload_internal.hpp"
#include "common/errors.hpp"

namespace ragged::backend::detail {

float* Ctx::scratch_of(int64_t n) {
  if (static_cast<int64_t>(scratch.size()) < n) scratch.resize(static_cast<size_t>(n));
  return scratch.data();
}

void Ctx::gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float beta,
               float* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    RAGGED_ASSERT(beta == 1.0f || beta == 0.0f, "gemm with k = 0 and an unusual beta");
    if (beta == 0.0f) std::fill(c, c + m * n, 0.0f);
    return;
  }
  const auto lda = static_cast<blasint>(trans_a ? m : k);
  const auto ldb = static_cast<blasint>(trans_b ? k : n);
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a, lda, b, ldb, beta, c,
              static_cast<blasint>(n));
  flops += 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

void add_into(float* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

void add_column_sums(float* dst, const float* src, int64_t rows, int64_t cols) {
  std::vector<double> sum(static_cast<size_t>(cols), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = src + r * cols;
    for (int64_t c = 0; c < cols; ++c) sum[static_cast<size_t>(c)] += row[c];
  }
  for (int64_t c = 0; c < cols; ++c) dst[c] += static_cast<float>(sum[static_cast<size_t>(c)]);
}

void add_column_dots(float* dst, const float* a, const float* b, int64_t rows, int64_t cols) {
  std::vector<double> sum(static_cast<size_t>(cols), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* ra = a + r * cols;
    const float* rb = b + r * cols;
    for (int64_t c = 0; c < cols; ++c) sum[static_cast<size_t>(c)] += static_cast<double>(ra[c]) * rb[c];
  }
  for (int64_t c = 0; c < cols; ++c) dst[c] += static_cast<float>(sum[static_cast<size_t>(c)]);
}

void scale_columns(const float* x, const float* w, int64_t rows, int64_t cols, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] * w[c];
  }
}

namespace {

double rms_rstd(const float* x, int64_t cols) {
  double sum = 0;
  for (int64_t c = 0; c < cols; ++c) sum += static_cast<double>(x[c]) * x[c];
  return 1.0 / std::sqrt(sum / static_cast<double>(cols) + kNormEps);
}

}  // namespace

void rms_norm_forward(const float* x, const float* w, int64_t rows, int64_t cols, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const double rstd = rms_rstd(x + r * cols, cols);
    for (int64_t c = 0; c < cols; ++c) {
      y[r * cols + c] = static_cast<float>(x[r * cols + c] * rstd) * w[c];
    }
  }
}

void rms_norm_backward(const float* x, const float* w, const float* dy, int64_t rows, int64_t cols, float* dx,
                       float* dw) {
  std::vector<double> dw_sum(static_cast<size_t>(cols), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float* dyr = dy + r * cols;
    const double rstd = rms_rstd(xr, cols);
    double mean = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const float n = static_cast<float>(xr[c] * rstd);
      mean += static_cast<double>(dyr[c]) * w[c] * n;
      dw_sum[static_cast<size_t>(c)] += static_cast<double>(dyr[c]) * n;
    }
    mean /= static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c) {
      const float n = static_cast<float>(xr[c] * rstd);
      dx[r * cols + c] = static_cast<float>(rstd * (static_cast<double>(dyr[c]) * w[c] - n * mean));
    }
  }
  if (dw == nullptr) return;
  for (int64_t c = 0; c < cols; ++c) dw[c] += static_cast<float>(dw_sum[static_cast<size_t>(c)]);
}

void linear_forward(Ctx& ctx, const Linear& lin, const float* x, int64_t rows, float* y) {
  ctx.gemm(false, !lin.x_at_w, rows, lin.out, lin.in, x, lin.w, 0.0f, y);
  if (lin.b == nullptr) return;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < lin.out; ++c) y[r * lin.out + c] += lin.b[c];
  }
}

void linear_backward(Ctx& ctx, const Linear& lin, const float* x, const float* dy, int64_t rows, float* dx,
                     float beta) {
  if (dx != nullptr) ctx.gemm(false, lin.x_at_w, rows, lin.in, lin.out, dy, lin.w, beta, dx);
  const int64_t n = lin.out * lin.in;
  float* scratch = ctx.scratch_of(n);
  if (lin.x_at_w) {
    ctx.gemm(true, false, lin.in, lin.out, rows, x, dy, 0.0f, scratch);
  } else {
    ctx.gemm(true, false, lin.out, lin.in, rows, dy, x, 0.0f, scratch);
  }
  add_into(lin.dw, scratch, n);
  if (lin.db != nullptr) add_column_sums(lin.db, dy, rows, lin.out);
}

const float* param_at(const ConstTensors& params, int index) {
  return index < 0 ? nullptr : params[static_cast<size_t>(index)];
}

float* grad_at(const Tensors* grads, int index) {
  return index < 0 || grads == nullptr ? nullptr : (*grads)[static_cast<size_t>(index)];
}

Linear bind_linear(const LinearSlot& slot, const ConstTensors& params, const Tensors* grads) {
  RAGGED_ASSERT(slot.weight >= 0, "binding a projection that the unit does not have");
  return Linear{param_at(params, slot.weight),
                param_at(params, slot.bias),
                grad_at(grads, slot.weight),
                grad_at(grads, slot.bias),
                slot.out,
                slot.in,
                false};
}

}  // namespace ragged::backend::detail
