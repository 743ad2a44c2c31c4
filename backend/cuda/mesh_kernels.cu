// The vocabulary-parallel cross-entropy (mesh_kernels.hpp): one block per
// row; the indexed row copies of context parallelism, one block per row.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/mesh_kernels.hpp"
#include "backend/cuda/workload_device.cuh"
#include "common/errors.hpp"

namespace ragged::backend::gpu {
namespace {

using kernel_detail::row_blocks;

constexpr int kRowThreads = 512;


__global__ void __launch_bounds__(kRowThreads)
    vocabulary_stats_kernel(double* stats, const float* logits, const int32_t* labels, int64_t rows, int64_t vocab) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* row = logits + r * vocab;
    float max = 0;
    double sum = 0;
    kernel_detail::row_max_and_sum(row, vocab, max, sum);
    if (threadIdx.x == 0) {
      stats[r * 3] = max;
      stats[r * 3 + 1] = sum;
      stats[r * 3 + 2] = labels[r] >= 0 ? static_cast<double>(row[labels[r]]) : 0.0;
    }
  }
}

// Every thread combines the ranks' statistics alike, in rank order.
__global__ void __launch_bounds__(kRowThreads)
    vocabulary_softmax_kernel(float* logits, double* row_losses, const double* stats, int ranks, int64_t rows,
                              int64_t vocab) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    double max = stats[r * 3];
    for (int q = 1; q < ranks; ++q) max = fmax(max, stats[(q * rows + r) * 3]);
    double sum = 0, target = 0;
    for (int q = 0; q < ranks; ++q) {
      const double* at = stats + (q * rows + r) * 3;
      sum += at[1] * exp(at[0] - max);
      target += at[2];
    }
    if (threadIdx.x == 0) row_losses[r] = max + log(sum) - target;
    const double inv_sum = 1.0 / sum;
    float* row = logits + r * vocab;
    for (int64_t v = threadIdx.x; v < vocab; v += blockDim.x) {
      const float e = static_cast<float>(exp(static_cast<double>(row[v]) - max));
      row[v] = static_cast<float>(static_cast<double>(e) * inv_sum);
    }
  }
}

// Rows move as 16-bit words (bf16 elements, or halves of fp32 ones).
__global__ void copy_rows_indexed_kernel(uint16_t* dst, const int32_t* dst_rows, const uint16_t* src,
                                         const int32_t* src_rows, int64_t rows, int64_t words) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    uint16_t* to = dst + (dst_rows != nullptr ? dst_rows[r] : r) * words;
    const uint16_t* from = src + (src_rows != nullptr ? src_rows[r] : r) * words;
    for (int64_t c = threadIdx.x; c < words; c += blockDim.x) to[c] = from[c];
  }
}

}  // namespace

void copy_rows_indexed(void* dst, const int32_t* dst_rows, const void* src, const int32_t* src_rows, int64_t rows,
                       int64_t row_bytes, cudaStream_t stream) {
  RAGGED_ASSERT(row_bytes % 2 == 0, "copy_rows_indexed: rows of whole 16-bit words");
  if (rows <= 0 || row_bytes <= 0) return;
  copy_rows_indexed_kernel<<<row_blocks(rows), kernel_detail::kThreads, 0, stream>>>(
      static_cast<uint16_t*>(dst), dst_rows, static_cast<const uint16_t*>(src), src_rows, rows, row_bytes / 2);
  CUDA_CHECK_LAUNCH();
}

void vocabulary_stats(double* stats, const float* logits, const int32_t* labels, int64_t rows, int64_t vocab,
                      cudaStream_t stream) {
  if (rows <= 0) return;
  vocabulary_stats_kernel<<<row_blocks(rows), kRowThreads, 0, stream>>>(stats, logits, labels, rows, vocab);
  CUDA_CHECK_LAUNCH();
}

void vocabulary_softmax(float* logits, double* row_losses, const double* stats, int ranks, int64_t rows,
                        int64_t vocab, cudaStream_t stream) {
  if (rows <= 0) return;
  vocabulary_softmax_kernel<<<row_blocks(rows), kRowThreads, 0, stream>>>(logits, row_losses, stats, ranks, rows,
                                                                          vocab);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ragged::backend::gpu
