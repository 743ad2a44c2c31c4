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
namespace {

GluWeights routed_weights(const MoeLayout& lay, int64_t hidden, int64_t expert, const ConstTensors& params,
                          const Tensors* grads) {
  const bool fused = lay.routed.size() == 1 && lay.routed[0].fused;
  const GluLayout& glu = lay.routed[static_cast<size_t>(fused ? 0 : expert)];
  return bind_glu(glu, hidden, fused ? expert : 0, params, grads);
}

}  // namespace

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


void moe_forward(Ctx& ctx, const MoeLayout& lay, const ConstTensors& params, const Dims& dims, const float* n2,
                 MoeCache& cache, float* out) {
  const int64_t t = dims.tokens;
  const int64_t h = dims.hidden;
  cache.logits.resize(static_cast<size_t>(t * lay.experts));
  linear_forward(ctx, bind(lay.router, params, nullptr), n2, t, cache.logits.data());
  route_top_k(lay, t, cache);
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
  // d loss / d gate of each (token, choice), then through the softmax over the chosen logits.
  std::vector<double> dgates(cache.weights.size(), 0.0);
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
      dgates[static_cast<size_t>(c.slots[i])] = dgate;
    }
    glu_backward(ctx, routed_weights(lay, h, e, params, &grads), c, dy.data(), dx.data());
    for (int64_t i = 0; i < n; ++i) add_into(dn2 + c.rows[i] * h, dx.data() + i * h, h);
  }
  Buf dlogits(cache.logits.size(), 0.0f);
  const int64_t k = lay.top_k;
  for (int64_t r = 0; r < t; ++r) {
    double mean = 0;
    for (int64_t j = 0; j < k; ++j) mean += cache.weights[static_cast<size_t>(r * k + j)] * dgates[static_cast<size_t>(r * k + j)];
    for (int64_t j = 0; j < k; ++j) {
      const auto slot = static_cast<size_t>(r * k + j);
      dlogits[static_cast<size_t>(r * lay.experts + cache.experts[slot])] =
          static_cast<float>(cache.weights[slot] * (dgates[slot] - mean));
    }
  }
  if (lay.has_shared) {
    dx.resize(static_cast<size_t>(t * h));
    glu_backward(ctx, bind_glu(lay.shared, h, 0, params, &grads), cache.shared, dout, dx.data());
    add_into(dn2, dx.data(), t * h);
  }
  linear_backward(ctx, bind(lay.router, params, &grads), n2, dlogits.data(), t, dn2, 1.0f);
}

}  // namespace ragged::backend::detail
