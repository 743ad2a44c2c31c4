// The executor's data movement (executor_kernels.hpp): grid-stride loops,
// 256 threads a block, loads and stores through one conversion helper.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/executor_kernels.hpp"

namespace ragged::backend::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;
// Blocks per piece of copy_pieces: enough to fill the GPU when there are few
// pieces; each block strides through its piece.
constexpr int64_t kBlocksPerPiece = 256;

unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
}

__device__ inline float load(const void* base, bool bf16, int64_t i) {
  if (bf16) return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
  return static_cast<const float*>(base)[i];
}

__device__ inline void store(void* base, bool bf16, int64_t i, float value) {
  if (bf16) static_cast<__nv_bfloat16*>(base)[i] = __float2bfloat16_rn(value);
  else static_cast<float*>(base)[i] = value;
}

__global__ void convert_kernel(void* dst, bool dst_bf16, const void* src, bool src_bf16, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    store(dst, dst_bf16, i, load(src, src_bf16, i));
  }
}

// blockIdx.y strides over pieces; blockIdx.x and the threads over a piece.
__global__ void copy_pieces_kernel(void* dst, bool dst_bf16, const void* src, bool src_bf16, const PieceRun* pieces,
                                   int count) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int p = static_cast<int>(blockIdx.y); p < count; p += static_cast<int>(gridDim.y)) {
    const PieceRun piece = pieces[p];
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < piece.elements; i += stride) {
      store(dst, dst_bf16, piece.dst_offset + i, load(src, src_bf16, piece.src_offset + i));
    }
  }
}

__global__ void accumulate_kernel(float* acc, const void* src, bool src_bf16, float scale, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    acc[i] = __fadd_rn(acc[i], __fmul_rn(load(src, src_bf16, i), scale));
  }
}

__global__ void scale_kernel(void* x, bool bf16, float factor, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    store(x, bf16, i, __fmul_rn(load(x, bf16, i), factor));
  }
}

}  // namespace

void convert(void* dst, ElementType dst_type, const void* src, ElementType src_type, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  if (dst_type == src_type) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(n * element_bytes(dst_type)), cudaMemcpyDeviceToDevice,
                               stream));
    return;
  }
  convert_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dst, dst_type == ElementType::bf16, src,
                                                         src_type == ElementType::bf16, n);
  CUDA_CHECK_LAUNCH();
}

void copy_pieces(void* dst, ElementType dst_type, const void* src, ElementType src_type, const PieceRun* pieces,
                 int count, cudaStream_t stream) {
  if (count <= 0) return;
  const dim3 grid(static_cast<unsigned>(kBlocksPerPiece), static_cast<unsigned>(std::min(count, 65535)));
  copy_pieces_kernel<<<grid, kThreads, 0, stream>>>(dst, dst_type == ElementType::bf16, src,
                                                    src_type == ElementType::bf16, pieces, count);
  CUDA_CHECK_LAUNCH();
}

void accumulate_scaled(float* acc, const void* src, ElementType src_type, float scale, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  accumulate_kernel<<<blocks_for(n), kThreads, 0, stream>>>(acc, src, src_type == ElementType::bf16, scale, n);
  CUDA_CHECK_LAUNCH();
}

void scale_in_place(void* x, ElementType type, float factor, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  scale_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, type == ElementType::bf16, factor, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ragged::backend::gpu
