// Strategy DDP (torch.nn.parallel.DistributedDataParallel): the buckets,
// and the Program the builder makes of them: no gathers or reduce-scatters,
// each bucket all-reduced over the replicas during the backward, no_sync on
// the accumulation micro-batches, the memory of a replicated model, and
// plain training on one GPU.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "planner/ddp_buckets.hpp"
#include "planner/optimizer_program.hpp"
#include "tests/planner/program_test_util.hpp"

namespace ragged::planner {
namespace {

using program_test::depends_on;
using program_test::graph_problems;
using program_test::joined;
using program_test::ops_of;
using program_test::ProgramSetup;

constexpr int64_t kMiB = int64_t{1} << 20;

TEST(DdpBuckets, TheFirstHoldsOneMibThenEachTheCapInTheBackwardsOrder) {
  // Three units of fp32 gradients; the backward makes unit 2's first, and a
  // unit's last parameter's first.
  const std::vector<std::vector<int64_t>> units = {{kMiB / 8, kMiB},        // 0.5 MiB, 4 MiB
                                                   {kMiB / 2, kMiB / 2},    // 2 MiB, 2 MiB
                                                   {kMiB / 16, kMiB / 8}};  // 0.25 MiB, 0.5 MiB
  const std::vector<DdpBucket> buckets = ddp_buckets(units, 4, 3 * kMiB);
  ASSERT_EQ(buckets.size(), 3u);
  // 0.5 + 0.25 MiB stay under 1 MiB, unit 1's 2 MiB closes the first bucket.
  EXPECT_EQ(buckets[0].bytes, (kMiB / 8 + kMiB / 16 + kMiB / 2) * 4);
  EXPECT_EQ(buckets[0].tensors, 3);
  EXPECT_EQ(buckets[0].ready_unit, 1);
  // Then 3 MiB: unit 1's other 2 MiB and unit 0's 4 MiB (a gradient is never split).
  EXPECT_EQ(buckets[1].bytes, (kMiB / 2 + kMiB) * 4);
  EXPECT_EQ(buckets[1].ready_unit, 0);
  // What is left goes in a last bucket below the cap.
  EXPECT_EQ(buckets[2].bytes, kMiB / 8 * 4);
  EXPECT_EQ(buckets[2].ready_unit, 0);
  int64_t total = 0;
  for (const DdpBucket& b : buckets) total += b.elements;
  EXPECT_EQ(total, kMiB / 8 + kMiB + kMiB + kMiB / 16 + kMiB / 8);
}

int64_t model_params(const ProgramSetup& s) {
  int64_t n = 0;
  for (const UnitPlan& u : s.plan().units) n += u.params();
  return n;
}

int64_t all_reduce_bytes(const Program& program, int micro_batch) {
  int64_t bytes = 0;
  for (const Op* op : ops_of(program, OpKind::kAllReduce)) {
    if (op->micro_batch == micro_batch) bytes += op->bytes;
  }
  return bytes;
}

TEST(DdpProgram, NothingIsGatheredAndTheBucketsAllReduceEveryGradientOnce) {
  const ProgramSetup s("strategy: DDP ddp { bucket_cap_mb: 1 } precision { param: BF16 master: FP32 }");
  EXPECT_EQ(s.training().shard_group_size(), 1);
  EXPECT_EQ(s.training().replicate_group_size(), 8);
  EXPECT_EQ(s.training().precision().reduce(), scenarios::FP32);  // the parameters' own dtype
  const Program program = s.build();
  EXPECT_EQ(joined(graph_problems(program)), "");
  EXPECT_EQ(program.count(OpKind::kAllGather), 0u);
  EXPECT_EQ(program.count(OpKind::kReduceScatter), 0u);
  const std::vector<const Op*> reduces = ops_of(program, OpKind::kAllReduce);
  ASSERT_GT(reduces.size(), 2u);
  for (const Op* op : reduces) {
    EXPECT_EQ(op->group, Group::kReplicate) << op->name;
    EXPECT_EQ(op->stream, Stream::kAllReduce) << op->name;
  }
  // Every fp32 gradient is all-reduced once a step.
  const int64_t gradient_bytes = model_params(s) * 4;
  std::printf("all-reduced per step: %lld bytes in %zu buckets; gradients: %lld bytes\n",
              static_cast<long long>(all_reduce_bytes(program, 0)), reduces.size(),
              static_cast<long long>(gradient_bytes));
  EXPECT_EQ(all_reduce_bytes(program, 0), gradient_bytes);
  // The first bucket is the head's last gradients, at least 1 MiB.
  EXPECT_GE(reduces.front()->bytes, kMiB);
  EXPECT_EQ(reduces.front()->unit, s.units() - 1);
  // Autocast casts each unit's parameters on the compute stream, no collective before.
  for (const Op* cast : ops_of(program, OpKind::kCast)) EXPECT_EQ(cast->stream, Stream::kCompute) << cast->name;
}

TEST(DdpProgram, BucketsAreAllReducedWhileTheBackwardGoesOn) {
  const ProgramSetup s("strategy: DDP ddp { bucket_cap_mb: 1 }");
  const Program program = s.build();
  const Op& first_bucket = *ops_of(program, OpKind::kAllReduce).front();
  const Op& embedding_backward = program_test::only_op(program, OpKind::kComputeBwd, 0, 0);
  // Issued before the embedding's backward, which does not wait for it.
  EXPECT_LT(first_bucket.id, embedding_backward.id);
  EXPECT_FALSE(depends_on(program, embedding_backward.id, first_bucket.id, true));
  // The copies back into .grad wait for their bucket, and the optimizer for them.
  const std::vector<const Op*> copies_back = ops_of(program, OpKind::kCopyOut);
  ASSERT_EQ(copies_back.size(), ops_of(program, OpKind::kAllReduce).size());
  EXPECT_TRUE(depends_on(program, copies_back.front()->id, first_bucket.id));
  EXPECT_TRUE(depends_on(program, ops_of(program, OpKind::kOptimizer).front()->id, copies_back.back()->id, true));
}

TEST(DdpProgram, NoSyncAllReducesOnlyInTheLastMicroBatch) {
  const ProgramSetup deferred(
      "strategy: DDP gradient_accumulation_steps: 4 accumulation_gradient_sync: LAST_MICRO_BATCH");
  const ProgramSetup every("strategy: DDP gradient_accumulation_steps: 4");
  const Program last_only = deferred.build(), each = every.build();
  EXPECT_EQ(joined(graph_problems(last_only)), "");
  const int64_t gradient_bytes = model_params(every) * 4;
  for (int mb = 0; mb < 4; ++mb) {
    EXPECT_EQ(all_reduce_bytes(last_only, mb), mb == 3 ? gradient_bytes : 0) << "micro-batch " << mb;
    EXPECT_EQ(all_reduce_bytes(each, mb), gradient_bytes) << "micro-batch " << mb;
  }
  // Autograd adds each later micro-batch's gradients to .grad either way.
  for (const Program* p : {&last_only, &each}) {
    int accumulations = 0;
    for (const Op* op : ops_of(*p, OpKind::kGradAccumulate)) accumulations += op->micro_batch > 0;
    EXPECT_EQ(accumulations, 3 * deferred.units());
  }
}

TEST(DdpProgram, EveryRankHoldsTheWholeModelWhereFsdpHoldsAnEighth) {
  const ProgramSetup ddp("strategy: DDP");
  const ProgramSetup fsdp("strategy: FSDP2");
  const Program replicated = ddp.build(), sharded = fsdp.build();
  const int64_t n = model_params(ddp);
  EXPECT_EQ(replicated.persistent.master_params, n * 4);
  EXPECT_EQ(replicated.persistent.gradients, n * 4);  // the buckets
  EXPECT_EQ(replicated.persistent.optimizer_states, 2 * n * 4);  // AdamW's two fp32 moments
  EXPECT_EQ(replicated.persistent.master_params, 8 * sharded.persistent.master_params);
  EXPECT_LE(sharded.persistent.optimizer_states * 8, replicated.persistent.optimizer_states + 8 * 64 * 2 * 4);
  // .grad of every unit, freed by zero_grad after the optimizer.
  EXPECT_EQ(replicated.bytes_of(BufferKind::kGradShards), n * 4);
}

TEST(DdpProgram, AutocastCastsAgainForAFullRecomputeAndATiedTableIsReducedOnce) {
  const ProgramSetup s(
      "strategy: DDP activation_checkpointing: FULL precision { param: BF16 master: FP32 }",
      "model { inline_spec { hidden_size: 256 num_layers: 4 vocab_size: 1024 intermediate_size: 704\n"
      "  num_attention_heads: 8 num_key_value_heads: 4 tie_word_embeddings: true } }\n"
      "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n");
  const Program program = s.build();
  EXPECT_EQ(joined(graph_problems(program)), "");
  // A block casts for its forward and again for its recompute.
  for (int u = 0; u < s.units(); ++u) {
    int casts = 0;
    for (const Op* op : ops_of(program, OpKind::kCast)) casts += op->unit == u;
    EXPECT_EQ(casts, s.spec(u).kind == models::UnitKind::kBlock ? 2 : 1) << s.spec(u).name;
  }
  EXPECT_EQ(all_reduce_bytes(program, 0), model_params(s) * 4);
}

TEST(DdpProgram, OneGpuIsPlainTrainingWithoutCollectivesOrCopies) {
  const ProgramSetup s("strategy: DDP precision { param: BF16 master: BF16 }",
                       "model { inline_spec { hidden_size: 256 num_layers: 4 vocab_size: 1024 intermediate_size: 704\n"
                       "  num_attention_heads: 8 num_key_value_heads: 4 } }\n"
                       "cluster { gpu { preset: \"h100\" } gpus_per_node: 1 nodes: 1 }\n");
  const Program program = s.build();
  EXPECT_EQ(joined(graph_problems(program)), "");
  for (OpKind kind : {OpKind::kAllGather, OpKind::kReduceScatter, OpKind::kAllReduce, OpKind::kCopyIn,
                      OpKind::kCopyOut, OpKind::kCast, OpKind::kGradAccumulate}) {
    EXPECT_EQ(program.count(kind), 0u) << op_kind_name(kind);
  }
  EXPECT_EQ(program.persistent.gradients, 0);
  EXPECT_EQ(program.bytes_of(BufferKind::kUnshardedParams), 0);
}

}  // namespace
}  // namespace ragged::planner
