#pragma once
// Host references for checking the CUDA backend (gpu-validate and the CUDA
// tests): a float64 GEMM with the row-major conventions of gemm.hpp, a naive
// fp32 GEMM to check that reference against, bfloat16 rounding as the GPU
// does it, fresh random inputs that are never zero, and the error measures.
// No CUDA here: these run and are tested on every machine.

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "backend/cuda/gemm.hpp"

namespace ragged::backend::gpu {

// c = op(a) op(b) in float64 (every product and sum in double), shapes as in
// gemm.hpp; a and b are row-major fp32 (or bf16 values widened to fp32).
std::vector<double> reference_gemm(const GemmShape& shape, std::span<const float> a, std::span<const float> b);
// The same product with a plain fp32 triple loop (sums in k order).
std::vector<float> naive_gemm_f32(const GemmShape& shape, std::span<const float> a, std::span<const float> b);

// ||out - ref||_2 / ||ref||_2; +infinity when `out` holds a NaN or an
// infinity, or when the lengths differ. 0 when both are all zero.
double relative_error(std::span<const float> out, std::span<const double> ref);
// Elements that are NaN: an output poisoned with NaN before a run and still
// NaN after it was not written (inputs of the checks are finite).
int64_t count_nan(std::span<const float> values);

// bfloat16 rounding to nearest even (NaN stays a quiet NaN), and widening.
uint16_t bf16_from_float(float value);
float float_from_bf16(uint16_t bits);
inline constexpr uint16_t kBf16QuietNan = 0x7FC1;

// Uniform in (-scale, scale), never exactly 0, from `rng`.
void fill_random(std::span<float> values, std::mt19937_64& rng, float scale = 1.0f);
std::vector<float> random_vector(int64_t n, std::mt19937_64& rng, float scale = 1.0f);

}  // namespace ragged::backend::gpu
