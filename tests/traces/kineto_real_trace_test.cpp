// Real PyTorch profiler traces, as HolisticTraceAnalysis ships them for its
// own tests (tests/traces/data/README.md names the source, commit, license
// and the one trim): what the Kineto import reads from a distributed
// training trace and from a ROCm trace of a toy training loop. Neither is of
// a model Ragged builds (a recommendation model on 128 ranks, a two-layer
// MLP), so the test checks what is extracted and matched against the sample
// Program, not errors against a prediction of the same model.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "sample_trace.hpp"
#include "traces/kineto_import.hpp"
#include "traces/trace_comparability.hpp"
#include "traces/trace_io.hpp"

namespace ragged::traces {
namespace {

const std::filesystem::path kData = std::filesystem::path(RAGGED_SOURCE_DIR) / "tests/traces/data";

KinetoImport import_file(const std::string& name) {
  const std::filesystem::path path = kData / name;
  return import_kineto(read_file(path, kMaxTraceBytes), testing::make_sample_trace(), path.string());
}

// Rank 0 of 128, two steps; its ten NCCL kernels are all
// "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", launched inside c10d's
// "nccl:all_to_all" (4), "nccl:all_reduce" (4) and "nccl:_all_gather_base" (2).
constexpr const char* kDistributed = "hta_sampled_rank-0_without_cpu_ops.json";
// One MI250 (ROCm 6.2): a step of forward, MSE loss, backward and SGD, then
// a ProfilerStep#2 that launched nothing before the profiler stopped.
constexpr const char* kRocmToy = "hta_mi250_minitoy_train_ROCm6_2_kineto.json";

TEST(KinetoRealTrace, TheDistributedTraceIsRecognised) {
  EXPECT_TRUE(looks_like_kineto(read_file(kData / kDistributed, kMaxTraceBytes)));
  EXPECT_TRUE(looks_like_kineto(read_file(kData / kRocmToy, kMaxTraceBytes)));
}

TEST(KinetoRealTrace, NcclKernelsAreTheCollectivesCalledNotHowNcclRanThem) {
  const KinetoImport k = import_file(kDistributed);
  EXPECT_EQ(k.steps, 2);
  EXPECT_EQ(k.kernels, 1154);
  EXPECT_EQ(k.nccl_kernels.at(ALL_TO_ALL), 4);
  EXPECT_EQ(k.nccl_kernels.at(ALL_REDUCE), 4);
  EXPECT_EQ(k.nccl_kernels.at(ALL_GATHER), 2);
  EXPECT_FALSE(k.nccl_kernels.contains(OP_KIND_UNSPECIFIED));
  // The sample Program has one all-gather per step to match, and no all-to-all or all-reduce.
  EXPECT_EQ(k.collectives_matched, 2);
  EXPECT_EQ(k.collectives_unmatched, 8);
  // A DDP model: no FSDP annotations, no unit's compute to match.
  EXPECT_EQ(k.compute_matched + k.compute_unmatched, 0);
}

TEST(KinetoRealTrace, StepsAreTheProfilerStepAnnotations) {
  const KinetoImport k = import_file(kDistributed);
  const Summary& s = k.trace.summary();
  ASSERT_EQ(s.per_step_size(), 2);
  // ProfilerStep#551 and #552 last 607,312 and 622,928 us (their "dur").
  EXPECT_NEAR(s.per_step(0).step_time_s(), 0.607312, 1e-9);
  EXPECT_NEAR(s.per_step(1).step_time_s(), 0.622928, 1e-9);
  for (const StepFigures& step : s.per_step()) {
    EXPECT_GT(step.compute_s(), 0);
    EXPECT_GT(step.comm_s(), 0);
    EXPECT_LE(step.compute_s() + step.exposed_comm_s(), step.step_time_s() + 1e-12);
  }
  EXPECT_EQ(s.peak_allocated_bytes(), 0);  // recorded without profile_memory
}

TEST(KinetoRealTrace, ATraceOfAnotherWorldSizeIsAnotherRun) {
  const Trace predicted = testing::make_sample_trace();  // 2 GPUs
  const KinetoImport k = import_file(kDistributed);
  EXPECT_EQ(k.trace.metadata().world_size(), 128);  // distributedInfo.world_size
  const Comparability c = comparability(predicted, k.trace);
  ASSERT_FALSE(c.comparable());
  EXPECT_NE(c.describe().find("GPUs 2 vs 128"), std::string::npos) << c.describe();
}

TEST(KinetoRealTrace, AStepThatLaunchedNothingIsLeftOut) {
  const KinetoImport k = import_file(kRocmToy);
  EXPECT_EQ(k.steps, 1);  // ProfilerStep#1; #2 launched no kernel
  EXPECT_EQ(k.kernels, 14);
  EXPECT_TRUE(k.nccl_kernels.empty());
  EXPECT_EQ(k.trace.metadata().device(), "AMD Radeon Graphics");  // deviceProperties[0].name
  EXPECT_EQ(k.trace.metadata().world_size(), testing::make_sample_trace().metadata().world_size());  // none recorded
  EXPECT_NEAR(k.trace.summary().step_time_s(), 0.009288291, 1e-9);
  bool said = false;
  for (const std::string& note : k.notes) said |= note.find("no GPU kernel launched in them: ProfilerStep#2") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(KinetoRealTrace, AGzippedTraceIsAnErrorSayingToDecompressIt) {
  const testing::ScratchDir dir;
  write_file_atomically(dir / "rank-0.json.gz", std::string("\x1f\x8b\x08\x00", 4) + "compressed");
  try {
    read_measured_trace(dir / "rank-0.json.gz", testing::make_sample_trace());
    FAIL() << "a gzip file was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("gzip-compressed; decompress it first (gunzip -k "), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ragged::traces
