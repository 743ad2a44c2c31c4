// The mixture of experts of a block: router logits (+ the router's bias),
// each token's top_k experts by logit (ties to the lowest expert index, so
// every rank routes a token alike), gates = softmax over the chosen logits
// (softmax over every expert, top-k, renormalised), the routed experts, and
// the always-on shared experts.

#include <algorithm>
#include <cmath>
#include <numeric>

#include "backend/workload_internal.hpp"

namespace ragged::backend::detail {

GluWeights routed_weights(const std::vector<GluLayout>& routed, int64_t hidden, int64_t expert,
                          const ConstTensors& params, const Tensors* grads) {
  const bool fused = routed.size() == 1 && routed[0].fused;
  const GluLayout& glu = routed[static_cast<size_t>(fused ? 0 : expert)];
  return bind_glu(glu, hidden, fused ? expert : 0, params, grads);
}

void route_top_k(const MoeLayout& lay, int64_t tokens, MoeCache& cache) {
  const int64_t k = lay.top_k;
  cache.routed.resize(static_cast<size_t>(lay.experts));
  for (GluCache& expert : cache.routed) {
    expert.rows.clear();
    expert.slots.clear();
    expert.gates.clear();
  }
  cache.experts.resize(static_cast<size_t>(tokens * k));
  cache.weights.resize(cache.experts.size());
  std::vector<int64_t> order(static_cast<size_t>(lay.experts));
  for (int64_t t = 0; t < tokens; ++t) {
    const float* logits = cache.logits.data() + t * lay.experts;
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [logits](int64_t a, int64_t b) { return logits[a] > logits[b]; });
    const double max = logits[order[0]];
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += std::exp(logits[order[static_cast<size_t>(j)]] - max);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = order[static_cast<size_t>(j)];
      cache.experts[static_cast<size_t>(t * k + j)] = e;
      cache.weights[static_cast<size_t>(t * k + j)] = static_cast<float>(std::exp(logits[e] - max) / sum);
    }
  }
  // Each expert's tokens in token order.
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t j = 0; j < k; ++j) {
      GluCache& expert = cache.routed[static_cast<size_t>(cache.experts[static_cast<size_t>(t * k + j)])];
      expert.rows.push_back(t);
      expert.slots.push_back(t * k + j);
      expert.gates.push_back(cache.weights[static_cast<size_t>(t * k + j)]);
    }
  }
}

void moe_combine(const MoeLayout& lay, const MoeCache& cache, int64_t tokens, int64_t hidden, float* out) {
  std::fill(out, out + tokens * hidden, 0.0f);
  for (int64_t e = 0; e < lay.experts; ++e) {
    const GluCache& c = cache.routed[static_cast<size_t>(e)];
    for (size_t i = 0; i < c.rows.size(); ++i) {
      float* row = out + c.rows[i] * hidden;
      const float* y = c.y.data() + static_cast<int64_t>(i) * hidden;
      for (int64_t j = 0; j < hidden; ++j) row[j] += c.gates[i] * y[j];
    }
  }
  if (lay.has_shared) add_into(out, cache.shared.y.data(), tokens * hidden);
}

void moe_forward(Ctx& ctx, const MoeLayout& lay, const ConstTensors& params, const Dims& dims, const float* n2,
                 MoeCache& cache, float* out) {
  const int64_t t = dims.tokens;
  const int64_t h = dims.hidden;
  cache.logits.resize(static_cast<size_t>(t * lay.experts));
  linear_forward(ctx, bind_linear(lay.router, params, nullptr), n2, t, cache.logits.data());
  route_top_k(lay, t, cache);
  for (int64_t e = 0; e < lay.experts && !lay.routed.empty(); ++e) {
    GluCache& c = cache.routed[static_cast<size_t>(e)];
    const int64_t n = static_cast<int64_t>(c.rows.size());
    c.x.resize(static_cast<size_t>(n * h));
    for (int64_t i = 0; i < n; ++i) std::copy(n2 + c.rows[i] * h, n2 + (c.rows[i] + 1) * h, c.x.begin() + i * h);
    if (n == 0) continue;
    glu_forward(ctx, routed_weights(lay.routed, h, e, params, nullptr), c);
  }
  if (lay.has_shared) {
    cache.shared.x.assign(n2, n2 + t * h);
    glu_forward(ctx, bind_glu(lay.shared, h, 0, params, nullptr), cache.shared);
  }
  if (!lay.routed.empty()) moe_combine(lay, cache, t, h, out);
}

void moe_routed_gradients(const MoeLayout& lay, const MoeCache& cache, int64_t hidden, const float* dout,
                          std::vector<Buf>& dy, std::vector<double>& dgates) {
  const int64_t h = hidden;
  dgates.assign(cache.weights.size(), 0.0);
  dy.resize(static_cast<size_t>(lay.experts));
  for (int64_t e = 0; e < lay.experts; ++e) {
    const GluCache& c = cache.routed[static_cast<size_t>(e)];
    const int64_t n = static_cast<int64_t>(c.rows.size());
    Buf& out = dy[static_cast<size_t>(e)];
    out.resize(static_cast<size_t>(n * h));
    for (int64_t i = 0; i < n; ++i) {
      const float* d = dout + c.rows[i] * h;
      const float* y = c.y.data() + i * h;
      const float gate = c.gates[i];
      double dgate = 0;
      for (int64_t j = 0; j < h; ++j) {
        out[i * h + j] = gate * d[j];
        dgate += static_cast<double>(d[j]) * y[j];
      }
      dgates[static_cast<size_t>(c.slots[i])] = dgate;
    }
  }
}

void add_expert_rows(const GluCache& expert, int64_t hidden, const float* dx, float* dn2) {
  for (size_t i = 0; i < expert.rows.size(); ++i) {
    add_into(dn2 + expert.rows[i] * hidden, dx + static_cast<int64_t>(i) * hidden, hidden);
  }
}

void moe_finish_backward(Ctx& ctx, const MoeLayout& lay, const ConstTensors& params, const Tensors& grads,
                         const Dims& dims, const float* n2, const MoeCache& cache, const std::vector<double>& dgates,
                         const float* dout, float* dn2) {
  const int64_t t = dims.tokens;
  Buf dlogits(cache.logits.size(), 0.0f);
  const int64_t k = lay.top_k;
  for (int64_t r = 0; r < t; ++r) {
    double mean = 0;
    for (int64_t j = 0; j < k; ++j)
      mean += cache.weights[static_cast<size_t>(r * k + j)] * dgates[static_cast<size_t>(r * k + j)];
    for (int64_t j = 0; j < k; ++j) {
      const auto slot = static_cast<size_t>(r * k + j);
      dlogits[static_cast<size_t>(r * lay.experts + cache.experts[slot])] =
          static_cast<float>(cache.weights[slot] * (dgates[slot] - mean));
    }
  }
  if (lay.has_shared) {
    Buf dx(static_cast<size_t>(t * dims.hidden));
    glu_backward(ctx, bind_glu(lay.shared, dims.hidden, 0, params, &grads), cache.shared, dout, dx.data());
    add_into(dn2, dx.data(), t * dims.hidden);
  }
  linear_backward(ctx, bind_linear(lay.router, params, &grads), n2, dlogits.data(), t, dn2, 1.0f);
}

void moe_backward(Ctx& ctx, const MoeLayout& lay, const ConstTensors& params, const Tensors& grads, const Dims& dims,
                  const float* n2, const MoeCache& cache, const float* dout, float* dn2) {
  const int64_t t = dims.tokens;
  const int64_t h = dims.hidden;
  std::fill(dn2, dn2 + t * h, 0.0f);
  std::vector<Buf> dy;
  std::vector<double> dgates;
  moe_routed_gradients(lay, cache, h, dout, dy, dgates);
  Buf dx;
  for (int64_t e = 0; e < lay.experts; ++e) {
    const GluCache& c = cache.routed[static_cast<size_t>(e)];
    if (c.rows.empty()) continue;
    dx.resize(dy[static_cast<size_t>(e)].size());
    glu_backward(ctx, routed_weights(lay.routed, h, e, params, &grads), c, dy[static_cast<size_t>(e)].data(),
                 dx.data());
    add_expert_rows(c, h, dx.data(), dn2);
  }
  moe_finish_backward(ctx, lay, params, grads, dims, n2, cache, dgates, dout, dn2);
}

}  // namespace ragged::backend::detail
