// Attention of one block: the q/k/v projections (GQA here, MLA in
// workload_mla.cpp), the per-token mixing core that stands in for softmax
// attention, and the output projection.

#include <algorithm>
#include <cmath>

#include "backend/workload_internal.hpp"

namespace ragged::backend::detail {
namespace {

float core_scale(const CoreShape& s) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.qk_dim))); }

CoreShape core_shape(const AttentionLayout& lay, int64_t tokens) {
  return CoreShape{tokens, lay.heads, lay.kv_heads, lay.qk_dim, lay.v_dim};
}

void gqa_forward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Dims& dims, const float* n1,
                 AttentionCache& c) {
  const int64_t t = dims.tokens;
  const Linear q = bind(lay.q, params, nullptr);
  const Linear k = bind(lay.k, params, nullptr);
  const Linear v = bind(lay.v, params, nullptr);
  c.q_raw.resize(static_cast<size_t>(t * q.out));
  c.k_raw.resize(static_cast<size_t>(t * k.out));
  c.v.resize(static_cast<size_t>(t * v.out));
  linear_forward(ctx, q, n1, t, c.q_raw.data());
  linear_forward(ctx, k, n1, t, c.k_raw.data());
  linear_forward(ctx, v, n1, t, c.v.data());
  c.q = c.q_raw;
  c.k = c.k_raw;
  if (lay.q_norm >= 0)
    scale_columns(c.q_raw.data(), param_at(params, lay.q_norm), t * lay.heads, lay.qk_dim, c.q.data());
  if (lay.k_norm >= 0) {
    scale_columns(c.k_raw.data(), param_at(params, lay.k_norm), t * lay.kv_heads, lay.qk_dim, c.k.data());
  }
}

void gqa_backward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Tensors& grads,
                  const Dims& dims, const float* n1, const AttentionCache& c, Buf& dq, Buf& dk, const Buf& dv,
                  float* dn1) {
  const int64_t t = dims.tokens;
  if (lay.q_norm >= 0) {
    add_column_dots(grad_at(&grads, lay.q_norm), dq.data(), c.q_raw.data(), t * lay.heads, lay.qk_dim);
    scale_columns(dq.data(), param_at(params, lay.q_norm), t * lay.heads, lay.qk_dim, dq.data());
  }
  if (lay.k_norm >= 0) {
    add_column_dots(grad_at(&grads, lay.k_norm), dk.data(), c.k_raw.data(), t * lay.kv_heads, lay.qk_dim);
    scale_columns(dk.data(), param_at(params, lay.k_norm), t * lay.kv_heads, lay.qk_dim, dk.data());
  }
  linear_backward(ctx, bind(lay.q, params, &grads), n1, dq.data(), t, dn1, 0.0f);
  linear_backward(ctx, bind(lay.k, params, &grads), n1, dk.data(), t, dn1, 1.0f);
  linear_backward(ctx, bind(lay.v, params, &grads), n1, dv.data(), t, dn1, 1.0f);
}

}  // namespace

void core_forward(const CoreShape& s, const float* q, const float* k, const float* v, const float* sinks, float* u) {
  const float scale = core_scale(s);
  const int64_t rep = s.heads / s.groups;
  for (int64_t t = 0; t < s.tokens; ++t) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t g = h / rep;
      const float* qh = q + (t * s.heads + h) * s.qk_dim;
      const float* kg = k + (t * s.groups + g) * s.qk_dim;
      const float* vg = v + (t * s.groups + g) * s.v_dim;
      float* uh = u + (t * s.heads + h) * s.v_dim;
      const float sink = sinks == nullptr ? 0.0f : sinks[h];
      for (int64_t i = 0; i < s.v_dim; ++i) uh[i] = vg[i] + sink;
      for (int64_t i = 0; i < s.qk_dim; ++i) uh[i % s.v_dim] += scale * qh[i] * kg[i];
    }
  }
}

void core_backward(const CoreShape& s, const float* q, const float* k, const float* du, float* dq, float* dk, float* dv,
                   float* dsinks) {
  const float scale = core_scale(s);
  const int64_t rep = s.heads / s.groups;
  std::fill(dk, dk + s.tokens * s.groups * s.qk_dim, 0.0f);
  std::fill(dv, dv + s.tokens * s.groups * s.v_dim, 0.0f);
  std::vector<double> sink_sums(static_cast<size_t>(s.heads), 0.0);
  for (int64_t t = 0; t < s.tokens; ++t) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t g = h / rep;
      const float* qh = q + (t * s.heads + h) * s.qk_dim;
      const float* kg = k + (t * s.groups + g) * s.qk_dim;
      const float* duh = du + (t * s.heads + h) * s.v_dim;
      float* dqh = dq + (t * s.heads + h) * s.qk_dim;
      float* dkg = dk + (t * s.groups + g) * s.qk_dim;
      float* dvg = dv + (t * s.groups + g) * s.v_dim;
      double sink = 0;
      for (int64_t i = 0; i < s.v_dim; ++i) {
        dvg[i] += duh[i];
        sink += duh[i];
      }
      sink_sums[static_cast<size_t>(h)] += sink;
      for (int64_t i = 0; i < s.qk_dim; ++i) {
        const float d = scale * duh[i % s.v_dim];
        dqh[i] = d * kg[i];
        dkg[i] += d * qh[i];
      }
    }
  }
  if (dsinks == nullptr) return;
  for (int64_t h = 0; h < s.heads; ++h) dsinks[h] += static_cast<float>(sink_sums[static_cast<size_t>(h)]);
}

void attention_forward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Dims& dims,
                       const float* n1, AttentionCache& cache, float* out) {
  if (lay.mla) {
    mla_forward(ctx, lay, params, dims, n1, cache);
  } else {
    gqa_forward(ctx, lay, params, dims, n1, cache);
  }
  const CoreShape shape = core_shape(lay, dims.tokens);
  cache.u.resize(static_cast<size_t>(dims.tokens * lay.heads * lay.v_dim));
  core_forward(shape, cache.q.data(), cache.k.data(), cache.v.data(), param_at(params, lay.sinks), cache.u.data());
  linear_forward(ctx, bind(lay.o, params, nullptr), cache.u.data(), dims.tokens, out);
}

void attention_backward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Tensors& grads,
                        const Dims& dims, const float* n1, const AttentionCache& cache, const float* dout, float* dn1) {
  const int64_t t = dims.tokens;
  Buf du(static_cast<size_t>(t * lay.heads * lay.v_dim));
  linear_backward(ctx, bind(lay.o, params, &grads), cache.u.data(), dout, t, du.data(), 0.0f);
  Buf dq(cache.q.size()), dk(cache.k.size()), dv(cache.v.size());
  core_backward(core_shape(lay, t), cache.q.data(), cache.k.data(), du.data(), dq.data(), dk.data(), dv.data(),
                grad_at(&grads, lay.sinks));
  if (lay.mla) {
    mla_backward(ctx, lay, params, grads, dims, n1, cache, dq.data(), dk.data(), dv.data(), dn1);
  } else {
    gqa_backward(ctx, lay, params, grads, dims, n1, cache, dq, dk, dv, dn1);
  }
}

}  // namespace ragged::backend::detail
