// gpu-validate's measurements (validate_bench.hpp).

#include "backend/cuda/validate_bench.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

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

GemmTiming time_gemm_bf16(CudaDevice& device, const GemmShape& shape, uint64_t seed, const BenchOptions& options) {
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
  const std::vector<double> seconds =
      copy_n > 0 ? time_calls_between(stream, options, gemm, [&](int) { copy(copy_dst, copy_src, copy_n, stream); })
                 : time_calls(stream, options, gemm);
  GemmTiming timing;
  timing.shape = shape;
  timing.repetitions = static_cast<int>(seconds.size());
  timing.input_sets = sets;
  timing.median_seconds = median(seconds);
  timing.min_seconds = *std::min_element(seconds.begin(), seconds.end());
  arena.reset();
  return timing;
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
