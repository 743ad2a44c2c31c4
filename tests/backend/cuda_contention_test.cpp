// gpu-validate's contention measurements (backend/cuda/contention_bench.hpp):
// the simulator's rules they are set against and the calibration file on
// every machine; on a GPU, that the occupant holds its SMs through the GEMMs and
// that the driver calls are timed.

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/cuda/calibration.hpp"
#include "backend/cuda/contention_bench.hpp"
#include "backend/cuda/cuda_device.hpp"
#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "cuda_test_device.hpp"
#include "sim/compute_model.hpp"

namespace ragged::backend::gpu {
namespace {

TEST(ContentionRules, PersistentKernelRunsItsCtasInWavesOfTheFreeSms) {
  // H100: 132 SMs. NCCL's 24 CTAs leave 108, so 132 CTAs take two waves.
  EXPECT_EQ(persistent_kernel_slowdown(132, 24), 2.0);
  EXPECT_EQ(persistent_kernel_slowdown(132, 0), 1.0);
  // Holding more than half the SMs makes a third wave.
  EXPECT_EQ(persistent_kernel_slowdown(132, 67), 3.0);
  EXPECT_EQ(persistent_kernel_slowdown(132, 66), 2.0);
}

TEST(ContentionRules, WaveKernelRunsAtTheShareOfFreeSms) {
  EXPECT_DOUBLE_EQ(wave_kernel_slowdown(108, 24), 108.0 / 84.0);  // A100
  EXPECT_DOUBLE_EQ(wave_kernel_slowdown(132, 16), 132.0 / 116.0);
  EXPECT_EQ(wave_kernel_slowdown(132, 0), 1.0);
}

TEST(ContentionRules, AMeasuredSlowdownPicksTheNearerRule) {
  // H100, 24 SMs held: persistent 2.00x, waves 1.22x; the geometric middle is 1.56x.
  EXPECT_TRUE(nearer_persistent_rule(1.95, 132, 24));
  EXPECT_TRUE(nearer_persistent_rule(1.60, 132, 24));
  EXPECT_FALSE(nearer_persistent_rule(1.50, 132, 24));
  EXPECT_FALSE(nearer_persistent_rule(1.19, 132, 24));  // Lee et al.'s mean slowdown beside collectives
}

sim::GpuComputeSpec read_back(const backend::gpu::Calibration& c, const std::string& preset) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("ragged-contention-" + std::to_string(::getpid()) + ".json");
  write_file_atomically(path, calibration_json(c));
  const sim::ComputeModel model = sim::ComputeModel::from_calibration(path, preset);
  std::filesystem::remove(path);
  return model.spec();
}

// The fields every calibration file has; the tests add what (e) and (f) measure.
Calibration h100_calibration() {
  Calibration c;
  c.device = "NVIDIA H100 80GB HBM3";
  c.peak_flops = 989.4e12;
  c.hbm_bytes_per_s = 3.35e12;
  c.gemm = {{4096, 4096, 4096, 1.75e-4}};
  c.memory_efficiency = 0.8;
  c.launch_seconds = 4e-6;
  c.source = "test";
  return c;
}

TEST(ContentionRules, TheMeasuredKernelKindAndSmsReachTheSimulator) {
  Calibration c = h100_calibration();
  // Not measured: the preset's class decides (Hopper persistent, A100 not).
  EXPECT_TRUE(read_back(c, "h100").persistent_gemms);
  EXPECT_FALSE(read_back(c, "a100-80g").persistent_gemms);
  EXPECT_EQ(read_back(c, "h100").sms, 0);
  // Measured: the file says, whatever the preset.
  c.sms = 132;
  c.persistent_gemms = 0;
  EXPECT_FALSE(read_back(c, "h100").persistent_gemms);
  EXPECT_EQ(read_back(c, "h100").sms, 132);
  c.persistent_gemms = 1;
  EXPECT_TRUE(read_back(c, "a100-80g").persistent_gemms);
  c.sms = -1;
  EXPECT_THROW(calibration_json(c), InternalError);
}

// Section (f)'s timings as the calibration takes them: a line in GiB per
// call, as fitted, and with a negative term (noise) taken as 0.
TEST(ContentionRules, AllocatorCallsFitALineInGibAndNeverCostLessThanNothing) {
  constexpr std::size_t kGiB = std::size_t{1} << 30;
  const std::vector<AllocatorCallTiming> calls = {
      {kGiB, 60e-6 + 1 * 300e-6, 90e-6 - 1 * 10e-6},
      {4 * kGiB, 60e-6 + 4 * 300e-6, 90e-6 - 4 * 10e-6},
      {16 * kGiB, 60e-6 + 16 * 300e-6, 90e-6 - 16 * 10e-6},
  };
  const AllocatorCallLines lines = fit_allocator_calls(calls);
  EXPECT_NEAR(lines.malloc_fitted.intercept, 60e-6, 1e-12);
  EXPECT_NEAR(lines.malloc_fitted.slope, 300e-6, 1e-12);
  EXPECT_NEAR(lines.free_fitted.slope, -10e-6, 1e-12);
  EXPECT_NEAR(lines.malloc_costs.slope, 300e-6, 1e-12);
  EXPECT_NEAR(lines.free_costs.intercept, 90e-6, 1e-12);
  EXPECT_EQ(lines.free_costs.slope, 0.0);
  EXPECT_THROW(fit_allocator_calls({calls[0]}), InternalError);  // one size makes no line
}

TEST(ContentionRules, TheMeasuredAllocatorCallsReachTheSimulator) {
  Calibration c = h100_calibration();
  EXPECT_FALSE(read_back(c, "h100").driver_calls.has_value());  // not measured: left out
  c.malloc_calls = {60e-6, 300e-6};
  c.free_calls = {90e-6, 0};
  const sim::GpuComputeSpec spec = read_back(c, "h100");
  ASSERT_TRUE(spec.driver_calls.has_value());
  EXPECT_EQ(std::vector<double>({spec.driver_calls->malloc_seconds, spec.driver_calls->malloc_seconds_per_gib,
                                 spec.driver_calls->free_seconds, spec.driver_calls->free_seconds_per_gib}),
            std::vector<double>({60e-6, 300e-6, 90e-6, 0}));
  c.free_calls.slope = -1e-6;
  EXPECT_THROW(calibration_json(c), InternalError);
  c.free_calls.slope = std::nan("");
  EXPECT_THROW(calibration_json(c), InternalError);
}

using ContentionGpuTest = test::CudaDeviceTest;

TEST_F(ContentionGpuTest, HeldSmsSlowAGemmAndAreCheckedResident) {
  BenchOptions options;
  options.min_repetitions = 3;
  options.max_repetitions = 5;
  options.target_seconds = 0.01;
  const int sms = device_->info().multiprocessors;
  // Half the SMs held beside a GEMM of many more tiles than SMs: every rule says it takes longer.
  const HeldSmsTiming t = time_gemm_beside_held_sms(*device_, {4096, 4096, 4096}, sms / 2, 42, options);
  EXPECT_EQ(t.sms, sms);
  EXPECT_EQ(t.held_sms, sms / 2);
  EXPECT_TRUE(t.occupant_outlasted);
  EXPECT_GT(t.alone_seconds, 0);
  EXPECT_GT(t.slowdown(), 1.2) << "alone " << t.alone_seconds << " s, beside " << t.beside_seconds << " s";
  EXPECT_THROW(time_gemm_beside_held_sms(*device_, {256, 256, 256}, sms, 1, options), InputError);
}

TEST_F(ContentionGpuTest, DriverCallsAreTimedForSizesThatFit) {
  const std::vector<AllocatorCallTiming> calls = time_allocator_calls({std::size_t{2} << 20, std::size_t{1} << 62}, 2);
  ASSERT_EQ(calls.size(), 1u);  // 4 EiB does not fit
  EXPECT_EQ(calls[0].bytes, std::size_t{2} << 20);
  EXPECT_GT(calls[0].malloc_seconds, 0);
  EXPECT_GT(calls[0].free_seconds, 0);
}

}  // namespace
}  // namespace ragged::backend::gpu
