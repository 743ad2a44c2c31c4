// Host references (host_reference.hpp).

#include "backend/cuda/host_reference.hpp"

#include <bit>
#include <cmath>
#include <cstddef>

#include "common/errors.hpp"

namespace ragged::backend::gpu {
namespace {

// Element (row, col) of op(X) for a row-major X stored rows x cols, or its
// transpose: op(X)(i, j) is X[j * ld + i] when transposed.
struct View {
  std::span<const float> data;
  int64_t ld;
  bool transposed;
  float at(int64_t i, int64_t j) const {
    return transposed ? data[static_cast<size_t>(j * ld + i)] : data[static_cast<size_t>(i * ld + j)];
  }
};

View view_a(const GemmShape& s, std::span<const float> a) { return {a, s.transpose_a ? s.m : s.k, s.transpose_a}; }
View view_b(const GemmShape& s, std::span<const float> b) { return {b, s.transpose_b ? s.k : s.n, s.transpose_b}; }

void check_sizes(const GemmShape& s, std::span<const float> a, std::span<const float> b) {
  RAGGED_ASSERT(s.m >= 0 && s.n >= 0 && s.k >= 0, "GEMM dimensions are non-negative");
  RAGGED_ASSERT(static_cast<int64_t>(a.size()) == a_elements(s), "reference GEMM: A has m*k elements");
  RAGGED_ASSERT(static_cast<int64_t>(b.size()) == b_elements(s), "reference GEMM: B has k*n elements");
}

}  // namespace

std::vector<double> reference_gemm(const GemmShape& shape, std::span<const float> a, std::span<const float> b) {
  check_sizes(shape, a, b);
  const View va = view_a(shape, a), vb = view_b(shape, b);
  std::vector<double> c(static_cast<size_t>(shape.m * shape.n), 0.0);
  // i-p-j order: the inner loop runs along a row of C and, untransposed, of B.
  for (int64_t i = 0; i < shape.m; ++i) {
    double* row = c.data() + i * shape.n;
    for (int64_t p = 0; p < shape.k; ++p) {
      const double a_ip = va.at(i, p);
      for (int64_t j = 0; j < shape.n; ++j) row[j] += a_ip * static_cast<double>(vb.at(p, j));
    }
  }
  return c;
}

std::vector<float> naive_gemm_f32(const GemmShape& shape, std::span<const float> a, std::span<const float> b) {
  check_sizes(shape, a, b);
  // Its own index arithmetic (not View), so that it checks reference_gemm's.
  const int64_t m = shape.m, n = shape.n, k = shape.k;
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int64_t p = 0; p < k; ++p) {
        const float a_ip = shape.transpose_a ? a[static_cast<size_t>(p * m + i)] : a[static_cast<size_t>(i * k + p)];
        const float b_pj = shape.transpose_b ? b[static_cast<size_t>(j * k + p)] : b[static_cast<size_t>(p * n + j)];
        sum += a_ip * b_pj;
      }
      c[static_cast<size_t>(i * n + j)] = sum;
    }
  }
  return c;
}

double relative_error(std::span<const float> out, std::span<const double> ref) {
  if (out.size() != ref.size()) return INFINITY;
  double diff = 0, norm = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i])) return INFINITY;
    const double d = static_cast<double>(out[i]) - ref[i];
    diff += d * d;
    norm += ref[i] * ref[i];
  }
  if (norm == 0) return diff == 0 ? 0.0 : INFINITY;
  return std::sqrt(diff / norm);
}

int64_t count_nan(std::span<const float> values) {
  int64_t count = 0;
  for (float value : values) count += std::isnan(value) ? 1 : 0;
  return count;
}

uint16_t bf16_from_float(float value) {
  const auto bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x0040);  // keep the sign, make it quiet
  // Round to nearest even: add 0x7FFF plus the lowest kept bit, then truncate.
  const uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float float_from_bf16(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

void fill_random(std::span<float> values, std::mt19937_64& rng, float scale) {
  std::uniform_real_distribution<float> uniform(-scale, scale);
  for (float& value : values) {
    do value = uniform(rng);
    while (value == 0.0f);
  }
}

std::vector<float> random_vector(int64_t n, std::mt19937_64& rng, float scale) {
  RAGGED_ASSERT(n >= 0, "random_vector: negative length");
  std::vector<float> values(static_cast<size_t>(n));
  fill_random(values, rng, scale);
  return values;
}

}  // namespace ragged::backend::gpu
