#pragma once
// The mixture-of-experts kernels of the GPU workload (gpu_workload_moe.cpp):
// moving token rows to and from their experts' order, and the gates (softmax
// over each token's chosen router logits), the
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

// The routed experts' gates (the host's moe_forward/moe_backward), one
// expert's copies at a time.
// out[rows[i], :] += gates[i] * y[i, :].
template <typename S>
void add_gated_rows(S* out, const S* y, const int32_t* rows, const float* gates, int64_t count, int64_t hidden,
                    cudaStream_t stream);
// Per copy i of token r = rows[i], with the expert's output y on entry:
// dgates[slots[i]] = sum_j dout[r, j] y[i, j] in double; then y_dy[i, :] =
// gates[i] * dout[r, :] (the expert output's gradient).
template <typename S>
void gate_backward(S* y_dy, double* dgates, const S* dout, const int32_t* rows, const int32_t* slots,
                   const float* gates, int64_t count, int64_t hidden, cudaStream_t stream);
// Through each token's softmax over its chosen logits, slot s = t top_k + j
// of expert slot_experts[s] and gate w_s = slot_gates[s]: dlogits[t,
// slot_experts[s]] = w_s (dgates[s] - sum_j w_j dgates[j]), in double;
// entries of experts a token did not choose are left alone.
template <typename S>
void gate_softmax_backward(S* dlogits, const double* dgates, const int32_t* slot_experts, const float* slot_gates,
                           int64_t tokens, int64_t top_k, int64_t experts, cudaStream_t stream);

}  // namespace ragged::backend::gpu
