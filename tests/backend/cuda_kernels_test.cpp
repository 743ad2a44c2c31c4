// The CUDA kernels and GEMMs against the host, on a GPU (skipped without
// one): element-wise kernels bit for bit, AdamW and SGD bit for bit against
// backend::adamw_step and backend::sgd_step, GEMMs within their precision's tolerance of the
// float64 reference, and gpu-validate's whole check list.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/gemm.hpp"
#include "backend/cuda/host_reference.hpp"
#include "backend/cuda/kernels.hpp"
#include "tests/backend/cuda_test_device.hpp"
#include "backend/cuda/validate_checks.hpp"
#include "backend/optimizer_math.hpp"

namespace ragged::backend::gpu {
namespace {

class CudaKernelsTest : public test::CudaDeviceTest {
 protected:
  static void expect_bitwise(const std::vector<float>& out, const std::vector<float>& expected) {
    ASSERT_EQ(out.size(), expected.size());
    size_t differ = 0;
    for (size_t i = 0; i < out.size(); ++i)
      differ += std::bit_cast<uint32_t>(out[i]) != std::bit_cast<uint32_t>(expected[i]);
    EXPECT_EQ(differ, 0u);
  }

  std::mt19937_64 rng_{std::random_device{}()};
  static constexpr int64_t kN = 100003;  // odd: exercises every tail
};

TEST_F(CudaKernelsTest, FillCopyAxpyScale) {
  const std::vector<float> x = random_vector(kN, rng_), y = random_vector(kN, rng_);
  float* dx = to_device(x);
  float* dy = to_device(y);
  float* out = device_->arena().allocate_array<float>(kN);

  fill(out, kN, NAN, stream_);
  fill(out, kN, -1.25f, stream_);
  expect_bitwise(to_host(out, kN), std::vector<float>(kN, -1.25f));

  fill(out, kN, NAN, stream_);
  copy(out, dx, kN, stream_);
  expect_bitwise(to_host(out, kN), x);
  fill(out, kN, NAN, stream_);
  copy(out + 3, dx + 3, kN - 3, stream_);
  std::vector<float> tail = to_host(out, kN);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(tail[static_cast<size_t>(i)]));
  tail.erase(tail.begin(), tail.begin() + 3);
  expect_bitwise(tail, std::vector<float>(x.begin() + 3, x.end()));

  const float a = 0.7f;
  std::vector<float> expected(x.size());
  for (size_t i = 0; i < x.size(); ++i) expected[i] = a * x[i] + y[i];
  axpy(dy, a, dx, kN, stream_);
  expect_bitwise(to_host(dy, kN), expected);
  for (size_t i = 0; i < x.size(); ++i) expected[i] = a * x[i];
  scale(dx, a, kN, stream_);
  expect_bitwise(to_host(dx, kN), expected);

  fill(out, 0, 1.0f, stream_);  // nothing to do, no launch error
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

TEST_F(CudaKernelsTest, CountsNonFiniteElements) {
  std::vector<float> x = random_vector(kN, rng_);
  x[0] = NAN;
  x[12345] = -INFINITY;
  x[kN - 1] = INFINITY;
  const float* dx = to_device(x);
  auto* count = device_->arena().allocate_array<unsigned long long>(1);
  CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(*count), stream_));
  count_non_finite(dx, kN, count, stream_);
  count_non_finite(dx + 1, kN - 2, count, stream_);  // adds the one in the middle
  count_non_finite(dx, 0, count, stream_);           // nothing to do, no launch error
  EXPECT_EQ(to_host(count, 1)[0], 4u);
}

TEST_F(CudaKernelsTest, CastsRoundToNearestEven) {
  std::vector<float> x = random_vector(kN, rng_);
  std::uniform_int_distribution<int> exponent(-40, 40);
  for (float& v : x) v = std::ldexp(v, exponent(rng_));
  x[0] = 1.00390625f;  // ties
  x[1] = 1.01171875f;
  x[2] = -0.0f;
  x[3] = INFINITY;
  std::vector<uint16_t> expected16(x.size());
  std::vector<float> expected32(x.size());
  for (size_t i = 0; i < x.size(); ++i) expected32[i] = float_from_bf16(expected16[i] = bf16_from_float(x[i]));

  float* dx = to_device(x);
  uint16_t* d16 = device_->arena().allocate_array<uint16_t>(kN);
  float* d32 = device_->arena().allocate_array<float>(kN);
  fill_bf16(d16, kN, kBf16QuietNan, stream_);
  fill(d32, kN, NAN, stream_);
  cast_to_bf16(d16, dx, kN, stream_);
  cast_to_f32(d32, d16, kN, stream_);
  EXPECT_EQ(to_host(d16, kN), expected16);
  expect_bitwise(to_host(d32, kN), expected32);
}

TEST_F(CudaKernelsTest, RandomFillIsNeverZero) {
  float* out = device_->arena().allocate_array<float>(kN);
  uint16_t* out16 = device_->arena().allocate_array<uint16_t>(kN);
  fill_random(out, kN, 99, 2.0f, stream_);
  fill_random_bf16(out16, kN, 99, 1.0f, stream_);
  for (float v : to_host(out, kN)) {
    ASSERT_NE(v, 0.0f);
    ASSERT_LT(std::fabs(v), 2.0f);
  }
  for (uint16_t v : to_host(out16, kN)) ASSERT_NE(float_from_bf16(v), 0.0f);
}

TEST_F(CudaKernelsTest, AdamWMatchesTheHostBitForBit) {
  std::vector<float> params = random_vector(kN, rng_), m = random_vector(kN, rng_, 1e-3f);
  std::vector<float> v = random_vector(kN, rng_, 1e-4f);
  for (float& x : v) x = std::fabs(x);
  const std::vector<float> grads = random_vector(kN, rng_, 1e-2f);
  float* dp = to_device(params);
  float* dg = to_device(grads);
  float* dm = to_device(m);
  float* dv = to_device(v);
  const AdamWParams p{.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
  for (int64_t step = 1; step <= 3; ++step) {
    adamw_step(dp, dg, dm, dv, kN, step, p, stream_);
    backend::adamw_step(params, grads, m, v, step, p);
  }
  expect_bitwise(to_host(dp, kN), params);
  expect_bitwise(to_host(dm, kN), m);
  expect_bitwise(to_host(dv, kN), v);
}

TEST_F(CudaKernelsTest, SgdMatchesTheHostBitForBit) {
  for (double momentum : {0.0, 0.9}) {
    std::vector<float> params = random_vector(kN, rng_), buffer(kN, 0.0f);
    const std::vector<float> grads = random_vector(kN, rng_, 1e-2f);
    float* dp = to_device(params);
    const float* dg = to_device(grads);
    float* db = to_device(buffer);
    const SgdParams p{.lr = 1e-2, .momentum = momentum, .weight_decay = 0.01};
    for (int64_t step = 1; step <= 3; ++step) {
      sgd_step(dp, dg, momentum > 0 ? db : nullptr, kN, step, p, stream_);
      backend::sgd_step(params, grads, buffer, step, p);
    }
    expect_bitwise(to_host(dp, kN), params);
    expect_bitwise(to_host(db, kN), buffer);
  }
}

TEST_F(CudaKernelsTest, SumSlotsInOrder) {
  const int slots = 3;
  const int64_t count = 1001;
  const std::vector<float> in = random_vector(slots * count, rng_);
  std::vector<float> expected(static_cast<size_t>(count), 0.0f);
  for (int s = 0; s < slots; ++s) {
    for (int64_t i = 0; i < count; ++i) expected[static_cast<size_t>(i)] += in[static_cast<size_t>(s * count + i)];
  }
  const float* din = to_device(in);
  float* out = device_->arena().allocate_array<float>(count);
  fill(out, count, NAN, stream_);
  sum_slots_in_order(out, din, slots, count, stream_);
  expect_bitwise(to_host(out, static_cast<size_t>(count)), expected);
}

TEST_F(CudaKernelsTest, GemmsAgreeWithTheFloat64Reference) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      device_->arena().reset();
      const GemmShape shape{67, 45, 129, ta, tb};
      const std::vector<float> a = random_vector(a_elements(shape), rng_), b = random_vector(b_elements(shape), rng_);
      const std::vector<double> ref = reference_gemm(shape, a, b);
      float* c = device_->arena().allocate_array<float>(c_elements(shape));
      fill(c, c_elements(shape), NAN, stream_);
      gemm_f32(device_->cublas(), stream_, shape, to_device(a), to_device(b), c);
      const std::vector<float> out = to_host(c, static_cast<size_t>(c_elements(shape)));
      EXPECT_EQ(count_nan(out), 0);
      EXPECT_LT(relative_error(out, ref), 1e-5) << ta << tb;

      std::vector<uint16_t> a16(a.size()), b16(b.size());
      for (size_t i = 0; i < a.size(); ++i) a16[i] = bf16_from_float(a[i]);
      for (size_t i = 0; i < b.size(); ++i) b16[i] = bf16_from_float(b[i]);
      fill(c, c_elements(shape), NAN, stream_);
      gemm_bf16_f32(device_->cublas(), stream_, shape, to_device(a16), to_device(b16), c);
      const std::vector<float> out_bf16 = to_host(c, static_cast<size_t>(c_elements(shape)));
      EXPECT_EQ(count_nan(out_bf16), 0);
      EXPECT_LT(relative_error(out_bf16, ref), 1e-2) << ta << tb;
    }
  }
}

TEST_F(CudaKernelsTest, GpuValidateChecksPass) {
  device_.reset();
  CudaDevice device(0, 128 << 20);
  for (const CheckResult& check : gpu_kernel_checks(device, std::random_device{}())) {
    EXPECT_TRUE(check.passed) << check.name << ": error " << check.error << ", unwritten " << check.unwritten << ", "
                              << check.detail;
  }
}

}  // namespace
}  // namespace ragged::backend::gpu
