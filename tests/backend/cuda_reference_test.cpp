// The host side of the CUDA backend, on every machine: gpu-validate's float64
// reference GEMM against a naive loop, bfloat16 rounding, the arena's
// carving, the device probe, and the calibration file read back by the
// simulator.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>

#include <unistd.h>

#include "backend/cuda/calibration.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/device_arena.hpp"
#include "backend/cuda/gemm.hpp"
#include "backend/cuda/host_reference.hpp"
#include "backend/cuda/validate_bench.hpp"
#include "backend/cuda/validate_checks.hpp"
#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "scenarios/gpu_presets.hpp"
#include "sim/compute_model.hpp"

namespace ragged::backend::gpu {
namespace {

TEST(CudaReference, KnownProductInEveryLayout) {
  // A = [[1,2,3],[4,5,6]], B = [[7,8],[9,10],[11,12]].
  const std::vector<double> expected = {58, 64, 139, 154};
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, a_t = {1, 4, 2, 5, 3, 6};
  const std::vector<float> b = {7, 8, 9, 10, 11, 12}, b_t = {7, 9, 11, 8, 10, 12};
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const GemmShape shape{2, 2, 3, ta, tb};
      EXPECT_EQ(reference_gemm(shape, ta ? a_t : a, tb ? b_t : b), expected) << ta << tb;
      const std::vector<float> naive = naive_gemm_f32(shape, ta ? a_t : a, tb ? b_t : b);
      EXPECT_EQ(std::vector<double>(naive.begin(), naive.end()), expected) << ta << tb;
    }
  }
}

TEST(CudaReference, Float64ReferenceMatchesNaiveFp32Loop) {
  std::mt19937_64 rng(20260101);
  for (const GemmShape& shape :
       {GemmShape{31, 17, 45}, GemmShape{31, 17, 45, true, false}, GemmShape{31, 17, 45, false, true},
        GemmShape{31, 17, 45, true, true}, GemmShape{64, 1, 200}, GemmShape{1, 1, 1}}) {
    const std::vector<float> a = random_vector(a_elements(shape), rng);
    const std::vector<float> b = random_vector(b_elements(shape), rng);
    const double error = relative_error(naive_gemm_f32(shape, a, b), reference_gemm(shape, a, b));
    EXPECT_LT(error, 1e-5) << shape.m << "x" << shape.n << "x" << shape.k;
    EXPECT_GE(error, 0.0);
  }
}

TEST(CudaReference, SmallIntegersAreExactInBoth) {
  // Products and sums of small integers are exact in fp32: the two agree bitwise.
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> value(-8, 8);
  const GemmShape shape{13, 11, 19, true, false};
  std::vector<float> a(static_cast<size_t>(a_elements(shape))), b(static_cast<size_t>(b_elements(shape)));
  for (float& x : a) x = static_cast<float>(value(rng) | 1);
  for (float& x : b) x = static_cast<float>(value(rng) | 1);
  const std::vector<double> ref = reference_gemm(shape, a, b);
  const std::vector<float> naive = naive_gemm_f32(shape, a, b);
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_EQ(static_cast<double>(naive[i]), ref[i]) << i;
}

// cublasGemmEx's semantics on the host (column-major, BLAS conventions):
// C(i, j) = sum_p op(X)(i, p) op(Y)(p, j), element (r, c) of X at X[r + c * ldx].
std::vector<double> column_major_gemm(const ColumnMajorCall& call, const std::vector<float>& x,
                                      const std::vector<float>& y) {
  auto at = [](const std::vector<float>& v, cublasOperation_t op, int ld, int r, int c) {
    return static_cast<double>(op == CUBLAS_OP_N ? v.at(static_cast<size_t>(r + c * ld))
                                                 : v.at(static_cast<size_t>(c + r * ld)));
  };
  std::vector<double> out(static_cast<size_t>(call.ld_out) * static_cast<size_t>(call.cols), 0.0);
  for (int i = 0; i < call.rows; ++i) {
    for (int j = 0; j < call.cols; ++j) {
      double sum = 0;
      for (int p = 0; p < call.inner; ++p) {
        sum += at(x, call.op_first, call.ld_first, i, p) * at(y, call.op_second, call.ld_second, p, j);
      }
      out[static_cast<size_t>(i + j * call.ld_out)] = sum;
    }
  }
  return out;
}

TEST(CudaReference, CublasArgumentsComputeTheRowMajorProduct) {
  // gemm.cpp's cublasGemmEx call (B first, then A), replayed on the host in
  // cuBLAS's column-major convention, gives the row-major product.
  std::mt19937_64 rng(11);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const GemmShape shape{7, 5, 3, ta, tb};
      const std::vector<float> a = random_vector(a_elements(shape), rng), b = random_vector(b_elements(shape), rng);
      const ColumnMajorCall call = column_major_call(shape);
      EXPECT_EQ(call.rows, 5);
      EXPECT_EQ(call.cols, 7);
      EXPECT_EQ(call.ld_out, 5);
      const std::vector<double> out = column_major_gemm(call, b, a);
      const std::vector<double> ref = reference_gemm(shape, a, b);
      ASSERT_EQ(out.size(), ref.size());
      for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(out[i], ref[i], 1e-12) << ta << tb << " at " << i;
    }
  }
  EXPECT_THROW(column_major_call(GemmShape{int64_t{1} << 31, 1, 1}), InputError);
}

TEST(CudaReference, RowStridesReadAndWriteViewsOfWiderMatrices) {
  // Each operand the first columns of a matrix 3 columns wider than it: the
  // row-major row stride becomes cuBLAS's leading dimension.
  std::mt19937_64 rng(12);
  constexpr int64_t kPad = 3;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      GemmShape packed{6, 4, 5, ta, tb};
      const std::vector<float> a = random_vector(a_elements(packed), rng), b = random_vector(b_elements(packed), rng);
      const int64_t a_cols = ta ? packed.m : packed.k, a_rows = a_elements(packed) / a_cols;
      const int64_t b_cols = tb ? packed.k : packed.n, b_rows = b_elements(packed) / b_cols;
      auto widen = [&](const std::vector<float>& x, int64_t rows, int64_t cols) {
        std::vector<float> wide(static_cast<size_t>(rows * (cols + kPad)), 0.0f);
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < cols; ++c) {
            wide[static_cast<size_t>(r * (cols + kPad) + c)] = x[static_cast<size_t>(r * cols + c)];
          }
        }
        return wide;
      };
      GemmShape strided = packed;
      strided.lda = a_cols + kPad;
      strided.ldb = b_cols + kPad;
      strided.ldc = packed.n + kPad;
      const ColumnMajorCall call = column_major_call(strided);
      EXPECT_EQ(call.ld_out, packed.n + kPad);
      const std::vector<double> out = column_major_gemm(call, widen(b, b_rows, b_cols), widen(a, a_rows, a_cols));
      const std::vector<double> ref = reference_gemm(packed, a, b);
      for (int64_t i = 0; i < packed.m; ++i) {
        for (int64_t j = 0; j < packed.n; ++j) {
          EXPECT_NEAR(out[static_cast<size_t>(i * (packed.n + kPad) + j)], ref[static_cast<size_t>(i * packed.n + j)],
                      1e-12);
        }
      }
    }
  }
  GemmShape narrow{6, 4, 5};
  narrow.ldc = 3;  // shorter than a row of C
  EXPECT_THROW(column_major_call(narrow), InputError);
}

TEST(CudaReference, RelativeErrorMeasures) {
  const std::vector<double> ref = {3, 4};
  EXPECT_EQ(relative_error(std::vector<float>{3, 4}, ref), 0.0);
  EXPECT_NEAR(relative_error(std::vector<float>{3, 4.5f}, ref), 0.1, 1e-12);
  EXPECT_TRUE(std::isinf(relative_error(std::vector<float>{3, NAN}, ref)));
  EXPECT_TRUE(std::isinf(relative_error(std::vector<float>{3}, ref)));
  EXPECT_EQ(count_nan(std::vector<float>{NAN, 1, NAN}), 2);
}

TEST(CudaReference, RandomInputsAreNeverZero) {
  std::mt19937_64 rng(1);
  const std::vector<float> values = random_vector(100000, rng, 1e-3f);
  for (float v : values) {
    ASSERT_NE(v, 0.0f);
    ASSERT_LE(std::fabs(v), 1e-3f);
  }
}

TEST(CudaReference, Bf16RoundsToNearestEven) {
  EXPECT_EQ(bf16_from_float(1.0f), 0x3F80);
  EXPECT_EQ(bf16_from_float(1.00390625f), 0x3F80);  // tie to even (down)
  EXPECT_EQ(bf16_from_float(1.01171875f), 0x3F82);  // tie to even (up)
  EXPECT_EQ(bf16_from_float(std::bit_cast<float>(0x3F808001u)), 0x3F81);
  EXPECT_EQ(bf16_from_float(-0.0f), 0x8000);
  EXPECT_EQ(bf16_from_float(INFINITY), 0x7F80);
  EXPECT_EQ(bf16_from_float(std::bit_cast<float>(0x7F7F8000u)), 0x7F80);  // overflows to infinity
  EXPECT_TRUE(std::isnan(float_from_bf16(bf16_from_float(NAN))));
  EXPECT_TRUE(std::isnan(float_from_bf16(kBf16QuietNan)));
  EXPECT_EQ(float_from_bf16(0x4040), 3.0f);
}

TEST(CudaReference, GpuValidateCpuSelfChecksPass) {
  const std::vector<CheckResult> checks = cpu_self_checks(42);
  ASSERT_GE(checks.size(), 8u);
  for (const CheckResult& check : checks) EXPECT_TRUE(check.passed) << check.name << ": " << check.error;
}

TEST(CudaReference, ChecksFailOnNanAndUnwritten) {
  EXPECT_TRUE(make_check("x", 1e-6, 1e-5).passed);
  EXPECT_FALSE(make_check("x", NAN, 1e-5).passed);
  EXPECT_FALSE(make_check("x", 0, 1e-5, 1).passed);
  EXPECT_FALSE(make_check("x", 2e-5, 1e-5).passed);
}

TEST(CudaArena, BumpAllocatorCarvesAlignedBlocks) {
  BumpAllocator arena(4096);
  EXPECT_EQ(arena.allocate(100), 0u);
  EXPECT_EQ(arena.allocate(10), 256u);  // aligned to 256
  EXPECT_EQ(arena.allocate(1, 16), 272u);
  EXPECT_EQ(arena.used(), 273u);
  EXPECT_EQ(arena.allocate(0), 512u);
  EXPECT_THROW(arena.allocate(4096), InputError);
  EXPECT_EQ(arena.used(), 512u);  // a failed request changes nothing
  arena.reset();
  EXPECT_EQ(arena.used(), 0u);
  EXPECT_EQ(arena.high_water_mark(), 512u);
  EXPECT_EQ(arena.allocate(4096), 0u);  // the whole arena after a reset
  EXPECT_EQ(arena.high_water_mark(), 4096u);
  EXPECT_THROW(arena.allocate(1), InputError);
  EXPECT_THROW(arena.allocate(1, 3), InternalError);  // not a power of two
}

TEST(CudaArena, ExhaustionSaysWhatWasAsked) {
  BumpAllocator arena(1024);
  try {
    arena.allocate(2048);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("device arena exhausted"), std::string::npos) << e.what();
  }
}

TEST(CudaProbe, DeviceAvailabilityNeverThrowsAndExplains) {
  std::string why = "unchanged";
  const bool available = cuda_device_available(&why);
  if (available) {
    EXPECT_TRUE(why.empty());
  } else {
    EXPECT_FALSE(why.empty());
    std::cout << "no GPU here: " << why << '\n';
  }
  EXPECT_EQ(cuda_device_available(nullptr), available);
}

TEST(CudaCalibration, DeviceNamesAndPeaks) {
  EXPECT_EQ(device_slug("NVIDIA H100 80GB HBM3"), "h100-80gb-hbm3");
  EXPECT_EQ(device_slug("NVIDIA H200"), "h200");
  EXPECT_EQ(device_slug("  "), "unknown-gpu");
  // The class is the scenario preset's (scenarios::gpu_preset_for_device, tested with the presets).
  EXPECT_EQ(device_class("NVIDIA A100-SXM4-40GB"), scenarios::gpu_preset_for_device("NVIDIA A100-SXM4-40GB"));
  EXPECT_EQ(device_class("NVIDIA L40S"), "");
  EXPECT_EQ(dense_bf16_peak_flops("NVIDIA H200"), 989.4e12);
  EXPECT_EQ(dense_bf16_peak_flops("NVIDIA A100-SXM4-80GB"), 312e12);
  EXPECT_EQ(dense_bf16_peak_flops("NVIDIA L40S"), 0.0);
}

Calibration sample_calibration() {
  Calibration c;
  c.device = "NVIDIA H100 80GB HBM3";
  c.peak_flops = 989.4e12;
  c.hbm_bytes_per_s = 3.35e12;
  // Out of FLOP order on purpose: the file lists them sorted.
  c.gemm = {{8192, 8192, 8192, 1.4e-3}, {4096, 4096, 4096, 1.75e-4}, {16384, 14336, 4096, 2.6e-3}};
  c.attention_forward_efficiency = 0.34;
  c.attention_backward_efficiency = 0.29;
  c.memory_efficiency = 0.8;
  c.launch_seconds = 4e-6;
  c.source = "test";
  return c;
}

TEST(CudaCalibration, TheSimulatorReadsWhatGpuValidateWrites) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("ragged-cuda-calibration-" + std::to_string(::getpid()) + ".json");
  write_file_atomically(path, calibration_json(sample_calibration()));
  const sim::ComputeModel model = sim::ComputeModel::from_calibration(path);
  std::filesystem::remove(path);
  const sim::GpuComputeSpec& spec = model.spec();
  EXPECT_EQ(spec.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(spec.peak_flops, 989.4e12);
  ASSERT_EQ(spec.gemm.size(), 3u);
  EXPECT_EQ(spec.gemm[0].m, 4096);  // sorted by FLOPs
  EXPECT_EQ(spec.gemm[1].m, 8192);
  EXPECT_EQ(spec.gemm[2].m, 16384);
  EXPECT_DOUBLE_EQ(spec.gemm[0].flops_per_s, 2.0 * 4096.0 * 4096 * 4096 / 1.75e-4);
  EXPECT_EQ(spec.memory_efficiency, 0.8);
  EXPECT_EQ(spec.launch_seconds, 4e-6);
  EXPECT_EQ(spec.attention_backward_efficiency, 0.29);
  EXPECT_EQ(spec.sustained_clock, 1.0);  // not measured: the points are taken as sustained
}

// Section (b2)'s share reaches the simulator, which then runs the GEMMs that
// much slower than the file's points; a share above 1 is refused.
TEST(CudaCalibration, AMeasuredSustainedClockReachesTheSimulator) {
  Calibration c = sample_calibration();
  c.sustained_clock = 0.9;
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("ragged-cuda-calibration-s-" + std::to_string(::getpid()) + ".json");
  write_file_atomically(path, calibration_json(c));
  const sim::ComputeModel sustained = sim::ComputeModel::from_calibration(path);
  write_file_atomically(path, calibration_json(sample_calibration()));
  const sim::ComputeModel burst = sim::ComputeModel::from_calibration(path);
  std::filesystem::remove(path);
  EXPECT_EQ(sustained.spec().sustained_clock, 0.9);
  const planner::Gemm gemm{8192, 8192, 8192, 1};
  const double launch = sample_calibration().launch_seconds;
  EXPECT_NEAR((sustained.gemm_seconds(gemm) - launch) / (burst.gemm_seconds(gemm) - launch), 1 / 0.9, 1e-9);
  c.sustained_clock = 1.1;
  EXPECT_THROW(calibration_json(c), InternalError);
}

// The burst is the first calls after the rest, the sustained figure the
// median of the last third; a run too short to tell them apart is an error.
TEST(CudaCalibration, ASustainedRunSplitsIntoItsBurstAndItsLastThird) {
  std::vector<double> seconds(30, 1.1e-3);
  for (int i = 0; i < 5; ++i) seconds[static_cast<size_t>(i)] = 1.0e-3;
  for (size_t i = 20; i < 30; ++i) seconds[i] = 1.25e-3;
  const SustainedGemm s = sustained_of({8192, 8192, 8192}, seconds);
  EXPECT_EQ(s.calls, 30);
  EXPECT_DOUBLE_EQ(s.burst_seconds, 1.0e-3);
  EXPECT_DOUBLE_EQ(s.sustained_seconds, 1.25e-3);
  EXPECT_NEAR(s.run_seconds, 5 * 1.0e-3 + 15 * 1.1e-3 + 10 * 1.25e-3, 1e-15);
  EXPECT_THROW(sustained_of({8192, 8192, 8192}, std::vector<double>(14, 1e-3)), InternalError);
}

TEST(CudaCalibration, RefusesWhatTheSimulatorWouldReject) {
  Calibration c = sample_calibration();
  c.memory_efficiency = 1.2;
  EXPECT_THROW(calibration_json(c), InternalError);
  c = sample_calibration();
  c.gemm.clear();
  EXPECT_THROW(calibration_json(c), InternalError);
  c = sample_calibration();
  c.gemm[1].seconds = 0;
  EXPECT_THROW(calibration_json(c), InternalError);
  c = sample_calibration();
  c.launch_seconds = NAN;
  EXPECT_THROW(calibration_json(c), InternalError);
}

TEST(CudaCalibration, UnmeasuredAttentionIsLeftOutAndTheSimulatorUsesItsDefaults) {
  // gpu-validate does not measure attention: the file leaves it out, and the
  // simulator takes the attention efficiencies of the scenario GPU's table.
  Calibration c = sample_calibration();
  c.attention_forward_efficiency = 0;
  c.attention_backward_efficiency = 0;
  const std::string json = calibration_json(c);
  EXPECT_EQ(json.find("attention"), std::string::npos);
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("ragged-cuda-calibration-a-" + std::to_string(::getpid()) + ".json");
  write_file_atomically(path, json);
  for (const char* preset : {"h100", "a100-80g"}) {
    const sim::ComputeModel model = sim::ComputeModel::from_calibration(path, preset);
    const sim::GpuComputeSpec* table = sim::find_gpu_table(preset);
    ASSERT_NE(table, nullptr) << preset;
    EXPECT_EQ(model.spec().attention_forward_efficiency, table->attention_forward_efficiency) << preset;
    EXPECT_EQ(model.spec().attention_backward_efficiency, table->attention_backward_efficiency) << preset;
    EXPECT_NE(model.spec().source.find("attention not in the file"), std::string::npos);
  }
  std::filesystem::remove(path);
  // Half a measurement is refused.
  c.attention_forward_efficiency = 0.3;
  EXPECT_THROW(calibration_json(c), InternalError);
}

}  // namespace
}  // namespace ragged::backend::gpu
