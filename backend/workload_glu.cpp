// The SwiGLU MLP every MLP of a block is made of: the dense MLP, each routed
// expert (stored per expert or fused with the others) and the shared experts.

#include <algorithm>
#include <cmath>

#include "backend/workload_internal.hpp"

namespace ragged::backend::detail {
namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

int64_t rows_of(const GluWeights& w, const GluCache& cache) { return static_cast<int64_t>(cache.x.size()) / w.hidden; }

}  // namespace

GluWeights bind_glu(const GluLayout& lay, int64_t hidden, int64_t expert, const ConstTensors& params,
                    const Tensors* grads) {
  GluWeights w;
  w.fused = lay.fused;
  w.hidden = hidden;
  w.width = lay.width;
  w.gate = bind_linear(lay.gate, params, grads);
  w.down = bind_linear(lay.down, params, grads);
  if (!lay.fused) {
    w.up = bind_linear(lay.up, params, grads);
    return w;
  }
  // Expert `expert` of the fused tensors: x @ gate_up[e] + b[e], then m @ down[e] + b[e].
  auto shift = [](auto* p, int64_t by) { return p == nullptr ? p : p + by; };
  const int64_t f2 = 2 * lay.width;
  w.gate = Linear{shift(w.gate.w, expert * hidden * f2),
                  shift(w.gate.b, expert * f2),
                  shift(w.gate.dw, expert * hidden * f2),
                  shift(w.gate.db, expert * f2),
                  f2,
                  hidden,
                  true};
  w.down = Linear{shift(w.down.w, expert * lay.width * hidden),
                  shift(w.down.b, expert * hidden),
                  shift(w.down.dw, expert * lay.width * hidden),
                  shift(w.down.db, expert * hidden),
                  hidden,
                  lay.width,
                  true};
  return w;
}

void glu_forward(Ctx& ctx, const GluWeights& w, GluCache& c) {
  const int64_t n = rows_of(w, c);
  const int64_t f = w.width;
  c.g.resize(static_cast<size_t>(n * f));
  c.up.resize(c.g.size());
  if (w.fused) {
    Buf gu(static_cast<size_t>(n * 2 * f));
    linear_forward(ctx, w.gate, c.x.data(), n, gu.data());
    for (int64_t r = 0; r < n; ++r) {
      std::copy(gu.begin() + r * 2 * f, gu.begin() + r * 2 * f + f, c.g.begin() + r * f);
      std::copy(gu.begin() + r * 2 * f + f, gu.begin() + (r + 1) * 2 * f, c.up.begin() + r * f);
    }
  } else {
    linear_forward(ctx, w.gate, c.x.data(), n, c.g.data());
    linear_forward(ctx, w.up, c.x.data(), n, c.up.data());
  }
  c.m.resize(c.g.size());
  for (size_t i = 0; i < c.g.size(); ++i) c.m[i] = c.g[i] * sigmoid(c.g[i]) * c.up[i];
  c.y.resize(static_cast<size_t>(n * w.hidden));
  linear_forward(ctx, w.down, c.m.data(), n, c.y.data());
}

void glu_backward(Ctx& ctx, const GluWeights& w, const GluCache& c, const float* dy, float* dx) {
  const int64_t n = rows_of(w, c);
  const int64_t f = w.width;
  Buf dm(c.m.size());
  linear_backward(ctx, w.down, c.m.data(), dy, n, dm.data(), 0.0f);
  // silu(g) = g s, silu'(g) = s + g s (1 - s), s = sigmoid(g).
  Buf dg(c.g.size()), dup(c.g.size());
  for (size_t i = 0; i < c.g.size(); ++i) {
    const float s = sigmoid(c.g[i]);
    dg[i] = dm[i] * c.up[i] * (s + c.g[i] * s * (1.0f - s));
    dup[i] = dm[i] * c.g[i] * s;
  }
  if (!w.fused) {
    linear_backward(ctx, w.gate, c.x.data(), dg.data(), n, dx, 0.0f);
    linear_backward(ctx, w.up, c.x.data(), dup.data(), n, dx, 1.0f);
    return;
  }
  Buf dgu(static_cast<size_t>(n * 2 * f));
  for (int64_t r = 0; r < n; ++r) {
    std::copy(dg.begin() + r * f, dg.begin() + (r + 1) * f, dgu.begin() + r * 2 * f);
    std::copy(dup.begin() + r * f, dup.begin() + (r + 1) * f, dgu.begin() + r * 2 * f + f);
  }
  linear_backward(ctx, w.gate, c.x.data(), dgu.data(), n, dx, 0.0f);
}

}  // namespace ragged::backend::detail
