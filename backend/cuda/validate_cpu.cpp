// gpu-validate's host self-checks: the references that judge the GPU are
// themselves judged here, on any machine.

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <random>

#include "backend/cuda/host_reference.hpp"
#include "backend/cuda/validate_checks.hpp"

namespace ragged::backend::gpu {

CheckResult make_check(std::string name, double error, double tolerance, int64_t unwritten, std::string detail) {
  CheckResult check;
  check.name = std::move(name);
  check.error = error;
  check.tolerance = tolerance;
  check.unwritten = unwritten;
  check.detail = std::move(detail);
  check.passed = !std::isnan(error) && error <= tolerance && unwritten == 0;
  return check;
}

namespace {

std::string shape_name(const GemmShape& s) {
  return fmt::format("{}x{}x{}{}{}", s.m, s.n, s.k, s.transpose_a ? " A^T" : "", s.transpose_b ? " B^T" : "");
}

// A = [[1,2,3],[4,5,6]], B = [[7,8],[9,10],[11,12]]: C = [[58,64],[139,154]],
// with A and B stored plainly or transposed.
CheckResult known_product(bool transpose_a, bool transpose_b) {
  const std::vector<float> a =
      transpose_a ? std::vector<float>{1, 4, 2, 5, 3, 6} : std::vector<float>{1, 2, 3, 4, 5, 6};
  const std::vector<float> b =
      transpose_b ? std::vector<float>{7, 9, 11, 8, 10, 12} : std::vector<float>{7, 8, 9, 10, 11, 12};
  const GemmShape shape{2, 2, 3, transpose_a, transpose_b};
  const std::vector<double> expected = {58, 64, 139, 154};
  const std::vector<double> ref = reference_gemm(shape, a, b);
  const std::vector<float> naive = naive_gemm_f32(shape, a, b);
  int64_t wrong = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    wrong += (ref[i] != expected[i]) + (static_cast<double>(naive[i]) != expected[i]);
  }
  return make_check(fmt::format("cpu: known product {}", shape_name(shape)), static_cast<double>(wrong), 0, 0,
                    wrong == 0 ? "exact" : fmt::format("{} of 8 values wrong", wrong));
}

CheckResult reference_against_naive(const GemmShape& shape, std::mt19937_64& rng) {
  const std::vector<float> a = random_vector(a_elements(shape), rng);
  const std::vector<float> b = random_vector(b_elements(shape), rng);
  const std::vector<float> naive = naive_gemm_f32(shape, a, b);
  const std::vector<double> ref = reference_gemm(shape, a, b);
  return make_check(fmt::format("cpu: reference vs naive fp32 {}", shape_name(shape)), relative_error(naive, ref), 1e-5,
                    count_nan(naive));
}

// Values whose bfloat16 rounding is known: exact, ties to even, carries.
CheckResult bf16_rounding() {
  struct Case {
    float value;
    uint16_t bits;
  };
  const Case cases[] = {
      {1.0f, 0x3F80},
      {-2.0f, 0xC000},
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.00390625f, 0x3F80},                        // 1 + 2^-8: a tie, to the even 1.0
      {1.01171875f, 0x3F82},                        // 1 + 3 * 2^-8: a tie, to the even 1 + 2^-6
      {std::bit_cast<float>(0x3F808001u), 0x3F81},  // just above that tie: up
      {INFINITY, 0x7F80},
      {-INFINITY, 0xFF80},
      {std::bit_cast<float>(0x7F7F0000u), 0x7F7F},  // the largest finite bf16
      {std::bit_cast<float>(0x7F7F8000u), 0x7F80},  // a tie above it: to the even, infinity
  };
  int64_t wrong = 0;
  for (const Case& c : cases) {
    wrong += bf16_from_float(c.value) != c.bits;
    wrong += std::bit_cast<uint32_t>(float_from_bf16(c.bits)) != (static_cast<uint32_t>(c.bits) << 16);
  }
  wrong += !std::isnan(float_from_bf16(bf16_from_float(NAN)));
  return make_check("cpu: bf16 rounding of known values", static_cast<double>(wrong), 0, 0,
                    wrong == 0 ? "exact" : fmt::format("{} wrong", wrong));
}

}  // namespace

std::vector<CheckResult> cpu_self_checks(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<CheckResult> checks;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) checks.push_back(known_product(ta, tb));
  }
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) checks.push_back(reference_against_naive({37, 29, 53, ta, tb}, rng));
  }
  checks.push_back(reference_against_naive({128, 96, 256}, rng));
  checks.push_back(reference_against_naive({1, 300, 17}, rng));
  checks.push_back(bf16_rounding());
  return checks;
}

}  // namespace ragged::backend::gpu
