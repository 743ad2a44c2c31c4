#pragma once
// Row-major GEMMs on cuBLAS (cublasGemmEx): C[m x n] = alpha * op(A) op(B) +
// beta * C, with op(A) m x k and op(B) k x n. Matrices are row-major and
// densely packed, as in the rest of Ragged: A is stored m x k (k x m when
// transposed), B k x n (n x k when transposed), C m x n. cuBLAS is
// column-major, so the call computes C^T = op(B)^T op(A)^T, which reads the
// same memory (see gemm.cpp).
//
// fp32 GEMMs run in plain fp32 by default: the handle's math mode is
// CUBLAS_DEFAULT_MATH (cuda_device.cpp), and Fp32Mode::pedantic also forbids
// any reduced-precision internal path. bf16 GEMMs take bf16 operands (raw
// bits, kernels.hpp) and accumulate in fp32, writing fp32 or bf16.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ragged::backend::gpu {

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool transpose_a = false;  // A stored k x m
  bool transpose_b = false;  // B stored n x k
  // Row strides in elements when a matrix is a view into a wider one (a
  // head's columns of [tokens, heads, dim]); 0: densely packed.
  int64_t lda = 0, ldb = 0, ldc = 0;
};

enum class Fp32Mode {
  pedantic,  // CUBLAS_COMPUTE_32F_PEDANTIC: fp32 throughout, nothing faster
  standard,  // CUBLAS_COMPUTE_32F: fp32 (TF32 only if the math mode allows it)
  tf32,      // CUBLAS_COMPUTE_32F_FAST_TF32: tensor cores with TF32 inputs
};

// fp32 x fp32 -> fp32.
void gemm_f32(cublasHandle_t handle, cudaStream_t stream, const GemmShape& shape, const float* a, const float* b,
              float* c, float alpha = 1.0f, float beta = 0.0f, Fp32Mode mode = Fp32Mode::pedantic);
// bf16 x bf16 -> fp32, fp32 accumulation (CUBLAS_COMPUTE_32F).
void gemm_bf16_f32(cublasHandle_t handle, cudaStream_t stream, const GemmShape& shape, const uint16_t* a,
                   const uint16_t* b, float* c, float alpha = 1.0f, float beta = 0.0f);
// bf16 x bf16 -> bf16, fp32 accumulation (CUBLAS_COMPUTE_32F).
void gemm_bf16(cublasHandle_t handle, cudaStream_t stream, const GemmShape& shape, const uint16_t* a, const uint16_t* b,
               uint16_t* c, float alpha = 1.0f, float beta = 0.0f);

// The arguments of the column-major cublasGemmEx call that computes a
// row-major GEMM (gemm.cpp): C^T (n x m) = op(B)^T op(A)^T, B passed first.
// Exposed so that tests can replay the call on the host.
struct ColumnMajorCall {
  cublasOperation_t op_first = CUBLAS_OP_N, op_second = CUBLAS_OP_N;  // applied to B, then A
  int rows = 0, cols = 0, inner = 0;                                  // n, m, k
  int ld_first = 1, ld_second = 1, ld_out = 1;                        // ldb, lda, ldc
};
// Throws InputError when a dimension does not fit cuBLAS's int.
ColumnMajorCall column_major_call(const GemmShape& shape);

// The elements of A (m k), B (k n) and C (m n) of a shape.
inline int64_t a_elements(const GemmShape& s) { return s.m * s.k; }
inline int64_t b_elements(const GemmShape& s) { return s.k * s.n; }
inline int64_t c_elements(const GemmShape& s) { return s.m * s.n; }

// 2 m n k: the FLOPs of one GEMM.
inline double gemm_flops(const GemmShape& shape) {
  return 2.0 * static_cast<double>(shape.m) * static_cast<double>(shape.n) * static_cast<double>(shape.k);
}

}  // namespace ragged::backend::gpu
