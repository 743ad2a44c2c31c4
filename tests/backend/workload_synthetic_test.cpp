// synthetic_batch and initial_value: pure functions of their arguments, and
// a shard of the batch equals the slice of the global batch.

#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include "backend/workload.hpp"
#include "models/model_spec.hpp"

namespace ragged::backend {
namespace {

constexpr int64_t kBatchSeqLen = 16;
constexpr int64_t kVocab = 1000;

TEST(WorkloadSyntheticTest, BatchIsAPureFunctionOfItsArguments) {
  const Batch a = synthetic_batch(5, 2, 3, kBatchSeqLen, kVocab);
  const Batch b = synthetic_batch(5, 2, 3, kBatchSeqLen, kVocab);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.sequences, 3);
  EXPECT_EQ(a.seq_len, kBatchSeqLen);
  EXPECT_EQ(a.first_sequence, 2);
  ASSERT_EQ(a.tokens.size(), static_cast<size_t>(3 * kBatchSeqLen));
  ASSERT_EQ(a.labels.size(), a.tokens.size());
  EXPECT_NE(synthetic_batch(6, 2, 3, kBatchSeqLen, kVocab).tokens, a.tokens) << "the seed changes the data";
}

TEST(WorkloadSyntheticTest, ShardsAreSlicesOfTheGlobalBatch) {
  const Batch global = synthetic_batch(9, 0, 8, kBatchSeqLen, kVocab);
  for (int64_t first : {0, 1, 3, 6}) {
    for (int64_t count : {1, 2}) {
      const Batch shard = synthetic_batch(9, first, count, kBatchSeqLen, kVocab);
      const auto begin = static_cast<ptrdiff_t>(first * kBatchSeqLen);
      const auto end = static_cast<ptrdiff_t>((first + count) * kBatchSeqLen);
      EXPECT_EQ(shard.tokens, std::vector<int32_t>(global.tokens.begin() + begin, global.tokens.begin() + end))
          << "sequences [" << first << ", " << first + count << ")";
      EXPECT_EQ(shard.labels, std::vector<int32_t>(global.labels.begin() + begin, global.labels.begin() + end));
    }
  }
}

TEST(WorkloadSyntheticTest, LabelsAreTheNextTokens) {
  const Batch batch = synthetic_batch(3, 4, 5, kBatchSeqLen, kVocab);
  // The same sequences one token longer: their last token is the label of our last position.
  const Batch longer = synthetic_batch(3, 4, 5, kBatchSeqLen + 1, kVocab);
  std::set<int32_t> distinct;
  for (int64_t s = 0; s < batch.sequences; ++s) {
    for (int64_t p = 0; p < kBatchSeqLen; ++p) {
      const auto i = static_cast<size_t>(s * kBatchSeqLen + p);
      ASSERT_GE(batch.tokens[i], 0);
      ASSERT_LT(batch.tokens[i], kVocab);
      distinct.insert(batch.tokens[i]);
      EXPECT_EQ(longer.tokens[static_cast<size_t>(s * (kBatchSeqLen + 1) + p)], batch.tokens[i]);
      EXPECT_EQ(batch.labels[i], longer.tokens[static_cast<size_t>(s * (kBatchSeqLen + 1) + p + 1)]);
    }
  }
  EXPECT_GT(distinct.size(), 50u) << "tokens spread over the vocabulary";
}

models::TensorSpec tensor(std::string name, std::vector<int64_t> shape, models::TensorRole role) {
  return models::TensorSpec{std::move(name), std::move(shape), models::DType::kBF16, role};
}

TEST(WorkloadSyntheticTest, InitialValuesFollowTheTensorKind) {
  const models::TensorSpec matrix = tensor("layers.0.mlp.up_proj.weight", {96, 64}, models::TensorRole::kMlp);
  const models::TensorSpec fused =
      tensor("layers.0.mlp.experts.gate_up_proj", {4, 64, 32}, models::TensorRole::kExpert);
  const models::TensorSpec norm = tensor("layers.0.input_layernorm.weight", {64}, models::TensorRole::kNorm);
  const models::TensorSpec q_norm = tensor("layers.0.self_attn.q_norm.weight", {16}, models::TensorRole::kAttention);
  const models::TensorSpec bias = tensor("layers.0.self_attn.q_proj.bias", {64}, models::TensorRole::kAttention);
  const models::TensorSpec fused_bias =
      tensor("layers.0.mlp.experts.gate_up_proj_bias", {4, 32}, models::TensorRole::kExpert);
  const models::TensorSpec sinks = tensor("layers.0.self_attn.sinks", {4}, models::TensorRole::kAttention);

  auto check = [](const models::TensorSpec& t, double center, double radius) {
    double sum = 0;
    std::set<float> distinct;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const float v = initial_value(17, t, 3, i);
      EXPECT_EQ(v, initial_value(17, t, 3, i)) << t.name << " is a pure function";
      EXPECT_LE(std::fabs(v - center), radius) << t.name << "[" << i << "]";
      sum += v - center;
      distinct.insert(v);
    }
    EXPECT_LT(std::fabs(sum / static_cast<double>(t.numel())), radius / 4) << t.name << " is centred";
    EXPECT_GT(distinct.size(), static_cast<size_t>(t.numel() / 2)) << t.name << " varies";
  };
  check(matrix, 0.0, 1.0 / 8.0);  // 1/sqrt(64)
  check(fused, 0.0, 1.0 / std::sqrt(32.0));
  check(norm, 1.0, 0.02);
  check(q_norm, 1.0, 0.02);
  check(bias, 0.0, 0.02);
  check(fused_bias, 0.0, 0.02);
  check(sinks, 0.0, 0.02);
}

TEST(WorkloadSyntheticTest, InitialValueDependsOnSeedTensorAndIndex) {
  const models::TensorSpec matrix = tensor("lm_head.weight", {101, 64}, models::TensorRole::kHead);
  const float v = initial_value(1, matrix, 7, 100);
  EXPECT_EQ(v, initial_value(1, matrix, 7, 100));
  EXPECT_NE(v, initial_value(2, matrix, 7, 100));
  EXPECT_NE(v, initial_value(1, matrix, 8, 100));
  EXPECT_NE(v, initial_value(1, matrix, 7, 101));
}

}  // namespace
}  // namespace ragged::backend
