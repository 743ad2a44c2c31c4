// gpu-validate's contention measurements (contention_bench.hpp).

#include "backend/cuda/contention_bench.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "backend/cuda/bench_timing.hpp"
#include "backend/cuda/contention_kernels.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/kernels.hpp"
#include "common/errors.hpp"
#include "common/units.hpp"

namespace ragged::backend::gpu {
namespace {

// GEMMs per timed batch beside the occupant: about 20 ms of them.
constexpr double kBatchSeconds = 0.02;
// The occupant holds its SMs this many times the batch's time alone (the
// rule's worst case is 2x), plus a margin for the launches.
constexpr double kOccupantSpan = 4.0;
constexpr double kOccupantMarginSeconds = 0.005;
// A wait for the occupant's CTAs that takes this long means they could not
// all be resident at once.
constexpr uint64_t kResidencyTimeoutNs = 2'000'000'000;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

double persistent_kernel_slowdown(int sms, int held) {
  RAGGED_ASSERT(sms > 0 && held >= 0 && held < sms, "held SMs must leave one free");
  return std::ceil(static_cast<double>(sms) / static_cast<double>(sms - held));
}

double wave_kernel_slowdown(int sms, int held) {
  RAGGED_ASSERT(sms > 0 && held >= 0 && held < sms, "held SMs must leave one free");
  return static_cast<double>(sms) / static_cast<double>(sms - held);
}

bool nearer_persistent_rule(double slowdown, int sms, int held) {
  RAGGED_ASSERT(slowdown > 0, "a slowdown is positive");
  const double persistent = std::abs(std::log(slowdown / persistent_kernel_slowdown(sms, held)));
  const double wave = std::abs(std::log(slowdown / wave_kernel_slowdown(sms, held)));
  return persistent < wave;
}

HeldSmsTiming time_gemm_beside_held_sms(CudaDevice& device, const GemmShape& shape, int held_sms, uint64_t seed,
                                        const BenchOptions& options) {
  const DeviceInfo& info = device.info();
  if (held_sms <= 0 || held_sms >= info.multiprocessors) {
    throw InputError(fmt::format("--held-sms {}: must be between 1 and {} (the device has {} SMs)", held_sms,
                                 info.multiprocessors - 1, info.multiprocessors));
  }
  DeviceArena& arena = device.arena();
  arena.reset();
  // A, B and C, then the occupant's two flags.
  require_arena_room(device, shape, gemm_set_bytes(shape) + BumpAllocator::kDefaultAlignment + 2 * sizeof(int));
  const cudaStream_t compute = device.stream(StreamKind::compute);
  const cudaStream_t side = device.stream(StreamKind::all_gather);  // where a run's collectives go
  uint16_t* a = arena.allocate_array<uint16_t>(a_elements(shape));
  uint16_t* b = arena.allocate_array<uint16_t>(b_elements(shape));
  uint16_t* c = arena.allocate_array<uint16_t>(c_elements(shape));
  int* flags = arena.allocate_array<int>(2);  // [0]: occupant CTAs started, [1]: the wait timed out
  fill_random_bf16(a, a_elements(shape), seed, 1.0f, compute);
  fill_random_bf16(b, b_elements(shape), seed + 1, 1.0f, compute);
  CUDA_CHECK(cudaMemsetAsync(flags, 0, 2 * sizeof(int), compute));
  auto gemm = [&] { gemm_bf16(device.cublas(), compute, shape, a, b, c); };

  HeldSmsTiming timing;
  timing.shape = shape;
  timing.sms = info.multiprocessors;
  timing.held_sms = held_sms;
  timing.alone_seconds = median(time_calls(compute, options, [&](int) { gemm(); }));

  const std::size_t shared_bytes = prepare_sm_occupant(info.ordinal);
  timing.gemms_per_batch = std::clamp(static_cast<int>(std::ceil(kBatchSeconds / timing.alone_seconds)), 3, 200);
  const double span = kOccupantSpan * timing.gemms_per_batch * timing.alone_seconds + kOccupantMarginSeconds;
  const auto occupant_ns = static_cast<uint64_t>(span * 1e9);
  timing.batches = std::max(3, std::min(options.min_repetitions, 9));
  CudaEvent cleared(false), start, end;
  std::vector<double> per_gemm;
  for (int batch = 0; batch < timing.batches; ++batch) {
    // The counter is cleared before the occupant starts and before the wait reads it.
    CUDA_CHECK(cudaMemsetAsync(flags, 0, sizeof(int), side));
    cleared.record(side);
    launch_sm_occupant(held_sms, shared_bytes, occupant_ns, flags, side);
    cleared.wait_on(compute);
    launch_wait_for_count(flags, held_sms, kResidencyTimeoutNs, flags + 1, compute);
    start.record(compute);
    for (int i = 0; i < timing.gemms_per_batch; ++i) gemm();
    end.record(compute);
    end.synchronize();
    const double batch_seconds = elapsed_seconds(start, end);
    if (batch_seconds > 0.9 * span) timing.occupant_outlasted = false;
    per_gemm.push_back(batch_seconds / timing.gemms_per_batch);
    CUDA_CHECK(cudaStreamSynchronize(side));
  }
  int timed_out = 0;
  CUDA_CHECK(cudaMemcpy(&timed_out, flags + 1, sizeof(int), cudaMemcpyDeviceToHost));
  if (timed_out != 0) {
    throw InternalError(fmt::format("the occupant's {} CTAs were not all resident within {} s", held_sms,
                                    static_cast<double>(kResidencyTimeoutNs) * 1e-9));
  }
  timing.beside_seconds = median(per_gemm);
  arena.reset();
  return timing;
}

std::vector<AllocatorCallTiming> time_allocator_calls(const std::vector<std::size_t>& sizes, int repetitions) {
  RAGGED_ASSERT(repetitions > 0, "allocator timing needs repetitions");
  std::vector<AllocatorCallTiming> timings;
  for (std::size_t bytes : sizes) {
    std::size_t free_bytes = 0, total_bytes = 0;
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (static_cast<double>(bytes) > 0.8 * static_cast<double>(free_bytes)) continue;
    std::vector<double> mallocs, frees;
    for (int r = 0; r < repetitions; ++r) {
      void* pointer = nullptr;
      auto begin = std::chrono::steady_clock::now();
      CUDA_CHECK(cudaMalloc(&pointer, bytes));
      mallocs.push_back(seconds_since(begin));
      begin = std::chrono::steady_clock::now();
      CUDA_CHECK(cudaFree(pointer));
      frees.push_back(seconds_since(begin));
    }
    timings.push_back({bytes, median(mallocs), median(frees)});
  }
  return timings;
}

AllocatorCallLines fit_allocator_calls(const std::vector<AllocatorCallTiming>& calls) {
  std::vector<double> gib, mallocs, frees;
  for (const AllocatorCallTiming& call : calls) {
    gib.push_back(static_cast<double>(call.bytes) / kGiB);
    mallocs.push_back(call.malloc_seconds);
    frees.push_back(call.free_seconds);
  }
  AllocatorCallLines lines;
  lines.malloc_fitted = fit_line(gib, mallocs);
  lines.free_fitted = fit_line(gib, frees);
  auto at_least_zero = [](LineFit line) {
    return LineFit{std::max(0.0, line.intercept), std::max(0.0, line.slope)};
  };
  lines.malloc_costs = at_least_zero(lines.malloc_fitted);
  lines.free_costs = at_least_zero(lines.free_fitted);
  return lines;
}

}  // namespace ragged::backend::gpu
