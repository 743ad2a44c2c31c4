#pragma once
// The one definition of each throughput and time metric of docs/METRICS.md,
// used by the simulator's and the backend's summaries, compare and the
// dashboard: tokens/s per GPU, MFU, and a step's compute, communication and
// exposed communication from its events.

#include <cstdint>
#include <string>
#include <vector>

#include "traces/trace.pb.h"

namespace ragged::traces {

// tokens per step per GPU / step time; 0 for a step of no time.
double tokens_per_s_per_gpu(int64_t tokens_per_step, double step_s);

// model FLOPs per step per GPU / (step time x the GPU's dense bf16 peak).
double mfu(double model_flops_per_step, double step_s, double peak_flops);

// One step's figures from the events of `rank` (every rank: kAllRanks) and
// `step`, for a step that took `step_s`: compute = busy time of the compute
// stream, comm = busy time of the collective streams, exposed = step_s -
// compute (the compute stream idle, waiting), so compute + exposed = step.
StepFigures step_figures(const Trace& trace, int rank, int step, double step_s);

// What a summary is made of; the time figures are averaged over `steps`.
struct SummaryInputs {
  std::vector<StepFigures> steps;
  int64_t tokens_per_step = 0;       // per GPU
  double model_flops_per_step = 0;   // per GPU
  double peak_flops = 0;             // the GPU's dense bf16 peak, FLOP/s
  int64_t hbm_capacity_bytes = 0;
  int64_t allocator_capacity_bytes = 0;  // hbm less the CUDA context and NCCL
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t peak_state_and_buffers_bytes = 0;
  int64_t issue_order_peak_bytes = 0;
  int64_t persistent_bytes = 0;
  bool oom = false;
  int64_t alloc_retries = 0;
  double alloc_retry_s = 0;
};

// The summary: every time figure the mean over the steps (each kept in
// per_step), tokens/s and MFU from the mean step time.
Summary make_summary(const SummaryInputs& inputs);

// The spread of one figure over a summary's steps.
struct Spread {
  double mean = 0;
  double min = 0;
  double max = 0;
  double stddev = 0;  // population standard deviation
};
Spread step_time_spread(const Summary& summary);

// The capacity a summary's memory verdict was judged against: its
// allocator_capacity_bytes, or the HBM for a trace written before that field.
int64_t allocator_capacity_of(const Summary& summary);

// The largest |error| of the simulator's predicted peak reserved memory on its
// calibration runs, rounded up to 0.5% (docs/results/calibration.md:
// TorchTitan's Llama-3-8B, eager, 128 H100s: 61.1 GiB predicted against the
// published 67.0, -8.7%, since eager autograd's saved tensors are modelled;
// the test TightFit.MarginIsTheCalibrationSetsLargestMemoryError keeps it
// so). Every under-prediction there is of this size or less.
inline constexpr double kPeakMemoryPredictionError = 0.09;

// A prediction that fits, but whose peak reserved memory, were it
// under-predicted by kPeakMemoryPredictionError, would pass the allocator's
// capacity: the real run may thrash the caching allocator (releases of its
// cache and retries, each a device synchronisation) or run out of memory.
bool fits_tightly(int64_t peak_reserved_bytes, int64_t allocator_capacity_bytes, bool oom);
bool fits_tightly(const Summary& predicted);
// The other side: out of memory, but by less than the same error (were the
// peak over-predicted by kPeakMemoryPredictionError, it would fit): the real
// run may fit.
bool oom_marginally(int64_t peak_reserved_bytes, int64_t allocator_capacity_bytes, bool oom);
bool oom_marginally(const Summary& predicted);
// A prediction's memory verdict, as every report words it: "OOM", "OOM,
// marginally", "fits, tightly" or "fits".
std::string memory_verdict(const Summary& predicted);

}  // namespace ragged::traces
