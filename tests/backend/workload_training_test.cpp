// The host workload as the executor uses it: gradients accumulate exactly,
// runs are bitwise deterministic, shards of a batch add up to the global
// batch, SGD lowers the loss, GEMM FLOPs are counted, misuse is reported.

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "models/catalog.hpp"
#include "tests/backend/workload_test_helpers.hpp"

namespace ragged::backend {
namespace {

using test_util::ModelStore;
using test_util::NamedArch;

constexpr int64_t kTrainingSequences = 2;
constexpr int64_t kTrainingSeqLen = 8;

Batch test_batch(const models::ModelSpec& model, int64_t first = 1, int64_t sequences = kTrainingSequences) {
  return synthetic_batch(21, first, sequences, kTrainingSeqLen, model.arch.vocab);
}

class WorkloadTrainingTest : public ::testing::TestWithParam<NamedArch> {
 protected:
  void SetUp() override { model_ = models::build_model(GetParam().arch); }
  models::ModelSpec model_;
};

TEST_P(WorkloadTrainingTest, GradientsAccumulateExactly) {
  ModelStore store(model_, 3);
  HostWorkload work(model_, kTrainingSequences, kTrainingSeqLen);
  work.set_batch(test_batch(model_));
  store.forward(work);
  store.backward(work);
  const auto once = store.grads;
  store.forward(work);
  store.backward(work);
  const bool tied = head_reads_embedding(model_);
  for (size_t u = 0; u < once.size(); ++u) {
    for (size_t i = 0; i < once[u].size(); ++i) {
      const std::string& name = model_.units[u].tensors[i].name;
      for (size_t e = 0; e < once[u][i].size(); ++e) {
        const float twice = 2.0f * once[u][i][e];
        if (tied && u == 0) {
          // The tied table takes two additions per pass (head, then lookup).
          ASSERT_NEAR(store.grads[u][i][e], twice, 1e-6f * (1.0f + std::fabs(twice))) << name << "[" << e << "]";
        } else {
          ASSERT_EQ(store.grads[u][i][e], twice) << name << "[" << e << "]";
        }
      }
    }
  }
}

TEST_P(WorkloadTrainingTest, RunsAreBitwiseDeterministic) {
  double losses[2];
  std::vector<std::vector<std::vector<float>>> grads[2];
  for (int run = 0; run < 2; ++run) {
    ModelStore store(model_, 3);
    HostWorkload work(model_, kTrainingSequences, kTrainingSeqLen);
    work.set_batch(test_batch(model_));
    losses[run] = store.forward(work);
    store.backward(work);
    grads[run] = store.grads;
  }
  EXPECT_EQ(losses[0], losses[1]);
  EXPECT_TRUE(grads[0] == grads[1]);
}

// What a data-parallel run relies on: the mean loss and gradient of a batch
// are the means over its shards (routing follows the global token index).
TEST_P(WorkloadTrainingTest, ShardsAddUpToTheGlobalBatch) {
  ModelStore global_store(model_, 3);
  HostWorkload global(model_, 2 * kTrainingSequences, kTrainingSeqLen);
  global.set_batch(test_batch(model_, 4, 2 * kTrainingSequences));
  const double global_loss = global_store.forward(global);
  global_store.backward(global);

  ModelStore shard_store(model_, 3);
  HostWorkload shard(model_, kTrainingSequences, kTrainingSeqLen);
  double shard_loss = 0;
  for (int64_t first : {4 + kTrainingSequences, int64_t{4}}) {
    shard.set_batch(test_batch(model_, first));
    shard_loss += shard_store.forward(shard) / 2.0;
    shard_store.backward(shard);
  }
  EXPECT_NEAR(shard_loss, global_loss, 1e-6 * global_loss);
  for (size_t u = 0; u < global_store.grads.size(); ++u) {
    for (size_t i = 0; i < global_store.grads[u].size(); ++i) {
      const std::vector<float>& g = global_store.grads[u][i];
      double max_grad = 0;
      for (float v : g) max_grad = std::max(max_grad, std::fabs(static_cast<double>(v)));
      // A key bias without sinks has a zero gradient (softmax shift
      // invariance): only its rounding noise differs.
      const bool zero = !model_.arch.attention_sinks && model_.units[u].tensors[i].name.ends_with("k_proj.bias");
      for (size_t e = 0; e < g.size(); ++e) {
        if (zero) {
          ASSERT_LT(std::fabs(shard_store.grads[u][i][e]), 1e-6);
          continue;
        }
        ASSERT_NEAR(shard_store.grads[u][i][e] / 2.0, g[e], 1e-5 * max_grad)
            << model_.units[u].tensors[i].name << "[" << e << "]";
      }
    }
  }
}

TEST_P(WorkloadTrainingTest, SgdLowersTheLoss) {
  ModelStore store(model_, 3);
  HostWorkload work(model_, kTrainingSequences, kTrainingSeqLen);
  work.set_batch(test_batch(model_));
  std::vector<double> losses;
  for (int step = 0; step < 6; ++step) {
    store.zero_grads();
    losses.push_back(store.forward(work));
    store.backward(work);
    for (size_t u = 0; u < store.params.size(); ++u) {
      for (size_t i = 0; i < store.params[u].size(); ++i) {
        for (size_t e = 0; e < store.params[u][i].size(); ++e) store.params[u][i][e] -= 0.1f * store.grads[u][i][e];
      }
    }
  }
  for (size_t s = 1; s < losses.size(); ++s) EXPECT_LT(losses[s], losses[s - 1]) << "step " << s;
  EXPECT_LT(losses.back(), 0.97 * losses.front());
}

INSTANTIATE_TEST_SUITE_P(WorkloadModels, WorkloadTrainingTest, ::testing::ValuesIn(test_util::test_archs()),
                         [](const ::testing::TestParamInfo<NamedArch>& param) { return param.param.name; });

// Forward GEMMs of a dense model: 2 * tokens * (every projection's elements),
// backward twice that (dX and dW).
TEST(WorkloadFlopsTest, CountsEveryGemm) {
  for (const char* name : {"llama", "qwen2_tied"}) {
    const models::ModelSpec model = models::build_model(test_util::test_arch(name));
    double weights = 0;
    for (const models::UnitSpec& unit : model.units) {
      if (unit.kind == models::UnitKind::kEmbedding) continue;
      for (const models::TensorSpec& t : unit.tensors) weights += t.is_matrix() ? static_cast<double>(t.numel()) : 0;
    }
    if (head_reads_embedding(model)) weights += static_cast<double>(model.units[0].tensors[0].numel());
    ModelStore store(model, 3);
    HostWorkload work(model, kTrainingSequences, kTrainingSeqLen);
    work.set_batch(test_batch(model));
    EXPECT_EQ(work.gemm_flops(), 0.0);
    store.forward(work);
    const double tokens = kTrainingSequences * kTrainingSeqLen;
    EXPECT_DOUBLE_EQ(work.gemm_flops(), 2 * tokens * weights) << name;
    store.backward(work);
    EXPECT_DOUBLE_EQ(work.gemm_flops(), 6 * tokens * weights) << name;
  }
}

TEST(WorkloadMisuseTest, ReportsWrongCallsAndUnknownTensors) {
  const models::ModelSpec model = models::build_model(test_util::test_arch("llama"));
  ModelStore store(model, 3);
  HostWorkload work(model, kTrainingSequences, kTrainingSeqLen);
  EXPECT_THROW(work.forward(0, store.param_view(0)), InternalError) << "no batch yet";
  work.set_batch(test_batch(model));
  EXPECT_THROW(work.forward(1, store.param_view(1)), InternalError) << "unit 0 first";
  EXPECT_THROW(work.forward(1, store.param_view(2)), InternalError) << "wrong tensor count";
  EXPECT_THROW(work.loss(), InternalError);
  EXPECT_THROW(work.set_batch(synthetic_batch(1, 0, kTrainingSequences + 1, kTrainingSeqLen, model.arch.vocab)),
               InternalError);

  models::ModelSpec odd = model;
  odd.units[1].tensors.push_back(
      models::TensorSpec{"layers.0.mlp.mystery.weight", {4, 4}, models::DType::kBF16, models::TensorRole::kMlp});
  try {
    HostWorkload unsupported(odd, kTrainingSequences, kTrainingSeqLen);
    ADD_FAILURE() << "an unknown tensor is refused";
  } catch (const InternalError& error) {
    EXPECT_NE(std::string(error.what()).find("layers.0.mlp.mystery.weight"), std::string::npos) << error.what();
  }
}

TEST(WorkloadSupportTest, RefusesBlockFormsItDoesNotCompute) {
  struct Case {
    const char* model;
    std::vector<std::string> parts;  // what the refusal must name
  };
  const Case cases[] = {
      {"gpt2-xl",
       {"LayerNorm with bias", "a two-matrix MLP", "a fused q/k/v projection", "learned position embeddings"}},
      {"gpt-neox-20b", {"attention and MLP in parallel"}},
      {"mpt-30b", {"ALiBi attention biases", "LayerNorm,"}},
      {"opt-30b", {"learned position embeddings"}},
      {"bloom-176b", {"a LayerNorm after the embedding", "ALiBi"}},
  };
  for (const Case& c : cases) {
    const models::ModelSpec model = models::catalog_model(c.model);
    for (const auto& attempt :
         std::vector<std::function<void()>>{[&] { check_workload_supported(model); },
                                            [&] { HostWorkload work(model, kTrainingSequences, kTrainingSeqLen); }}) {
      try {
        attempt();
        ADD_FAILURE() << c.model << " was accepted";
      } catch (const InputError& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find(std::string("model ") + c.model), std::string::npos) << message;
        EXPECT_NE(message.find("`ragged simulate`"), std::string::npos) << message;
        for (const std::string& part : c.parts) EXPECT_NE(message.find(part), std::string::npos) << message;
      }
    }
  }
  for (const char* name : {"llama3-8b", "mixtral-8x7b", "deepseek-v3", "gpt-oss-20b"}) {
    EXPECT_NO_THROW(check_workload_supported(models::catalog_model(name))) << name;
  }
}

}  // namespace
}  // namespace ragged::backend
