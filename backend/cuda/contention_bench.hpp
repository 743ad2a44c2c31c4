#pragma once
// gpu-validate's measurements of two mechanisms the simulator states as
// rules or assumptions, so that a lent GPU can settle them:
//  - a GEMM while a collective's CTAs hold some SMs (docs/SIMULATOR.md
//    section 6b): timed alone and beside an occupant that holds `held` SMs
//    through the whole GEMM, against the section's rule for a persistent
//    kernel (ceil(SMs / (SMs - held)) waves of its CTAs) and for a kernel of
//    many waves (SMs / (SMs - held) of its time);
//  - the caching allocator's driver calls (section 8: a release frees cached
//    segments with cudaFree and a retry maps new ones with cudaMalloc, an
//    assumed 50 us each): cudaMalloc and cudaFree timed by size.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/cuda/gemm.hpp"
#include "backend/cuda/validate_bench.hpp"
#include "common/line_fit.hpp"

namespace ragged::backend::gpu {

class CudaDevice;

struct HeldSmsTiming {
  GemmShape shape;
  int sms = 0;       // the device's SMs
  int held_sms = 0;  // SMs the occupant held through the GEMMs
  int batches = 0;   // timed batches beside the occupant
  int gemms_per_batch = 0;
  double alone_seconds = 0;        // one GEMM alone, the median
  double beside_seconds = 0;       // one GEMM beside the occupant, the median over batches
  bool occupant_outlasted = true;  // false: a batch outran the occupant's time (the figure is a lower bound)
  double slowdown() const { return alone_seconds > 0 ? beside_seconds / alone_seconds : 0; }
};

// bf16 GEMMs of `shape` alone and while `held_sms` SMs are held (0 < held_sms
// < SMs, else InputError). Uses the arena (reset first).
HeldSmsTiming time_gemm_beside_held_sms(CudaDevice& device, const GemmShape& shape, int held_sms, uint64_t seed,
                                        const BenchOptions& options);

// Section 6b's rule for a kernel that runs while `held` of `sms` SMs stay
// held, as a multiple of its time alone.
double persistent_kernel_slowdown(int sms, int held);  // ceil(sms / (sms - held)) waves
double wave_kernel_slowdown(int sms, int held);        // sms / (sms - held)
// Whether a measured slowdown lies nearer (by ratio) the persistent rule than the wave rule.
bool nearer_persistent_rule(double slowdown, int sms, int held);

struct AllocatorCallTiming {
  std::size_t bytes = 0;
  double malloc_seconds = 0;  // one cudaMalloc, the median
  double free_seconds = 0;    // one cudaFree of it, the median
};

// cudaMalloc and cudaFree of each size on the current device, host wall time
// with the device idle (a release's wait for the device is apart), the
// median of `repetitions`; sizes above 80% of the free memory are left out.
std::vector<AllocatorCallTiming> time_allocator_calls(const std::vector<std::size_t>& sizes, int repetitions);

// Each call's cost as a least-squares line in GiB: `fitted` as measured,
// `costs` as the simulator's calibration takes it (a negative intercept or
// slope, which noise can give, as 0: no call costs less than nothing).
// InternalError unless two sizes or more were timed.
struct AllocatorCallLines {
  LineFit malloc_fitted, free_fitted;
  LineFit malloc_costs, free_costs;
};
AllocatorCallLines fit_allocator_calls(const std::vector<AllocatorCallTiming>& calls);

}  // namespace ragged::backend::gpu
