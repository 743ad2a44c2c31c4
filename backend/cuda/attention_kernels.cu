// Causal softmax attention on the GPU (workload_kernels.hpp), the host's
// core_forward/core_backward (workload_attention.cpp), with context
// parallelism's queries at chosen positions over every key of their
// sequences: one block per (query, head) or (key, kv head), scores
// recomputed rather than kept, every sum in double in a fixed order.

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
using kernel_detail::load;
using kernel_detail::row_blocks;
using kernel_detail::row_rstd;
using kernel_detail::store;
using kernel_detail::SumOp;

// Attention: thread c of a block holds element c of a (token, head) row;
// blockDim.x is dim rounded up to a warp. Query i (a row of q) reads keys
// first_key(i) .. last_key(i); key j (a row of k) is read by the queries of
// its sequence at or after its position, in query order.
struct Heads {
  AttentionShape s;
  double scale;
  int64_t per_sequence;  // queries a sequence
  __device__ int64_t position(int64_t i) const { return s.positions != nullptr ? s.positions[i] : i % per_sequence; }
  __device__ int64_t first_key(int64_t i) const { return i / per_sequence * s.seq_len; }
  __device__ int64_t last_key(int64_t i) const { return first_key(i) + position(i); }
  __device__ int64_t first_query(int64_t j) const { return j / s.seq_len * per_sequence; }
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

// Block (i, h): the max and the sum of exp(score - max) over the keys query i reads.
template <typename T>
__device__ void softmax_stats(const Heads& hd, int64_t i, int64_t h, float qc, const T* k, const T* k_norm, double& max,
                              double& sum) {
  const int64_t g = hd.group(h), last = hd.last_key(i);
  max = -INFINITY;
  for (int64_t j = hd.first_key(i); j <= last; ++j) {
    max = fmax(max, hd.scale * block_dot(qc, normed_element(k + hd.kv_at(j, g), k_norm, hd.s.dim)));
  }
  sum = 0;
  for (int64_t j = hd.first_key(i); j <= last; ++j) {
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
    for (int64_t j = hd.first_key(i), last = hd.last_key(i); j <= last; ++j) {
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
// group's heads (in order) and the queries of j's sequence at or after its
// position (in order).
template <typename T>
__global__ void attention_dkv_kernel(T* dk, T* dv, const double* stats, const T* du, const T* q, const T* k, const T* v,
                                     const T* q_norm, const T* k_norm, Heads hd) {
  const AttentionShape& s = hd.s;
  const int64_t rep = s.heads / s.groups;
  const int64_t keys = s.tokens / hd.per_sequence * s.seq_len;
  for (int64_t row = blockIdx.x; row < keys * s.groups; row += gridDim.x) {
    const int64_t j = row / s.groups, g = row % s.groups, c = threadIdx.x;
    const int64_t key_position = j % s.seq_len, first = hd.first_query(j);
    const float kc = normed_element(k + hd.kv_at(j, g), k_norm, s.dim);
    const float vc = c < s.dim ? load(v[hd.kv_at(j, g) + c]) : 0.0f;
    double dk_sum = 0, dv_sum = 0;
    for (int64_t h = g * rep; h < (g + 1) * rep; ++h) {
      for (int64_t i = first; i < first + hd.per_sequence; ++i) {
        if (hd.position(i) < key_position) continue;  // the same for the whole block
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
__global__ void attention_dq_kernel(T* du_dq, const double* stats, const T* q, const T* k, const T* v, const T* q_norm,
                                    const T* k_norm, Heads hd) {
  const AttentionShape& s = hd.s;
  for (int64_t row = blockIdx.x; row < s.tokens * s.heads; row += gridDim.x) {
    const int64_t i = row / s.heads, h = row % s.heads, g = hd.group(h), c = threadIdx.x;
    const float qc = normed_element(q + hd.q_at(i, h), q_norm, s.dim);
    const float duc = c < s.dim ? load(du_dq[hd.q_at(i, h) + c]) : 0.0f;
    const double* st = stats + 2 * row;
    double dq_sum = 0;
    for (int64_t j = hd.first_key(i), last = hd.last_key(i); j <= last; ++j) {
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
  const int64_t per_sequence = shape.queries_per_sequence();
  RAGGED_ASSERT(shape.dim > 0 && shape.dim <= 1024 && shape.seq_len > 0 && per_sequence > 0 &&
                    shape.tokens % per_sequence == 0 && (shape.queries == 0) == (shape.positions == nullptr),
                "GPU attention: a head is 1 to 1024 wide, the queries are whole sequences' and have positions "
                "when they are some of a sequence's tokens");
  return Heads{shape, 1.0 / std::sqrt(static_cast<double>(shape.dim)), per_sequence};
}

}  // namespace

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
  attention_dkv_kernel<<<row_blocks(shape.key_rows() * shape.groups), threads, 0, stream>>>(
      dev(dk), dev(dv), stats, dev(du_dq), dev(q), dev(k), dev(v), dev(q_norm), dev(k_norm), hd);
  CUDA_CHECK_LAUNCH();
  attention_dq_kernel<<<rows, threads, 0, stream>>>(dev(du_dq), stats, dev(q), dev(k), dev(v), dev(q_norm), dev(k_norm),
                                                    hd);
  CUDA_CHECK_LAUNCH();
}

#define RAGGED_STORAGE(S)                                                                                           \
  template void attention_forward(S*, const S*, const S*, const S*, const S*, const S*, const AttentionShape&,      \
                                  cudaStream_t);                                                                    \
  template void attention_backward(S*, S*, S*, double*, const S*, const S*, const S*, const S*, const S*, const S*, \
                                   const AttentionShape&, cudaStream_t);
RAGGED_STORAGE(float)
RAGGED_STORAGE(uint16_t)
#undef RAGGED_STORAGE

}  // namespace ragged::backend::gpu
