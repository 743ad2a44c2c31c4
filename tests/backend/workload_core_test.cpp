// The host workload's attention core, RMSNorm and top-k routing against
// direct implementations written here, and their backward against central
// finite differences of a fixed linear read-out of their outputs.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "backend/workload_internal.hpp"

namespace ragged::backend {
namespace {

using detail::CoreShape;

std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
  std::vector<float> out(n);
  uint32_t x = seed * 2654435761u + 12345u;
  for (float& v : out) {
    x = x * 1664525u + 1013904223u;
    v = scale * (static_cast<float>(x >> 8) / 8388608.0f - 1.0f);
  }
  return out;
}

// 2 sequences of 5 tokens, 4 heads over 2 kv heads, q/k 6 wide, v 3 wide.
constexpr CoreShape kShape{10, 5, 4, 2, 6, 3};

struct CoreInputs {
  std::vector<float> q = random_values(static_cast<size_t>(kShape.tokens * kShape.heads * kShape.qk_dim), 1, 1.5f);
  std::vector<float> k = random_values(static_cast<size_t>(kShape.tokens * kShape.groups * kShape.qk_dim), 2, 1.5f);
  std::vector<float> v = random_values(static_cast<size_t>(kShape.tokens * kShape.groups * kShape.v_dim), 3);
  std::vector<float> sinks = random_values(static_cast<size_t>(kShape.heads), 4);
};

std::vector<float> run_core(const CoreInputs& in, bool with_sinks, std::vector<double>* lse = nullptr) {
  std::vector<float> u(static_cast<size_t>(kShape.tokens * kShape.heads * kShape.v_dim));
  std::vector<double> l(static_cast<size_t>(kShape.tokens * kShape.heads));
  detail::core_forward(kShape, in.q.data(), in.k.data(), in.v.data(), with_sinks ? in.sinks.data() : nullptr, u.data(),
                       l.data());
  if (lse != nullptr) *lse = l;
  return u;
}

// softmax(q k^T / sqrt(d), causal within the sequence) v, one query at a time.
std::vector<double> naive_attention(const CoreInputs& in, bool with_sinks) {
  const CoreShape& s = kShape;
  std::vector<double> u(static_cast<size_t>(s.tokens * s.heads * s.v_dim), 0.0);
  for (int64_t t = 0; t < s.tokens; ++t) {
    const int64_t first = t / s.seq_len * s.seq_len;
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t g = h / (s.heads / s.groups);
      std::vector<double> w;
      for (int64_t j = first; j <= t; ++j) {
        double score = 0;
        for (int64_t c = 0; c < s.qk_dim; ++c) {
          score += static_cast<double>(in.q[static_cast<size_t>((t * s.heads + h) * s.qk_dim + c)]) *
                   in.k[static_cast<size_t>((j * s.groups + g) * s.qk_dim + c)];
        }
        w.push_back(std::exp(score / std::sqrt(static_cast<double>(s.qk_dim))));
      }
      double total = std::accumulate(w.begin(), w.end(), 0.0);
      if (with_sinks) total += std::exp(static_cast<double>(in.sinks[static_cast<size_t>(h)]));
      for (int64_t j = first; j <= t; ++j) {
        for (int64_t c = 0; c < s.v_dim; ++c) {
          u[static_cast<size_t>((t * s.heads + h) * s.v_dim + c)] +=
              w[static_cast<size_t>(j - first)] / total * in.v[static_cast<size_t>((j * s.groups + g) * s.v_dim + c)];
        }
      }
    }
  }
  return u;
}

TEST(WorkloadCoreTest, AttentionMatchesADirectCausalSoftmaxPerSequence) {
  const CoreInputs in;
  for (bool sinks : {false, true}) {
    const std::vector<float> u = run_core(in, sinks);
    const std::vector<double> expected = naive_attention(in, sinks);
    for (size_t i = 0; i < u.size(); ++i) EXPECT_NEAR(u[i], expected[i], 1e-6) << "element " << i << " sinks " << sinks;
  }
}

TEST(WorkloadCoreTest, AttentionNeverCrossesSequencesOrLooksAhead) {
  const CoreInputs in;
  const std::vector<float> u = run_core(in, false);
  // Changing the first sequence, or the last token of the second, leaves the
  // second sequence's earlier outputs bitwise unchanged.
  CoreInputs changed = in;
  const auto kv_row = static_cast<size_t>(kShape.groups * kShape.qk_dim);
  for (size_t i = 0; i < kv_row * static_cast<size_t>(kShape.seq_len); ++i) changed.k[i] += static_cast<float>(i % 5);
  const size_t last = static_cast<size_t>(kShape.tokens - 1);
  for (size_t i = last * kv_row; i < (last + 1) * kv_row; ++i) changed.k[i] -= 2.0f;
  const std::vector<float> u2 = run_core(changed, false);
  const auto row = static_cast<size_t>(kShape.heads * kShape.v_dim);
  for (size_t i = static_cast<size_t>(kShape.seq_len) * row; i < last * row; ++i) EXPECT_EQ(u[i], u2[i]) << i;
  EXPECT_NE(u[row], u2[row]);  // the first sequence's second token did see the change
}

// d/dx of sum(out * read) for a scalar x, by central differences.
double central(const std::function<double()>& loss, float& x, float step) {
  const float original = x;
  x = original + step;
  const double plus = loss();
  x = original - step;
  const double minus = loss();
  x = original;
  return (plus - minus) / (2.0 * step);
}

double read_out(const std::vector<float>& out, const std::vector<float>& read) {
  double sum = 0;
  for (size_t i = 0; i < out.size(); ++i) sum += static_cast<double>(out[i]) * read[i];
  return sum;
}

void expect_gradient(const std::vector<float>& analytic, std::vector<float>& values, const std::function<double()>& loss,
                     const char* what) {
  ASSERT_EQ(analytic.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const double fd = central(loss, values[i], 1e-2f);
    EXPECT_NEAR(analytic[i], fd, 2e-3 + 2e-3 * std::fabs(fd)) << what << "[" << i << "]";
  }
}

TEST(WorkloadCoreTest, AttentionBackwardMatchesFiniteDifferences) {
  CoreInputs in;
  const std::vector<float> read = random_values(static_cast<size_t>(kShape.tokens * kShape.heads * kShape.v_dim), 9);
  std::vector<double> lse;
  const std::vector<float> u = run_core(in, true, &lse);
  std::vector<float> dq(in.q.size()), dk(in.k.size()), dv(in.v.size()), dsinks(in.sinks.size(), 0.0f);
  detail::core_backward(kShape, in.q.data(), in.k.data(), in.v.data(), in.sinks.data(), u.data(), lse.data(),
                        read.data(), dq.data(), dk.data(), dv.data(), dsinks.data());
  auto loss = [&] { return read_out(run_core(in, true), read); };
  expect_gradient(dq, in.q, loss, "dq");
  expect_gradient(dk, in.k, loss, "dk");
  expect_gradient(dv, in.v, loss, "dv");
  expect_gradient(dsinks, in.sinks, loss, "dsinks");
}

TEST(WorkloadCoreTest, RmsNormMatchesTheDefinitionAndItsGradient) {
  constexpr int64_t kRows = 3, kCols = 8;
  std::vector<float> x = random_values(kRows * kCols, 5, 2.0f);
  std::vector<float> w = random_values(kCols, 6);
  std::vector<float> y(x.size());
  detail::rms_norm_forward(x.data(), w.data(), kRows, kCols, y.data());
  for (int64_t r = 0; r < kRows; ++r) {
    double ms = 0;
    for (int64_t c = 0; c < kCols; ++c) ms += static_cast<double>(x[r * kCols + c]) * x[r * kCols + c];
    const double rstd = 1.0 / std::sqrt(ms / kCols + 1e-5);
    for (int64_t c = 0; c < kCols; ++c) EXPECT_NEAR(y[r * kCols + c], x[r * kCols + c] * rstd * w[c], 1e-6);
  }
  const std::vector<float> read = random_values(x.size(), 7);
  std::vector<float> dx(x.size()), dw(w.size(), 0.0f);
  detail::rms_norm_backward(x.data(), w.data(), read.data(), kRows, kCols, dx.data(), dw.data());
  auto loss = [&] {
    std::vector<float> out(x.size());
    detail::rms_norm_forward(x.data(), w.data(), kRows, kCols, out.data());
    return read_out(out, read);
  };
  expect_gradient(dx, x, loss, "dx");
  expect_gradient(dw, w, loss, "dw");
}

TEST(WorkloadCoreTest, RoutingPicksTheExpertsADirectSortPicks) {
  detail::MoeLayout lay;
  lay.experts = 6;
  lay.top_k = 3;
  constexpr int64_t kTokens = 20;
  detail::MoeCache cache;
  cache.logits = random_values(static_cast<size_t>(kTokens * lay.experts), 8);
  // Ties: token 0 has every logit equal, token 1 two equal leaders.
  std::fill(cache.logits.begin(), cache.logits.begin() + lay.experts, 0.5f);
  cache.logits[static_cast<size_t>(lay.experts + 4)] = 3.0f;
  cache.logits[static_cast<size_t>(lay.experts + 2)] = 3.0f;
  detail::route_top_k(lay, kTokens, cache);
  for (int64_t t = 0; t < kTokens; ++t) {
    const float* logits = cache.logits.data() + t * lay.experts;
    std::vector<std::pair<float, int64_t>> ranked;
    for (int64_t e = 0; e < lay.experts; ++e) ranked.emplace_back(-logits[e], e);
    std::sort(ranked.begin(), ranked.end());
    double total = 0;
    for (int64_t j = 0; j < lay.top_k; ++j) total += std::exp(static_cast<double>(logits[ranked[j].second]));
    for (int64_t j = 0; j < lay.top_k; ++j) {
      const auto slot = static_cast<size_t>(t * lay.top_k + j);
      EXPECT_EQ(cache.experts[slot], ranked[static_cast<size_t>(j)].second) << "token " << t << " choice " << j;
      EXPECT_NEAR(cache.weights[slot], std::exp(static_cast<double>(logits[ranked[j].second])) / total, 1e-6);
    }
  }
  EXPECT_EQ(cache.experts[0], 0);
  EXPECT_EQ(cache.experts[1], 1);
  EXPECT_EQ(cache.experts[static_cast<size_t>(lay.top_k)], 2);
  EXPECT_EQ(cache.experts[static_cast<size_t>(lay.top_k + 1)], 4);
  // Each expert lists its tokens in token order, once each.
  int64_t copies = 0;
  for (const detail::GluCache& expert : cache.routed) {
    EXPECT_TRUE(std::is_sorted(expert.rows.begin(), expert.rows.end()));
    EXPECT_EQ(std::adjacent_find(expert.rows.begin(), expert.rows.end()), expert.rows.end());
    copies += static_cast<int64_t>(expert.rows.size());
  }
  EXPECT_EQ(copies, kTokens * lay.top_k);
}

}  // namespace
}  // namespace ragged::backend
