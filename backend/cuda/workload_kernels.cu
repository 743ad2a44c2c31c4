// The GPU workload's element-wise kernels (workload_kernels.hpp). Storage is
// float or __nv_bfloat16; every value is loaded to fp32, combined with the
// IEEE-rounded intrinsics (no FMA contraction, as on the host) and rounded
// once when stored. Grid-stride loops over 64-bit indices.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/workload_device.cuh"
#include "backend/cuda/workload_kernels.hpp"

namespace ragged::backend::gpu {
namespace {

using kernel_detail::blocks_for;
using kernel_detail::dev;
using kernel_detail::first_index;
using kernel_detail::grid_stride;
using kernel_detail::kThreads;
using kernel_detail::load;
using kernel_detail::store;

// 1 / (1 + exp(-x)), as the host's sigmoid.
__device__ inline float sigmoid(float x) { return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-x))); }

template <typename T>
__global__ void embedding_gather_kernel(T* x, const T* table, const int32_t* tokens, int64_t n, int64_t hidden) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int32_t token = tokens[i / hidden];
    if (token < 0) {
      store(x[i], 0.0f);
    } else {
      x[i] = table[token * hidden + i % hidden];
    }
  }
}

template <typename T>
__global__ void scale_columns_kernel(T* y, const T* x, const T* w, int64_t n, int64_t cols) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) store(y[i], __fmul_rn(load(x[i]), load(w[i % cols])));
}

template <typename T>
__global__ void keep_and_scale_kernel(T* kept, T* y, const T* x, const T* w, int64_t n, int64_t cols) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    kept[i] = x[i];
    store(y[i], __fmul_rn(load(x[i]), load(w[i % cols])));
  }
}

template <typename T>
__global__ void add_bias_kernel(T* y, const T* bias, int64_t n, int64_t cols) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) store(y[i], __fadd_rn(load(y[i]), load(bias[i % cols])));
}

template <typename T>
__global__ void add_kernel(T* out, const T* a, const T* b, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) store(out[i], __fadd_rn(load(a[i]), load(b[i])));
}

template <typename T>
__global__ void add_scaled_columns_kernel(T* out, const T* d, const T* dn, const T* w, int64_t n, int64_t cols) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    store(out[i], __fadd_rn(load(d[i]), __fmul_rn(load(dn[i]), load(w[i % cols]))));
  }
}

template <typename T>
__global__ void swiglu_forward_kernel(T* m, const T* g, const T* up, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float gi = load(g[i]);
    store(m[i], __fmul_rn(__fmul_rn(gi, sigmoid(gi)), load(up[i])));
  }
}

// silu'(g) = s + g s (1 - s), s = sigmoid(g).
template <typename T>
__global__ void swiglu_backward_kernel(T* dm_dg, T* dup, const T* g, const T* up, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float dm = load(dm_dg[i]), gi = load(g[i]), s = sigmoid(gi);
    const float slope = __fadd_rn(s, __fmul_rn(__fmul_rn(gi, s), __fsub_rn(1.0f, s)));
    store(dm_dg[i], __fmul_rn(__fmul_rn(dm, load(up[i])), slope));
    store(dup[i], __fmul_rn(__fmul_rn(dm, gi), s));
  }
}

template <typename D>
__global__ void cross_entropy_backward_kernel(D* dlogits, const float* probs, const int32_t* labels, int64_t rows,
                                              int64_t vocab, float inv_rows) {
  const int64_t n = rows * vocab;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float onehot = i % vocab == labels[i / vocab] ? 1.0f : 0.0f;
    store(dlogits[i], __fmul_rn(__fsub_rn(probs[i], onehot), inv_rows));
  }
}

}  // namespace

template <typename S>
void embedding_gather(S* x, const S* table, const int32_t* tokens, int64_t count, int64_t hidden, cudaStream_t stream) {
  if (count * hidden <= 0) return;
  embedding_gather_kernel<<<blocks_for(count * hidden), kThreads, 0, stream>>>(dev(x), dev(table), tokens,
                                                                               count * hidden, hidden);
  CUDA_CHECK_LAUNCH();
}


template <typename S>
void scale_columns(S* y, const S* x, const S* w, int64_t rows, int64_t cols, cudaStream_t stream) {
  RAGGED_LAUNCH(scale_columns_kernel, rows * cols, dev(y), dev(x), dev(w), rows * cols, cols);
}

template <typename S>
void keep_and_scale_columns(S* kept, S* y, const S* x, const S* w, int64_t rows, int64_t cols, cudaStream_t stream) {
  RAGGED_LAUNCH(keep_and_scale_kernel, rows * cols, dev(kept), dev(y), dev(x), dev(w), rows * cols, cols);
}

template <typename S>
void add_bias(S* y, const S* bias, int64_t rows, int64_t cols, cudaStream_t stream) {
  RAGGED_LAUNCH(add_bias_kernel, rows * cols, dev(y), dev(bias), rows * cols, cols);
}

template <typename S>
void add(S* out, const S* a, const S* b, int64_t n, cudaStream_t stream) {
  RAGGED_LAUNCH(add_kernel, n, dev(out), dev(a), dev(b), n);
}

template <typename S>
void add_scaled_columns(S* out, const S* d, const S* dn, const S* w, int64_t rows, int64_t cols, cudaStream_t stream) {
  RAGGED_LAUNCH(add_scaled_columns_kernel, rows * cols, dev(out), dev(d), dev(dn), dev(w), rows * cols, cols);
}

template <typename S>
void swiglu_forward(S* m, const S* g, const S* up, int64_t n, cudaStream_t stream) {
  RAGGED_LAUNCH(swiglu_forward_kernel, n, dev(m), dev(g), dev(up), n);
}

template <typename S>
void swiglu_backward(S* dm_dg, S* dup, const S* g, const S* up, int64_t n, cudaStream_t stream) {
  RAGGED_LAUNCH(swiglu_backward_kernel, n, dev(dm_dg), dev(dup), dev(g), dev(up), n);
}

template <typename D>
void cross_entropy_backward(D* dlogits, const float* probs, const int32_t* labels, int64_t rows, int64_t vocab,
                            cudaStream_t stream) {
  const float inv_rows = static_cast<float>(1.0 / static_cast<double>(rows));
  RAGGED_LAUNCH(cross_entropy_backward_kernel, rows * vocab, dev(dlogits), probs, labels, rows, vocab, inv_rows);
}


#define RAGGED_STORAGE(S)                                                                                         \
  template void embedding_gather(S*, const S*, const int32_t*, int64_t, int64_t, cudaStream_t);                   \
  template void scale_columns(S*, const S*, const S*, int64_t, int64_t, cudaStream_t);                            \
  template void keep_and_scale_columns(S*, S*, const S*, const S*, int64_t, int64_t, cudaStream_t);               \
  template void add_bias(S*, const S*, int64_t, int64_t, cudaStream_t);                                           \
  template void add(S*, const S*, const S*, int64_t, cudaStream_t);                                               \
  template void add_scaled_columns(S*, const S*, const S*, const S*, int64_t, int64_t, cudaStream_t);             \
  template void swiglu_forward(S*, const S*, const S*, int64_t, cudaStream_t);                                    \
  template void swiglu_backward(S*, S*, const S*, const S*, int64_t, cudaStream_t);                               \
  template void cross_entropy_backward(S*, const float*, const int32_t*, int64_t, int64_t, cudaStream_t);
RAGGED_STORAGE(float)
RAGGED_STORAGE(uint16_t)
#undef RAGGED_STORAGE

}  // namespace ragged::backend::gpu
