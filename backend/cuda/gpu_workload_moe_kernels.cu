// The GPU workload's mixture-of-experts kernels (gpu_workload_moe_kernels.hpp).
// Element-wise ones stride over (copy, column); the gate's backward takes one
// block per copy, its row sum reduced in a fixed order in double.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/gpu_workload_moe_kernels.hpp"
#include "backend/cuda/workload_device.cuh"

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

// 1 / (1 + exp(-logit)), as the host's routing computes a gate.
__device__ inline float gate_of(const GateColumn& gate, int64_t token) {
  const float logit = gate.logits[token * gate.experts + gate.expert];
  return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-logit)));
}

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
__global__ void add_gated_rows_kernel(T* out, const T* y, const int32_t* rows, GateColumn gate, int64_t n,
                                      int64_t hidden) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t token = rows[i / hidden];
    T& dst = out[token * hidden + i % hidden];
    store(dst, __fadd_rn(load(dst), __fmul_rn(gate_of(gate, token), load(y[i]))));
  }
}

template <typename T>
__global__ void gate_backward_kernel(T* y_dy, T* dlogits, const T* dout, const int32_t* rows, GateColumn gate,
                                     int64_t count, int64_t hidden) {
  for (int64_t i = blockIdx.x; i < count; i += gridDim.x) {
    const int64_t token = rows[i];
    const T* d = dout + token * hidden;
    T* row = y_dy + i * hidden;
    double dot = 0;
    for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
      dot += static_cast<double>(load(d[j])) * static_cast<double>(load(row[j]));
    }
    // Every thread has read its y before any overwrites it with dy.
    dot = block_reduce(dot, 0.0, [](double a, double b) { return a + b; });
    const float g = gate_of(gate, token);
    for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) store(row[j], __fmul_rn(g, load(d[j])));
    if (threadIdx.x == 0) {
      store(dlogits[token * gate.experts + gate.expert],
            __fmul_rn(__fmul_rn(static_cast<float>(dot), g), __fsub_rn(1.0f, g)));
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
void add_gated_rows(S* out, const S* y, const int32_t* rows, const GateColumn& gate, int64_t count, int64_t hidden,
                    cudaStream_t stream) {
  RAGGED_LAUNCH(add_gated_rows_kernel, count * hidden, dev(out), dev(y), rows, gate, count * hidden, hidden);
}


template <typename S>
void gate_backward(S* y_dy, S* dlogits, const S* dout, const int32_t* rows, const GateColumn& gate, int64_t count,
                   int64_t hidden, cudaStream_t stream) {
  if (count <= 0) return;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>(count, kMaxBlocks));
  gate_backward_kernel<<<blocks, kThreads, 0, stream>>>(dev(y_dy), dev(dlogits), dev(dout), rows, gate, count,
                                                        hidden);
  CUDA_CHECK_LAUNCH();
}

#define RAGGED_STORAGE(S)                                                                                      \
  template void gather_rows(S*, const S*, const int32_t*, int64_t, int64_t, cudaStream_t);                     \
  template void add_rows(S*, const S*, const int32_t*, int64_t, int64_t, cudaStream_t);                        \
  template void add_gated_rows(S*, const S*, const int32_t*, const GateColumn&, int64_t, int64_t, cudaStream_t); \
  template void gate_backward(S*, S*, const S*, const int32_t*, const GateColumn&, int64_t, int64_t, cudaStream_t);
RAGGED_STORAGE(float)
RAGGED_STORAGE(uint16_t)
#undef RAGGED_STORAGE

}  // namespace ragged::backend::gpu
