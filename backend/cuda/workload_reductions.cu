// The GPU workload's reductions (workload_kernels.hpp): sums over rows per
// column, the embedding's gradient rows, RMSNorm, softmax with
// cross-entropy and the mean loss (attention: attention_kernels.cu). Each splits its work in a fixed way and combines the parts in a
// fixed order, in double, without atomics: results are reproducible bit for
// bit.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/workload_device.cuh"
#include "backend/cuda/workload_kernels.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu {
namespace {

using kernel_detail::block_reduce;
using kernel_detail::dev;
using kernel_detail::kMaxBlocks;
using kernel_detail::row_blocks;
using kernel_detail::kThreads;
using kernel_detail::kNormEps;
using kernel_detail::load;
using kernel_detail::row_rstd;
using kernel_detail::SumOp;
using kernel_detail::store;

constexpr int kRowThreads = 512;  // one block per row: softmax
constexpr int kTile = 32;         // column sums: 32 columns x 32 row lanes a block


template <typename T>
__global__ void rms_norm_forward_kernel(T* kept, T* y, const T* x, const T* w, int64_t rows, int64_t cols) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    const double rstd = row_rstd(xr, cols);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const T value = xr[c];
      if (kept != nullptr) kept[r * cols + c] = value;
      store(y[r * cols + c], __fmul_rn(static_cast<float>(load(value) * rstd), load(w[c])));
    }
  }
}

template <typename T>
__global__ void rms_norm_backward_kernel(T* out, const T* d, const T* dy, const T* x, const T* w, int64_t rows,
                                         int64_t cols) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    const double rstd = row_rstd(xr, cols);
    double mean = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float n = static_cast<float>(load(xr[c]) * rstd);
      mean += static_cast<double>(load(dy[r * cols + c])) * load(w[c]) * n;
    }
    // Every thread has read its dy before any writes out (which may be dy).
    mean = block_reduce(mean, 0.0, SumOp{}) / static_cast<double>(cols);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const int64_t i = r * cols + c;
      const float n = static_cast<float>(load(xr[c]) * rstd);
      const float dx = static_cast<float>(rstd * (static_cast<double>(load(dy[i])) * load(w[c]) - n * mean));
      store(out[i], d == nullptr ? dx : __fadd_rn(load(d[i]), dx));
    }
  }
}

// Column c: one thread, rows in order; rstd(r) recomputed per row (naive:
// cols times the work of a column sum, but no scratch and a fixed order).
template <typename T, typename G>
__global__ void rms_norm_weight_grad_kernel(G* dw, const T* dy, const T* x, int64_t rows, int64_t cols) {
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    double sum = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = x + r * cols;
      double squares = 0;
      for (int64_t j = 0; j < cols; ++j) squares += static_cast<double>(load(xr[j])) * load(xr[j]);
      const double rstd = 1.0 / sqrt(squares / static_cast<double>(cols) + kNormEps);
      sum += static_cast<double>(load(dy[r * cols + c])) * static_cast<float>(load(xr[c]) * rstd);
    }
    store(dw[c], static_cast<float>(sum));
  }
}

template <typename T, typename G>
__global__ void embedding_backward_kernel(G* dtable, const T* dx, const int32_t* order, const int32_t* rows,
                                          int64_t vocab, int64_t hidden) {
  for (int64_t v = blockIdx.x; v < vocab; v += gridDim.x) {
    for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
      double sum = 0;
      for (int32_t p = rows[v]; p < rows[v + 1]; ++p) sum += load(dx[order[p] * hidden + j]);
      store(dtable[v * hidden + j], static_cast<float>(sum));
    }
  }
}

// Column c of the block's tile: lane l sums rows l, l + 32, ... in double,
// then lane 0 adds the 32 lanes' sums in lane order.
template <typename T, typename G>
__global__ void __launch_bounds__(kTile* kTile)
    column_sums_kernel(G* out, const T* a, const T* b, int64_t rows, int64_t cols) {
  __shared__ double lanes[kTile][kTile + 1];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kTile + threadIdx.x;
  double sum = 0;
  if (c < cols) {
    for (int64_t r = threadIdx.y; r < rows; r += kTile) {
      const double x = load(a[r * cols + c]);
      sum += b == nullptr ? x : x * static_cast<double>(load(b[r * cols + c]));
    }
  }
  lanes[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || c >= cols) return;
  double total = 0;
  for (int l = 0; l < kTile; ++l) total += lanes[l][threadIdx.x];
  store(out[c], static_cast<float>(total));
}

// One block per row, as the host computes it: e = exp(x - max) in double,
// p = float(float(e) / sum) through the double reciprocal.
__global__ void __launch_bounds__(kRowThreads)
    softmax_cross_entropy_kernel(float* logits, const int32_t* labels, double* row_losses, int64_t rows,
                                 int64_t vocab) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    float* row = logits + r * vocab;
    float max = 0;
    double sum = 0;
    kernel_detail::row_max_and_sum(row, vocab, max, sum);
    if (threadIdx.x == 0) row_losses[r] = static_cast<double>(max) + log(sum) - row[labels[r]];
    __syncthreads();
    const double inv_sum = 1.0 / sum;
    for (int64_t v = threadIdx.x; v < vocab; v += blockDim.x) {
      const float e = static_cast<float>(exp(static_cast<double>(row[v]) - max));
      row[v] = static_cast<float>(static_cast<double>(e) * inv_sum);
    }
  }
}

__global__ void __launch_bounds__(kRowThreads)
    add_mean_loss_kernel(double* sum, const double* row_losses, int64_t rows) {
  double total = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) total += row_losses[r];
  total = block_reduce(total, 0.0, [](double a, double b) { return a + b; });
  if (threadIdx.x == 0) sum[0] += total / static_cast<double>(rows);
}

}  // namespace

template <typename S, typename G>
void embedding_backward(G* dtable, const S* dx, const int32_t* order, const int32_t* rows, int64_t vocab,
                        int64_t hidden, cudaStream_t stream) {
  if (vocab * hidden <= 0) return;
  embedding_backward_kernel<<<row_blocks(vocab), kThreads, 0, stream>>>(dev(dtable), dev(dx), order, rows, vocab,
                                                                        hidden);
  CUDA_CHECK_LAUNCH();
}

template <typename S, typename G>
void column_sums(G* out, const S* a, const S* b, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (cols <= 0) return;
  const auto tiles = static_cast<unsigned>((cols + kTile - 1) / kTile);
  column_sums_kernel<<<tiles, dim3(kTile, kTile), 0, stream>>>(dev(out), dev(a), dev(b), rows, cols);
  CUDA_CHECK_LAUNCH();
}

template <typename S>
void rms_norm_forward(S* y, const S* x, const S* w, int64_t rows, int64_t cols, cudaStream_t stream) {
  keep_and_rms_norm<S>(nullptr, y, x, w, rows, cols, stream);
}

template <typename S>
void keep_and_rms_norm(S* kept, S* y, const S* x, const S* w, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  rms_norm_forward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(dev(kept), dev(y), dev(x), dev(w), rows, cols);
  CUDA_CHECK_LAUNCH();
}

template <typename S>
void rms_norm_backward(S* out, const S* d, const S* dy, const S* x, const S* w, int64_t rows, int64_t cols,
                       cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  rms_norm_backward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(dev(out), dev(d), dev(dy), dev(x), dev(w), rows,
                                                                      cols);
  CUDA_CHECK_LAUNCH();
}

template <typename S, typename G>
void rms_norm_weight_grad(G* dw, const S* dy, const S* x, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (cols <= 0) return;
  const auto blocks = static_cast<unsigned>(std::clamp<int64_t>((cols + kThreads - 1) / kThreads, 1, kMaxBlocks));
  rms_norm_weight_grad_kernel<<<blocks, kThreads, 0, stream>>>(dev(dw), dev(dy), dev(x), rows, cols);
  CUDA_CHECK_LAUNCH();
}

void softmax_cross_entropy(float* logits, const int32_t* labels, double* row_losses, int64_t rows, int64_t vocab,
                           cudaStream_t stream) {
  if (rows <= 0) return;
  softmax_cross_entropy_kernel<<<row_blocks(rows), kRowThreads, 0, stream>>>(logits, labels, row_losses, rows, vocab);
  CUDA_CHECK_LAUNCH();
}

void add_mean_loss(double* sum, const double* row_losses, int64_t rows, cudaStream_t stream) {
  if (rows <= 0) return;
  add_mean_loss_kernel<<<1, kRowThreads, 0, stream>>>(sum, row_losses, rows);
  CUDA_CHECK_LAUNCH();
}

#define RAGGED_STORAGE(S)                                                                                             \
  template void embedding_backward(float*, const S*, const int32_t*, const int32_t*, int64_t, int64_t, cudaStream_t); \
  template void embedding_backward(uint16_t*, const S*, const int32_t*, const int32_t*, int64_t, int64_t,             \
                                   cudaStream_t);                                                                     \
  template void column_sums(float*, const S*, const S*, int64_t, int64_t, cudaStream_t);                              \
  template void column_sums(uint16_t*, const S*, const S*, int64_t, int64_t, cudaStream_t);                           \
  template void rms_norm_forward(S*, const S*, const S*, int64_t, int64_t, cudaStream_t);                            \
  template void keep_and_rms_norm(S*, S*, const S*, const S*, int64_t, int64_t, cudaStream_t);                       \
  template void rms_norm_backward(S*, const S*, const S*, const S*, const S*, int64_t, int64_t, cudaStream_t);       \
  template void rms_norm_weight_grad(float*, const S*, const S*, int64_t, int64_t, cudaStream_t);                    \
  template void rms_norm_weight_grad(uint16_t*, const S*, const S*, int64_t, int64_t, cudaStream_t);
RAGGED_STORAGE(float)
RAGGED_STORAGE(uint16_t)
#undef RAGGED_STORAGE

}  // namespace ragged::backend::gpu
