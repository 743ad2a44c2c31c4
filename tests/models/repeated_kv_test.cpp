// Keys and values copied to every query head before the attention kernel
// (KernelChoices::repeated_kv), worked out by hand per token against the
// model: the kernel keeps the copies instead of the kv heads, the copy and
// its gradients' reduction move their bytes, and a model without grouped
// kv heads is unchanged.

#include <cstdio>

#include <gtest/gtest.h>

#include "models/catalog.hpp"
#include "test_helpers.hpp"

namespace ragged::models {
namespace {

ModelSpec with_kv_heads(const std::string& name, bool repeated) {
  const ModelSpec whole = catalog_model(name);
  KernelChoices kernels = whole.kernels;
  kernels.repeated_kv = repeated;
  return build_model(whole.arch, kernels);
}

const UnitSpec& block_of(const ModelSpec& model) {
  const UnitSpec* unit = test_util::find_unit(model, "layers.0");
  EXPECT_NE(unit, nullptr);
  return *unit;
}

const ElementwiseOp* copy_op(const UnitSpec& unit) {
  for (const ElementwiseOp& op : unit.compute.elementwise) {
    if (op.name == "repeat_kv") return &op;
  }
  return nullptr;
}

// Llama 3 8B: 32 query heads, 8 kv heads of 128. The kernel keeps k and v at
// 32 heads: 2 x (32 - 8) x 128 x 2 B = 12,288 B a token more without
// checkpointing; the copy reads 2 x 8 x 128 and writes 2 x 32 x 128 bf16
// elements (20,480 B), its backward the reverse. Selective checkpointing
// (TorchTitan's list) and full checkpointing keep no copy.
TEST(RepeatedKv, TheKernelKeepsEveryQueryHeadsKeysAndValues) {
  const ModelSpec native_model = with_kv_heads("llama3-8b", false);
  const ModelSpec repeated_model = with_kv_heads("llama3-8b", true);
  const UnitSpec& native = block_of(native_model);
  const UnitSpec& repeated = block_of(repeated_model);
  const double kept_by_hand = 2.0 * (32 - 8) * 128 * 2;
  const double copied_by_hand = 2.0 * (8 + 32) * 128 * 2;
  std::printf("llama3-8b block, bytes a token: kept without checkpointing %.0f -> %.0f (by hand +%.0f); copy %.0f\n",
              native.activations.saved_none, repeated.activations.saved_none, kept_by_hand, copied_by_hand);
  EXPECT_DOUBLE_EQ(repeated.activations.saved_none - native.activations.saved_none, kept_by_hand);
  EXPECT_DOUBLE_EQ(repeated.activations.saved_selective, native.activations.saved_selective);
  EXPECT_DOUBLE_EQ(repeated.activations.saved_full, native.activations.saved_full);
  EXPECT_EQ(copy_op(native), nullptr);
  const ElementwiseOp* copy = copy_op(repeated);
  ASSERT_NE(copy, nullptr);
  EXPECT_DOUBLE_EQ(copy->bytes_per_token, copied_by_hand);
  EXPECT_DOUBLE_EQ(copy->backward_bytes(), copied_by_hand);
  EXPECT_EQ(copy->part, UnitPart::kAttentionInput);
  EXPECT_DOUBLE_EQ(repeated.compute.elementwise_bytes_per_token() - native.compute.elementwise_bytes_per_token(),
                   copied_by_hand);
}

// GPT-2 XL has as many kv heads as query heads: nothing to copy.
TEST(RepeatedKv, MultiHeadAttentionHasNothingToCopy) {
  const ModelSpec native_model = with_kv_heads("gpt2-xl", false);
  const ModelSpec repeated_model = with_kv_heads("gpt2-xl", true);
  const UnitSpec& native = block_of(native_model);
  const UnitSpec& repeated = block_of(repeated_model);
  EXPECT_EQ(copy_op(repeated), nullptr);
  EXPECT_DOUBLE_EQ(repeated.activations.saved_none, native.activations.saved_none);
  EXPECT_DOUBLE_EQ(repeated.activations.working, native.activations.working);
}

}  // namespace
}  // namespace ragged::models
