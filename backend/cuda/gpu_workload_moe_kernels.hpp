#pragma once
// The mixture-of-experts kernels of the GPU workload (gpu_workload_moe.cpp):
// moving token rows to and from their experts' order, and the gates, the
// host workload's math (workload_moe.cpp) as in workload_kernels.hpp: fp32
// math, products and sums rounded one by one, fixed orders, no atomics.
// Every `rows` lists distinct tokens (one expert's copies), so row updates
// never race.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ragged::backend::gpu {

// out[i, :] = x[rows[i], :] for i < count.
template <typename S>
void gather_rows(S* out, const S* x, const int32_t* rows, int64_t count, int64_t hidden, cudaStream_t stream);
// out[rows[i], :] += x[i, :].
template <typename S>
void add_rows(S* out, const S* x, const int32_t* rows, int64_t count, int64_t hidden, cudaStream_t stream);

// Which expert's gate: sigmoid(logits[token * experts + expert]).
struct GateColumn {
  const float* logits = nullptr;  // fp32 [tokens x experts]
  int64_t expert = 0, experts = 0;
};
// out[rows[i], :] += gate(rows[i]) * y[i, :].
template <typename S>
void add_gated_rows(S* out, const S* y, const int32_t* rows, const GateColumn& gate, int64_t count, int64_t hidden,
                    cudaStream_t stream);
// Per copy i of token r = rows[i], with the expert's output y on entry:
// dlogits[r, expert] = (sum_j dout[r, j] y[i, j], in double) g (1 - g), g
// = gate(r); then y_dy[i, :] = g * dout[r, :] (the expert output's gradient).
template <typename S>
void gate_backward(S* y_dy, S* dlogits, const S* dout, const int32_t* rows, const GateColumn& gate, int64_t count,
                   int64_t hidden, cudaStream_t stream);

}  // namespace ragged::backend::gpu
