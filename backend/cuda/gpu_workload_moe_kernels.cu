// The GPU workload's mixture-of-experts kernels: row moves
// (gpu_workload_moe_kernels.hpp) and gates (workload_kernels.hpp).
// Element-wise ones stride over (copy, column); the gate's backward takes one
// block per copy, its row sum reduced in a fixed order in double; the
// softmax's backward one thread per token.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/gpu_workload_moe_kernels.hpp"
#include "backend/cuda/workload_device.cuh"
#include "backend/cuda/workload_kernels.hpp"

namespace ragged::backend::gpu {
namespace {

using kernel_detail::block_reduce;
using kernel_detail::blocks_for;
using kernel_detail::dev;
using kernel_detail::first_index;
using kernel_detail::grid_stride;
using kernel_detail::kMaxBlocks;
using kernel_detail::kThreads;
using kernel_detail::load;
using kernel_detail::store;

template <typename T>
__global__ void gather_rows_kernel(T* out, const T* x, const int32_t* rows, int64_t n, int64_t hidden) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    out[i] = x[static_cast<int64_t>(rows[i / hidden]) * hidden + i % hidden];
  }
}

template <typename T>
__global__ void add_rows_kernel(T* out, const T* x, const int32_t* rows, int64_t n, int64_t hidden) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    T& dst = out[static_cast<int64_t>(rows[i / hidden]) * hidden + i % hidden];
    store(dst, __fadd_rn(load(dst), load(x[i])));
  }
}

template <typename T>
__global__ void add_gated_rows_kernel(T* out, const T* y, const int32_t* rows, const float* gates, int64_t n,
                                      int64_t hidden) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t copy = i / hidden;
    T& dst = out[static_cast<int64_t>(rows[copy]) * hidden + i % hidden];
    store(dst, __fadd_rn(load(dst), __fmul_rn(gates[copy], load(y[i]))));
  }
}

template <typename T>
__global__ void gate_backward_kernel(T* y_dy, double* dgates, const T* dout, const int32_t* rows, const int32_t* slots,
                                     const float* gates, int64_t count, int64_t hidden) {
  for (int64_t i = blockIdx.x; i < count; i += gridDim.x) {
    const T* d = dout + static_cast<int64_t>(rows[i]) * hidden;
    T* row = y_dy + i * hidden;
    double dot = 0;
    for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
      dot = __dadd_rn(dot, __dmul_rn(static_cast<double>(load(d[j])), static_cast<double>(load(row[j]))));
    }
    // Every thread has read its y before any overwrites it with dy.
    dot = block_reduce(dot, 0.0, [](double a, double b) { return __dadd_rn(a, b); });
    const float g = gates[i];
    for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) store(row[j], __fmul_rn(g, load(d[j])));
    if (threadIdx.x == 0) dgates[slots[i]] = dot;
  }
}

// One thread per token, its choices in order (the host's sums).
template <typename T>
__global__ void gate_softmax_backward_kernel(T* dlogits, const double* dgates, const int32_t* slot_experts,
                                             const float* slot_gates, int64_t tokens, int64_t top_k, int64_t experts) {
  for (int64_t t = first_index(); t < tokens; t += grid_stride()) {
    const int64_t first = t * top_k;
    double mean = 0;
    for (int64_t j = 0; j < top_k; ++j) {
      mean = __dadd_rn(mean, __dmul_rn(static_cast<double>(slot_gates[first + j]), dgates[first + j]));
    }
    for (int64_t j = 0; j < top_k; ++j) {
      const double d = __dmul_rn(static_cast<double>(slot_gates[first + j]), __dsub_rn(dgates[first + j], mean));
      store(dlogits[t * experts + slot_experts[first + j]], static_cast<float>(d));
    }
  }
}

}  // namespace

template <typename S>
void gather_rows(S* out, const S* x, const int32_t* rows, int64_t count, int64_t hidden, cudaStream_t stream) {
  RAGGED_LAUNCH(gather_rows_kernel, count * hidden, dev(out), dev(x), rows, count * hidden, hidden);
}

template <typename S>
void add_rows(S* out, const S* x, const int32_t* rows, int64_t count, int64_t hidden, cudaStream_t stream) {
  RAGGED_LAUNCH(add_rows_kernel, count * hidden, dev(out), dev(x), rows, count * hidden, hidden);
}

template <typename S>
void add_gated_rows(S* out, const S* y, const int32_t* rows, const float* gates, int64_t count, int64_t hidden,
                    cudaStream_t stream) {
  RAGGED_LAUNCH(add_gated_rows_kernel, count * hidden, dev(out), dev(y), rows, gates, count * hidden, hidden);
}

template <typename S>
void gate_backward(S* y_dy, double* dgates, const S* dout, const int32_t* rows, const int32_t* slots,
                   const float* gates, int64_t count, int64_t hidden, cudaStream_t stream) {
  if (count <= 0) return;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>(count, kMaxBlocks));
  gate_backward_kernel<<<blocks, kThreads, 0, stream>>>(dev(y_dy), dgates, dev(dout), rows, slots, gates, count,
                                                        hidden);
  CUDA_CHECK_LAUNCH();
}

template <typename S>
void gate_softmax_backward(S* dlogits, const double* dgates, const int32_t* slot_experts, const float* slot_gates,
                           int64_t tokens, int64_t top_k, int64_t experts, cudaStream_t stream) {
  RAGGED_LAUNCH(gate_softmax_backward_kernel, tokens, dev(dlogits), dgates, slot_experts, slot_gates, tokens, top_k,
                experts);
}

#define RAGGED_STORAGE(S)                                                                                            \
  template void gather_rows(S*, const S*, const int32_t*, int64_t, int64_t, cudaStream_t);                           \
  template void add_rows(S*, const S*, const int32_t*, int64_t, int64_t, cudaStream_t);                              \
  template void add_gated_rows(S*, const S*, const int32_t*, const float*, int64_t, int64_t, cudaStream_t);          \
  template void gate_backward(S*, double*, const S*, const int32_t*, const int32_t*, const float*, int64_t, int64_t, \
                              cudaStream_t);                                                                         \
  template void gate_softmax_backward(S*, const double*, const int32_t*, const float*, int64_t, int64_t, int64_t,    \
                                      cudaStream_t);
RAGGED_STORAGE(float)
RAGGED_STORAGE(uint16_t)
#undef RAGGED_STORAGE

}  // namespace ragged::backend::gpu
