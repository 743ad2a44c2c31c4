// One transformer block on the GPU, the host's math (workload_block.cpp,
// workload_attention.cpp, workload_glu.cpp): n1 = rms(x); q, k, v
// projections; causal softmax attention (q/k RMSNormed per head when the
// model has q/k norms); x1 = x + o_proj(u); n2 = rms(x1); SwiGLU;
// x2 = x1 + down(product), or x1 + the experts (gpu_workload_moe.cpp).
// Backward writes every gradient once.

#include "backend/cuda/attention_gemm.hpp"
#include "backend/cuda/gpu_workload_internal.hpp"
#include "backend/cuda/workload_kernels.hpp"

namespace ragged::backend::gpu::detail {
namespace {

using ragged::backend::detail::LinearSlot;

template <typename S>
S* at(const Regions& cache, BlockRegion region) {
  return reinterpret_cast<S*>(cache[static_cast<size_t>(region)]);
}

// The GEMM attention (attention_gemm.hpp) where the workload has its scratch
// and the block's attention is plain: no q/k norms, no sinks, whole sequences.
bool gemm_attention(const Gemms& gemms, const ragged::backend::detail::AttentionLayout& att,
                    const AttentionShape& shape) {
  return gemms.attention_scratch != nullptr && att.sinks < 0 &&
         gemm_attention_applies(shape, att.q_norm >= 0 || att.k_norm >= 0);
}

// y = x W^T (+ b).
template <typename S>
void project(Gemms& gemms, const LinearSlot& slot, const Params& params, const S* x, S* y, int64_t rows) {
  gemms.forward(x, params[static_cast<size_t>(slot.weight)], y, rows, slot.out, slot.in);
  if (slot.bias >= 0) add_bias(y, param<S>(params, slot.bias), rows, slot.out, gemms.stream());
}

// dW (and db) from the input x and the output's gradient dy; dx (+)= dy W
// when dx is not null.
template <typename S, typename G>
void project_backward(Gemms& gemms, const LinearSlot& slot, const Params& params, const Grads& grads, const S* x,
                      const S* dy, S* dx, float beta, int64_t rows) {
  const auto weight = static_cast<size_t>(slot.weight);
  if (dx != nullptr) gemms.input_grad(dy, params[weight], dx, rows, slot.out, slot.in, beta);
  gemms.weight_grad(dy, x, grads[weight], rows, slot.out, slot.in);
  if (slot.bias >= 0) column_sums<S, G>(grad<G>(grads, slot.bias), dy, nullptr, rows, slot.out, gemms.stream());
}

}  // namespace

template <typename S>
void attention_input_forward_part(Gemms& gemms, const BlockPlan& plan, const Params& params, const Regions& cache) {
  const ragged::backend::detail::AttentionLayout& att = plan.layout.attention;
  const int64_t t = plan.tokens;
  const S* n1 = at<S>(cache, kNorm1);
  project(gemms, att.q, params, n1, at<S>(cache, kQuery), t);
  project(gemms, att.k, params, n1, at<S>(cache, kKey), t);
  project(gemms, att.v, params, n1, at<S>(cache, kValue), t);
}

template <typename S>
void attention_core_forward_part(Gemms& gemms, const BlockPlan& plan, const Params& params, const Regions& cache,
                                 const KeysRead<S>& keys, S* out) {
  const ragged::backend::detail::AttentionLayout& att = plan.layout.attention;
  S* u = at<S>(cache, kMixed);
  if (gemm_attention(gemms, att, keys.shape)) {
    gemms.begin_attention();
    run_gemm_attention_forward(gemms.handle(), gemms.stream(), u, at<S>(cache, kQuery), keys.k, keys.v, keys.shape,
                               gemms.attention_scratch);
    gemms.end_attention();
  } else {
    attention_forward(u, at<S>(cache, kQuery), keys.k, keys.v, param<S>(params, att.q_norm),
                      param<S>(params, att.k_norm), keys.shape, gemms.stream());
  }
  project(gemms, att.o, params, u, out, plan.tokens);
}

template <typename S>
void attention_forward_part(Gemms& gemms, const BlockPlan& plan, const Params& params, const Regions& cache, S* out) {
  attention_input_forward_part<S>(gemms, plan, params, cache);
  attention_core_forward_part<S>(gemms, plan, params, cache, own_keys<S>(plan, cache), out);
}

template <typename S>
void mlp_forward_part(Gemms& gemms, const BlockPlan& plan, const Params& params, const MoeRouting& routing,
                      const Regions& cache, S* out) {
  const ragged::backend::detail::BlockLayout& lay = plan.layout;
  if (lay.moe) {
    moe_forward(gemms, plan, params, routing, cache, out);
    return;
  }
  const int64_t t = plan.tokens;
  const S* n2 = at<S>(cache, kNorm2);
  S* gate = at<S>(cache, kGate);
  S* up = at<S>(cache, kUp);
  S* product = at<S>(cache, kProduct);
  project(gemms, lay.dense.gate, params, n2, gate, t);
  project(gemms, lay.dense.up, params, n2, up, t);
  swiglu_forward(product, gate, up, t * plan.ffn, gemms.stream());
  if (out != nullptr) project(gemms, lay.dense.down, params, product, out, t);
}

template <typename S>
void block_forward(Gemms& gemms, const BlockPlan& plan, const Params& params, const MoeRouting& routing, const S* x,
                   const Regions& cache, S* out) {
  const ragged::backend::detail::BlockLayout& lay = plan.layout;
  const int64_t t = plan.tokens, h = plan.hidden;
  const cudaStream_t stream = gemms.stream();
  S* n1 = at<S>(cache, kNorm1);
  const S* w_in = param<S>(params, lay.in_norm);
  if (at<S>(cache, kInput) == x) {
    rms_norm_forward(n1, x, w_in, t, h, stream);
  } else {
    keep_and_rms_norm(at<S>(cache, kInput), n1, x, w_in, t, h, stream);
  }
  // The attention output lands in x1, which then becomes x + it.
  S* x1 = at<S>(cache, kResidual1);
  attention_forward_part(gemms, plan, params, cache, x1);
  add(x1, x, x1, t * h, stream);
  rms_norm_forward(at<S>(cache, kNorm2), x1, param<S>(params, lay.post_norm), t, h, stream);
  mlp_forward_part(gemms, plan, params, routing, cache, out);
  if (out != nullptr) add(out, x1, out, t * h, stream);
}

template <typename S>
void block_rebuild_selective(Gemms& gemms, const BlockPlan& plan, const Params& params, const Regions& cache) {
  const ragged::backend::detail::BlockLayout& lay = plan.layout;
  const int64_t t = plan.tokens, h = plan.hidden;
  const cudaStream_t stream = gemms.stream();
  const S* x = at<S>(cache, kInput);
  S* n1 = at<S>(cache, kNorm1);
  S* x1 = at<S>(cache, kResidual1);
  S* n2 = at<S>(cache, kNorm2);
  rms_norm_forward(n1, x, param<S>(params, lay.in_norm), t, h, stream);
  if (lay.moe) {
    rms_norm_forward(n2, x1, param<S>(params, lay.post_norm), t, h, stream);
    moe_rebuild_elementwise<S>(gemms, plan, cache);
    return;
  }
  // The same kernels as block_forward, in its order, so that every rebuilt
  // value is bitwise the forward's.
  project(gemms, lay.attention.k, params, n1, at<S>(cache, kKey), t);
  project(gemms, lay.attention.o, params, at<S>(cache, kMixed), x1, t);
  add(x1, x, x1, t * h, stream);
  rms_norm_forward(n2, x1, param<S>(params, lay.post_norm), t, h, stream);
  project(gemms, lay.dense.up, params, n2, at<S>(cache, kUp), t);
  swiglu_forward(at<S>(cache, kProduct), at<S>(cache, kGate), at<S>(cache, kUp), t * plan.ffn, stream);
}

template <typename S, typename G>
void mlp_backward_part(Gemms& gemms, const BlockPlan& plan, const Params& params, const Grads& grads,
                       const MoeRouting& routing, const Regions& cache, std::byte* scratch, const S* dy) {
  const ragged::backend::detail::BlockLayout& lay = plan.layout;
  if (lay.moe) {
    moe_backward<S, G>(gemms, plan, params, grads, routing, cache, scratch, dy);
    return;
  }
  const int64_t t = plan.tokens;
  auto scratch_at = [&](BlockScratch s) { return reinterpret_cast<S*>(scratch + plan.scratch_offset[s]); };
  // The product's gradient becomes the gate's in place.
  S* dgate = scratch_at(kDGate);
  S* dup = scratch_at(kDUp);
  S* dn2 = scratch_at(kDNorm2);
  const S* n2 = at<S>(cache, kNorm2);
  project_backward<S, G>(gemms, lay.dense.down, params, grads, at<S>(cache, kProduct), dy, dgate, 0.0f, t);
  swiglu_backward(dgate, dup, at<S>(cache, kGate), at<S>(cache, kUp), t * plan.ffn, gemms.stream());
  project_backward<S, G>(gemms, lay.dense.gate, params, grads, n2, dgate, dn2, 0.0f, t);
  project_backward<S, G>(gemms, lay.dense.up, params, grads, n2, dup, dn2, 1.0f, t);
}

template <typename S, typename G>
void attention_core_backward_part(Gemms& gemms, const BlockPlan& plan, const Params& params, const Grads& grads,
                                  const Regions& cache, std::byte* scratch, const S* dy, const KeysRead<S>& keys,
                                  S* dk, S* dv) {
  const ragged::backend::detail::AttentionLayout& att = plan.layout.attention;
  auto scratch_at = [&](BlockScratch s) { return reinterpret_cast<S*>(scratch + plan.scratch_offset[s]); };
  // u's gradient becomes q's in place; the softmax's per-row statistics sit
  // in dn1's place until the projections' backward.
  S* dq = scratch_at(kDQuery);
  project_backward<S, G>(gemms, att.o, params, grads, at<S>(cache, kMixed), dy, dq, 0.0f, plan.tokens);
  if (gemm_attention(gemms, att, keys.shape)) {
    gemms.begin_attention();
    run_gemm_attention_backward(gemms.handle(), gemms.stream(), dq, dk, dv, at<S>(cache, kQuery), keys.k, keys.v,
                                keys.shape, gemms.attention_scratch);
    gemms.end_attention();
    return;
  }
  attention_backward(dq, dk, dv, reinterpret_cast<double*>(scratch_at(kDNorm1)), at<S>(cache, kMixed),
                     at<S>(cache, kQuery), keys.k, keys.v, param<S>(params, att.q_norm), param<S>(params, att.k_norm),
                     keys.shape, gemms.stream());
}

template <typename S, typename G>
void attention_input_backward_part(Gemms& gemms, const BlockPlan& plan, const Params& params, const Grads& grads,
                                   const Regions& cache, std::byte* scratch) {
  const ragged::backend::detail::AttentionLayout& att = plan.layout.attention;
  const int64_t t = plan.tokens;
  const cudaStream_t stream = gemms.stream();
  auto scratch_at = [&](BlockScratch s) { return reinterpret_cast<S*>(scratch + plan.scratch_offset[s]); };
  S* dq = scratch_at(kDQuery);
  S* dk = scratch_at(kDKey);
  S* dv = scratch_at(kDValue);
  S* dn1 = scratch_at(kDNorm1);
  const S* q_norm = param<S>(params, att.q_norm);
  const S* k_norm = param<S>(params, att.k_norm);
  const S* q = at<S>(cache, kQuery);
  const S* k = at<S>(cache, kKey);
  if (q_norm != nullptr) {
    rms_norm_weight_grad(grad<G>(grads, att.q_norm), dq, q, t * att.heads, att.qk_dim, stream);
    rms_norm_backward<S>(dq, nullptr, dq, q, q_norm, t * att.heads, att.qk_dim, stream);
  }
  if (k_norm != nullptr) {
    rms_norm_weight_grad(grad<G>(grads, att.k_norm), dk, k, t * att.kv_heads, att.qk_dim, stream);
    rms_norm_backward<S>(dk, nullptr, dk, k, k_norm, t * att.kv_heads, att.qk_dim, stream);
  }
  const S* n1 = at<S>(cache, kNorm1);
  project_backward<S, G>(gemms, att.q, params, grads, n1, dq, dn1, 0.0f, t);
  project_backward<S, G>(gemms, att.k, params, grads, n1, dk, dn1, 1.0f, t);
  project_backward<S, G>(gemms, att.v, params, grads, n1, dv, dn1, 1.0f, t);
}

template <typename S, typename G>
void attention_backward_part(Gemms& gemms, const BlockPlan& plan, const Params& params, const Grads& grads,
                             const Regions& cache, std::byte* scratch, const S* dy) {
  auto scratch_at = [&](BlockScratch s) { return reinterpret_cast<S*>(scratch + plan.scratch_offset[s]); };
  attention_core_backward_part<S, G>(gemms, plan, params, grads, cache, scratch, dy, own_keys<S>(plan, cache),
                                     scratch_at(kDKey), scratch_at(kDValue));
  attention_input_backward_part<S, G>(gemms, plan, params, grads, cache, scratch);
}

template <typename S, typename G>
void block_backward(Gemms& gemms, const BlockPlan& plan, const Params& params, const Grads& grads,
                    const MoeRouting& routing, const Regions& cache, std::byte* scratch, const S* dx2, S* dx) {
  const ragged::backend::detail::BlockLayout& lay = plan.layout;
  const int64_t t = plan.tokens, h = plan.hidden;
  const cudaStream_t stream = gemms.stream();
  auto scratch_at = [&](BlockScratch s) { return reinterpret_cast<S*>(scratch + plan.scratch_offset[s]); };
  mlp_backward_part<S, G>(gemms, plan, params, grads, routing, cache, scratch, dx2);
  const S* dn2 = scratch_at(kDNorm2);
  const S* x1 = at<S>(cache, kResidual1);
  rms_norm_weight_grad(grad<G>(grads, lay.post_norm), dn2, x1, t, h, stream);
  // dx1 = dx2 + rms backward of dn2, kept in the output until dx is complete.
  rms_norm_backward(dx, dx2, dn2, x1, param<S>(params, lay.post_norm), t, h, stream);
  attention_backward_part<S, G>(gemms, plan, params, grads, cache, scratch, dx);
  const S* dn1 = scratch_at(kDNorm1);
  const S* x = at<S>(cache, kInput);
  rms_norm_weight_grad(grad<G>(grads, lay.in_norm), dn1, x, t, h, stream);
  rms_norm_backward(dx, dx, dn1, x, param<S>(params, lay.in_norm), t, h, stream);
}

#define RAGGED_BLOCK(S)                                                                                            \
  template void block_forward(Gemms&, const BlockPlan&, const Params&, const MoeRouting&, const S*, const Regions&, \
                              S*);                                                                                 \
  template void block_rebuild_selective<S>(Gemms&, const BlockPlan&, const Params&, const Regions&);               \
  template void attention_forward_part(Gemms&, const BlockPlan&, const Params&, const Regions&, S*);              \
  template void attention_input_forward_part<S>(Gemms&, const BlockPlan&, const Params&, const Regions&);          \
  template void attention_core_forward_part(Gemms&, const BlockPlan&, const Params&, const Regions&,              \
                                            const KeysRead<S>&, S*);                                               \
  template void mlp_forward_part(Gemms&, const BlockPlan&, const Params&, const MoeRouting&, const Regions&, S*);
RAGGED_BLOCK(float)
RAGGED_BLOCK(uint16_t)
#undef RAGGED_BLOCK
#define RAGGED_BLOCK_BACKWARD(S, G)                                                                              \
  template void block_backward<S, G>(Gemms&, const BlockPlan&, const Params&, const Grads&, const MoeRouting&, \
                                     const Regions&, std::byte*, const S*, S*);                                 \
  template void mlp_backward_part<S, G>(Gemms&, const BlockPlan&, const Params&, const Grads&, const MoeRouting&, \
                                        const Regions&, std::byte*, const S*);                                  \
  template void attention_backward_part<S, G>(Gemms&, const BlockPlan&, const Params&, const Grads&,            \
                                              const Regions&, std::byte*, const S*);                            \
  template void attention_core_backward_part<S, G>(Gemms&, const BlockPlan&, const Params&, const Grads&,       \
                                                   const Regions&, std::byte*, const S*, const KeysRead<S>&, S*, \
                                                   S*);                                                          \
  template void attention_input_backward_part<S, G>(Gemms&, const BlockPlan&, const Params&, const Grads&,      \
                                                    const Regions&, std::byte*);
RAGGED_BLOCK_BACKWARD(float, float)
RAGGED_BLOCK_BACKWARD(uint16_t, float)
RAGGED_BLOCK_BACKWARD(uint16_t, uint16_t)
#undef RAGGED_BLOCK_BACKWARD

}  // namespace ragged::backend::gpu::detail
