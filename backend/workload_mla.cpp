// DeepSeek's multi-head latent attention up to the attention core: q through
// its low-rank pair (or directly), the compressed kv latent and its shared
// rope part, and the per-head k and v that kv_b_proj expands the latent to.

#include <algorithm>

#include "backend/workload_internal.hpp"

namespace ragged::backend::detail {

void mla_forward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Dims& dims, const float* n1,
                 AttentionCache& c) {
  const int64_t t = dims.tokens;
  const int64_t heads = lay.heads;
  const int64_t kv_width = lay.kv_lora + lay.rope;
  const int64_t kvb_width = lay.nope + lay.v_dim;
  c.q.resize(static_cast<size_t>(t * heads * lay.qk_dim));
  if (lay.q_lora > 0) {
    c.qa.resize(static_cast<size_t>(t * lay.q_lora));
    c.qa_n.resize(c.qa.size());
    linear_forward(ctx, bind_linear(lay.q_a, params, nullptr), n1, t, c.qa.data());
    rms_norm_forward(c.qa.data(), param_at(params, lay.q_a_norm), t, lay.q_lora, c.qa_n.data());
    linear_forward(ctx, bind_linear(lay.q_b, params, nullptr), c.qa_n.data(), t, c.q.data());
  } else {
    linear_forward(ctx, bind_linear(lay.q, params, nullptr), n1, t, c.q.data());
  }
  c.kv.resize(static_cast<size_t>(t * kv_width));
  linear_forward(ctx, bind_linear(lay.kv_a, params, nullptr), n1, t, c.kv.data());
  c.c.resize(static_cast<size_t>(t * lay.kv_lora));
  for (int64_t r = 0; r < t; ++r) {
    std::copy(c.kv.begin() + r * kv_width, c.kv.begin() + r * kv_width + lay.kv_lora, c.c.begin() + r * lay.kv_lora);
  }
  rms_norm_forward(c.c.data(), param_at(params, lay.kv_a_norm), t, lay.kv_lora, c.c.data());
  c.kvb.resize(static_cast<size_t>(t * heads * kvb_width));
  linear_forward(ctx, bind_linear(lay.kv_b, params, nullptr), c.c.data(), t, c.kvb.data());
  c.k.resize(static_cast<size_t>(t * heads * lay.qk_dim));
  c.v.resize(static_cast<size_t>(t * heads * lay.v_dim));
  for (int64_t r = 0; r < t; ++r) {
    const float* rope = c.kv.data() + r * kv_width + lay.kv_lora;
    for (int64_t h = 0; h < heads; ++h) {
      const float* src = c.kvb.data() + (r * heads + h) * kvb_width;
      float* k = c.k.data() + (r * heads + h) * lay.qk_dim;
      float* v = c.v.data() + (r * heads + h) * lay.v_dim;
      std::copy(src, src + lay.nope, k);
      std::copy(rope, rope + lay.rope, k + lay.nope);
      std::copy(src + lay.nope, src + kvb_width, v);
    }
  }
}

void mla_backward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Tensors& grads,
                  const Dims& dims, const float* n1, const AttentionCache& c, const float* dq, const float* dk,
                  const float* dv, float* dn1) {
  const int64_t t = dims.tokens;
  const int64_t heads = lay.heads;
  const int64_t kv_width = lay.kv_lora + lay.rope;
  const int64_t kvb_width = lay.nope + lay.v_dim;
  Buf dkvb(c.kvb.size());
  Buf dkv(c.kv.size(), 0.0f);
  for (int64_t r = 0; r < t; ++r) {
    float* drope = dkv.data() + r * kv_width + lay.kv_lora;
    for (int64_t h = 0; h < heads; ++h) {
      const float* dkh = dk + (r * heads + h) * lay.qk_dim;
      const float* dvh = dv + (r * heads + h) * lay.v_dim;
      float* dst = dkvb.data() + (r * heads + h) * kvb_width;
      std::copy(dkh, dkh + lay.nope, dst);
      std::copy(dvh, dvh + lay.v_dim, dst + lay.nope);
      for (int64_t i = 0; i < lay.rope; ++i) drope[i] += dkh[lay.nope + i];
    }
  }
  Buf dc(c.c.size());
  linear_backward(ctx, bind_linear(lay.kv_b, params, &grads), c.c.data(), dkvb.data(), t, dc.data(), 0.0f);
  // Through the latent's norm, which read the first kv_lora columns of kv.
  Buf latent(c.c.size());
  for (int64_t r = 0; r < t; ++r) {
    std::copy(c.kv.begin() + r * kv_width, c.kv.begin() + r * kv_width + lay.kv_lora, latent.begin() + r * lay.kv_lora);
  }
  rms_norm_backward(latent.data(), param_at(params, lay.kv_a_norm), dc.data(), t, lay.kv_lora, dc.data(),
                    grad_at(&grads, lay.kv_a_norm));
  for (int64_t r = 0; r < t; ++r) {
    std::copy(dc.begin() + r * lay.kv_lora, dc.begin() + (r + 1) * lay.kv_lora, dkv.begin() + r * kv_width);
  }
  linear_backward(ctx, bind_linear(lay.kv_a, params, &grads), n1, dkv.data(), t, dn1, 0.0f);

  if (lay.q_lora == 0) {
    linear_backward(ctx, bind_linear(lay.q, params, &grads), n1, dq, t, dn1, 1.0f);
    return;
  }
  Buf dqa(c.qa.size());
  linear_backward(ctx, bind_linear(lay.q_b, params, &grads), c.qa_n.data(), dq, t, dqa.data(), 0.0f);
  rms_norm_backward(c.qa.data(), param_at(params, lay.q_a_norm), dqa.data(), t, lay.q_lora, dqa.data(),
                    grad_at(&grads, lay.q_a_norm));
  linear_backward(ctx, bind_linear(lay.q_a, params, &grads), n1, dqa.data(), t, dn1, 1.0f);
}

}  // namespace ragged::backend::detail
