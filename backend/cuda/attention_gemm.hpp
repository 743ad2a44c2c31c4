#pragma once
// Causal attention as cuBLAS GEMMs, one (sequence, head) at a time: the
// scores S = scale q k^T of a head land in a seq_len x seq_len scratch, a
// row kernel turns them into the causal softmax P, and u = P v; backward
// recomputes S and P, then dP = du v^T, dv += P^T du, dS = P (dP - rowsum(P dP))
// scale, dk += dS^T q, dq = dS k. The reference kernels (attention_kernels.cu)
// run the same function with float64 sums one query at a time, far too slow
// for a long sequence (an 8,192-token Llama-3-8B layer is 10^9 query-key
// pairs); this path runs at tensor-core rates and reads each score twice.
// It computes the masked upper triangle too (the GEMMs are square) and is
// taken where the reference's extras are absent: no q/k norms, no context
// parallelism (every query of a sequence, positions null).
//
// The steps are data (gemm_attention_*_steps), so that a host test replays
// them against the host workload's attention (tests/backend/
// cuda_attention_gemm_test.cpp) and the device only maps buffers to
// pointers (run_gemm_attention_*).

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/cuda/gemm.hpp"
#include "backend/cuda/workload_kernels.hpp"

namespace ragged::backend::gpu {

enum class AttentionBuffer {
  kQuery,       // q [tokens, heads, dim]
  kKey,         // k [tokens, groups, dim]
  kValue,       // v [tokens, groups, dim]
  kOutput,      // u [tokens, heads, dim]
  kOutputGrad,  // du on entry to backward, dq on return (a head's columns at a time)
  kKeyGrad,     // dk [tokens, groups, dim]
  kValueGrad,   // dv [tokens, groups, dim]
  kScores,      // scratch, fp32 [seq_len, seq_len]: S, then P in fp32
  kProbs,       // scratch, the compute dtype: P, the GEMMs' operand
  kProbGrads,   // scratch, fp32: dP
  kScoreGrads,  // scratch, the compute dtype: dS (scaled)
};

struct AttentionOperand {
  AttentionBuffer buffer = AttentionBuffer::kQuery;
  int64_t offset = 0;  // elements from the buffer's start
};

// C = alpha op(A) op(B) + beta C (row-major, gemm.hpp; shape's lda/ldb/ldc
// are the views' row strides). C is fp32 when it is kScores or kProbGrads,
// else in the compute dtype.
struct AttentionGemm {
  GemmShape shape;
  AttentionOperand a, b, c;
  float alpha = 1.0f, beta = 0.0f;
};

enum class AttentionRowOp {
  // kScores' row i (fp32 S) becomes its causal softmax over columns 0..i, 0
  // after: kept in kScores (fp32) and written to kProbs (compute dtype).
  kCausalSoftmax,
  // The same written to kProbs only (the forward, whose GEMM reads kProbs;
  // kScores keeps S): a third less traffic.
  kCausalSoftmaxProbsOnly,
  // kScoreGrads_ij = P_ij (dP_ij - sum_l P_il dP_il) scale, from P (kScores)
  // and dP (kProbGrads); 0 above the diagonal.
  kCausalSoftmaxBackward,
};

struct AttentionStep {
  bool is_gemm = true;
  AttentionGemm gemm;  // when is_gemm
  AttentionRowOp rows = AttentionRowOp::kCausalSoftmax;
};

// True when the GEMM path computes what attention_forward/backward would:
// whole sequences, no q/k norms.
bool gemm_attention_applies(const AttentionShape& shape, bool has_qk_norms);
// Scratch the path needs: kScores, kProbs, kProbGrads and kScoreGrads for one
// head, element_bytes the compute dtype's (4 or 2).
int64_t gemm_attention_scratch_bytes(int64_t seq_len, int64_t element_bytes);
// 1 / sqrt(dim), as the reference kernels and the host workload take it.
float gemm_attention_scale(const AttentionShape& shape);

std::vector<AttentionStep> gemm_attention_forward_steps(const AttentionShape& shape);
std::vector<AttentionStep> gemm_attention_backward_steps(const AttentionShape& shape);

// The steps on the device. `scratch` holds gemm_attention_scratch_bytes; S is
// float or uint16_t (bf16 bits). Backward: du_dq holds du on entry and dq on
// return; dk and dv are overwritten.
template <typename S>
void run_gemm_attention_forward(cublasHandle_t handle, cudaStream_t stream, S* u, const S* q, const S* k, const S* v,
                                const AttentionShape& shape, std::byte* scratch);
template <typename S>
void run_gemm_attention_backward(cublasHandle_t handle, cudaStream_t stream, S* du_dq, S* dk, S* dv, const S* q,
                                 const S* k, const S* v, const AttentionShape& shape, std::byte* scratch);

// The row kernels (attention_rows.cu), on one head's seq_len x seq_len scratch.
template <typename S>
void causal_softmax_rows(float* scores, S* probs, int64_t rows, bool keep_fp32, cudaStream_t stream);
template <typename S>
void causal_softmax_backward_rows(const float* probs, const float* prob_grads, S* score_grads, int64_t rows,
                                  float scale, cudaStream_t stream);

}  // namespace ragged::backend::gpu
