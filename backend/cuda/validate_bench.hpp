#pragma once
// gpu-validate's measurements: GEMM throughput, HBM copy bandwidth and the
// launch overhead of a dependent kernel, each timed with CUDA events after a
// warm-up and reported as the median of many repetitions.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/cuda/gemm.hpp"

namespace ragged::backend::gpu {

class CudaDevice;

struct BenchOptions {
  int warmup = 5;  // untimed calls before timing
  int min_repetitions = 10;
  int max_repetitions = 200;
  double target_seconds = 0.5;  // timed work per measurement, within the repetition bounds
  // GEMMs only: an untimed device-to-device copy of this many bytes between
  // calls, as a training step alternates GEMMs with memory-bound kernels
  // (0: calls back to back, the card at full power throughout).
  std::size_t interleave_copy_bytes = 0;
};

struct GemmTiming {
  GemmShape shape;
  int repetitions = 0;
  int input_sets = 0;         // inputs rotated so that they do not sit in L2
  double median_seconds = 0;  // one call, kernel time
  double min_seconds = 0;
  double flops_per_s() const { return median_seconds > 0 ? gemm_flops(shape) / median_seconds : 0; }
};

// The arena bytes of one GEMM's A, B and C in bf16 with their alignment padding.
std::size_t gemm_set_bytes(const GemmShape& shape);
// InputError naming the GEMM when `bytes` for it do not fit the device's arena.
void require_arena_room(CudaDevice& device, const GemmShape& shape, std::size_t bytes);

// bf16 x bf16 -> bf16 GEMMs (fp32 accumulation) on random inputs. Uses the
// arena (reset first); throws InputError when one input set does not fit.
GemmTiming time_gemm_bf16(CudaDevice& device, const GemmShape& shape, uint64_t seed, const BenchOptions& options);

// A GEMM run back to back for seconds after the device has rested: the rate
// of its first calls (a burst, the clocks at their height) and of the calls
// in the run's last third (the clock the power limit holds).
struct SustainedGemm {
  GemmShape shape;
  int calls = 0;
  double run_seconds = 0;        // the timed calls' kernel time, summed
  double burst_seconds = 0;      // one call: the median of the first kBurstCalls
  double sustained_seconds = 0;  // one call: the median of the last third
  static constexpr int kBurstCalls = 5;
};

// The burst and sustained figures of one run's per-call seconds, in call order.
SustainedGemm sustained_of(const GemmShape& shape, const std::vector<double>& seconds);

// Rests `rest_seconds` (host sleep, the device idle), then times calls back to
// back for about `run_seconds`; the arena is used as by time_gemm_bf16.
SustainedGemm measure_sustained_gemm(CudaDevice& device, const GemmShape& shape, uint64_t seed, double rest_seconds,
                                     double run_seconds);

struct CopyBandwidth {
  std::size_t bytes = 0;          // copied per call
  double kernel_bytes_per_s = 0;  // the copy kernel (kernels.hpp), bytes read + written per second
  double memcpy_bytes_per_s = 0;  // cudaMemcpyAsync device to device, likewise
};

// Copies of `bytes` (median of repetitions); bytes read plus bytes written.
CopyBandwidth measure_copy_bandwidth(CudaDevice& device, std::size_t bytes, const BenchOptions& options);

// Seconds per kernel of a chain of `chain_length` empty kernels on one
// stream (each waits for the previous), the median over `chains` chains:
// launched one by one from the host (what an eager framework pays), and
// replayed from a captured CUDA graph (the device's own gap between kernels).
struct LaunchOverhead {
  double stream_seconds = 0;
  double graph_seconds = 0;
};
LaunchOverhead measure_launch_overhead(CudaDevice& device, int chain_length, int chains);

// The median of a non-empty list (the mean of the middle two for even sizes).
double median(std::vector<double> values);

}  // namespace ragged::backend::gpu
