#include "sim/compute_model.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "planner/compute_work.hpp"
#include "tests/sim/h100_compute_constants.hpp"

// The attention kernels' cost: FlashAttention-2's efficiencies, the kernels
// measured against it, and SDPA's cuDNN backend on each generation.
namespace ragged::sim {
namespace {

using planner::AttentionWork;

using namespace h100_constants;  // docs/SIMULATOR.md section 6's H100 numbers

TEST(ComputeAttention, ForwardAndBackwardUseTheirEfficiencies) {
  const ComputeModel model = ComputeModel::defaults("h100", kH100Peak, kH100Hbm);
  AttentionWork attention;
  attention.flops = 1e12;
  EXPECT_DOUBLE_EQ(model.attention_seconds(attention, false), 1e12 / (kH100Peak * kH100AttentionForward) + kLaunch);
  EXPECT_DOUBLE_EQ(model.attention_seconds(attention, true), 1e12 / (kH100Peak * kH100AttentionBackward) + kLaunch);
  EXPECT_GT(model.attention_seconds(attention, true), model.attention_seconds(attention, false));
  EXPECT_EQ(model.attention_seconds(AttentionWork{}, false), 0.0);
}

// The kernels slower than FlashAttention-2 at the same shape, on any GPU:
// flash-attn's Triton FlashAttention (llm-foundry's attn_impl: triton) takes
// 1.4x as long forward and 2x backward (Dao 2023, section 4.1, A100:
// FlashAttention-2 is 1.3-1.5x faster forward, 1.4x taken, and 2x backward);
// SDPA's efficient backend runs at FlashAttention-1's speed, 2x each way
// (pull request #92917's training loop put it level with FlashAttention-1,
// and FlashAttention-2 is "around 2x" that).
TEST(ComputeAttention, SlowerKernelsRunAtTheirMeasuredShareOfFlashAttention2sRate) {
  struct Kernel {
    models::AttentionKernel kernel;
    double forward, backward;  // times FlashAttention-2's work
  };
  for (const char* gpu : {"h100", "a100-80g"}) {
    const GpuComputeSpec& table = *find_gpu_table(gpu);
    const ComputeModel model = ComputeModel::defaults(gpu, table.peak_flops, table.hbm_bytes_per_s);
    AttentionWork flash2;
    flash2.flops = 1e12;
    flash2.seq_len = 2048;
    flash2.qk_head_dim = 128;
    for (const Kernel& k : {Kernel{models::AttentionKernel::kTritonFlash, 1.4, 2.0},
                            Kernel{models::AttentionKernel::kMemoryEfficient, 2.0, 2.0}}) {
      AttentionWork slower = flash2;
      slower.kernel = k.kernel;
      const double launch = model.spec().launch_seconds;
      for (bool backward : {false, true}) {
        const double times = backward ? k.backward : k.forward;
        const double flash2_work = model.attention_seconds(flash2, backward) - launch;
        const double expected = times * flash2_work + launch;
        std::printf("%s %s %s: FA2 %.3f ms, analytic %.1f x FA2 + launch = %.3f ms, model %.3f ms\n", gpu,
                    std::string(models::attention_kernel_name(k.kernel)).c_str(), backward ? "backward" : "forward",
                    1e3 * flash2_work, times, 1e3 * expected, 1e3 * model.attention_seconds(slower, backward));
        EXPECT_NEAR(model.attention_seconds(slower, backward), expected, 1e-12 * expected);
      }
    }
  }
}

// SDPA's cuDNN backend: FlashAttention-3's rates on Hopper (TritonBench: 631
// against 632 TFLOP/s forward); on a GB200 the rates NVIDIA's cudnn-frontend
// benchmark measured at 8,192 tokens and head dim 128 (1,584 forward, 1,211
// backward), at the share of its bursts a Blackwell GPU sustains (1,237 of
// 1,450, sim/gpu_tables.cpp).
TEST(ComputeAttention, CudnnRunsAtEachGenerationsMeasuredRate) {
  AttentionWork cudnn;
  cudnn.flops = 1e12;
  cudnn.seq_len = 8192;
  cudnn.qk_head_dim = 128;
  cudnn.v_head_dim = 128;
  cudnn.kernel = models::AttentionKernel::kCudnn;
  const GpuComputeSpec& h100_table = *find_gpu_table("h100");
  const ComputeModel h100 = ComputeModel::defaults("h100", h100_table.peak_flops, h100_table.hbm_bytes_per_s);
  for (int64_t seq : {2048, 8192}) {
    for (int64_t head : {64, 128}) {
      AttentionWork shape = cudnn;
      shape.seq_len = seq;
      shape.qk_head_dim = shape.v_head_dim = head;
      AttentionWork flash3 = shape;
      flash3.kernel = models::AttentionKernel::kFlash3;
      for (bool backward : {false, true}) {
        EXPECT_DOUBLE_EQ(h100.attention_seconds(shape, backward), h100.attention_seconds(flash3, backward))
            << seq << " x " << head;
      }
    }
  }
  const GpuComputeSpec& table = *find_gpu_table("gb200");
  const ComputeModel gb200 = ComputeModel::defaults("gb200", table.peak_flops, table.hbm_bytes_per_s);
  const double sustained = 1237.0 / 1450.0;
  const double launch = gb200.spec().launch_seconds;
  EXPECT_NEAR(gb200.attention_seconds(cudnn, false) - launch, 1e12 / (1584e12 * sustained), 1e-9);
  EXPECT_NEAR(gb200.attention_seconds(cudnn, true) - launch, 1e12 / (1211e12 * sustained), 1e-9);
  AttentionWork flash2 = cudnn;
  flash2.kernel = models::AttentionKernel::kFlash2;
  EXPECT_GT(gb200.attention_seconds(flash2, false), 1.8 * gb200.attention_seconds(cudnn, false));
  // No measured rate on the A100: zero efficiency, refused with the scenario.
  EXPECT_EQ(find_gpu_table("a100-80g")->cudnn_forward_efficiency, 0);
  EXPECT_EQ(find_gpu_table("mi300x")->cudnn_backward_efficiency, 0);
}

}  // namespace
}  // namespace ragged::sim
