// The row kernels of the GEMM attention (attention_gemm.hpp) on one head's
// seq_len x seq_len scratch: a block per row (rows striding), the row's
// columns strided over its threads, sums in float64 in a fixed order.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>

#include "backend/cuda/attention_gemm.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/workload_device.cuh"

namespace ragged::backend::gpu {
namespace {

using kernel_detail::block_reduce;
using kernel_detail::dev;
using kernel_detail::kThreads;
using kernel_detail::row_blocks;
using kernel_detail::store;
using kernel_detail::SumOp;

// Row i keeps columns 0..i: P_ij = exp(S_ij - max) / sum, 0 after i; into
// probs, and over the scores when keep_fp32.
template <typename T>
__global__ void causal_softmax_kernel(float* scores, T* probs, int64_t n, bool keep_fp32) {
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    float* row = scores + i * n;
    float max = -INFINITY;
    for (int64_t j = threadIdx.x; j <= i; j += blockDim.x) max = fmaxf(max, row[j]);
    max = block_reduce(max, -INFINITY, [](float a, float b) { return fmaxf(a, b); });
    double sum = 0;
    for (int64_t j = threadIdx.x; j <= i; j += blockDim.x) sum += exp(static_cast<double>(row[j]) - max);
    sum = block_reduce(sum, 0.0, SumOp{});
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const float p = j <= i ? static_cast<float>(exp(static_cast<double>(row[j]) - max) / sum) : 0.0f;
      if (keep_fp32) row[j] = p;
      store(probs[i * n + j], p);
    }
  }
}

// dS_ij = P_ij (dP_ij - sum_l P_il dP_il) scale over columns 0..i, 0 after.
template <typename T>
__global__ void causal_softmax_backward_kernel(const float* probs, const float* prob_grads, T* score_grads, int64_t n,
                                               float scale) {
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    const float* p = probs + i * n;
    const float* dp = prob_grads + i * n;
    double dot = 0;
    for (int64_t j = threadIdx.x; j <= i; j += blockDim.x) dot += static_cast<double>(p[j]) * dp[j];
    dot = block_reduce(dot, 0.0, SumOp{});
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const float ds = j <= i ? static_cast<float>(p[j] * (dp[j] - dot) * scale) : 0.0f;
      store(score_grads[i * n + j], ds);
    }
  }
}

}  // namespace

template <typename S>
void causal_softmax_rows(float* scores, S* probs, int64_t rows, bool keep_fp32, cudaStream_t stream) {
  if (rows <= 0) return;
  causal_softmax_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(scores, dev(probs), rows, keep_fp32);
  CUDA_CHECK_LAUNCH();
}

template <typename S>
void causal_softmax_backward_rows(const float* probs, const float* prob_grads, S* score_grads, int64_t rows,
                                  float scale, cudaStream_t stream) {
  if (rows <= 0) return;
  causal_softmax_backward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(probs, prob_grads, dev(score_grads), rows,
                                                                            scale);
  CUDA_CHECK_LAUNCH();
}

template void causal_softmax_rows(float*, float*, int64_t, bool, cudaStream_t);
template void causal_softmax_rows(float*, uint16_t*, int64_t, bool, cudaStream_t);
template void causal_softmax_backward_rows(const float*, const float*, float*, int64_t, float, cudaStream_t);
template void causal_softmax_backward_rows(const float*, const float*, uint16_t*, int64_t, float, cudaStream_t);

}  // namespace ragged::backend::gpu
