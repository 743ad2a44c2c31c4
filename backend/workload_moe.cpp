// The mixture of experts of a block: router logits, a fixed routing (token
// `t` of the global batch uses experts (7t + j) mod E, j < top_k, so a
// sharded run routes exactly like the reference), sigmoid gates, the routed
// experts and the always-on shared experts.

#include <algorithm>
#include <cmath>

#include "backend/workload_internal.hpp"

namespace ragged::backend::detail {
namespace {

GluWeights routed_weights(const MoeLayout& lay, int64_t hidden, int64_t expert, const ConstTensors& params,
                          const Tensors* grads) {
  const bool fused = lay.routed.size() == 1 && lay.routed[0].fused;
  const GluLayout& glu = lay.routed[static_cast<size_t>(fused ? 0 : expert)];
  return bind_glu(glu, hidden, fused ? expert : 0, params, grads);
}

void route(const MoeLayout& lay, const Dims& dims, MoeCache& cache) {
  cache.routed.resize(static_cast<size_t>(lay.experts));
  for (GluCache& expert : cache.routed) {
    expert.rows.clear();
    expert.gates.clear();
  }
  for (int64_t t = 0; t < dims.tokens; ++t) {
    const int64_t token = dims.first_token + t;
    for (int64_t j = 0; j < lay.top_k; ++j) {
      const int64_t e = (token * 7 + j) % lay.experts;
      const float logit = cache.logits[static_cast<size_t>(t * lay.experts + e)];
      GluCache& expert = cache.routed[static_cast<size_t>(e)];
      expert.rows.push_back(t);
      expert.gates.push_back(1.0f / (1.0f + std::exp(-logit)));
    }
  }
}

}  // namespace

void moe_forward(Ctx& ctx, const MoeLayout& lay, const ConstTensors& params, const Dims& dims, const float* n2,
                 MoeCache& cache, float* out) {
  const int64_t t = dims.tokens;
  const int64_t h = dims.hidden;
  cache.logits.resize(static_cast<size_t>(t * lay.experts));
  linear_forward(ctx, bind(lay.router, params, nullptr), n2, t, cache.logits.data());
  route(lay, dims, cache);
  std::fill(out, out + t * h, 0.0f);
  for (int64_t e = 0; e < lay.experts; ++e) {
    GluCache& c = cache.routed[static_cast<size_t>(e)];
    const int64_t n = static_cast<int64_t>(c.rows.size());
    c.x.resize(static_cast<size_t>(n * h));
    for (int64_t i = 0; i < n; ++i) std::copy(n2 + c.rows[i] * h, n2 + (c.rows[i] + 1) * h, c.x.begin() + i * h);
    if (n == 0) continue;
    glu_forward(ctx, routed_weights(lay, h, e, params, nullptr), c);
    for (int64_t i = 0; i < n; ++i) {
      float* row = out + c.rows[i] * h;
      const float* y = c.y.data() + i * h;
      for (int64_t j = 0; j < h; ++j) row[j] += c.gates[i] * y[j];
    }
  }
  if (!lay.has_shared) return;
  cache.shared.x.assign(n2, n2 + t * h);
  glu_forward(ctx, bind_glu(lay.shared, h, 0, params, nullptr), cache.shared);
  add_into(out, cache.shared.y.data(), t * h);
}

void moe_backward(Ctx& ctx, const MoeLayout& lay, const ConstTensors& params, const Tensors& grads, const Dims& dims,
                  const float* n2, const MoeCache& cache, const float* dout, float* dn2) {
  const int64_t t = dims.tokens;
  const int64_t h = dims.hidden;
  std::fill(dn2, dn2 + t * h, 0.0f);
  Buf dlogits(cache.logits.size(), 0.0f);
  Buf dy, dx;
  for (int64_t e = 0; e < lay.experts; ++e) {
    const GluCache& c = cache.routed[static_cast<size_t>(e)];
    const int64_t n = static_cast<int64_t>(c.rows.size());
    if (n == 0) continue;
    dy.resize(static_cast<size_t>(n * h));
    dx.resize(dy.size());
    for (int64_t i = 0; i < n; ++i) {
      const float* d = dout + c.rows[i] * h;
      const float* y = c.y.data() + i * h;
      const float gate = c.gates[i];
      double dgate = 0;
      for (int64_t j = 0; j < h; ++j) {
        dy[i * h + j] = gate * d[j];
        dgate += static_cast<double>(d[j]) * y[j];
      }
      dlogits[c.rows[i] * lay.experts + e] = static_cast<float>(dgate) * gate * (1.0f - gate);
    }
    glu_backward(ctx, routed_weights(lay, h, e, params, &grads), c, dy.data(), dx.data());
    for (int64_t i = 0; i < n; ++i) add_into(dn2 + c.rows[i] * h, dx.data() + i * h, h);
  }
  if (lay.has_shared) {
    dx.resize(static_cast<size_t>(t * h));
    glu_backward(ctx, bind_glu(lay.shared, h, 0, params, &grads), cache.shared, dout, dx.data());
    add_into(dn2, dx.data(), t * h);
  }
  linear_backward(ctx, bind(lay.router, params, &grads), n2, dlogits.data(), t, dn2, 1.0f);
}

}  // namespace ragged::backend::detail
