#include "sim/gemm_depth.hpp"

#include <gtest/gtest.h>

#include <cstdio>

#include "planner/compute_work.hpp"
#include "sim/compute_model.hpp"

namespace ragged::sim {
namespace {

// A row made from the model it is fitted with gives its fill back.
TEST(GemmDepth, TheFitRecoversTheFillARowWasMadeWith) {
  for (const double fill : {64.0, 256.0, 700.0}) {
    DepthRow row{};
    for (size_t i = 0; i < row.size(); ++i) row[i] = 900.0 * gemm_k_loop_efficiency(kXlaDepths[i], fill);
    EXPECT_DOUBLE_EQ(fitted_fill_depth(row), fill);
  }
}

// XLA's table has the B200's K loop filling over 535 of k where the H100's
// fills over 279 (the same fit): 1.92 times as deep, so the B200's fill is
// 256 x 535 / 279 = 490. The MI300X's 231 makes it 212; a part the table
// does not list keeps the H100's 256.
TEST(GemmDepth, BlackwellsKernelsFillAboutTwiceTheHoppersDepth) {
  const double b200 = gemm_fill_depth("b200");
  std::printf(
      "fill depth: h100 %.1f, b200 %.1f (analytic 256 x 535 / 279 = %.1f), mi300x %.1f (256 x 231 / 279 = %.1f)\n",
      gemm_fill_depth("h100"), b200, 256.0 * 535 / 279, gemm_fill_depth("mi300x"), 256.0 * 231 / 279);
  EXPECT_NEAR(b200, 256.0 * 535 / 279, 2.0);
  EXPECT_DOUBLE_EQ(gemm_fill_depth("gb200"), b200);  // the B200's die
  EXPECT_NEAR(gemm_fill_depth("mi300x"), 256.0 * 231 / 279, 2.0);
  for (const char* part : {"h100", "h200", "h800", "a100-80g", "cpu"}) {
    EXPECT_DOUBLE_EQ(gemm_fill_depth(part), kGemmPipelineFillK) << part;
  }
}

// The default tables carry the depth: a training step's GEMM over a hidden
// size of 2,048 (Llama 3.2 1B's MLP over 18,432 tokens) runs at a smaller
// share of the cube of its FLOPs on the B200 than on the H100.
TEST(GemmDepth, AShallowGemmLosesMoreOfItsRateOnTheB200) {
  const ComputeModel h100 = ComputeModel::defaults("h100", 989e12, 3.35e12);
  const ComputeModel b200 = ComputeModel::defaults("b200", 2250e12, 7.7e12);
  EXPECT_DOUBLE_EQ(h100.spec().gemm_fill_k, kGemmPipelineFillK);
  EXPECT_DOUBLE_EQ(b200.spec().gemm_fill_k, gemm_fill_depth("b200"));
  const planner::Gemm shallow{18432, 8192, 2048, 1};
  const planner::Gemm cube{6770, 6770, 6770, 1};  // about the same FLOPs, as deep as the tables' squares
  auto share = [&](const ComputeModel& model) {
    return (shallow.flops() / model.gemm_seconds(shallow)) / (cube.flops() / model.gemm_seconds(cube));
  };
  std::printf("shallow over cube rate: h100 %.3f, b200 %.3f\n", share(h100), share(b200));
  EXPECT_LT(share(b200), share(h100) - 0.04);
  EXPECT_LT(share(b200), 1.0);
}

}  // namespace
}  // namespace ragged::sim
