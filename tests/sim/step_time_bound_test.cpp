// sim::step_time_lower_bound on hand-made Programs, each beside its
// analytic value: kernels in a chain add up, across pipeline stages too (a
// receive waits for its send); streams that do not wait for each other
// overlap; the CPU issue path bounds a launch-heavy step; a Program whose
// ops wait in a cycle has no bound. (tests/tune/step_time_bound_test.cpp
// checks the bound against simulations.)

#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "sim/step_time_bound.hpp"

namespace ragged::sim {
namespace {

using planner::Op;
using planner::OpKind;
using planner::Program;
using planner::Stream;

const ComputeModel& h100() {
  static const ComputeModel model = ComputeModel::defaults("h100", 989.4e12, 3.35e12);
  return model;
}

// A memory-bound copy of `bytes` on `stream`, after `deps`.
Op copy(Program& p, int64_t bytes, Stream stream = Stream::kCompute, std::vector<uint32_t> deps = {}) {
  Op op;
  op.id = static_cast<uint32_t>(p.ops.size());
  op.kind = OpKind::kCopyIn;
  op.stream = stream;
  op.bytes = bytes;
  op.deps = std::move(deps);
  p.ops.push_back(op);
  return op;
}

Op message(Program& p, OpKind kind, int peer, int64_t id, std::vector<uint32_t> deps = {}) {
  Op op;
  op.id = static_cast<uint32_t>(p.ops.size());
  op.kind = kind;
  op.stream = kind == OpKind::kSend ? Stream::kPipelineSend : Stream::kPipelineRecv;
  op.peer = peer;
  op.message = id;
  op.deps = std::move(deps);
  p.ops.push_back(op);
  return op;
}

constexpr int64_t kGiB = int64_t{1} << 30;
// What the bound gives up for SimGrid's timing precision: 1e-9 s per timed
// wait on its longest chain (a handful here).
constexpr double kPrecision = 1e-7;

TEST(StepTimeBound, AChainAcrossStagesAddsUp) {
  std::vector<Program> stages(2);
  stages[1].stage = 1;
  const Op first = copy(stages[0], kGiB);
  message(stages[0], OpKind::kSend, 1, 0, {first.id});
  const Op received = message(stages[1], OpKind::kRecv, 0, 0);
  const Op second = copy(stages[1], 2 * kGiB, Stream::kCompute, {received.id});
  const double expected = h100().seconds(first) + h100().seconds(second);
  const double bound = step_time_lower_bound(stages, h100(), HostCosts::none());
  std::printf("two stages' copies: bound %.9f s, their times alone %.9f s\n", bound, expected);
  EXPECT_NEAR(bound, expected, kPrecision);
  EXPECT_LE(bound, expected);
}

TEST(StepTimeBound, StreamsThatDoNotWaitOverlap) {
  std::vector<Program> stages(1);
  const Op compute = copy(stages[0], 3 * kGiB);
  const Op other = copy(stages[0], kGiB, Stream::kAllGather);
  copy(stages[0], kGiB, Stream::kAllGather, {other.id});
  const double expected = h100().seconds(compute);  // the longer stream, not the sum
  const double bound = step_time_lower_bound(stages, h100(), HostCosts::none());
  std::printf("3 GiB beside 2 x 1 GiB on another stream: bound %.9f s, the longer stream %.9f s\n", bound, expected);
  EXPECT_NEAR(bound, expected, kPrecision);
}

TEST(StepTimeBound, TheCpuIssuePathBoundsALaunchHeavyStep) {
  std::vector<Program> stages(1);
  for (int i = 0; i < 4; ++i) {
    copy(stages[0], 1024);
    stages[0].ops.back().host.framework_ops = 1000;
  }
  const HostCosts host = HostCosts::pytorch_eager();
  const double kernels = 4 * h100().seconds(stages[0].ops[0]);
  // The host issues every op's 1,000 launches in turn; the last op ends a
  // kernel's share after its last launch.
  const double issue = 4 * 1000 * host.framework_op_seconds;
  const double bound = step_time_lower_bound(stages, h100(), host);
  std::printf("4 ops of 1,000 launches: bound %.6f s, issue %.6f s, kernels alone %.6f s\n", bound, issue, kernels);
  EXPECT_GT(issue, kernels);
  EXPECT_GE(bound, issue * (1 - 1e-6));
  EXPECT_LE(bound, issue + kernels);
}

TEST(StepTimeBound, OpsWaitingInACycleHaveNoBound) {
  std::vector<Program> stages(1);
  copy(stages[0], kGiB, Stream::kCompute, {1});
  copy(stages[0], kGiB, Stream::kAllGather, {0});
  EXPECT_EQ(step_time_lower_bound(stages, h100(), HostCosts::none()), 0.0);
}

}  // namespace
}  // namespace ragged::sim
