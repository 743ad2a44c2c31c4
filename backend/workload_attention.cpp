// Attention of one block: the q/k/v projections (GQA here, MLA in
// workload_mla.cpp), causal softmax attention within each sequence, and the
// output projection.

#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/workload_internal.hpp"
#include "common/errors.hpp"

namespace ragged::backend::detail {
namespace {

double core_scale(const CoreShape& s) { return 1.0 / std::sqrt(static_cast<double>(s.qk_dim)); }

CoreShape core_shape(const AttentionLayout& lay, const Dims& dims) {
  return CoreShape{dims.tokens, dims.seq_len, lay.heads, lay.kv_heads, lay.qk_dim, lay.v_dim};
}

double dot(const float* a, const float* b, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

// Where query i, key j, value j, output i and lse i of one (sequence, head) sit.
struct Rows {
  const CoreShape& s;
  int64_t first_q, first_k;  // the sequence's first query and first key
  int64_t h, g;
  const float* q(const float* base, int64_t i) const { return base + ((first_q + i) * s.heads + h) * s.qk_dim; }
  const float* k(const float* base, int64_t j) const { return base + ((first_k + j) * s.groups + g) * s.qk_dim; }
  const float* v(const float* base, int64_t j) const { return base + ((first_k + j) * s.groups + g) * s.v_dim; }
  int64_t u_at(int64_t i) const { return ((first_q + i) * s.heads + h) * s.v_dim; }
  int64_t lse_at(int64_t i) const { return (first_q + i) * s.heads + h; }
  // The last key query i sees (causal).
  int64_t last_key(int64_t i) const { return s.positions == nullptr ? i : s.positions[first_q + i]; }
};

void gqa_forward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Dims& dims, const float* n1,
                 AttentionCache& c) {
  const int64_t t = dims.tokens;
  const Linear q = bind_linear(lay.q, params, nullptr);
  const Linear k = bind_linear(lay.k, params, nullptr);
  const Linear v = bind_linear(lay.v, params, nullptr);
  c.q_raw.resize(static_cast<size_t>(t * q.out));
  c.k_raw.resize(static_cast<size_t>(t * k.out));
  c.v.resize(static_cast<size_t>(t * v.out));
  linear_forward(ctx, q, n1, t, c.q_raw.data());
  linear_forward(ctx, k, n1, t, c.k_raw.data());
  linear_forward(ctx, v, n1, t, c.v.data());
  c.q = c.q_raw;
  c.k = c.k_raw;
  if (lay.q_norm >= 0)
    rms_norm_forward(c.q_raw.data(), param_at(params, lay.q_norm), t * lay.heads, lay.qk_dim, c.q.data());
  if (lay.k_norm >= 0) {
    rms_norm_forward(c.k_raw.data(), param_at(params, lay.k_norm), t * lay.kv_heads, lay.qk_dim, c.k.data());
  }
}

void gqa_backward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Tensors& grads,
                  const Dims& dims, const float* n1, const AttentionCache& c, Buf& dq, Buf& dk, const Buf& dv,
                  float* dn1) {
  const int64_t t = dims.tokens;
  if (lay.q_norm >= 0) {
    rms_norm_backward(c.q_raw.data(), param_at(params, lay.q_norm), dq.data(), t * lay.heads, lay.qk_dim, dq.data(),
                      grad_at(&grads, lay.q_norm));
  }
  if (lay.k_norm >= 0) {
    rms_norm_backward(c.k_raw.data(), param_at(params, lay.k_norm), dk.data(), t * lay.kv_heads, lay.qk_dim, dk.data(),
                      grad_at(&grads, lay.k_norm));
  }
  linear_backward(ctx, bind_linear(lay.q, params, &grads), n1, dq.data(), t, dn1, 0.0f);
  linear_backward(ctx, bind_linear(lay.k, params, &grads), n1, dk.data(), t, dn1, 1.0f);
  linear_backward(ctx, bind_linear(lay.v, params, &grads), n1, dv.data(), t, dn1, 1.0f);
}

}  // namespace

void core_forward(const CoreShape& s, const float* q, const float* k, const float* v, const float* sinks, float* u,
                  double* lse) {
  const double scale = core_scale(s);
  const int64_t rep = s.heads / s.groups;
  std::vector<double> p(static_cast<size_t>(s.seq_len)), out(static_cast<size_t>(s.v_dim));
  const int64_t queries = s.queries_per_sequence();
  for (int64_t seq = 0; seq * s.seq_len < s.tokens; ++seq) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const Rows r{s, seq * queries, seq * s.seq_len, h, h / rep};
      for (int64_t i = 0; i < queries; ++i) {
        const int64_t last = r.last_key(i);
        double max = sinks == nullptr ? -std::numeric_limits<double>::infinity() : sinks[h];
        for (int64_t j = 0; j <= last; ++j) {
          p[static_cast<size_t>(j)] = scale * dot(r.q(q, i), r.k(k, j), s.qk_dim);
          max = std::max(max, p[static_cast<size_t>(j)]);
        }
        double sum = sinks == nullptr ? 0.0 : std::exp(sinks[h] - max);
        for (int64_t j = 0; j <= last; ++j)
          sum += p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - max);
        std::fill(out.begin(), out.end(), 0.0);
        for (int64_t j = 0; j <= last; ++j) {
          const float* vj = r.v(v, j);
          for (int64_t c = 0; c < s.v_dim; ++c) out[static_cast<size_t>(c)] += p[static_cast<size_t>(j)] * vj[c];
        }
        float* ui = u + r.u_at(i);
        for (int64_t c = 0; c < s.v_dim; ++c) ui[c] = static_cast<float>(out[static_cast<size_t>(c)] / sum);
        lse[r.lse_at(i)] = max + std::log(sum);
      }
    }
  }
}

// With P the softmax, O = P V, and D_i = dO_i . O_i: dV_j = sum_i P_ij dO_i,
// dS_ij = P_ij (dO_i . v_j - D_i), dq_i = scale sum_j dS_ij k_j, dk_j =
// scale sum_i dS_ij q_i; the sink (P_i,sink, no value) gets -P_i,sink D_i.
void core_backward(const CoreShape& s, const float* q, const float* k, const float* v, const float* sinks,
                   const float* u, const double* lse, const float* du, float* dq, float* dk, float* dv, float* dsinks) {
  const double scale = core_scale(s);
  const int64_t rep = s.heads / s.groups;
  // Sums over heads and queries in double, rounded once per element.
  std::vector<double> dk_sum(static_cast<size_t>(s.tokens * s.groups * s.qk_dim), 0.0);
  std::vector<double> dv_sum(static_cast<size_t>(s.tokens * s.groups * s.v_dim), 0.0);
  std::vector<double> sink_sums(static_cast<size_t>(s.heads), 0.0);
  std::vector<double> dqi(static_cast<size_t>(s.qk_dim));
  const int64_t queries = s.queries_per_sequence();
  for (int64_t seq = 0; seq * s.seq_len < s.tokens; ++seq) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const Rows r{s, seq * queries, seq * s.seq_len, h, h / rep};
      for (int64_t i = 0; i < queries; ++i) {
        const float* dui = du + r.u_at(i);
        const float* qi = r.q(q, i);
        const double l = lse[r.lse_at(i)];
        const double d = dot(dui, u + r.u_at(i), s.v_dim);
        if (sinks != nullptr) sink_sums[static_cast<size_t>(h)] -= std::exp(sinks[h] - l) * d;
        std::fill(dqi.begin(), dqi.end(), 0.0);
        for (int64_t j = 0; j <= r.last_key(i); ++j) {
          const float* kj = r.k(k, j);
          const double p = std::exp(scale * dot(qi, kj, s.qk_dim) - l);
          const double ds = p * (dot(dui, r.v(v, j), s.v_dim) - d) * scale;
          double* dkj = dk_sum.data() + ((r.first_k + j) * s.groups + r.g) * s.qk_dim;
          double* dvj = dv_sum.data() + ((r.first_k + j) * s.groups + r.g) * s.v_dim;
          for (int64_t c = 0; c < s.qk_dim; ++c) {
            dqi[static_cast<size_t>(c)] += ds * kj[c];
            dkj[c] += ds * qi[c];
          }
          for (int64_t c = 0; c < s.v_dim; ++c) dvj[c] += p * dui[c];
        }
        float* dq_out = dq + ((r.first_q + i) * s.heads + h) * s.qk_dim;
        for (int64_t c = 0; c < s.qk_dim; ++c) dq_out[c] = static_cast<float>(dqi[static_cast<size_t>(c)]);
      }
    }
  }
  for (size_t i = 0; i < dk_sum.size(); ++i) dk[i] = static_cast<float>(dk_sum[i]);
  for (size_t i = 0; i < dv_sum.size(); ++i) dv[i] = static_cast<float>(dv_sum[i]);
  if (dsinks == nullptr) return;
  for (int64_t h = 0; h < s.heads; ++h) dsinks[h] += static_cast<float>(sink_sums[static_cast<size_t>(h)]);
}

void attention_input_forward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Dims& dims,
                             const float* n1, AttentionCache& cache) {
  RAGGED_ASSERT(!lay.mla, "host workload: MLA attention computes whole");
  gqa_forward(ctx, lay, params, dims, n1, cache);
}

void attention_core_forward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const CoreShape& shape,
                            const float* k, const float* v, AttentionCache& cache, float* out) {
  const int64_t queries = static_cast<int64_t>(cache.q.size()) / (lay.heads * lay.qk_dim);
  cache.u.resize(static_cast<size_t>(queries * lay.heads * lay.v_dim));
  cache.lse.resize(static_cast<size_t>(queries * lay.heads));
  core_forward(shape, cache.q.data(), k, v, param_at(params, lay.sinks), cache.u.data(), cache.lse.data());
  linear_forward(ctx, bind_linear(lay.o, params, nullptr), cache.u.data(), queries, out);
}

void attention_core_backward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Tensors& grads,
                             const CoreShape& shape, const float* k, const float* v, const AttentionCache& cache,
                             const float* dout, Buf& dq, Buf& dk, Buf& dv) {
  const int64_t queries = static_cast<int64_t>(cache.q.size()) / (lay.heads * lay.qk_dim);
  Buf du(static_cast<size_t>(queries * lay.heads * lay.v_dim));
  linear_backward(ctx, bind_linear(lay.o, params, &grads), cache.u.data(), dout, queries, du.data(), 0.0f);
  dq.resize(cache.q.size());
  dk.resize(static_cast<size_t>(shape.tokens * lay.kv_heads * lay.qk_dim));
  dv.resize(static_cast<size_t>(shape.tokens * lay.kv_heads * lay.v_dim));
  core_backward(shape, cache.q.data(), k, v, param_at(params, lay.sinks), cache.u.data(), cache.lse.data(), du.data(),
                dq.data(), dk.data(), dv.data(), grad_at(&grads, lay.sinks));
}

void attention_input_backward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Tensors& grads,
                              const Dims& dims, const float* n1, const AttentionCache& cache, Buf& dq, Buf& dk,
                              const Buf& dv, float* dn1) {
  RAGGED_ASSERT(!lay.mla, "host workload: MLA attention computes whole");
  gqa_backward(ctx, lay, params, grads, dims, n1, cache, dq, dk, dv, dn1);
}

void attention_forward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Dims& dims,
                       const float* n1, AttentionCache& cache, float* out) {
  if (lay.mla) {
    mla_forward(ctx, lay, params, dims, n1, cache);
  } else {
    gqa_forward(ctx, lay, params, dims, n1, cache);
  }
  cache.u.resize(static_cast<size_t>(dims.tokens * lay.heads * lay.v_dim));
  cache.lse.resize(static_cast<size_t>(dims.tokens * lay.heads));
  core_forward(core_shape(lay, dims), cache.q.data(), cache.k.data(), cache.v.data(), param_at(params, lay.sinks),
               cache.u.data(), cache.lse.data());
  linear_forward(ctx, bind_linear(lay.o, params, nullptr), cache.u.data(), dims.tokens, out);
}

void attention_backward(Ctx& ctx, const AttentionLayout& lay, const ConstTensors& params, const Tensors& grads,
                        const Dims& dims, const float* n1, const AttentionCache& cache, const float* dout, float* dn1) {
  const int64_t t = dims.tokens;
  Buf du(static_cast<size_t>(t * lay.heads * lay.v_dim));
  linear_backward(ctx, bind_linear(lay.o, params, &grads), cache.u.data(), dout, t, du.data(), 0.0f);
  Buf dq(cache.q.size()), dk(cache.k.size()), dv(cache.v.size());
  core_backward(core_shape(lay, dims), cache.q.data(), cache.k.data(), cache.v.data(), param_at(params, lay.sinks),
                cache.u.data(), cache.lse.data(), du.data(), dq.data(), dk.data(), dv.data(),
                grad_at(&grads, lay.sinks));
  if (lay.mla) {
    mla_backward(ctx, lay, params, grads, dims, n1, cache, dq.data(), dk.data(), dv.data(), dn1);
  } else {
    gqa_backward(ctx, lay, params, grads, dims, n1, cache, dq, dk, dv, dn1);
  }
}

}  // namespace ragged::backend::detail
