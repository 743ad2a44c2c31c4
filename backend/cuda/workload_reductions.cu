// The GPU workload's reductions (workload_kernels.hpp): sums over rows per
// column, the embedding's gradient rows, RMSNorm, causal softmax attention,
// softmax with cross-entropy and the mean loss. Each splits its work in a fixed way and combines the parts in a
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
using kernel_detail::kThreads;
using kernel_detail::load;
using kernel_detail::store;

constexpr int kRowThreads = 512;  // one block per row: softmax
constexpr int kTile = 32;         // column sums: 32 columns x 32 row lanes a block

unsigned row_blocks(int64_t rows) { return static_cast<unsigned>(std::clamp<int64_t>(rows, 1, kMaxBlocks)); }

constexpr double kNormEps = 1e-5;  // the host's kNormEps (workload_internal.hpp)

struct SumOp {
  __device__ double operator()(double a, double b) const { return a + b; }
};

// 1/sqrt(mean(x^2) + eps) of one row, reduced by the whole block.
template <typename T>
__device__ double row_rstd(const T* x, int64_t cols) {
  double sum = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += static_cast<double>(load(x[c])) * load(x[c]);
  sum = block_reduce(sum, 0.0, SumOp{});
  return 1.0 / sqrt(sum / static_cast<double>(cols) + kNormEps);
}

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

// Attention: thread c of a block holds element c of a (token, head) row;
// blockDim.x is dim rounded up to a warp.
struct Heads {
  AttentionShape s;
  double scale;
  __device__ int64_t first_of(int64_t token) const { return token / s.seq_len * s.seq_len; }
  __device__ int64_t q_at(int64_t token, int64_t h) const { return (token * s.heads + h) * s.dim; }
  __device__ int64_t kv_at(int64_t token, int64_t g) const { return (token * s.groups + g) * s.dim; }
  __device__ int64_t group(int64_t h) const { return h / (s.heads / s.groups); }
};

// Element c (this thread's) of a row, RMSNormed by `norm` when not null
// (the whole block calls it: the rstd is a block reduction).
template <typename T>
__device__ float normed_element(const T* row, const T* norm, int64_t dim) {
  const int64_t c = threadIdx.x;
  const float x = c < dim ? load(row[c]) : 0.0f;
  if (norm == nullptr) return x;
  const double rstd = row_rstd(row, dim);
  return c < dim ? __fmul_rn(static_cast<float>(x * rstd), load(norm[c])) : 0.0f;
}

__device__ inline double block_dot(float a, float b) {
  return block_reduce(static_cast<double>(a) * static_cast<double>(b), 0.0, SumOp{});
}

// Block (i, h): the max and the sum of exp(score - max) over keys j <= i of i's sequence.
template <typename T>
__device__ void softmax_stats(const Heads& hd, int64_t i, int64_t h, float qc, const T* k, const T* k_norm, double& max,
                              double& sum) {
  const int64_t g = hd.group(h);
  max = -INFINITY;
  for (int64_t j = hd.first_of(i); j <= i; ++j) {
    max = fmax(max, hd.scale * block_dot(qc, normed_element(k + hd.kv_at(j, g), k_norm, hd.s.dim)));
  }
  sum = 0;
  for (int64_t j = hd.first_of(i); j <= i; ++j) {
    sum += exp(hd.scale * block_dot(qc, normed_element(k + hd.kv_at(j, g), k_norm, hd.s.dim)) - max);
  }
}

template <typename T>
__global__ void attention_forward_kernel(T* u, const T* q, const T* k, const T* v, const T* q_norm, const T* k_norm,
                                         Heads hd) {
  const AttentionShape& s = hd.s;
  for (int64_t row = blockIdx.x; row < s.tokens * s.heads; row += gridDim.x) {
    const int64_t i = row / s.heads, h = row % s.heads, g = hd.group(h), c = threadIdx.x;
    const float qc = normed_element(q + hd.q_at(i, h), q_norm, s.dim);
    double max = 0, sum = 0;
    softmax_stats(hd, i, h, qc, k, k_norm, max, sum);
    double out = 0;
    for (int64_t j = hd.first_of(i); j <= i; ++j) {
      const double p = exp(hd.scale * block_dot(qc, normed_element(k + hd.kv_at(j, g), k_norm, s.dim)) - max);
      if (c < s.dim) out += p * load(v[hd.kv_at(j, g) + c]);
    }
    if (c < s.dim) store(u[hd.q_at(i, h) + c], static_cast<float>(out / sum));
  }
}

// Per (token, head): log-sum-exp of the scores and D = du . u.
template <typename T>
__global__ void attention_stats_kernel(double* stats, const T* du, const T* u, const T* q, const T* k, const T* q_norm,
                                       const T* k_norm, Heads hd) {
  const AttentionShape& s = hd.s;
  for (int64_t row = blockIdx.x; row < s.tokens * s.heads; row += gridDim.x) {
    const int64_t i = row / s.heads, h = row % s.heads, c = threadIdx.x;
    const float qc = normed_element(q + hd.q_at(i, h), q_norm, s.dim);
    double max = 0, sum = 0;
    softmax_stats(hd, i, h, qc, k, k_norm, max, sum);
    const int64_t at = hd.q_at(i, h) + c;
    const double d = block_dot(c < s.dim ? load(du[at]) : 0.0f, c < s.dim ? load(u[at]) : 0.0f);
    if (c == 0) {
      stats[2 * row] = max + log(sum);
      stats[2 * row + 1] = d;
    }
  }
}

// Block (j, g): dv_j = sum p_ij du_i, dk_j = scale sum dS_ij q_i over the
// group's heads (in order) and the queries i >= j of j's sequence (in order).
template <typename T>
__global__ void attention_dkv_kernel(T* dk, T* dv, const double* stats, const T* du, const T* q, const T* k,
                                     const T* v, const T* q_norm, const T* k_norm, Heads hd) {
  const AttentionShape& s = hd.s;
  const int64_t rep = s.heads / s.groups;
  for (int64_t row = blockIdx.x; row < s.tokens * s.groups; row += gridDim.x) {
    const int64_t j = row / s.groups, g = row % s.groups, c = threadIdx.x;
    const float kc = normed_element(k + hd.kv_at(j, g), k_norm, s.dim);
    const float vc = c < s.dim ? load(v[hd.kv_at(j, g) + c]) : 0.0f;
    double dk_sum = 0, dv_sum = 0;
    for (int64_t h = g * rep; h < (g + 1) * rep; ++h) {
      for (int64_t i = j; i < hd.first_of(j) + s.seq_len; ++i) {
        const float qc = normed_element(q + hd.q_at(i, h), q_norm, s.dim);
        const float duc = c < s.dim ? load(du[hd.q_at(i, h) + c]) : 0.0f;
        const double* st = stats + 2 * (i * s.heads + h);
        const double p = exp(hd.scale * block_dot(qc, kc) - st[0]);
        const double ds = p * (block_dot(duc, vc) - st[1]) * hd.scale;
        dv_sum += p * duc;
        dk_sum += ds * qc;
      }
    }
    if (c < s.dim) {
      store(dk[hd.kv_at(j, g) + c], static_cast<float>(dk_sum));
      store(dv[hd.kv_at(j, g) + c], static_cast<float>(dv_sum));
    }
  }
}

// Block (i, h): dq_i = scale sum_j dS_ij k_j, written over du_i (read first).
template <typename T>
__global__ void attention_dq_kernel(T* du_dq, const double* stats, const T* q, const T* k, const T* v,
                                    const T* q_norm, const T* k_norm, Heads hd) {
  const AttentionShape& s = hd.s;
  for (int64_t row = blockIdx.x; row < s.tokens * s.heads; row += gridDim.x) {
    const int64_t i = row / s.heads, h = row % s.heads, g = hd.group(h), c = threadIdx.x;
    const float qc = normed_element(q + hd.q_at(i, h), q_norm, s.dim);
    const float duc = c < s.dim ? load(du_dq[hd.q_at(i, h) + c]) : 0.0f;
    const double* st = stats + 2 * row;
    double dq_sum = 0;
    for (int64_t j = hd.first_of(i); j <= i; ++j) {
      const float kc = normed_element(k + hd.kv_at(j, g), k_norm, s.dim);
      const float vc = c < s.dim ? load(v[hd.kv_at(j, g) + c]) : 0.0f;
      const double p = exp(hd.scale * block_dot(qc, kc) - st[0]);
      dq_sum += p * (block_dot(duc, vc) - st[1]) * hd.scale * kc;
    }
    if (c < s.dim) store(du_dq[hd.q_at(i, h) + c], static_cast<float>(dq_sum));
  }
}

unsigned head_threads(int64_t dim) { return static_cast<unsigned>((dim + 31) / 32 * 32); }

Heads heads_of(const AttentionShape& shape) {
  RAGGED_ASSERT(shape.dim > 0 && shape.dim <= 1024 && shape.seq_len > 0 && shape.tokens % shape.seq_len == 0,
                "GPU attention: a head is 1 to 1024 wide and the tokens are whole sequences");
  return Heads{shape, 1.0 / std::sqrt(static_cast<double>(shape.dim))};
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

template <typename S>
void attention_forward(S* u, const S* q, const S* k, const S* v, const S* q_norm, const S* k_norm,
                       const AttentionShape& shape, cudaStream_t stream) {
  if (shape.tokens <= 0) return;
  const Heads hd = heads_of(shape);
  attention_forward_kernel<<<row_blocks(shape.tokens * shape.heads), head_threads(shape.dim), 0, stream>>>(
      dev(u), dev(q), dev(k), dev(v), dev(q_norm), dev(k_norm), hd);
  CUDA_CHECK_LAUNCH();
}

template <typename S>
void attention_backward(S* du_dq, S* dk, S* dv, double* stats, const S* u, const S* q, const S* k, const S* v,
                        const S* q_norm, const S* k_norm, const AttentionShape& shape, cudaStream_t stream) {
  if (shape.tokens <= 0) return;
  const Heads hd = heads_of(shape);
  const unsigned threads = head_threads(shape.dim);
  const unsigned rows = row_blocks(shape.tokens * shape.heads);
  attention_stats_kernel<<<rows, threads, 0, stream>>>(stats, dev(du_dq), dev(u), dev(q), dev(k), dev(q_norm),
                                                       dev(k_norm), hd);
  CUDA_CHECK_LAUNCH();
  attention_dkv_kernel<<<row_blocks(shape.tokens * shape.groups), threads, 0, stream>>>(
      dev(dk), dev(dv), stats, dev(du_dq), dev(q), dev(k), dev(v), dev(q_norm), dev(k_norm), hd);
  CUDA_CHECK_LAUNCH();
  attention_dq_kernel<<<rows, threads, 0, stream>>>(dev(du_dq), stats, dev(q), dev(k), dev(v), dev(q_norm),
                                                    dev(k_norm), hd);
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
  template void rms_norm_weight_grad(uint16_t*, const S*, const S*, int64_t, int64_t, cudaStream_t);                 \
  template void attention_forward(S*, const S*, const S*, const S*, const S*, const S*, const AttentionShape&,       \
                                  cudaStream_t);                                                                     \
  template void attention_backward(S*, S*, S*, double*, const S*, const S*, const S*, const S*, const S*, const S*, \
                                   const AttentionShape&, cudaStream_t);
RAGGED_STORAGE(float)
RAGGED_STORAGE(uint16_t)
#undef RAGGED_STORAGE

}  // namespace ragged::backend::gpu
