// gpu-validate's device checks (validate_checks.hpp): every kernel and GEMM
// of the CUDA backend against its host reference, on fresh random inputs.

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <span>
#include <type_traits>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/gemm.hpp"
#include "backend/cuda/host_reference.hpp"
#include "backend/cuda/kernels.hpp"
#include "backend/cuda/validate_checks.hpp"
#include "backend/optimizer_math.hpp"

namespace ragged::backend::gpu {
namespace {

// Odd sizes: no kernel may rely on a multiple of 4, 32 or 256.
constexpr int64_t kElements = (int64_t{1} << 20) + 37;

template <typename T>
void upload(T* device, std::span<const T> host, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(device, host.data(), host.size_bytes(), cudaMemcpyHostToDevice, stream));
}

template <typename T>
std::vector<T> download(const T* device, int64_t n, cudaStream_t stream) {
  std::vector<T> host(static_cast<size_t>(n));
  CUDA_CHECK(cudaMemcpyAsync(host.data(), device, host.size() * sizeof(T), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

std::string shape_name(const GemmShape& s) {
  return fmt::format("{}x{}x{}{}{}", s.m, s.n, s.k, s.transpose_a ? " A^T" : "", s.transpose_b ? " B^T" : "");
}

// Bitwise comparison of device and host results; poisoned elements that stay
// poisoned (NaN) count as unwritten.
template <typename T>
bool same_bits(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
  } else {
    return a == b;
  }
}

template <typename T>
CheckResult bitwise(std::string name, std::span<const T> out, std::span<const T> expected) {
  int64_t differ = 0, unwritten = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (same_bits(out[i], expected[i])) continue;
    ++differ;
    if constexpr (std::is_same_v<T, float>) unwritten += std::isnan(out[i]) && !std::isnan(expected[i]);
  }
  return make_check(std::move(name), static_cast<double>(differ) / static_cast<double>(std::max<size_t>(out.size(), 1)),
                    0, unwritten,
                    differ == 0 ? "bitwise" : fmt::format("{} of {} elements differ", differ, out.size()));
}

struct Context {
  CudaDevice& device;
  cudaStream_t stream;
  std::mt19937_64& rng;
};

// fp32 GEMM, pedantic compute (no TF32): < 1e-5 of the float64 product.
CheckResult gemm_f32_check(Context& ctx, const GemmShape& shape) {
  DeviceArena& arena = ctx.device.arena();
  arena.reset();
  const std::vector<float> a = random_vector(a_elements(shape), ctx.rng);
  const std::vector<float> b = random_vector(b_elements(shape), ctx.rng);
  float* da = arena.allocate_array<float>(a_elements(shape));
  float* db = arena.allocate_array<float>(b_elements(shape));
  float* dc = arena.allocate_array<float>(shape.m * shape.n);
  upload<float>(da, a, ctx.stream);
  upload<float>(db, b, ctx.stream);
  fill(dc, shape.m * shape.n, NAN, ctx.stream);
  gemm_f32(ctx.device.cublas(), ctx.stream, shape, da, db, dc, 1.0f, 0.0f, Fp32Mode::pedantic);
  const std::vector<float> out = download(dc, shape.m * shape.n, ctx.stream);
  return make_check(fmt::format("gemm fp32 {}", shape_name(shape)), relative_error(out, reference_gemm(shape, a, b)),
                    1e-5, count_nan(out), "CUBLAS_COMPUTE_32F_PEDANTIC, default math (no TF32)");
}

// bf16 operands, fp32 accumulation, fp32 or bf16 output: < 1e-2 of the
// float64 product of the fp32 values before rounding; with fp32 output also
// < 1e-4 of the product of the bf16 values themselves (the accumulation).
std::vector<CheckResult> gemm_bf16_checks(Context& ctx, const GemmShape& shape) {
  DeviceArena& arena = ctx.device.arena();
  arena.reset();
  const std::vector<float> a = random_vector(a_elements(shape), ctx.rng);
  const std::vector<float> b = random_vector(b_elements(shape), ctx.rng);
  std::vector<uint16_t> a16(a.size()), b16(b.size());
  std::vector<float> a_rounded(a.size()), b_rounded(b.size());
  for (size_t i = 0; i < a.size(); ++i) a_rounded[i] = float_from_bf16(a16[i] = bf16_from_float(a[i]));
  for (size_t i = 0; i < b.size(); ++i) b_rounded[i] = float_from_bf16(b16[i] = bf16_from_float(b[i]));
  const int64_t c_elements = shape.m * shape.n;
  uint16_t* da = arena.allocate_array<uint16_t>(a_elements(shape));
  uint16_t* db = arena.allocate_array<uint16_t>(b_elements(shape));
  float* dc32 = arena.allocate_array<float>(c_elements);
  uint16_t* dc16 = arena.allocate_array<uint16_t>(c_elements);
  upload<uint16_t>(da, a16, ctx.stream);
  upload<uint16_t>(db, b16, ctx.stream);
  fill(dc32, c_elements, NAN, ctx.stream);
  fill_bf16(dc16, c_elements, kBf16QuietNan, ctx.stream);
  gemm_bf16_f32(ctx.device.cublas(), ctx.stream, shape, da, db, dc32);
  gemm_bf16(ctx.device.cublas(), ctx.stream, shape, da, db, dc16);
  const std::vector<float> out32 = download(dc32, c_elements, ctx.stream);
  const std::vector<uint16_t> out16_bits = download(dc16, c_elements, ctx.stream);
  std::vector<float> out16(out16_bits.size());
  for (size_t i = 0; i < out16.size(); ++i) out16[i] = float_from_bf16(out16_bits[i]);

  const std::vector<double> ref = reference_gemm(shape, a, b);
  const std::vector<double> ref_rounded = reference_gemm(shape, a_rounded, b_rounded);
  const std::string name = shape_name(shape);
  return {
      make_check(fmt::format("gemm bf16->fp32 {}", name), relative_error(out32, ref), 1e-2, count_nan(out32),
                 "vs float64 of the fp32 inputs"),
      make_check(fmt::format("gemm bf16->fp32 {} accumulation", name), relative_error(out32, ref_rounded), 1e-4,
                 count_nan(out32), "vs float64 of the bf16 inputs"),
      make_check(fmt::format("gemm bf16->bf16 {}", name), relative_error(out16, ref), 1e-2, count_nan(out16),
                 "vs float64 of the fp32 inputs"),
  };
}

// Random values over a wide range of exponents, both signs, and a few
// specials (zeros, infinities, rounding ties).
std::vector<float> cast_inputs(int64_t n, std::mt19937_64& rng) {
  std::vector<float> values = random_vector(n, rng);
  std::uniform_int_distribution<int> exponent(-60, 60);
  for (float& value : values) value = std::ldexp(value, exponent(rng));
  const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, 1.00390625f, 1.01171875f, -3.0078125f};
  for (size_t i = 0; i < std::size(specials) && i < values.size(); ++i) values[i * 997 % values.size()] = specials[i];
  return values;
}

std::vector<CheckResult> cast_checks(Context& ctx) {
  DeviceArena& arena = ctx.device.arena();
  arena.reset();
  const std::vector<float> in = cast_inputs(kElements, ctx.rng);
  std::vector<uint16_t> expected16(in.size());
  for (size_t i = 0; i < in.size(); ++i) expected16[i] = bf16_from_float(in[i]);
  std::vector<float> expected32(in.size());
  for (size_t i = 0; i < in.size(); ++i) expected32[i] = float_from_bf16(expected16[i]);

  float* din = arena.allocate_array<float>(kElements);
  uint16_t* d16 = arena.allocate_array<uint16_t>(kElements);
  float* d32 = arena.allocate_array<float>(kElements);
  upload<float>(din, in, ctx.stream);
  fill_bf16(d16, kElements, kBf16QuietNan, ctx.stream);
  fill(d32, kElements, NAN, ctx.stream);
  cast_to_bf16(d16, din, kElements, ctx.stream);
  cast_to_f32(d32, d16, kElements, ctx.stream);
  const std::vector<uint16_t> out16 = download(d16, kElements, ctx.stream);
  const std::vector<float> out32 = download(d32, kElements, ctx.stream);

  int64_t unwritten16 = 0;
  for (size_t i = 0; i < out16.size(); ++i) unwritten16 += out16[i] == kBf16QuietNan && expected16[i] != kBf16QuietNan;
  CheckResult to16 = bitwise<uint16_t>("cast fp32->bf16", out16, expected16);
  to16 = make_check(to16.name, to16.error, to16.tolerance, unwritten16, to16.detail);
  return {to16, bitwise<float>("cast bf16->fp32", out32, expected32)};
}

std::vector<CheckResult> elementwise_checks(Context& ctx) {
  DeviceArena& arena = ctx.device.arena();
  arena.reset();
  const std::vector<float> x = random_vector(kElements, ctx.rng);
  const std::vector<float> y = random_vector(kElements, ctx.rng);
  const float a = std::uniform_real_distribution<float>(0.5f, 2.0f)(ctx.rng);
  const float value = std::uniform_real_distribution<float>(1.0f, 3.0f)(ctx.rng);
  float* dx = arena.allocate_array<float>(kElements);
  float* dy = arena.allocate_array<float>(kElements);
  float* dout = arena.allocate_array<float>(kElements);
  upload<float>(dx, x, ctx.stream);
  upload<float>(dy, y, ctx.stream);
  std::vector<CheckResult> checks;

  fill(dout, kElements, NAN, ctx.stream);
  fill(dout, kElements, value, ctx.stream);
  checks.push_back(bitwise<float>("fill", download(dout, kElements, ctx.stream), std::vector<float>(x.size(), value)));

  fill(dout, kElements, NAN, ctx.stream);
  copy(dout, dx, kElements, ctx.stream);
  checks.push_back(bitwise<float>("copy (16-byte aligned)", download(dout, kElements, ctx.stream), x));
  fill(dout, kElements, NAN, ctx.stream);
  copy(dout + 1, dx + 1, kElements - 1, ctx.stream);  // misaligned: the scalar path
  std::vector<float> shifted = download(dout, kElements, ctx.stream);
  shifted[0] = x[0];
  checks.push_back(bitwise<float>("copy (misaligned)", shifted, x));

  std::vector<float> expected(x.size());
  for (size_t i = 0; i < x.size(); ++i) expected[i] = a * x[i] + y[i];  // ISO C++: no contraction
  axpy(dy, a, dx, kElements, ctx.stream);
  checks.push_back(bitwise<float>("axpy", download(dy, kElements, ctx.stream), expected));

  for (size_t i = 0; i < x.size(); ++i) expected[i] = a * x[i];
  scale(dx, a, kElements, ctx.stream);
  checks.push_back(bitwise<float>("scale", download(dx, kElements, ctx.stream), expected));
  return checks;
}

// AdamW against backend::adamw_step (optimizer_adamw.cpp) on the same inputs.
CheckResult adamw_check(Context& ctx) {
  DeviceArena& arena = ctx.device.arena();
  arena.reset();
  std::vector<float> params = random_vector(kElements, ctx.rng);
  const std::vector<float> grads = random_vector(kElements, ctx.rng, 1e-2f);
  std::vector<float> m = random_vector(kElements, ctx.rng, 1e-3f);
  std::vector<float> v = random_vector(kElements, ctx.rng, 1e-4f);
  for (float& value : v) value = std::fabs(value);
  const int64_t step = std::uniform_int_distribution<int64_t>(1, 1000)(ctx.rng);
  const AdamWParams p;

  float* dp = arena.allocate_array<float>(kElements);
  float* dg = arena.allocate_array<float>(kElements);
  float* dm = arena.allocate_array<float>(kElements);
  float* dv = arena.allocate_array<float>(kElements);
  upload<float>(dp, params, ctx.stream);
  upload<float>(dg, grads, ctx.stream);
  upload<float>(dm, m, ctx.stream);
  upload<float>(dv, v, ctx.stream);
  adamw_step(dp, dg, dm, dv, kElements, step, p, ctx.stream);
  const std::vector<float> out_p = download(dp, kElements, ctx.stream);
  const std::vector<float> out_m = download(dm, kElements, ctx.stream);
  const std::vector<float> out_v = download(dv, kElements, ctx.stream);
  backend::adamw_step(params, grads, m, v, step, p);

  int64_t differ = 0, nan = 0;
  double worst = 0;
  auto compare = [&](const std::vector<float>& out, const std::vector<float>& ref) {
    for (size_t i = 0; i < out.size(); ++i) {
      if (std::isnan(out[i])) ++nan;
      if (std::bit_cast<uint32_t>(out[i]) == std::bit_cast<uint32_t>(ref[i])) continue;
      ++differ;
      const double scale_ref = std::max(std::fabs(static_cast<double>(ref[i])), 1e-30);
      worst = std::max(worst, std::fabs(static_cast<double>(out[i]) - ref[i]) / scale_ref);
    }
  };
  compare(out_p, params);
  compare(out_m, m);
  compare(out_v, v);
  return make_check(
      fmt::format("adamw step {}", step), nan > 0 ? INFINITY : worst, 1e-6, nan,
      differ == 0 ? "bitwise (params, m, v)"
                  : fmt::format("{} of {} values differ, worst relative {:.2e}", differ, 3 * params.size(), worst));
}

}  // namespace

std::vector<CheckResult> gpu_kernel_checks(CudaDevice& device, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Context ctx{device, device.stream(StreamKind::compute), rng};
  std::vector<CheckResult> checks;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) checks.push_back(gemm_f32_check(ctx, {509, 383, 257, ta, tb}));
  }
  checks.push_back(gemm_f32_check(ctx, {768, 1024, 512}));
  for (const GemmShape& shape : {GemmShape{509, 383, 257}, GemmShape{384, 256, 1031, true, true}}) {
    for (CheckResult& check : gemm_bf16_checks(ctx, shape)) checks.push_back(std::move(check));
  }
  for (CheckResult& check : cast_checks(ctx)) checks.push_back(std::move(check));
  for (CheckResult& check : elementwise_checks(ctx)) checks.push_back(std::move(check));
  checks.push_back(adamw_check(ctx));
  device.arena().reset();
  return checks;
}

}  // namespace ragged::backend::gpu
