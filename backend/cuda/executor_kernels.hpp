#pragma once
// The data movement of the Program's copy, cast and accumulate ops on the
// GPU, between buffers of either element type (raw bytes; ElementType says
// what they hold). Asynchronous on `stream`; launch errors throw through
// CUDA_CHECK_LAUNCH.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/device_layout.hpp"
#include "backend/cuda/gpu_workload.hpp"

namespace ragged::backend::gpu {

// dst[i] = convert(src[i]) for n elements (a plain copy when the types
// agree; fp32 to bf16 rounds to nearest even).
void convert(void* dst, ElementType dst_type, const void* src, ElementType src_type, int64_t n, cudaStream_t stream);

// Every run of `pieces` (a device array of `count`, device_layout.hpp) in one launch, with
// conversion: FSDP2's copy-out of a gathered rank-major buffer into
// per-tensor storage and the gradients' copy-in back (the DBuffer's
// copy_out_pieces, in one direction or the other).
void copy_pieces(void* dst, ElementType dst_type, const void* src, ElementType src_type, const PieceRun* pieces,
                 int count, cudaStream_t stream);

// acc[i] = acc[i] + src[i] * scale, the product rounded before the sum, as
// the host executor accumulates a reduced gradient shard.
void accumulate_scaled(float* acc, const void* src, ElementType src_type, float scale, int64_t n, cudaStream_t stream);

// x[i] = x[i] * factor in place: the Program's scale ops (FSDP1's gradient
// pre- and post-divide), which the executor runs at factor 1.
void scale_in_place(void* x, ElementType type, float factor, int64_t n, cudaStream_t stream);

}  // namespace ragged::backend::gpu
