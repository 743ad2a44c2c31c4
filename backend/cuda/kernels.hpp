#pragma once
// The element-wise kernels of the CUDA backend, as host functions that
// launch on a stream (asynchronous; a launch error throws InternalError
// through CUDA_CHECK_LAUNCH). Pointers are device pointers; counts are
// elements; a count of 0 launches nothing.
//
// Every kernel computes what the host computes, bit for bit: products and
// sums are rounded separately (__fmul_rn/__fadd_rn, never contracted into an
// FMA), division and square root are IEEE-rounded, so a device result can be
// compared with the host's exactly (tests/backend/cuda_kernels_test.cpp).
//
// bfloat16 values travel as their raw 16 bits (uint16_t), so that the
// interface compiles without cuda_bf16.h.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/optimizer_adamw_kernel.hpp"
#include "backend/optimizer_math.hpp"

namespace ragged::backend::gpu {

// out[i] = value.
void fill(float* out, int64_t n, float value, cudaStream_t stream);
// out[i] = bits (raw bfloat16), e.g. a NaN to poison an output.
void fill_bf16(uint16_t* out, int64_t n, uint16_t bits, cudaStream_t stream);
// Fresh inputs without host traffic: uniform in (-scale, scale), never 0, a
// pure function of (seed, i).
void fill_random(float* out, int64_t n, uint64_t seed, float scale, cudaStream_t stream);
void fill_random_bf16(uint16_t* out, int64_t n, uint64_t seed, float scale, cudaStream_t stream);

// dst[i] = src[i] (16-byte vector accesses when both are 16-byte aligned).
// `dst` and `src` must not overlap.
void copy(float* dst, const float* src, int64_t n, cudaStream_t stream);
// out[i] = bf16(in[i]), rounded to nearest even (NaN stays NaN).
void cast_to_bf16(uint16_t* out, const float* in, int64_t n, cudaStream_t stream);
// out[i] = float(in[i]) (exact).
void cast_to_f32(float* out, const uint16_t* in, int64_t n, cudaStream_t stream);
// y[i] = a * x[i] + y[i], the product rounded before the sum.
void axpy(float* y, float a, const float* x, int64_t n, cudaStream_t stream);
// x[i] = a * x[i].
void scale(float* x, float a, int64_t n, cudaStream_t stream);

// *count (device memory) += the elements of x[0, n) that are NaN or
// infinite: the device-side scan behind the run's non-finite check, so a
// finite step moves no parameters to the host.
void count_non_finite(const float* x, int64_t n, unsigned long long* count, cudaStream_t stream);

// One AdamW step on n elements, the formula and order of operations of
// backend/optimizer_adamw_kernel.hpp (torch.optim.AdamW), with the step's
// constants computed on the host exactly as adamw_step computes them.
void adamw_step(float* params, const float* grads, float* m, float* v, int64_t n,
                const detail::AdamWConstants& constants, cudaStream_t stream);
void adamw_step(float* params, const float* grads, float* m, float* v, int64_t n, int64_t step, const AdamWParams& p,
                cudaStream_t stream);

// One SGD step on n elements, backend::sgd_step's operations in its order
// (torch.optim.SGD: weight decay into the gradient, the momentum buffer, the
// parameter), each rounded as the host rounds it. `momentum` may be null when
// p.momentum is 0.
void sgd_step(float* params, const float* grads, float* momentum, int64_t n, int64_t step, const SgdParams& p,
              cudaStream_t stream);

// out[i] = ((0 + slots[0][i]) + slots[1][i]) + ... : the slots of `count`
// elements summed in slot order (ordered reductions, communicator.hpp).
// `out` may alias no slot.
void sum_slots_in_order(float* out, const float* slots, int slot_count, int64_t count, cudaStream_t stream);

// A kernel that does nothing (launch overhead measurements).
void launch_empty_kernel(cudaStream_t stream);

}  // namespace ragged::backend::gpu
