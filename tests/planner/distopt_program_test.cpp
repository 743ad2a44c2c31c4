// Strategy MEGATRON_DDP (Megatron-LM's DistributedDataParallel with its
// distributed optimizer): the buckets of its buffers, and the Program the
// builder makes of them: the gradients reduce-scattered and the updated
// parameters all-gathered once a step over the data-parallel group, when
// the overlaps put them, the memory of whole parameters and gradients with
// sharded master weights and Adam states, and the composition with tp, pp
// and ep.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "planner/distopt_buckets.hpp"
#include "planner/scenario_plan.hpp"
#include "scenarios/scenario_loader.hpp"
#include "tests/planner/program_test_util.hpp"

namespace ragged::planner {
namespace {

using program_test::depends_on;
using program_test::graph_problems;
using program_test::joined;
using program_test::ops_of;
using program_test::ProgramSetup;

TEST(DistOptBuckets, ParametersOn64ElementsBucketsClosedAtTheSizeAndPaddedForTheShards) {
  BucketDomain domain;
  domain.units = {0, 1, 2};
  domain.unit_tensors = {{1000, 30}, {500, 500}, {100, 10}};
  domain.ranks = 3;
  domain.bucket_size = 1200;
  const std::vector<DistOptBucket> buckets = distopt_buckets(domain);
  ASSERT_EQ(buckets.size(), 2u);
  // Backward order: unit 2's 10 at 0, its 100 at 64, unit 1's 500 at 192 and
  // 500 at 704 end at 1204 >= 1200: closed, padded to lcm(3, 128) = 384.
  EXPECT_EQ(buckets[0].elements, 1536);
  EXPECT_EQ(buckets[0].tensors, 4);
  EXPECT_EQ(buckets[0].last_unit, 2);
  EXPECT_EQ(buckets[0].first_unit, 1);
  // Then unit 0's 30 at 1536 and its 1000 at 1600 end at 2600: 1152 elements.
  EXPECT_EQ(buckets[1].elements, 1152);
  EXPECT_EQ(buckets[1].first_unit, 0);
  EXPECT_EQ(buckets[1].last_unit, 0);
  for (const DistOptBucket& b : buckets) EXPECT_EQ(b.elements % 384, 0);
  domain.bucket_size = 0;  // without overlap_grad_reduce: one bucket
  ASSERT_EQ(distopt_buckets(domain).size(), 1u);
  EXPECT_EQ(distopt_buckets(domain).front().elements, 2304);  // ends at 2280
}

// The distributed optimizer's ops of `kind` (a tp group's reduce-scatters aside).
std::vector<const Op*> distopt_ops(const Program& program, OpKind kind) {
  std::vector<const Op*> out;
  for (const Op* op : ops_of(program, kind)) {
    if (op->name.starts_with("dist-opt")) out.push_back(op);
  }
  return out;
}

int64_t bytes_of(const Program& program, OpKind kind) {
  int64_t bytes = 0;
  for (const Op* op : distopt_ops(program, kind)) bytes += op->bytes;
  return bytes;
}

int64_t padded_elements(const std::vector<DistOptBucket>& buckets) {
  int64_t n = 0;
  for (const DistOptBucket& b : buckets) n += b.elements;
  return n;
}

std::vector<DistOptBucket> buckets_of(const ProgramSetup& s, int64_t bucket_size) {
  BucketDomain domain;
  domain.ranks = s.plan().ranks;
  domain.bucket_size = bucket_size;
  for (int u = 0; u < s.units(); ++u) {
    domain.units.push_back(u);
    std::vector<int64_t>& tensors = domain.unit_tensors.emplace_back();
    for (const PlanTensor& t : s.plan().units[static_cast<size_t>(u)].problem.tensors) tensors.push_back(t.elements);
  }
  return distopt_buckets(domain);
}

TEST(DistOptProgram, EachGradientIsReduceScatteredAndEachParameterAllGatheredOnceAStep) {
  const ProgramSetup s("strategy: MEGATRON_DDP megatron_ddp { bucket_size: 300000 overlap_grad_reduce: true }");
  EXPECT_EQ(s.training().shard_group_size(), 8);
  EXPECT_EQ(s.training().precision().reduce(), scenarios::FP32);  // accumulate_allreduce_grads_in_fp32
  const Program program = s.build();
  EXPECT_EQ(joined(graph_problems(program)), "");
  EXPECT_EQ(program.count(OpKind::kCast), 0u);  // the parameters are bf16 already
  const int64_t n = padded_elements(buckets_of(s, 300000));
  const std::vector<const Op*> reduces = ops_of(program, OpKind::kReduceScatter);
  ASSERT_GT(reduces.size(), 1u);
  for (const Op* op : reduces) EXPECT_EQ(op->group, Group::kShard) << op->name;
  // nccl-tests' size is the whole bucket; a ring sends (dp - 1) / dp of it from each rank.
  const int64_t dp = 8;
  std::printf(
      "reduce-scatter: %lld bytes of fp32 gradients in %zu buckets, %lld sent per rank (analytic "
      "%lld x 7/8); all-gather: %lld bytes of bf16 parameters\n",
      static_cast<long long>(bytes_of(program, OpKind::kReduceScatter)), reduces.size(),
      static_cast<long long>(bytes_of(program, OpKind::kReduceScatter) * (dp - 1) / dp), static_cast<long long>(n * 4),
      static_cast<long long>(bytes_of(program, OpKind::kAllGather)));
  EXPECT_EQ(bytes_of(program, OpKind::kReduceScatter), n * 4);
  EXPECT_EQ(bytes_of(program, OpKind::kAllGather), n * 2);
  EXPECT_EQ(ops_of(program, OpKind::kAllGather).size(), reduces.size());
  // Each bucket is scaled by 1/dp before its reduce-scatter.
  int scales = 0;
  for (const Op* op : ops_of(program, OpKind::kScale)) scales += op->name.find("1/dp") != std::string::npos;
  EXPECT_EQ(scales, static_cast<int>(reduces.size()));
}

TEST(DistOptProgram, OverlappedBucketsReduceDuringTheBackwardOtherwiseAfterIt) {
  const std::string base = "strategy: MEGATRON_DDP gradient_accumulation_steps: 3 ";
  const ProgramSetup overlapped(base + "megatron_ddp { bucket_size: 300000 overlap_grad_reduce: true }");
  const ProgramSetup after(base);
  const Program early = overlapped.build(), late = after.build();
  EXPECT_EQ(joined(graph_problems(early)), "");
  EXPECT_EQ(joined(graph_problems(late)), "");
  // Only the last micro-batch reduces (no_sync on the others).
  for (const Program* p : {&early, &late}) {
    for (const Op* op : ops_of(*p, OpKind::kReduceScatter)) EXPECT_EQ(op->micro_batch, 2) << op->name;
  }
  const Op& embedding_backward = program_test::only_op(early, OpKind::kComputeBwd, 0, 2);
  const Op& first_bucket = *ops_of(early, OpKind::kReduceScatter).front();
  EXPECT_LT(first_bucket.id, embedding_backward.id);
  EXPECT_FALSE(depends_on(early, embedding_backward.id, first_bucket.id, true));
  // Without overlap_grad_reduce the buffer is one bucket, reduced after the backward.
  ASSERT_EQ(ops_of(late, OpKind::kReduceScatter).size(), 1u);
  const Op& whole = *ops_of(late, OpKind::kReduceScatter).front();
  EXPECT_TRUE(depends_on(late, whole.id, program_test::only_op(late, OpKind::kComputeBwd, 0, 2).id, true));
  // The optimizer waits for every reduction either way.
  for (const Program* p : {&early, &late}) {
    const uint32_t update = ops_of(*p, OpKind::kOptimizer).front()->id;
    for (const Op* op : ops_of(*p, OpKind::kReduceScatter)) EXPECT_TRUE(depends_on(*p, update, op->id, true));
  }
}

TEST(DistOptProgram, OverlappedParameterGathersFeedTheForwardOtherwiseFollowTheOptimizer) {
  const ProgramSetup overlapped(
      "strategy: MEGATRON_DDP megatron_ddp { bucket_size: 300000 overlap_grad_reduce: true overlap_param_gather: true "
      "}");
  const ProgramSetup after("strategy: MEGATRON_DDP megatron_ddp { bucket_size: 300000 overlap_grad_reduce: true }");
  const Program early = overlapped.build(), late = after.build();
  EXPECT_EQ(joined(graph_problems(early)), "");
  const std::vector<const Op*> gathers = ops_of(early, OpKind::kAllGather);
  ASSERT_GT(gathers.size(), 1u);
  // The embedding's forward waits for its bucket's all-gather, which its
  // pre-hook dispatched with the next one.
  const Op& embedding_forward = program_test::only_op(early, OpKind::kComputeFwd, 0, 0);
  EXPECT_TRUE(depends_on(early, embedding_forward.id, gathers.front()->id));
  EXPECT_LT(gathers[1]->id, embedding_forward.id);
  for (const Op* g : gathers) EXPECT_LT(g->id, ops_of(early, OpKind::kOptimizer).front()->id);
  // Without the overlap they follow the optimizer's last update.
  const uint32_t last_update = ops_of(late, OpKind::kOptimizer).back()->id;
  for (const Op* g : ops_of(late, OpKind::kAllGather)) EXPECT_TRUE(depends_on(late, g->id, last_update));
  EXPECT_EQ(bytes_of(early, OpKind::kAllGather), bytes_of(late, OpKind::kAllGather));
}

TEST(DistOptProgram, ParametersAndGradientsWholeMasterWeightsAndAdamStatesOverDp) {
  const ProgramSetup s("strategy: MEGATRON_DDP");
  const ProgramSetup bf16_grads("strategy: MEGATRON_DDP precision { reduce: BF16 }");
  const Program program = s.build();
  const int64_t n = padded_elements(buckets_of(s, 0));
  const PersistentMemory& m = program.persistent;
  EXPECT_EQ(m.compute_params, n * 2);
  EXPECT_EQ(m.gradients, n * 4);
  EXPECT_EQ(bf16_grads.build().persistent.gradients, n * 2);  // grad_reduce_in_bf16
  int64_t params = 0;
  for (const UnitPlan& u : s.plan().units) params += u.params();
  // Megatron's 6 + 12/dp bytes a parameter (docs/source/distrib_optimizer.md), padding aside.
  const double per_param = static_cast<double>(m.compute_params + m.gradients + m.master_params + m.optimizer_states) /
                           static_cast<double>(params);
  std::printf("bytes per parameter: %.3f (analytic 2 + 4 + 12/8 = 7.5; padded buffers %lld of %lld elements)\n",
              per_param, static_cast<long long>(n), static_cast<long long>(params));
  EXPECT_NEAR(per_param, 7.5, 0.1);
  EXPECT_EQ(m.master_params, s.shard_total() * 4);
  EXPECT_EQ(m.optimizer_states, s.shard_total() * 8);
  EXPECT_EQ(program.bytes_of(BufferKind::kUnshardedParams), 0);
  EXPECT_EQ(program.bytes_of(BufferKind::kUnshardedGrads), 0);
}

TEST(DistOptProgram, DistributedOptimizerInstancesAllReduceTheirShards) {
  const ProgramSetup s("strategy: MEGATRON_DDP mesh { dp_replicate: 2 }");
  EXPECT_EQ(s.plan().ranks, 4);
  const Program program = s.build();
  EXPECT_EQ(joined(graph_problems(program)), "");
  const std::vector<const Op*> all_reduces = ops_of(program, OpKind::kAllReduce);
  ASSERT_EQ(all_reduces.size(), 1u);
  EXPECT_EQ(all_reduces.front()->group, Group::kReplicate);
  EXPECT_EQ(all_reduces.front()->bytes, ops_of(program, OpKind::kReduceScatter).front()->bytes / 4);
}

// Every data-parallel rank its own optimizer instance (dp_shard 1): the
// buckets all-reduced whole over the replicas, nothing to all-gather, the
// master weights and Adam states whole: Megatron's DDP without the
// distributed optimizer.
TEST(DistOptProgram, ShardGroupsOfOneAllReduceWholeBucketsAndGatherNothing) {
  const ProgramSetup s("strategy: MEGATRON_DDP mesh { dp_shard: 1 dp_replicate: 8 }");
  EXPECT_EQ(s.plan().ranks, 1);
  const Program program = s.build();
  EXPECT_EQ(joined(graph_problems(program)), "");
  EXPECT_TRUE(ops_of(program, OpKind::kReduceScatter).empty());
  EXPECT_TRUE(ops_of(program, OpKind::kAllGather).empty());
  const int64_t n = padded_elements(buckets_of(s, 0));
  const std::vector<const Op*> all_reduces = ops_of(program, OpKind::kAllReduce);
  ASSERT_EQ(all_reduces.size(), 1u);
  EXPECT_EQ(all_reduces.front()->group, Group::kReplicate);
  EXPECT_EQ(all_reduces.front()->bytes, n * 4);
  int64_t params = 0;
  for (const UnitPlan& u : s.plan().units) params += u.params();
  EXPECT_GE(program.persistent.optimizer_states, params * 8);
  EXPECT_GE(program.persistent.master_params, params * 4);
}

// Without gradient_accumulation_fusion each micro-batch's backward makes a
// .grad in the compute dtype and adds it into the fp32 main grads (2 + 4 +
// 4 bytes an element), one kernel a parameter; with it, neither.
TEST(DistOptProgram, WithoutAccumulationFusionEachMicroBatchAddsItsGradIntoTheMainGrads) {
  const std::string base = "strategy: MEGATRON_DDP gradient_accumulation_steps: 3 ";
  const ProgramSetup unfused(base + "megatron_ddp { gradient_accumulation_fusion: false }");
  const ProgramSetup fused(base);
  EXPECT_TRUE(fused.training().megatron_ddp().gradient_accumulation_fusion());  // Megatron-LM's default
  const Program program = unfused.build();
  EXPECT_EQ(joined(graph_problems(program)), "");
  std::vector<const Op*> adds;
  for (const Op* op : ops_of(program, OpKind::kGradAccumulate)) {
    if (op->name.find("into main_grad") != std::string::npos) adds.push_back(op);
  }
  ASSERT_EQ(adds.size(), static_cast<size_t>(unfused.units() * 3));
  for (const Op* add : adds) {
    const UnitPlan& unit = unfused.plan().units[static_cast<size_t>(add->unit)];
    EXPECT_EQ(add->bytes, unit.params() * (2 + 2 * 4)) << add->name;
    EXPECT_EQ(add->host.framework_ops, static_cast<int64_t>(unit.problem.tensors.size()));
    EXPECT_TRUE(depends_on(program, add->id, program_test::only_op(program, OpKind::kComputeBwd, add->unit,
                                                                    add->micro_batch).id));
  }
  EXPECT_GT(program.bytes_of(BufferKind::kUnshardedGrads), 0);
  const Program plain = fused.build();
  for (const Op* op : ops_of(plain, OpKind::kGradAccumulate)) EXPECT_EQ(op->name.find("into main_grad"), std::string::npos);
  EXPECT_EQ(plain.bytes_of(BufferKind::kUnshardedGrads), 0);
}

// A torch DDP wrapper around the model (nanotron's, with its fp32 accumulation
// hook) keeps a bucket in the compute dtype for every parameter beside the
// main gradients: 2 bytes a parameter more, held for the run; one GPU has no
// wrapper.
TEST(DistOptProgram, TorchDdpBucketsHoldEveryParameterInTheComputeDtypeBesideTheMainGrads) {
  const std::string base = "strategy: MEGATRON_DDP precision { param: BF16 reduce: FP32 master: FP32 } ";
  const ProgramSetup plain(base);
  const ProgramSetup wrapped(base + "megatron_ddp { torch_ddp_buckets: true }");
  EXPECT_FALSE(plain.training().megatron_ddp().torch_ddp_buckets());  // Megatron-LM has no such wrapper
  int64_t params = 0;
  for (const UnitPlan& u : plain.plan().units) params += u.params();
  const int64_t without = plain.build().persistent.gradients;
  EXPECT_EQ(without, params * 4);  // the fp32 main gradients
  EXPECT_EQ(wrapped.build().persistent.gradients, without + params * 2);
  const std::string one_gpu = std::string(kTinyLlama).replace(std::string(kTinyLlama).find("gpus_per_node: 8"),
                                                               16, "gpus_per_node: 1");
  const ProgramSetup alone(base + "megatron_ddp { torch_ddp_buckets: true }", one_gpu);
  EXPECT_EQ(alone.build().persistent.gradients, params * 4);
}

TEST(DistOptProgram, ExpertParametersReduceOverTheExpertDataParallelGroup) {
  const ProgramSetup s("micro_batch_size: 2 sequence_length: 512 strategy: MEGATRON_DDP mesh { ep: 4 }",
                       "model { inline_spec { family: \"qwen3_moe\" hidden_size: 128 num_layers: 2 vocab_size: 512\n"
                       "  intermediate_size: 256 num_attention_heads: 4 num_key_value_heads: 2 head_dim: 32\n"
                       "  num_experts: 8 experts_per_token: 2 moe_intermediate_size: 64 } }\n"
                       "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n");
  const Program program = s.build();
  EXPECT_EQ(joined(graph_problems(program)), "");
  std::vector<Group> groups;
  for (const Op* op : ops_of(program, OpKind::kReduceScatter)) groups.push_back(op->group);
  ASSERT_EQ(groups.size(), 2u);  // one buffer of dense parameters, one of experts
  EXPECT_NE(groups[0], groups[1]);
  for (const Op* op : ops_of(program, OpKind::kAllGather)) {
    EXPECT_TRUE(op->group == Group::kShard || op->group == Group::kExpertShard) << op->name;
  }
}

TEST(DistOptProgram, TensorTimesPipelineTimesDataParallelStagesReduceTheirOwnUnits) {
  const std::string model =
      "model { inline_spec { hidden_size: 256 num_layers: 4 vocab_size: 1024 intermediate_size: 704\n"
      "  num_attention_heads: 8 num_key_value_heads: 4 } }\n"
      "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n";
  const ResolvedScenario resolved = resolve_scenario(scenarios::parse_scenario(
      model +
          "training { strategy: MEGATRON_DDP micro_batch_size: 2 sequence_length: 512 gradient_accumulation_steps: 4"
          " mesh { tp: 2 pp: 2 } megatron_ddp { bucket_size: 100000 overlap_grad_reduce: true"
          " overlap_param_gather: true } }\n",
      scenarios::ScenarioFormat::kText, "distopt_test.textproto", RAGGED_SOURCE_DIR));
  EXPECT_EQ(resolved.scenario().training().shard_group_size(), 2);  // 8 GPUs / (tp 2 x pp 2)
  const PipelinePlan plan = plan_pipeline(resolved);
  const std::vector<Program> stages = build_stage_programs(resolved, plan);
  ASSERT_EQ(stages.size(), 2u);
  for (size_t s = 0; s < stages.size(); ++s) {
    const Program& p = stages[s];
    EXPECT_EQ(joined(graph_problems(p)), "") << "stage " << s;
    int64_t elements = 0;
    for (const UnitPlan& u : plan.plans[s].units) elements += u.layout.padded_elements();
    std::printf("stage %zu: %zu reduce-scatters of %lld bytes, tp-local padded elements %lld\n", s,
                distopt_ops(p, OpKind::kReduceScatter).size(),
                static_cast<long long>(bytes_of(p, OpKind::kReduceScatter)), static_cast<long long>(elements));
    EXPECT_EQ(p.persistent.compute_params, bytes_of(p, OpKind::kAllGather));
    EXPECT_EQ(p.persistent.gradients, bytes_of(p, OpKind::kReduceScatter));
    EXPECT_NEAR(static_cast<double>(bytes_of(p, OpKind::kReduceScatter)), elements * 4.0, elements * 4.0 * 0.05);
    // The reductions come with the last micro-batch's backward.
    for (const Op* op : distopt_ops(p, OpKind::kReduceScatter)) EXPECT_EQ(op->micro_batch, 3) << op->name;
  }
  // Megatron buckets only the first stage: a later stage's buffer is one bucket.
  EXPECT_GT(distopt_ops(stages[0], OpKind::kReduceScatter).size(), 1u);
  EXPECT_EQ(distopt_ops(stages[1], OpKind::kReduceScatter).size(), 1u);
}

// A tied table over pipeline stages under Megatron's DDP: the last stage's
// head holds its own copy, and after the backward the two stages send each
// other their whole main gradient of it (vocab x hidden / tp, fp32) and add
// the other's before the optimizer steps it. PyTorch's pipelining shares no
// parameter between stages: FSDP2 refuses the model.
TEST(DistOptProgram, ATiedTableOverPipelineStagesSumsItsTwoCopiesGradients) {
  const std::string model =
      "model { inline_spec { hidden_size: 256 num_layers: 4 vocab_size: 1024 intermediate_size: 704\n"
      "  num_attention_heads: 8 num_key_value_heads: 4 tie_word_embeddings: true } }\n"
      "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n";
  const auto resolve = [&](const std::string& training) {
    return resolve_scenario(scenarios::parse_scenario(model + "training { " + training + " }\n",
                                                      scenarios::ScenarioFormat::kText, "tied_test.textproto",
                                                      RAGGED_SOURCE_DIR));
  };
  const ResolvedScenario resolved =
      resolve("strategy: MEGATRON_DDP micro_batch_size: 2 sequence_length: 512 gradient_accumulation_steps: 4 "
              "mesh { tp: 2 pp: 2 }");
  EXPECT_TRUE(resolved.model.arch.table_copied_across_stages);
  const PipelinePlan plan = plan_pipeline(resolved);
  const std::vector<Program> stages = build_stage_programs(resolved, plan);
  ASSERT_EQ(stages.size(), 2u);
  const int64_t table_bytes = 1024 / 2 * 256 * 4;  // vocab over tp 2, hidden, fp32 main grads
  for (size_t s = 0; s < stages.size(); ++s) {
    const Program& p = stages[s];
    EXPECT_EQ(joined(graph_problems(p)), "") << "stage " << s;
    std::vector<const Op*> sends, receives;
    for (const Op* op : ops_of(p, OpKind::kSend)) {
      if (op->name.find("table gradient") != std::string::npos) sends.push_back(op);
    }
    for (const Op* op : ops_of(p, OpKind::kRecv)) {
      if (op->name.find("table gradient") != std::string::npos) receives.push_back(op);
    }
    ASSERT_EQ(sends.size(), 1u) << "stage " << s;
    ASSERT_EQ(receives.size(), 1u) << "stage " << s;
    EXPECT_EQ(sends.front()->bytes, table_bytes);
    EXPECT_EQ(receives.front()->bytes, table_bytes);
    EXPECT_EQ(sends.front()->peer, s == 0 ? 1 : 0);
    // Each direction's send and receive carry the same message.
    const Program& other = stages[1 - s];
    for (const Op* op : ops_of(other, OpKind::kRecv)) {
      if (op->name.find("table gradient") == std::string::npos) continue;
      EXPECT_EQ(op->message, sends.front()->message);
    }
    // The optimizer steps the table after the other copy's gradient is added.
    bool waits = false;
    for (const Op* update : ops_of(p, OpKind::kOptimizer)) waits = waits || depends_on(p, update->id, receives.front()->id, true);
    EXPECT_TRUE(waits) << "stage " << s;
  }
  try {
    resolve("strategy: FSDP2 micro_batch_size: 2 sequence_length: 512 gradient_accumulation_steps: 4 mesh { pp: 2 }");
    FAIL() << "PyTorch's pipelining cannot share the table between stages";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("use MEGATRON_DDP"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ragged::planner
