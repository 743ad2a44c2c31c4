// What eager autograd keeps beyond a fused block (KernelChoices::eager_blocks),
// worked out by hand per token against the model's activation bytes: each
// RMSNorm in torch ops its fp32 upcast and its value before the weight (4 B an
// element more), a SwiGLU its SiLU output (2 B an element of the MLP width), a
// LayerNorm (one ATen kernel) and a plain MLP nothing more.

#include <cstdio>

#include <gtest/gtest.h>

#include "models/catalog.hpp"
#include "test_helpers.hpp"

namespace ragged::models {
namespace {

using test_util::find_unit;

ModelSpec built(const std::string& name, bool eager, NormKernel norm = NormKernel::kEager) {
  const ModelSpec whole = catalog_model(name);
  KernelChoices kernels = whole.kernels;
  kernels.eager_blocks = eager;
  kernels.norm = norm;
  return build_model(whole.arch, kernels);
}

const ActivationBytes& activations(const ModelSpec& model, const std::string& unit) {
  const UnitSpec* u = find_unit(model, unit);
  EXPECT_NE(u, nullptr) << unit;
  return u->activations;
}

// Llama 3 8B: h 4,096, f 14,336. Two norms x 4 B x h and the SiLU output
// 2 B x f a token more in a block; the final norm 4 B x h in the head,
// whatever the checkpointing. Full and selective checkpointing keep none of
// it in a block (they recompute it).
TEST(EagerAutograd, ALlamaBlockKeepsItsNormUpcastsAndSiluOutput) {
  const ModelSpec fused = built("llama3-8b", false);
  const ModelSpec eager = built("llama3-8b", true);
  const double by_hand = 2 * 4.0 * 4096 + 2.0 * 14336;
  const ActivationBytes& f = activations(fused, "layers.0");
  const ActivationBytes& e = activations(eager, "layers.0");
  std::printf("llama3-8b block, bytes a token kept without checkpointing: fused %.0f, eager %.0f (by hand +%.0f)\n",
              f.saved_none, e.saved_none, by_hand);
  EXPECT_DOUBLE_EQ(e.saved_none - f.saved_none, by_hand);
  // Selective checkpointing recomputes the upcasts and the SiLU; eager, its
  // cache also holds the down projection's output (a saved mm), which the
  // compiled partitioner drops (nothing in the backward reads it): h x 2 B.
  EXPECT_DOUBLE_EQ(e.saved_selective - f.saved_selective, 4096.0 * 2);
  EXPECT_DOUBLE_EQ(e.saved_full, f.saved_full);
  const ActivationBytes& fh = activations(fused, "head");
  const ActivationBytes& eh = activations(eager, "head");
  EXPECT_DOUBLE_EQ(eh.saved_none - fh.saved_none, 4.0 * 4096);
  EXPECT_DOUBLE_EQ(eh.saved_full - fh.saved_full, 4.0 * 4096);
  // A fused norm kernel keeps its input and statistics: the SiLU output only.
  const ModelSpec fused_norm = built("llama3-8b", true, NormKernel::kFused);
  EXPECT_DOUBLE_EQ(activations(fused_norm, "layers.0").saved_none - f.saved_none, 2.0 * 14336);
}

// GPT-2 XL: LayerNorms (one kernel each) and a GELU MLP (its input and
// output already counted): eager keeps what the model counts.
TEST(EagerAutograd, LayerNormsAndPlainMlpsKeepNothingMore) {
  EXPECT_DOUBLE_EQ(activations(built("gpt2-xl", true), "layers.0").saved_none,
                   activations(built("gpt2-xl", false), "layers.0").saved_none);
}

// Qwen3-235B-A22B: the q and k norms upcast too, (64 + 4) heads x 128; the
// routed and shared experts' SiLU outputs are the MoE part's, and selective
// checkpointing recomputes them with the block's other element-wise results.
TEST(EagerAutograd, QkNormsAndExpertsKeepTheirsToo) {
  const ModelSpec fused = built("qwen3-235b-a22b", false);
  const ModelSpec eager = built("qwen3-235b-a22b", true);
  const double norms = 2 * 4.0 * 4096 + 4.0 * (64 + 4) * 128;
  const double silu = 8 * 1536 * 2.0;  // top 8 routed experts of width 1,536, no shared one
  const ActivationBytes& f = activations(fused, "layers.0");
  const ActivationBytes& e = activations(eager, "layers.0");
  EXPECT_DOUBLE_EQ(e.saved_none - f.saved_none, norms + silu);
  EXPECT_DOUBLE_EQ(e.saved_selective, f.saved_selective);
}

// The final norm's upcast is part of what the head keeps of its input, so
// under sequence parallelism it is spread over tp like the rest of it, also
// where the logits are gathered (KempnerForge's plan): Llama 3 8B on tp 4,
// 4 B x 4,096 / 4 a token more eagerly.
TEST(EagerAutograd, TheFinalNormsUpcastIsSpreadLikeTheHeadsInput) {
  const ModelSplit gathered{4, 1, true, true, true};
  const auto head_saved = [&](bool eager) {
    const ModelSpec whole = built("llama3-8b", eager);
    return activations(build_model(whole.arch, whole.kernels, gathered), "head").saved_none;
  };
  EXPECT_DOUBLE_EQ(head_saved(true) - head_saved(false), 4.0 * 4096 / 4);
}

}  // namespace
}  // namespace ragged::models
