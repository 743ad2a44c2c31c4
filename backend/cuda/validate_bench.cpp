// gpu-validate's measurements (validate_bench.hpp).

#include "backend/cuda/validate_bench.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <thread>

#include "backend/cuda/bench_timing.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/kernels.hpp"
#include "common/errors.hpp"
#include "common/units.hpp"

namespace ragged::backend::gpu {
double median(std::vector<double> values) {
  RAGGED_ASSERT(!values.empty(), "the median of nothing");
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

std::size_t gemm_set_bytes(const GemmShape& shape) {
  return static_cast<std::size_t>(a_elements(shape) + b_elements(shape) + c_elements(shape)) * sizeof(uint16_t) +
         3 * BumpAllocator::kDefaultAlignment;
}

void require_arena_room(CudaDevice& device, const GemmShape& shape, std::size_t bytes) {
  const std::size_t capacity = device.arena().capacity();
  if (bytes > capacity) {
    throw InputError(fmt::format("GEMM {}x{}x{} needs {} of device memory; the arena has {}", shape.m, shape.n, shape.k,
                                 format_bytes(static_cast<double>(bytes)),
                                 format_bytes(static_cast<double>(capacity))));
  }
}

namespace {

// Every timed call's seconds of bf16 GEMMs over rotating input sets (and the
// interleaved copy when the options ask for one); the arena is reset before
// and after.
std::vector<double> gemm_call_seconds(CudaDevice& device, const GemmShape& shape, uint64_t seed,
                                      const BenchOptions& options, int* input_sets) {
  DeviceArena& arena = device.arena();
  arena.reset();
  const cudaStream_t stream = device.stream(StreamKind::compute);
  const int64_t elements_a = a_elements(shape), elements_b = b_elements(shape), elements_c = c_elements(shape);
  const std::size_t set_bytes = gemm_set_bytes(shape);
  // The interleaved copy's source and destination (half the bytes each) come first.
  const auto copy_n = static_cast<int64_t>(options.interleave_copy_bytes / 2 / sizeof(float));
  const std::size_t copy_bytes = 2 * static_cast<std::size_t>(copy_n) * sizeof(float);
  require_arena_room(device, shape, set_bytes + copy_bytes + 2 * BumpAllocator::kDefaultAlignment);
  float* copy_src = copy_n > 0 ? arena.allocate_array<float>(copy_n) : nullptr;
  float* copy_dst = copy_n > 0 ? arena.allocate_array<float>(copy_n) : nullptr;
  if (copy_n > 0) fill_random(copy_src, copy_n, seed ^ 0xC0B1ULL, 1.0f, stream);
  // Enough sets (4x L2 in all) that a call does not find its inputs in L2,
  // as many as the arena holds, at most 256 (small shapes).
  const double l2 = static_cast<double>(device.info().l2_bytes);
  const auto wanted = static_cast<int>(std::ceil(4.0 * l2 / static_cast<double>(set_bytes)));
  const std::size_t room = arena.capacity() - arena.used();
  const auto fit = static_cast<int>(std::min<std::size_t>(256, room / set_bytes));
  const int sets = std::clamp(wanted, 1, std::max(1, fit));

  struct Set {
    uint16_t *a, *b, *c;
  };
  std::vector<Set> inputs;
  for (int s = 0; s < sets; ++s) {
    Set set{arena.allocate_array<uint16_t>(elements_a), arena.allocate_array<uint16_t>(elements_b),
            arena.allocate_array<uint16_t>(elements_c)};
    fill_random_bf16(set.a, elements_a, seed + 3 * static_cast<uint64_t>(s), 1.0f, stream);
    fill_random_bf16(set.b, elements_b, seed + 3 * static_cast<uint64_t>(s) + 1, 1.0f, stream);
    fill_bf16(set.c, elements_c, 0x7FC1, stream);
    inputs.push_back(set);
  }
  const auto gemm = [&](int i) {
    const Set& set = inputs[static_cast<size_t>(i % sets)];
    gemm_bf16(device.cublas(), stream, shape, set.a, set.b, set.c);
  };
  std::vector<double> seconds =
      copy_n > 0 ? time_calls_between(stream, options, gemm, [&](int) { copy(copy_dst, copy_src, copy_n, stream); })
                 : time_calls(stream, options, gemm);
  arena.reset();
  if (input_sets != nullptr) *input_sets = sets;
  return seconds;
}

}  // namespace

GemmTiming time_gemm_bf16(CudaDevice& device, const GemmShape& shape, uint64_t seed, const BenchOptions& options) {
  GemmTiming timing;
  const std::vector<double> seconds = gemm_call_seconds(device, shape, seed, options, &timing.input_sets);
  timing.shape = shape;
  timing.repetitions = static_cast<int>(seconds.size());
  timing.median_seconds = median(seconds);
  timing.min_seconds = *std::min_element(seconds.begin(), seconds.end());
  return timing;
}

SustainedGemm sustained_of(const GemmShape& shape, const std::vector<double>& seconds) {
  RAGGED_ASSERT(static_cast<int>(seconds.size()) >= 3 * SustainedGemm::kBurstCalls,
                "a sustained run needs enough calls for a burst and a last third apart");
  SustainedGemm result;
  result.shape = shape;
  result.calls = static_cast<int>(seconds.size());
  for (double s : seconds) result.run_seconds += s;
  result.burst_seconds = median(std::vector<double>(seconds.begin(), seconds.begin() + SustainedGemm::kBurstCalls));
  result.sustained_seconds =
      median(std::vector<double>(seconds.end() - static_cast<std::ptrdiff_t>(seconds.size() / 3), seconds.end()));
  return result;
}

SustainedGemm measure_sustained_gemm(CudaDevice& device, const GemmShape& shape, uint64_t seed, double rest_seconds,
                                     double run_seconds) {
  CUDA_CHECK(cudaDeviceSynchronize());
  std::this_thread::sleep_for(std::chrono::duration<double>(rest_seconds));
  BenchOptions options;
  options.warmup = 1;  // the clocks are to be caught at their height: time from the second call
  options.min_repetitions = 3 * SustainedGemm::kBurstCalls;
  options.max_repetitions = 1 << 20;
  options.target_seconds = run_seconds;
  return sustained_of(shape, gemm_call_seconds(device, shape, seed, options, nullptr));
}

CopyBandwidth measure_copy_bandwidth(CudaDevice& device, std::size_t bytes, const BenchOptions& options) {
  DeviceArena& arena = device.arena();
  arena.reset();
  const cudaStream_t stream = device.stream(StreamKind::compute);
  const auto n = static_cast<int64_t>(bytes / sizeof(float));
  float* src = arena.allocate_array<float>(n);
  float* dst = arena.allocate_array<float>(n);
  fill_random(src, n, 12345, 1.0f, stream);
  fill(dst, n, NAN, stream);
  CopyBandwidth result;
  result.bytes = static_cast<std::size_t>(n) * sizeof(float);
  const double moved = 2.0 * static_cast<double>(result.bytes);  // read + write
  result.kernel_bytes_per_s = moved / median(time_calls(stream, options, [&](int) { copy(dst, src, n, stream); }));
  result.memcpy_bytes_per_s = moved / median(time_calls(stream, options, [&](int) {
                                CUDA_CHECK(cudaMemcpyAsync(dst, src, result.bytes, cudaMemcpyDeviceToDevice, stream));
                              }));
  arena.reset();
  return result;
}

LaunchOverhead measure_launch_overhead(CudaDevice& device, int chain_length, int chains) {
  RAGGED_ASSERT(chain_length > 0 && chains > 0, "launch measurement needs kernels");
  const cudaStream_t stream = device.stream(StreamKind::compute);
  BenchOptions options;
  options.warmup = 1;
  options.min_repetitions = chains;
  options.max_repetitions = chains;
  LaunchOverhead result;
  result.stream_seconds = median(time_calls(stream, options,
                                            [&](int) {
                                              for (int i = 0; i < chain_length; ++i) launch_empty_kernel(stream);
                                            })) /
                          chain_length;

  // The same chain captured once as a graph and replayed.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    for (int i = 0; i < chain_length; ++i) launch_empty_kernel(stream);
  } catch (...) {
    cudaStreamEndCapture(stream, &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    throw;
  }
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  try {
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    result.graph_seconds =
        median(time_calls(stream, options, [&](int) { CUDA_CHECK(cudaGraphLaunch(exec, stream)); })) / chain_length;
  } catch (...) {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    throw;
  }
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
  return result;
}

}  // namespace ragged::backend::gpu
