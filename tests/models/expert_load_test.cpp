// An uneven router (KernelChoices::expert_load, the busiest expert's tokens
// over the mean) against what the rank holding the busiest expert receives,
// worked out by hand, and what the two expert kernels make of it: the
// grouped kernel's work follows the tokens, the padded one runs every local
// expert at the busiest one's count.

#include <cstdio>

#include <gtest/gtest.h>

#include "models/catalog.hpp"
#include "test_helpers.hpp"

namespace ragged::models {
namespace {

using test_util::find_unit;

// The routed experts' forward FLOPs and saved bytes per token of `unit`.
struct Routed {
  double flops = 0;
  double saved = 0;
};

Routed routed_of(const ModelSpec& model, const std::string& unit) {
  const UnitSpec* u = find_unit(model, unit);
  EXPECT_NE(u, nullptr) << unit;
  Routed r;
  if (u == nullptr) return r;
  for (const GemmShape& g : u->compute.gemms) r.flops += g.routed_experts ? g.forward_flops_per_token() : 0;
  r.saved = u->activations.saved_none;
  return r;
}

ModelSpec with_load(const std::string& name, double load, ExpertKernel kernel, int64_t ep) {
  const ModelSpec whole = catalog_model(name);
  KernelChoices kernels = whole.kernels;
  kernels.expert_load = load;
  kernels.expert_kernel = kernel;
  return build_model(whole.arch, kernels, ModelSplit{1, ep});
}

// DeepSeek-V3, 256 experts top 8 (collapsed: 32). At load 2 on ep 64 (four
// experts a rank) the busiest expert's rank takes 2 + 3 x 254/255 of four
// mean loads; with one rank for every expert nothing moves; with one expert a
// rank the rank takes the load itself.
TEST(ExpertLoad, TheBusiestRanksTokensByHand) {
  const ArchConfig arch = catalog_model("deepseek-v3").arch;
  EXPECT_DOUBLE_EQ(max_expert_load(arch), 32.0);
  const double by_hand = (2.0 + 3.0 * 254.0 / 255.0) / 4.0;
  std::printf("deepseek-v3, load 2: ep 64 rank by hand %.6f, computed %.6f\n", by_hand, busiest_rank_tokens(arch, 4, 2.0));
  EXPECT_DOUBLE_EQ(busiest_rank_tokens(arch, 4, 2.0), by_hand);
  EXPECT_DOUBLE_EQ(busiest_rank_tokens(arch, 256, 2.0), 1.0);
  EXPECT_DOUBLE_EQ(busiest_rank_tokens(arch, 1, 2.0), 2.0);
  EXPECT_DOUBLE_EQ(busiest_rank_tokens(arch, 4, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(max_expert_load(catalog_model("llama3-8b").arch), 1.0);
}

// Mixtral 8x7B on one rank (ep 1): the grouped kernel's routed work is the
// balanced one whatever the load; the padded kernel's is the load times it,
// its saved routed activations the same.
TEST(ExpertLoad, PaddingRunsEveryExpertAtTheBusiestOnesCount) {
  const ModelSpec balanced = with_load("mixtral-8x7b", 1.0, ExpertKernel::kGrouped, 1);
  const ModelSpec grouped = with_load("mixtral-8x7b", 3.0, ExpertKernel::kGrouped, 1);
  const ModelSpec padded = with_load("mixtral-8x7b", 3.0, ExpertKernel::kPadded, 1);
  const Routed b = routed_of(balanced, "layers.0");
  const Routed g = routed_of(grouped, "layers.0");
  const Routed p = routed_of(padded, "layers.0");
  // 8 experts x top 2 / 8 x 3 projections of 4096 x 14336, two FLOPs each.
  EXPECT_DOUBLE_EQ(b.flops, 2.0 * 3.0 * 4096.0 * 14336.0 * 2.0);
  EXPECT_DOUBLE_EQ(g.flops, b.flops);
  EXPECT_DOUBLE_EQ(g.saved, b.saved);
  std::printf("mixtral-8x7b routed GEMM FLOPs a token: balanced %.6g, padded at load 3 %.6g\n", b.flops, p.flops);
  EXPECT_DOUBLE_EQ(p.flops, 3.0 * b.flops);
  // Routed saved bytes a token: top_k x (hidden + 3 x width) x 2 B, three times.
  EXPECT_DOUBLE_EQ(p.saved - b.saved, 2.0 * 2.0 * (4096.0 + 3.0 * 14336.0) * 2.0);
  // The model's parameters and its MFU's FLOPs do not see the router.
  EXPECT_EQ(padded.params(), balanced.params());
  EXPECT_DOUBLE_EQ(padded.model_flops_per_token(4096), balanced.model_flops_per_token(4096));
}

// Under expert parallelism the grouped kernel's rank works at its tokens:
// DeepSeek-V3 on ep 64 at load 2, the experts unit's FLOPs by the factor by hand.
TEST(ExpertLoad, UnderExpertParallelismTheBusiestRankSetsTheWork) {
  const ModelSpec balanced = with_load("deepseek-v3", 1.0, ExpertKernel::kGrouped, 64);
  const ModelSpec uneven = with_load("deepseek-v3", 2.0, ExpertKernel::kGrouped, 64);
  const double factor = (2.0 + 3.0 * 254.0 / 255.0) / 4.0;
  EXPECT_NEAR(routed_of(uneven, "layers.3.experts").flops, factor * routed_of(balanced, "layers.3.experts").flops,
              1e-6 * routed_of(balanced, "layers.3.experts").flops);
  // The block's own part (attention, router, shared expert) does not move.
  EXPECT_DOUBLE_EQ(routed_of(uneven, "layers.3").saved, routed_of(balanced, "layers.3").saved);
}

}  // namespace
}  // namespace ragged::models
