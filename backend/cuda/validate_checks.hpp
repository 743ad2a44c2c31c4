#pragma once
// The correctness checks of gpu-validate: each runs once on fresh random
// inputs (never zeros) against a host reference, with its output poisoned
// (NaN) beforehand so that an element the device did not write is counted.

#include <cstdint>
#include <string>
#include <vector>

namespace ragged::backend::gpu {

class CudaDevice;

struct CheckResult {
  std::string name;
  double error = 0;       // the check's measure (relative error, or the fraction of elements that differ)
  double tolerance = 0;   // passes when error <= tolerance (and every element was written)
  int64_t unwritten = 0;  // output elements still holding the poison
  bool passed = false;
  std::string detail;  // e.g. "bitwise", "2 of 1048613 elements differ"
};

// A result with `passed` set from error, tolerance and unwritten (a NaN
// error fails).
CheckResult make_check(std::string name, double error, double tolerance, int64_t unwritten = 0,
                       std::string detail = {});

// The host side of gpu-validate, on every machine: the float64 reference
// GEMM against a naive fp32 loop (all four transpose combinations, odd
// shapes) and against a product known by hand; bfloat16 rounding against
// known values.
std::vector<CheckResult> cpu_self_checks(uint64_t seed);

// The kernels and GEMMs of the device against the host (needs a GPU): GEMM
// fp32 (pedantic, no TF32) < 1e-5, GEMM with bf16 operands < 1e-2 (fp32 and
// bf16 outputs), casts, fill, copy, axpy and scale bit for bit, AdamW bit for
// bit (or within 1e-6) against backend::adamw_step. Resets the arena.
std::vector<CheckResult> gpu_kernel_checks(CudaDevice& device, uint64_t seed);

}  // namespace ragged::backend::gpu
