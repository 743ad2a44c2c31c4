// Row-major GEMMs through cublasGemmEx.
//
// A row-major matrix X of r x c, read by column-major cuBLAS with leading
// dimension c, is X^T. So for row-major C = op(A) op(B) we ask cuBLAS for the
// column-major C^T = op(B)^T op(A)^T, passing B first:
//   B stored k x n (no transpose): cuBLAS sees B^T = op(B)^T: CUBLAS_OP_N, ldb = n;
//   B stored n x k (transposed):   cuBLAS sees B, op(B)^T = B: CUBLAS_OP_T, ldb = k;
// and likewise A (m x k: OP_N, lda = k; k x m: OP_T, lda = m); ldc = n.

#include "backend/cuda/gemm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "backend/cuda/cuda_check.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu {
namespace {

int to_int(int64_t value, const char* what) {
  if (value < 0 || value > INT_MAX) {
    throw InputError(fmt::format("GEMM {} = {} is outside what cuBLAS's 32-bit interface takes", what, value));
  }
  return static_cast<int>(value);
}

void gemm_ex(cublasHandle_t handle, cudaStream_t stream, const GemmShape& s, const void* a, const void* b, void* c,
             cudaDataType_t ab_type, cudaDataType_t c_type, cublasComputeType_t compute, float alpha, float beta) {
  RAGGED_ASSERT(s.m >= 0 && s.n >= 0 && s.k >= 0, "GEMM dimensions are non-negative");
  if (s.m == 0 || s.n == 0) return;
  const ColumnMajorCall call = column_major_call(s);
  CUBLAS_CHECK(cublasSetStream(handle, stream));
  CUBLAS_CHECK(cublasGemmEx(handle, call.op_first, call.op_second, call.rows, call.cols, call.inner, &alpha, b, ab_type,
                            call.ld_first, a, ab_type, call.ld_second, &beta, c, c_type, call.ld_out, compute,
                            CUBLAS_GEMM_DEFAULT));
}

cublasComputeType_t compute_type(Fp32Mode mode) {
  switch (mode) {
    case Fp32Mode::pedantic:
      return CUBLAS_COMPUTE_32F_PEDANTIC;
    case Fp32Mode::standard:
      return CUBLAS_COMPUTE_32F;
    case Fp32Mode::tf32:
      return CUBLAS_COMPUTE_32F_FAST_TF32;
  }
  return CUBLAS_COMPUTE_32F_PEDANTIC;
}

}  // namespace

ColumnMajorCall column_major_call(const GemmShape& s) {
  ColumnMajorCall call;
  const int m = to_int(s.m, "m"), n = to_int(s.n, "n"), k = to_int(s.k, "k");
  call.op_first = s.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  call.op_second = s.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  call.rows = n;
  call.cols = m;
  call.inner = k;
  // Leading dimensions are at least 1, also for empty matrices (cuBLAS rejects 0).
  // A row-major row stride is the column-major leading dimension of the same memory.
  const int packed_b = s.transpose_b ? k : n, packed_a = s.transpose_a ? m : k;
  call.ld_first = std::max(1, s.ldb > 0 ? to_int(s.ldb, "ldb") : packed_b);
  call.ld_second = std::max(1, s.lda > 0 ? to_int(s.lda, "lda") : packed_a);
  call.ld_out = std::max(1, s.ldc > 0 ? to_int(s.ldc, "ldc") : n);
  if (call.ld_first < packed_b || call.ld_second < packed_a || call.ld_out < n) {
    throw InputError(fmt::format("GEMM {}x{}x{}: a row stride (lda {}, ldb {}, ldc {}) is shorter than its row",
                                 s.m, s.n, s.k, s.lda, s.ldb, s.ldc));
  }
  return call;
}

void gemm_f32(cublasHandle_t handle, cudaStream_t stream, const GemmShape& shape, const float* a, const float* b,
              float* c, float alpha, float beta, Fp32Mode mode) {
  gemm_ex(handle, stream, shape, a, b, c, CUDA_R_32F, CUDA_R_32F, compute_type(mode), alpha, beta);
}

void gemm_bf16_f32(cublasHandle_t handle, cudaStream_t stream, const GemmShape& shape, const uint16_t* a,
                   const uint16_t* b, float* c, float alpha, float beta) {
  gemm_ex(handle, stream, shape, a, b, c, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, alpha, beta);
}

void gemm_bf16(cublasHandle_t handle, cudaStream_t stream, const GemmShape& shape, const uint16_t* a, const uint16_t* b,
               uint16_t* c, float alpha, float beta) {
  gemm_ex(handle, stream, shape, a, b, c, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, alpha, beta);
}

}  // namespace ragged::backend::gpu
