#pragma once
// The element-wise kernels of the GPU workload (gpu_workload.hpp): the host
// workload's math between the GEMMs (backend/workload_*.cpp), operation for
// operation. Each is a template over the storage type S of activations and
// parameters, float or bfloat16 (as its raw bits, uint16_t, as in
// kernels.hpp), and, for gradients of parameters, G; the math is fp32 (sums
// over rows in double, as the host's), products and sums rounded one by one
// (never contracted into an FMA), so that fp32 results match the host's.
// Reductions run in a fixed order, without atomics: results are
// reproducible bit for bit. Launches are asynchronous on `stream`; a launch
// error throws InternalError (CUDA_CHECK_LAUNCH). Where an output may alias
// an input it says so.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ragged::backend::gpu {

// x[t, :] = table[tokens[t], :], zeros for a negative id (a row another
// tensor-parallel rank holds).
template <typename S>
void embedding_gather(S* x, const S* table, const int32_t* tokens, int64_t count, int64_t hidden, cudaStream_t stream);
// dtable[v, :] = the sum, in order, of dx[p, :] over the positions p of
// order[rows[v]], ..., order[rows[v + 1] - 1] (0 when none): every row written.
template <typename S, typename G>
void embedding_backward(G* dtable, const S* dx, const int32_t* order, const int32_t* rows, int64_t vocab,
                        int64_t hidden, cudaStream_t stream);

// y[r, c] = x[r, c] * w[c]; y may alias x.
template <typename S>
void scale_columns(S* y, const S* x, const S* w, int64_t rows, int64_t cols, cudaStream_t stream);
// kept = x and y = x * w (a unit keeping its input as it normalises it).
template <typename S>
void keep_and_scale_columns(S* kept, S* y, const S* x, const S* w, int64_t rows, int64_t cols, cudaStream_t stream);
// y[r, c] += bias[c].
template <typename S>
void add_bias(S* y, const S* bias, int64_t rows, int64_t cols, cudaStream_t stream);
// out = a + b; out may alias a or b.
template <typename S>
void add(S* out, const S* a, const S* b, int64_t n, cudaStream_t stream);
// out[r, c] = d[r, c] + dn[r, c] * w[c] (a residual's gradient through a
// column scale); out may alias d.
template <typename S>
void add_scaled_columns(S* out, const S* d, const S* dn, const S* w, int64_t rows, int64_t cols, cudaStream_t stream);
// out[c] = sum over rows of a[r, c] * b[r, c], or of a[r, c] when b is null
// (a norm weight's or a bias's gradient).
template <typename S, typename G>
void column_sums(G* out, const S* a, const S* b, int64_t rows, int64_t cols, cudaStream_t stream);

// RMSNorm of each row, the host's rms_norm_forward (workload_gemm.cpp): y =
// float(x rstd) * w, rstd = 1/sqrt(mean(x^2) + 1e-5) in double; one block
// per row. y may alias x.
template <typename S>
void rms_norm_forward(S* y, const S* x, const S* w, int64_t rows, int64_t cols, cudaStream_t stream);
// kept = x and y = rms_norm(x) (a unit keeping its input as it normalises it).
template <typename S>
void keep_and_rms_norm(S* kept, S* y, const S* x, const S* w, int64_t rows, int64_t cols, cudaStream_t stream);
// out = d + dx, dx = rstd (g - n mean(g n)), g = dy w, n = float(x rstd)
// (d null: out = dx); out may alias d or dy.
template <typename S>
void rms_norm_backward(S* out, const S* d, const S* dy, const S* x, const S* w, int64_t rows, int64_t cols,
                       cudaStream_t stream);
// dw[c] = sum over rows of dy[r, c] float(x[r, c] rstd(r)), in double.
template <typename S, typename G>
void rms_norm_weight_grad(G* dw, const S* dy, const S* x, int64_t rows, int64_t cols, cudaStream_t stream);

// Causal softmax attention within each sequence of seq_len tokens, the
// host's core_forward (workload_attention.cpp) for q/k and v heads of one
// width: q [tokens, heads, dim], k and v [tokens, groups, dim], head h reads
// kv head h / (heads / groups), scale 1/sqrt(dim); q and k rows RMSNormed
// with q_norm/k_norm first when those are not null. One block per (token,
// head); naive: scores are recomputed rather than kept. The reference the
// GEMM attention (attention_gemm.hpp) is checked against, and what runs
// where that one does not apply (q/k norms, context parallelism) or
// RAGGED_GPU_ATTENTION=reference asks for it.
//
// Context parallelism (the host's CoreShape::queries and positions): the
// `tokens` rows of q are `queries` a sequence, query i at position
// positions[i] (device memory) of its sequence, and k and v hold every
// token of those tokens / queries sequences, seq_len each; query i reads
// its sequence's keys up to its position. queries 0: every token a query
// at its own position (positions unused).
struct AttentionShape {
  int64_t tokens = 0, seq_len = 0, heads = 0, groups = 0, dim = 0;
  int64_t queries = 0;
  const int32_t* positions = nullptr;
  int64_t queries_per_sequence() const { return queries > 0 ? queries : seq_len; }
  int64_t key_rows() const { return tokens / queries_per_sequence() * seq_len; }
};
template <typename S>
void attention_forward(S* u, const S* q, const S* k, const S* v, const S* q_norm, const S* k_norm,
                       const AttentionShape& shape, cudaStream_t stream);
// du_dq holds du on entry and the gradient of the (normed) q on return; dk,
// dv (key_rows() rows) the gradients of the (normed) k and of v, summed over
// each group's heads and its queries. stats: 2 doubles per (token, head) of scratch (log-sum-exp, du.u).
template <typename S>
void attention_backward(S* du_dq, S* dk, S* dv, double* stats, const S* u, const S* q, const S* k, const S* v,
                        const S* q_norm, const S* k_norm, const AttentionShape& shape, cudaStream_t stream);

// m = silu(g) * up; m may alias g or up.
template <typename S>
void swiglu_forward(S* m, const S* g, const S* up, int64_t n, cudaStream_t stream);
// dm_dg holds dm on entry and dg on return; dup = dm * silu(g).
template <typename S>
void swiglu_backward(S* dm_dg, S* dup, const S* g, const S* up, int64_t n, cudaStream_t stream);

// Per row of fp32 logits, in place: the softmax probabilities, and the row's
// cross-entropy max + log(sum exp) - logit[label] in double.
void softmax_cross_entropy(float* logits, const int32_t* labels, double* row_losses, int64_t rows, int64_t vocab,
                           cudaStream_t stream);
// sum[0] += (the rows' losses summed in a fixed order) / rows.
void add_mean_loss(double* sum, const double* row_losses, int64_t rows, cudaStream_t stream);
// dlogits = (probs - onehot(label)) / rows; D float (may alias probs) or S.
template <typename D>
void cross_entropy_backward(D* dlogits, const float* probs, const int32_t* labels, int64_t rows, int64_t vocab,
                            cudaStream_t stream);

}  // namespace ragged::backend::gpu
