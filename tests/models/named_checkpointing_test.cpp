// Named checkpointing (SAVED_NAMES): what a block keeps for each named set,
// printed beside the sum of the named tensors' widths, and which forward ops
// its backward reruns.

#include <cstdio>

#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "models/catalog.hpp"

namespace ragged::models {
namespace {

using T = BlockTensor;

SavedNames names_of(std::initializer_list<T> tensors) {
  SavedNames names;
  for (T t : tensors) names.add(t);
  return names;
}

const SavedNames kAll = names_of({T::kNormOut, T::kQkv, T::kAttentionOut, T::kOutProj, T::kResidual, T::kMlpIn,
                                  T::kMlpProduct, T::kMlpOut});
const SavedNames kWeightDots = names_of({T::kQkv, T::kOutProj, T::kMlpIn, T::kMlpOut});

// Llama-3-70B's blocks are Llama-2-70B's (hidden 8192, 64 heads, 8 kv heads,
// FFN 28672); only the vocabulary differs.
ModelSpec seventy_b(std::optional<SavedNames> names, ModelSplit split = {}) {
  KernelChoices kernels;
  kernels.saved_names = names;
  return build_model(find_catalog_entry("llama3-70b").arch, kernels, split);
}

// The first block, by value (the model is a temporary).
UnitSpec block(const ModelSpec& model) { return model.units[1]; }

std::vector<std::string> rerun_gemms(const UnitSpec& unit) {
  std::vector<std::string> out;
  for (const GemmShape& g : named_recompute_ops(unit).compute.gemms) out.push_back(g.name);
  return out;
}

constexpr double b = 2, h = 8192, q = 8192, kv = 1024, ffn = 28672, heads = 64;

TEST(NamedCheckpointing, MaxTextCustomPolicyOfTheLlama2_70bRecipe) {
  // dgxc-benchmarking maxtext/configure.sh @35a9aec: query/key/value/qkv/out
  // projections and mlpwo on the device. The down projection's output is
  // read by no backward: it is not kept.
  const UnitSpec unit = block(seventy_b(names_of({T::kQkv, T::kOutProj, T::kMlpOut})));
  const double expected = b * (h + q + 2 * kv + h);
  std::printf("llama-2-70b block, MaxText custom (q, k, v, o, mlpwo): %.0f B a token (input %.0f + q, k, v %.0f + o "
              "%.0f = %.0f)\n", unit.activations.saved_selective, b * h, b * (q + 2 * kv), b * h, expected);
  EXPECT_DOUBLE_EQ(unit.activations.saved_selective, expected);
  EXPECT_DOUBLE_EQ(expected, 53248);
  // The attention's output is not kept: it and its input side's norm, the
  // MLP's norm, gate, up and their product are rerun; q, k, v, o and down are not.
  const UnitSpec rerun = named_recompute_ops(unit);
  EXPECT_TRUE(rerun.compute.attention.has_value());
  EXPECT_EQ(rerun_gemms(unit), (std::vector<std::string>{"mlp.gate_proj", "mlp.up_proj"}));
  std::vector<std::string> elementwise;
  for (const ElementwiseOp& op : rerun.compute.elementwise) elementwise.push_back(op.name);
  EXPECT_EQ(elementwise, (std::vector<std::string>{"input_layernorm", "attention_residual", "post_attention_layernorm",
                                                   "swiglu"}));
}

TEST(NamedCheckpointing, WeightDotsKeepTheProjectionsAndRerunTheAttention) {
  const UnitSpec unit = block(seventy_b(kWeightDots));
  // Kept: input, q/k/v, o (the residual is rebuilt from it), gate and up; the
  // down projection's output is never read back.
  const double expected = b * (h + q + 2 * kv + h + 2 * ffn);
  std::printf("llama-2-70b block, dots without batch dims: %.0f B a token (analytic %.0f)\n",
              unit.activations.saved_selective, expected);
  EXPECT_DOUBLE_EQ(unit.activations.saved_selective, expected);
  EXPECT_TRUE(rerun_gemms(unit).empty());
  EXPECT_TRUE(named_recompute_ops(unit).compute.attention.has_value());
  // With the attention's output named too (MaxText minimal_flash: Transformer
  // Engine's fused attention tags its output 'context'), nothing but the
  // element-wise ops is rerun.
  SavedNames flash = kWeightDots;
  const UnitSpec minimal_flash = block(seventy_b(flash.add(T::kAttentionOut)));
  EXPECT_DOUBLE_EQ(minimal_flash.activations.saved_selective, expected + b * q + 4 * heads);
  EXPECT_FALSE(named_recompute_ops(minimal_flash).compute.attention.has_value());
}

TEST(NamedCheckpointing, EveryNameIsNoCheckpointing) {
  const UnitSpec unit = block(seventy_b(kAll));
  std::printf("llama-2-70b block, every name: %.0f B a token, none %.0f\n", unit.activations.saved_selective,
              unit.activations.saved_none);
  EXPECT_DOUBLE_EQ(unit.activations.saved_selective, unit.activations.saved_none);
  const UnitSpec rerun = named_recompute_ops(unit);
  EXPECT_TRUE(rerun.compute.gemms.empty());
  EXPECT_TRUE(rerun.compute.elementwise.empty());
  EXPECT_FALSE(rerun.compute.attention.has_value());
}

TEST(NamedCheckpointing, NoNameKeepsTheInputAndRerunsAllTheBackwardReads) {
  const UnitSpec unit = block(seventy_b(SavedNames{}));
  EXPECT_DOUBLE_EQ(unit.activations.saved_selective, unit.activations.saved_full);
  // Everything but the down projection and the MLP's residual add, whose
  // outputs no backward reads (FULL reruns the whole forward).
  const UnitSpec rerun = named_recompute_ops(unit);
  EXPECT_EQ(rerun.compute.gemms.size() + 1, unit.compute.gemms.size());
  EXPECT_NE(rerun.compute.gemms.back().name, "mlp.down_proj");
  EXPECT_EQ(rerun.compute.elementwise.size() + 1, unit.compute.elementwise.size());
  EXPECT_NE(rerun.compute.elementwise.back().name, "mlp_residual");
  EXPECT_TRUE(rerun.compute.attention.has_value());
}

TEST(NamedCheckpointing, NamedWidthsAreTheTensorParallelRanks) {
  // tp 8 without sequence parallelism: q, k, v (one kv head each) and gate/up
  // on an eighth of their width; the input and o at the hidden width.
  const UnitSpec unit = block(seventy_b(kWeightDots, ModelSplit{8, 1, false}));
  const double expected = b * (h + q / 8 + 2 * kv / 8 + h + 2 * ffn / 8);
  EXPECT_DOUBLE_EQ(unit.activations.saved_selective, expected);
  // Sequence parallelism spreads all of it over the 8 ranks.
  const UnitSpec sp = block(seventy_b(kWeightDots, ModelSplit{8, 1, true}));
  EXPECT_DOUBLE_EQ(sp.activations.saved_selective, b * (h + q + 2 * kv + h + 2 * ffn) / 8);
}

TEST(NamedCheckpointing, UnnamedPolicyKeepsTorchTitansSelective) {
  EXPECT_FALSE(block(seventy_b(std::nullopt)).activations.named_recompute.has_value());
}

TEST(NamedCheckpointing, MixtureOfExpertsBlocksAreRefused) {
  KernelChoices kernels;
  kernels.saved_names = kWeightDots;
  EXPECT_THROW(build_model(find_catalog_entry("mixtral-8x7b").arch, kernels), InputError);
}

}  // namespace
}  // namespace ragged::models
