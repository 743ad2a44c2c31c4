#pragma once
// Internal to the host workload: GEMM helpers, where each tensor of a unit
// sits, and the forward/backward of each part of a unit.
//
// The math (fp32, T tokens = sequences x seq_len, h hidden; rms(x) is
// RMSNorm, x / sqrt(mean(x^2) + 1e-5) times the norm's weight):
//   embed   x = E[token]
//   block   n1 = rms(x); q,k,v = projections of n1 (+bias; q_norm/k_norm: rms
//           per head); u = causal softmax attention of each sequence
//           (kv head = head / (heads / kv_heads), scale 1/sqrt(qk_dim), a
//           sink logit per head joining the softmax's denominator);
//           x1 = x + o_proj(u); n2 = rms(x1); x2 = x1 + swiglu_mlp(n2), or
//           with experts x2 = x1 + sum_j w_j expert_{e_j}(n2) + shared(n2):
//           r = router(n2) (+bias), e_j the top_k logits (ties: lowest
//           expert), w = softmax over the chosen logits (softmax over every
//           expert, top-k, renormalised).
//           MLA: q = q_b(rms(q_a(n1))) (or q_proj(n1)); kv = kv_a(n1);
//           c = rms(kv[:kv_lora]); [k_nope|v] = kv_b(c) per head;
//           k = [k_nope | kv[kv_lora:]] (the rope part shared by the heads).
//   head    logits = rms(x) W^T (W = lm_head or the tied embedding);
//           loss = mean cross-entropy, d logits = (softmax - onehot)/T.
// Not modelled: rotary embeddings (positions enter through the causal mask
// only), sliding windows (every layer attends to its whole causal context),
// DeepSeek's sigmoid scores and group-limited routing.
// Every gradient contribution is computed whole in scratch, then added to
// its gradient once, so repeating a backward adds exactly the same values.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backend/workload.hpp"
#include "models/model_spec.hpp"

namespace ragged::backend::detail {

using Buf = std::vector<float>;

// The GEMM runner: counts FLOPs and owns the scratch gradients land in.
struct Ctx {
  double flops = 0;
  Buf scratch;

  float* scratch_of(int64_t n);
  // C[m x n] = op(A) op(B) + beta C; all row-major and contiguous.
  void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float beta,
            float* c);
};

// dst[i] += src[i].
void add_into(float* dst, const float* src, int64_t n);
// dst[c] += sum over rows of src[r, c] (summed in double, row order).
void add_column_sums(float* dst, const float* src, int64_t rows, int64_t cols);
// dst[c] += sum over rows of a[r, c] * b[r, c].
void add_column_dots(float* dst, const float* a, const float* b, int64_t rows, int64_t cols);
// y[r, c] = x[r, c] * w[c].
void scale_columns(const float* x, const float* w, int64_t rows, int64_t cols, float* y);

// The model spec carries no norm epsilon: 1e-5, Llama's.
inline constexpr double kNormEps = 1e-5;
// RMSNorm of each row: y = float(x * rstd) * w, rstd = 1 / sqrt(mean(x^2) + eps),
// sums in double. y may alias x.
void rms_norm_forward(const float* x, const float* w, int64_t rows, int64_t cols, float* y);
// dx = rstd (g - n mean(g n)), g = dy w, n = float(x rstd); dw += sum over
// rows of dy n (in double, row order). dx may alias dy; dw may be null.
void rms_norm_backward(const float* x, const float* w, const float* dy, int64_t rows, int64_t cols, float* dx,
                       float* dw);

// y = x W^T (+ b), W [out x in]: one projection, its tensors and gradients.
struct Linear {
  const float* w = nullptr;
  const float* b = nullptr;
  float* dw = nullptr;
  float* db = nullptr;
  int64_t out = 0;
  int64_t in = 0;
  bool x_at_w = false;  // W stored [in x out], y = x W (fused experts)
};

void linear_forward(Ctx& ctx, const Linear& lin, const float* x, int64_t rows, float* y);
// dx = dy W^T... (+ beta dx); dW, db += this pass. dx may be null.
void linear_backward(Ctx& ctx, const Linear& lin, const float* x, const float* dy, int64_t rows, float* dx, float beta);

// Where a projection's tensors sit in the unit (-1: absent).
struct LinearSlot {
  int weight = -1;
  int bias = -1;
  int64_t out = 0;
  int64_t in = 0;
};

Linear bind_linear(const LinearSlot& slot, const ConstTensors& params, const Tensors* grads);
const float* param_at(const ConstTensors& params, int index);
float* grad_at(const Tensors* grads, int index);

// ---- layouts: tensor indices of a block, found by name ----

struct AttentionLayout {
  bool mla = false;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t qk_dim = 0;  // per head
  int64_t v_dim = 0;   // per head
  LinearSlot q, k, v, o;
  int q_norm = -1, k_norm = -1, sinks = -1;
  // MLA (q is used when q_lora == 0)
  int64_t q_lora = 0, kv_lora = 0, nope = 0, rope = 0;
  LinearSlot q_a, q_b, kv_a, kv_b;
  int q_a_norm = -1, kv_a_norm = -1;
};

// A SwiGLU MLP: gate and up to `width`, down back to hidden. Fused experts
// keep gate and up in one [E, h, 2f] tensor (columns [0,f) gate, [f,2f) up).
struct GluLayout {
  bool fused = false;
  int64_t width = 0;
  LinearSlot gate, up, down;  // fused: gate = gate_up (and its bias), up unused
};

struct MoeLayout {
  int64_t experts = 0;  // the routed experts the router picks among (every rank's)
  int64_t top_k = 0;
  LinearSlot router;
  std::vector<GluLayout> routed;  // one per expert; fused: one for all; empty: in a unit of their own
  bool has_shared = false;
  GluLayout shared;
};

struct BlockLayout {
  int in_norm = -1, post_norm = -1;
  AttentionLayout attention;
  bool moe = false;
  // Expert parallelism: the routed experts are the next unit's
  // (models::UnitKind::kExperts), which adds their output and the residual.
  bool experts_apart = false;
  GluLayout dense;
  MoeLayout experts;
};

// The routed experts of a unit of their own: `local` of them (one expert-
// parallel rank's share), stored per expert or fused.
struct ExpertsLayout {
  int64_t local = 0;
  std::vector<GluLayout> routed;
};

struct HeadLayout {
  int norm = -1;
  int weight = -1;  // -1: tied, the embedding comes after the unit's tensors
};

BlockLayout block_layout(const models::ModelSpec& model, const models::UnitSpec& unit);
ExpertsLayout experts_layout(const models::ModelSpec& model, const models::UnitSpec& unit);
HeadLayout head_layout(const models::ModelSpec& model, const models::UnitSpec& unit);

// ---- caches: what forward keeps for backward ----

struct AttentionCache {
  Buf q_raw, k_raw, q, k, v, u;  // GQA: q_raw/k_raw before qk_norm
  std::vector<double> lse;       // per (token, head): log of the softmax's denominator
  Buf qa, qa_n, kv, c, kvb;      // MLA
};

struct GluCache {
  std::vector<int64_t> rows;   // routed experts: the tokens, in order
  std::vector<int64_t> slots;  // and which of the token's top_k choices each is
  std::vector<float> gates;    // and their gate values
  Buf x, g, up, m, y;
};

struct MoeCache {
  Buf logits;
  std::vector<int64_t> experts;  // [token, j]: the token's j-th expert (by logit, ties to the lowest)
  Buf weights;                   // [token, j]: its gate value
  std::vector<GluCache> routed;
  GluCache shared;
};

struct BlockCache {
  Buf n1, a, x1, n2, mlp_out;
  // Experts apart: the routed experts' input gradient and the gates'
  // gradients the experts unit's backward left for the block's.
  Buf dn2_routed;
  std::vector<double> dgates;
  AttentionCache attention;
  GluCache dense;
  MoeCache moe;
};

struct Dims {
  int64_t tokens = 0;
  int64_t hidden = 0;
  int64_t seq_len = 0;  // attention runs within each run of seq_len tokens
};

// ---- parts ----

void attention_forward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Dims& dims,
                       const float* n1, AttentionCache& cache, float* out);
// dn1 = gradient wrt n1 (overwritten).
void attention_backward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Tensors& grads,
                        const Dims& dims, const float* n1, const AttentionCache& cache, const float* dout, float* dn1);

// The attention in two parts around context parallelism's exchange of keys
// and values (GQA): the projections (cache.q, k, v of the rank's tokens),
// then the core over `shape`'s keys `k`, `v` (every token of the rank's
// sequences) and the output projection. The core's backward leaves dq for
// the rank's queries and dk, dv for every key; the projections' backward
// reads dq and the rank's own keys' dk, dv.
struct CoreShape;
void attention_input_forward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Dims& dims,
                             const float* n1, AttentionCache& cache);
void attention_core_forward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const CoreShape& shape,
                            const float* k, const float* v, AttentionCache& cache, float* out);
void attention_core_backward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Tensors& grads,
                             const CoreShape& shape, const float* k, const float* v, const AttentionCache& cache,
                             const float* dout, Buf& dq, Buf& dk, Buf& dv);
void attention_input_backward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Tensors& grads,
                              const Dims& dims, const float* n1, const AttentionCache& cache, Buf& dq, Buf& dk,
                              const Buf& dv, float* dn1);

// Causal softmax attention within each sequence of seq_len tokens: q
// [tokens, heads, qk_dim], k [tokens, groups, qk_dim], v [tokens, groups,
// v_dim], u [tokens, heads, v_dim]; head h reads kv head h / (heads /
// groups); a sink logit of head h (when sinks is not null) joins the
// denominator with no value. lse [tokens, heads] is kept for backward.
struct CoreShape {
  int64_t tokens = 0, seq_len = 0, heads = 0, groups = 0, qk_dim = 0, v_dim = 0;
  // Context parallelism: each sequence's keys are its seq_len tokens, its
  // queries `queries` of them (0: all), query i of a sequence at position
  // positions[i] (null: i); q, u, lse and dq hold queries' rows, k, v, dk
  // and dv keys' (tokens / seq_len sequences of seq_len).
  int64_t queries = 0;
  const int32_t* positions = nullptr;
  int64_t queries_per_sequence() const { return queries > 0 ? queries : seq_len; }
};
void core_forward(const CoreShape& s, const float* q, const float* k, const float* v, const float* sinks, float* u,
                  double* lse);
// dq, dk, dv overwritten; dsinks += this pass (when not null).
void core_backward(const CoreShape& s, const float* q, const float* k, const float* v, const float* sinks,
                   const float* u, const double* lse, const float* du, float* dq, float* dk, float* dv, float* dsinks);

void mla_forward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Dims& dims, const float* n1,
                 AttentionCache& cache);
void mla_backward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Tensors& grads,
                  const Dims& dims, const float* n1, const AttentionCache& cache, const float* dq, const float* dk,
                  const float* dv, float* dn1);

struct GluWeights {
  bool fused = false;
  int64_t hidden = 0, width = 0;
  Linear gate, up, down;  // fused: gate is gate_up [h x 2f]
};
GluWeights bind_glu(const GluLayout& lay, int64_t hidden, int64_t expert, const ConstTensors& params,
                    const Tensors* grads);
// cache.x holds the input rows; fills g, up, m, y.
void glu_forward(Ctx& ctx, const GluWeights& w, GluCache& cache);
// dx = gradient wrt cache.x (overwritten).
void glu_backward(Ctx& ctx, const GluWeights& w, const GluCache& cache, const float* dy, float* dx);

// From cache.logits [tokens x experts]: each token's top_k experts by logit
// (ties to the lowest index) and their gates (softmax over the chosen
// logits) into cache.experts/weights, and each expert's rows in token order.
void route_top_k(const MoeLayout& lay, int64_t tokens, MoeCache& cache);
// Routed expert `expert` of a layout (fused: its slice of the fused tensors).
GluWeights routed_weights(const std::vector<GluLayout>& routed, int64_t hidden, int64_t expert,
                          const ConstTensors& params, const Tensors* grads);
// out = the sum over experts, in expert order, of each routed row's gate x
// its expert's output (cache.routed[e].y), then + the shared experts' output.
void moe_combine(const MoeLayout& lay, const MoeCache& cache, int64_t tokens, int64_t hidden, float* out);
// Each routed row's output gradient (gate x dout) into dy[e], and d loss /
// d gate of each (token, choice) into dgates.
void moe_routed_gradients(const MoeLayout& lay, const MoeCache& cache, int64_t hidden, const float* dout,
                          std::vector<Buf>& dy, std::vector<double>& dgates);
// dn2 += expert e's input gradient rows (dx, its rows in token order).
void add_expert_rows(const GluCache& expert, int64_t hidden, const float* dx, float* dn2);
// The rest of the mixture's backward once the routed experts' input
// gradients are in dn2: the gates' softmax, the shared experts, the router.
void moe_finish_backward(Ctx& ctx, const MoeLayout& lay, const ConstTensors& params, const Tensors& grads,
                         const Dims& dims, const float* n2, const MoeCache& cache, const std::vector<double>& dgates,
                         const float* dout, float* dn2);
// out = the experts' (and shared experts') sum; dn2 overwritten. Experts
// apart (lay.routed empty): the routing and the shared experts' output only.
void moe_forward(Ctx& ctx, const MoeLayout& lay, const ConstTensors& params, const Dims& dims, const float* n2,
                 MoeCache& cache, float* out);
void moe_backward(Ctx& ctx, const MoeLayout& lay, const ConstTensors& params, const Tensors& grads, const Dims& dims,
                  const float* n2, const MoeCache& cache, const float* dout, float* dn2);

void block_forward(Ctx& ctx, const BlockLayout& lay, const ConstTensors& params, const Dims& dims, const float* x,
                   BlockCache& cache, float* x2);
// dx = gradient wrt x (overwritten) from dx2.
void block_backward(Ctx& ctx, const BlockLayout& lay, const ConstTensors& params, const Tensors& grads,
                    const Dims& dims, const float* x, const BlockCache& cache, const float* dx2, float* dx);

// ---- embedding and head ----

// x[t] = table[token[t]] (zeros for a negative id: a row another tensor-parallel rank holds).
void embed_forward(const float* table, const int32_t* tokens, int64_t tokens_count, int64_t hidden, float* x);
// dtable[token] += the sum of dx over the token's positions (one add per row; negative ids skipped).
void embed_backward(const int32_t* tokens, int64_t tokens_count, int64_t hidden, const float* dx, float* dtable);

struct HeadCache {
  Buf n, probs;
  double loss = 0;
  bool has_gradient = false;  // probs hold d loss / d logits (head_loss_backward ran)
};

// Returns the mean cross-entropy; `weight` is lm_head or the tied table.
double head_forward(Ctx& ctx, const float* norm, const float* weight, const Dims& dims, int64_t vocab, const float* x,
                    const int32_t* labels, HeadCache& cache);
// dx overwritten; dweight (lm_head's or the table's gradient) and dnorm += this pass.
// The loss's backward: probs become d loss / d logits, in place (once per forward).
void head_loss_backward(HeadCache& cache, const int32_t* labels, int64_t tokens, int64_t vocab);
void head_backward(Ctx& ctx, const float* norm, const float* weight, float* dnorm, float* dweight, const Dims& dims,
                   int64_t vocab, const float* x, const int32_t* labels, HeadCache& cache, float* dx);

}  // namespace ragged::backend::detail
