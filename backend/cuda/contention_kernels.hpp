#pragma once
// The kernels of gpu-validate's contention measurements (contention_bench.hpp):
// an occupant that holds whole SMs for a set time, as NCCL's CTAs hold them
// while a collective runs (docs/SIMULATOR.md section 6b), and a wait that
// holds a stream until every CTA of the occupant is resident.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace ragged::backend::gpu {

// The dynamic shared memory that leaves an occupant CTA alone on its SM: the
// most one CTA may opt into, so no other CTA that needs shared memory (every
// cuBLAS GEMM CTA does) fits beside it. Sets the kernel's attribute to allow it.
std::size_t prepare_sm_occupant(int device_ordinal);

// `ctas` CTAs of one warp each with `shared_bytes` of shared memory: each adds
// 1 to *started when it starts, then sleeps in a loop until `nanoseconds` of
// the GPU's global timer have passed since its start.
void launch_sm_occupant(int ctas, std::size_t shared_bytes, uint64_t nanoseconds, int* started, cudaStream_t stream);

// One thread that returns once *counter >= expected, or after `timeout_ns`,
// then setting *timed_out to 1.
void launch_wait_for_count(const int* counter, int expected, uint64_t timeout_ns, int* timed_out, cudaStream_t stream);

}  // namespace ragged::backend::gpu
