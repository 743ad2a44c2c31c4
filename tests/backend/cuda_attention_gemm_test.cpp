// The GEMM attention's steps (backend/cuda/attention_gemm.hpp), replayed on
// the host in float64 with row-major GEMM semantics and the row ops as the
// kernels define them, against the host workload's attention
// (core_forward/core_backward): the views, strides, transposes and the order
// of the group sums are the device's, checked without a GPU.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "backend/cuda/attention_gemm.hpp"
#include "backend/workload_internal.hpp"

namespace ragged::backend::gpu {
namespace {

using Buffers = std::map<AttentionBuffer, std::vector<double>>;

void replay_gemm(const AttentionGemm& g, Buffers& b) {
  const GemmShape& s = g.shape;
  const int64_t lda = s.lda > 0 ? s.lda : (s.transpose_a ? s.m : s.k);
  const int64_t ldb = s.ldb > 0 ? s.ldb : (s.transpose_b ? s.k : s.n);
  const int64_t ldc = s.ldc > 0 ? s.ldc : s.n;
  const std::vector<double>& a = b.at(g.a.buffer);
  const std::vector<double>& bm = b.at(g.b.buffer);
  std::vector<double>& c = b.at(g.c.buffer);
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < s.k; ++p) {
        const double av = a.at(static_cast<size_t>(g.a.offset + (s.transpose_a ? p * lda + i : i * lda + p)));
        const double bv = bm.at(static_cast<size_t>(g.b.offset + (s.transpose_b ? j * ldb + p : p * ldb + j)));
        sum += av * bv;
      }
      double& out = c.at(static_cast<size_t>(g.c.offset + i * ldc + j));
      out = g.alpha * sum + (g.beta != 0.0f ? g.beta * out : 0.0);
    }
  }
}

void replay_rows(AttentionRowOp op, int64_t n, double scale, Buffers& b) {
  std::vector<double>& scores = b.at(AttentionBuffer::kScores);
  for (int64_t i = 0; i < n; ++i) {
    double* row = &scores[static_cast<size_t>(i * n)];
    if (op != AttentionRowOp::kCausalSoftmaxBackward) {
      const double max = *std::max_element(row, row + i + 1);
      double sum = 0;
      for (int64_t j = 0; j <= i; ++j) sum += std::exp(row[j] - max);
      for (int64_t j = 0; j < n; ++j) {
        const double p = j <= i ? std::exp(row[j] - max) / sum : 0.0;
        b.at(AttentionBuffer::kProbs)[static_cast<size_t>(i * n + j)] = p;
        if (op == AttentionRowOp::kCausalSoftmax) row[j] = p;
      }
    } else {
      const double* dp = &b.at(AttentionBuffer::kProbGrads)[static_cast<size_t>(i * n)];
      double dot = 0;
      for (int64_t j = 0; j <= i; ++j) dot += row[j] * dp[j];
      for (int64_t j = 0; j < n; ++j) {
        b.at(AttentionBuffer::kScoreGrads)[static_cast<size_t>(i * n + j)] = j <= i ? row[j] * (dp[j] - dot) * scale : 0;
      }
    }
  }
}

void replay(const std::vector<AttentionStep>& steps, const AttentionShape& shape, Buffers& b) {
  for (const AttentionStep& step : steps) {
    if (step.is_gemm) {
      // The device call must take these views too.
      ASSERT_NO_THROW(column_major_call(step.gemm.shape));
      replay_gemm(step.gemm, b);
    } else {
      replay_rows(step.rows, shape.seq_len, gemm_attention_scale(shape), b);
    }
  }
}

std::vector<float> random_floats(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> out(n);
  for (float& x : out) x = value(rng);
  return out;
}

double replayed_error(const std::vector<double>& got, const std::vector<float>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    norm += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(diff / norm);
}

TEST(GemmAttentionSteps, ReplayedOnTheHostAreTheHostWorkloadsAttention) {
  std::mt19937_64 rng(2026);
  // Two sequences of 7, 4 query heads on 2 kv heads of 5: every view is strided.
  const AttentionShape shape{14, 7, 4, 2, 5};
  const auto q_size = static_cast<size_t>(shape.tokens * shape.heads * shape.dim);
  const auto kv_size = static_cast<size_t>(shape.tokens * shape.groups * shape.dim);
  const std::vector<float> q = random_floats(q_size, rng), k = random_floats(kv_size, rng),
                           v = random_floats(kv_size, rng), du = random_floats(q_size, rng);

  detail::CoreShape core{shape.tokens, shape.seq_len, shape.heads, shape.groups, shape.dim, shape.dim};
  std::vector<float> u(q_size), dq(q_size), dk(kv_size), dv(kv_size);
  std::vector<double> lse(static_cast<size_t>(shape.tokens * shape.heads));
  detail::core_forward(core, q.data(), k.data(), v.data(), nullptr, u.data(), lse.data());
  detail::core_backward(core, q.data(), k.data(), v.data(), nullptr, u.data(), lse.data(), du.data(), dq.data(),
                        dk.data(), dv.data(), nullptr);

  const auto square = static_cast<size_t>(shape.seq_len * shape.seq_len);
  auto doubles = [](const std::vector<float>& x) { return std::vector<double>(x.begin(), x.end()); };
  Buffers b{{AttentionBuffer::kQuery, doubles(q)},
            {AttentionBuffer::kKey, doubles(k)},
            {AttentionBuffer::kValue, doubles(v)},
            {AttentionBuffer::kOutput, std::vector<double>(q_size, NAN)},
            {AttentionBuffer::kOutputGrad, doubles(du)},
            {AttentionBuffer::kKeyGrad, std::vector<double>(kv_size, NAN)},
            {AttentionBuffer::kValueGrad, std::vector<double>(kv_size, NAN)},
            {AttentionBuffer::kScores, std::vector<double>(square, NAN)},
            {AttentionBuffer::kProbs, std::vector<double>(square, NAN)},
            {AttentionBuffer::kProbGrads, std::vector<double>(square, NAN)},
            {AttentionBuffer::kScoreGrads, std::vector<double>(square, NAN)}};
  replay(gemm_attention_forward_steps(shape), shape, b);
  replay(gemm_attention_backward_steps(shape), shape, b);
  // Every output written (NaN poisoned), each within float rounding of the host's.
  EXPECT_LT(replayed_error(b.at(AttentionBuffer::kOutput), u), 1e-6);
  EXPECT_LT(replayed_error(b.at(AttentionBuffer::kOutputGrad), dq), 1e-6);
  EXPECT_LT(replayed_error(b.at(AttentionBuffer::kKeyGrad), dk), 1e-6);
  EXPECT_LT(replayed_error(b.at(AttentionBuffer::kValueGrad), dv), 1e-6);
}

TEST(GemmAttentionSteps, TakenOnlyWhereTheReferenceComputesTheSame) {
  const AttentionShape plain{16, 8, 4, 2, 8};
  EXPECT_TRUE(gemm_attention_applies(plain, false));
  EXPECT_FALSE(gemm_attention_applies(plain, true));  // q/k norms
  AttentionShape context = plain;
  context.queries = 4;  // context parallelism: some of a sequence's queries
  EXPECT_FALSE(gemm_attention_applies(context, false));
  EXPECT_FALSE(gemm_attention_applies(AttentionShape{16, 8, 3, 2, 8}, false));  // heads not a multiple of the groups
  // One head's fp32 scores and probability gradients, and bf16 probabilities and score gradients.
  EXPECT_EQ(gemm_attention_scratch_bytes(8192, 2), int64_t{8192} * 8192 * 12);
  // A forward is 3 steps a (sequence, head), a backward 7.
  EXPECT_EQ(gemm_attention_forward_steps(plain).size(), 2u * 4u * 3u);
  EXPECT_EQ(gemm_attention_backward_steps(plain).size(), 2u * 4u * 7u);
}

}  // namespace
}  // namespace ragged::backend::gpu
