#pragma once
// Timing kernels with CUDA events for gpu-validate's measurements
// (validate_bench.hpp, contention_bench.hpp).

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/validate_bench.hpp"

namespace ragged::backend::gpu {

// Times `call(i)` for repetitions i = 0, 1, ...: one event pair around each
// call, back to back on `stream`; returns the seconds of each call.
// The warm-up calls (0 .. warmup - 1), timed as a whole to choose how many
// calls to time: enough for options.target_seconds, within the bounds.
template <typename Call>
int warm_up(cudaStream_t stream, const BenchOptions& options, int warmup, Call& call) {
  CudaEvent start, end;
  start.record(stream);
  for (int i = 0; i < warmup; ++i) call(i);
  end.record(stream);
  end.synchronize();
  const double per_call = elapsed_seconds(start, end) / warmup;
  const double low = options.min_repetitions, high = std::max(options.min_repetitions, options.max_repetitions);
  const double wanted = per_call > 0 ? std::ceil(options.target_seconds / per_call) : high;
  return static_cast<int>(std::clamp(wanted, low, high));
}

template <typename Call>
std::vector<double> time_calls(cudaStream_t stream, const BenchOptions& options, Call&& call) {
  const int warmup = std::max(1, options.warmup);
  const int repetitions = warm_up(stream, options, warmup, call);

  std::vector<std::unique_ptr<CudaEvent>> marks;
  marks.reserve(static_cast<size_t>(repetitions) + 1);
  for (int i = 0; i <= repetitions; ++i) marks.push_back(std::make_unique<CudaEvent>());
  marks[0]->record(stream);
  for (int i = 0; i < repetitions; ++i) {
    call(warmup + i);
    marks[static_cast<size_t>(i) + 1]->record(stream);
  }
  marks.back()->synchronize();
  std::vector<double> seconds;
  for (size_t i = 0; i + 1 < marks.size(); ++i) seconds.push_back(elapsed_seconds(*marks[i], *marks[i + 1]));
  return seconds;
}

// The same with `between(i)` run untimed after each call: an event pair of
// its own around every call.
template <typename Call, typename Between>
std::vector<double> time_calls_between(cudaStream_t stream, const BenchOptions& options, Call&& call,
                                       Between&& between) {
  const int warmup = std::max(1, options.warmup);
  const int repetitions = warm_up(stream, options, warmup, call);
  std::vector<std::unique_ptr<CudaEvent>> starts, ends;
  for (int i = 0; i < repetitions; ++i) {
    starts.push_back(std::make_unique<CudaEvent>());
    ends.push_back(std::make_unique<CudaEvent>());
    between(warmup + i);
    starts.back()->record(stream);
    call(warmup + i);
    ends.back()->record(stream);
  }
  ends.back()->synchronize();
  std::vector<double> seconds;
  for (int i = 0; i < repetitions; ++i) {
    seconds.push_back(elapsed_seconds(*starts[static_cast<size_t>(i)], *ends[static_cast<size_t>(i)]));
  }
  return seconds;
}

}  // namespace ragged::backend::gpu
