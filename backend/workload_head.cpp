// The embedding lookup and the head: final RMSNorm, logits, a numerically
// stable mean cross-entropy and their gradients.

#include <algorithm>
#include <cmath>
#include <numeric>

#include "backend/workload_internal.hpp"

namespace ragged::backend::detail {

void embed_forward(const float* table, const int32_t* tokens, int64_t tokens_count, int64_t hidden, float* x) {
  for (int64_t t = 0; t < tokens_count; ++t) {
    if (tokens[t] < 0) {
      std::fill(x + t * hidden, x + (t + 1) * hidden, 0.0f);
      continue;
    }
    const float* row = table + static_cast<int64_t>(tokens[t]) * hidden;
    std::copy(row, row + hidden, x + t * hidden);
  }
}

void embed_backward(const int32_t* tokens, int64_t tokens_count, int64_t hidden, const float* dx, float* dtable) {
  // Positions grouped by token, each group in token order: one sum per row.
  std::vector<int64_t> order(static_cast<size_t>(tokens_count));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [tokens](int64_t a, int64_t b) { return tokens[a] < tokens[b]; });
  std::vector<double> sum(static_cast<size_t>(hidden));
  for (size_t begin = 0; begin < order.size();) {
    const int32_t token = tokens[order[begin]];
    if (token < 0) {  // another tp rank's rows
      while (begin < order.size() && tokens[order[begin]] == token) ++begin;
      continue;
    }
    std::fill(sum.begin(), sum.end(), 0.0);
    size_t end = begin;
    for (; end < order.size() && tokens[order[end]] == token; ++end) {
      const float* row = dx + order[end] * hidden;
      for (int64_t j = 0; j < hidden; ++j) sum[static_cast<size_t>(j)] += row[j];
    }
    float* dst = dtable + static_cast<int64_t>(token) * hidden;
    for (int64_t j = 0; j < hidden; ++j) dst[j] += static_cast<float>(sum[static_cast<size_t>(j)]);
    begin = end;
  }
}

double head_forward(Ctx& ctx, const float* norm, const float* weight, const Dims& dims, int64_t vocab, const float* x,
                    const int32_t* labels, HeadCache& cache) {
  const int64_t t = dims.tokens;
  const int64_t h = dims.hidden;
  cache.n.resize(static_cast<size_t>(t * h));
  rms_norm_forward(x, norm, t, h, cache.n.data());
  cache.probs.resize(static_cast<size_t>(t * vocab));
  float* logits = cache.probs.data();
  linear_forward(ctx, Linear{weight, nullptr, nullptr, nullptr, vocab, h, false}, cache.n.data(), t, logits);
  double total = 0;
  for (int64_t r = 0; r < t; ++r) {
    float* row = logits + r * vocab;
    const double max = *std::max_element(row, row + vocab);
    const double label_logit = row[labels[r]];
    double sum = 0;
    for (int64_t v = 0; v < vocab; ++v) {
      const double e = std::exp(static_cast<double>(row[v]) - max);
      sum += e;
      row[v] = static_cast<float>(e);
    }
    total += max + std::log(sum) - label_logit;
    const double inv_sum = 1.0 / sum;
    for (int64_t v = 0; v < vocab; ++v) row[v] = static_cast<float>(row[v] * inv_sum);
  }
  cache.loss = t == 0 ? 0.0 : total / static_cast<double>(t);
  cache.has_gradient = false;
  return cache.loss;
}

void head_loss_backward(HeadCache& cache, const int32_t* labels, int64_t tokens, int64_t vocab) {
  if (cache.has_gradient) return;
  const float inv_t = tokens == 0 ? 0.0f : static_cast<float>(1.0 / static_cast<double>(tokens));
  for (int64_t r = 0; r < tokens; ++r) {
    for (int64_t v = 0; v < vocab; ++v) {
      float& p = cache.probs[static_cast<size_t>(r * vocab + v)];
      p = (p - (v == labels[r] ? 1.0f : 0.0f)) * inv_t;
    }
  }
  cache.has_gradient = true;
}

void head_backward(Ctx& ctx, const float* norm, const float* weight, float* dnorm, float* dweight, const Dims& dims,
                   int64_t vocab, const float* x, const int32_t* labels, HeadCache& cache, float* dx) {
  const int64_t t = dims.tokens;
  const int64_t h = dims.hidden;
  head_loss_backward(cache, labels, t, vocab);
  Buf dn(static_cast<size_t>(t * h));
  linear_backward(ctx, Linear{weight, nullptr, dweight, nullptr, vocab, h, false}, cache.n.data(), cache.probs.data(),
                  t, dn.data(), 0.0f);
  rms_norm_backward(x, norm, dn.data(), t, h, dx, dnorm);
}

}  // namespace ragged::backend::detail
