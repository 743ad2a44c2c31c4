// The Program builder: the op graph of one step is well formed for every
// strategy, has the op counts, streams and collective sizes that
// shared/reference/baselines.md section 8 prescribes, and keeps the prefetch
// window (strategy costs, checkpointing and compute: program_strategy_test.cpp).

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "planner/compute_work.hpp"
#include "planner/scenario_plan.hpp"
#include "planner/strategy_traits.hpp"
#include "tests/planner/program_test_util.hpp"

namespace ragged::planner {
namespace {

using program_test::depends_on;
using program_test::graph_problems;
using program_test::joined;
using program_test::kAllStrategies;
using program_test::LiveBuffers;
using program_test::ops_of;
using program_test::ProgramSetup;
using program_test::only_op;
using program_test::strategy_field;

// The forward all-gathers of micro-batch 0, one per unit, by unit.
std::vector<const Op*> forward_gathers(const Program& program, int units) {
  std::vector<const Op*> gathers(static_cast<size_t>(units), nullptr);
  for (const Op* g : ops_of(program, OpKind::kAllGather)) {
    const Op*& first = gathers[static_cast<size_t>(g->unit)];
    if (g->micro_batch == 0 && first == nullptr) first = g;
  }
  return gathers;
}

// FSDP's root group (embedding, final norm, head) stays gathered from its
// forward to its backward, outside the prefetch window (program_root_test.cpp).
bool root_group(scenarios::Strategy strategy) { return strategy_traits(strategy).root_group_outside_blocks; }

// ------------------------------------------------------------ graph shape ----

TEST(ProgramBuilder, GraphIsWellFormedForEveryStrategyAndKnobs) {
  const std::vector<std::string> knobs = {
      "",
      "gradient_accumulation_steps: 3 prefetch_depth: 0",
      "reshard_after_forward: false gradient_accumulation_steps: 2",
      "prefetch_depth: 3 activation_checkpointing: FULL",
      "activation_checkpointing: SELECTIVE micro_batch_size: 2 precision { reduce: BF16 }",
      "shard_group_size: 4 gradient_accumulation_steps: 2",
      "optimizer { muon {} } prefetch_depth: 2",
      "attention: MATH loss: FUSED gradient_accumulation_steps: 2",
      "attention: MATH activation_checkpointing: SELECTIVE loss: CHUNKED gradient_accumulation_steps: 2",
  };
  for (scenarios::Strategy strategy : kAllStrategies) {
    for (const std::string& knob : knobs) {
      ProgramSetup setup(strategy_field(strategy) + "sequence_length: 256 " + knob);
      const Program program = setup.build();
      ASSERT_FALSE(program.ops.empty());
      EXPECT_EQ(program.strategy, setup.plan().strategy);
      std::vector<std::string> problems = graph_problems(program);
      EXPECT_TRUE(problems.empty()) << scenarios::Strategy_Name(strategy) << " [" << knob << "]:\n" << joined(problems);
    }
  }
}

TEST(ProgramBuilder, ShippedScenariosBuildWellFormedPrograms) {
  for (const auto& file : scenarios::shipped_scenarios()) {
    const std::string name(file.name);
    ResolvedScenario resolved = resolve_scenario(scenarios::load_scenario(name));
    const scenarios::Training& t = resolved.scenario().training();
    // A pipelined scenario runs a Program per stage, each on its stage's units.
    std::vector<Program> programs;
    std::vector<size_t> units;
    if (t.mesh().pp() > 1) {
      const PipelinePlan pipeline = plan_pipeline(resolved);
      programs = build_stage_programs(resolved, pipeline);
      for (const Plan& plan : pipeline.plans) units.push_back(plan.units.size());
      ASSERT_EQ(programs.size(), static_cast<size_t>(t.mesh().pp())) << name;
    } else {
      Plan plan = plan_model(resolved.model, resolved.granularity, t.shard_group_size(), *make_strategy(t.strategy()));
      programs.push_back(build_program(program_inputs(resolved, plan), static_cast<int>(plan.ranks) - 1));
      EXPECT_EQ(programs.back().rank, plan.ranks - 1) << name;
      units.push_back(plan.units.size());
    }
    for (size_t s = 0; s < programs.size(); ++s) {
      const Program& program = programs[s];
      const std::string what = name + " stage " + std::to_string(s);
      // A GPU's share of the tokens: the tp ranks share theirs, the cp ranks
      // split each sequence, the stages count each token once among them.
      EXPECT_EQ(program.tokens_per_step, int64_t{t.micro_batch_size()} * t.sequence_length() *
                                             t.gradient_accumulation_steps() /
                                             (t.mesh().tp() * t.mesh().cp() * std::max(1, t.mesh().pp())))
          << what;
      // Every unit computes forward once a micro-batch (a block cut at its
      // tensor-parallel collectives in two parts).
      std::set<std::pair<int, int>> forwards;
      for (const Op& op : program.ops) {
        if (op.kind == OpKind::kComputeFwd) forwards.emplace(op.unit, op.micro_batch);
      }
      EXPECT_EQ(forwards.size(), units[s] * static_cast<size_t>(t.gradient_accumulation_steps())) << what;
      std::vector<std::string> problems = graph_problems(program);
      EXPECT_TRUE(problems.empty()) << what << ":\n" << joined(problems);
    }
  }
}

// With tied embeddings the head's GEMM multiplies by the embedding table: it
// must be gathered whenever the head computes.
TEST(ProgramBuilder, TiedHeadComputesWithTheEmbeddingGathered) {
  const std::string text =
      "model { inline_spec { hidden_size: 256 num_layers: 2 vocab_size: 1024 intermediate_size: 704\n"
      "  num_attention_heads: 8 num_key_value_heads: 4 tie_word_embeddings: true } }\n"
      "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n";
  ResolvedScenario resolved = resolve_scenario(
      scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "tied.textproto", RAGGED_SOURCE_DIR));
  Plan plan = plan_model(resolved.model, resolved.granularity, 8, *make_strategy(scenarios::RAGGED));
  const Program program = build_program(program_inputs(resolved, plan), 0);
  int embed = -1, head = -1;
  for (size_t u = 0; u < plan.units.size(); ++u) {
    const models::UnitSpec& spec = resolved.model.units[static_cast<size_t>(plan.units[u].unit_index)];
    if (spec.kind == models::UnitKind::kEmbedding) embed = static_cast<int>(u);
    if (spec.kind == models::UnitKind::kHead) head = static_cast<int>(u);
  }
  ASSERT_GE(embed, 0);
  ASSERT_GE(head, 0);
  // The head has no lm_head tensor of its own but still runs the vocab x hidden GEMM.
  ASSERT_EQ(resolved.model.units[static_cast<size_t>(plan.units[static_cast<size_t>(head)].unit_index)].tensors.size(),
            1u);
  LiveBuffers live(program);
  std::vector<std::string> without;
  for (const Op& op : program.ops) {
    const bool head_compute = op.unit == head && (op.kind == OpKind::kComputeFwd || op.kind == OpKind::kComputeBwd);
    if (head_compute && live.gathered_sets(embed) == 0) {
      without.push_back(op.name + " (op " + std::to_string(op.id) + ")");
    }
    live.apply(op);
  }
  EXPECT_TRUE(without.empty()) << "the tied head computes while the embedding table is not gathered:\n"
                               << joined(without);
  // The head adds the table's gradient to the embedding's: that buffer is
  // live through the head's backward, one per micro-batch.
  int embed_grads = 0;
  for (const Buffer& b : program.buffers) embed_grads += b.kind == BufferKind::kUnshardedGrads && b.unit == embed;
  EXPECT_EQ(embed_grads, 1);
  std::vector<bool> live_buffer(program.buffers.size(), false);
  bool head_backward_seen = false;
  for (const Op& op : program.ops) {
    if (op.kind == OpKind::kAlloc) live_buffer[static_cast<size_t>(op.buffer)] = true;
    if (op.kind == OpKind::kFree) live_buffer[static_cast<size_t>(op.buffer)] = false;
    // The loss's backward touches no weight gradient; the GEMMs' adds the table's.
    if (op.unit != head || op.kind != OpKind::kComputeBwd || op.loss_only) continue;
    head_backward_seen = true;
    bool held = false;
    for (size_t b = 0; b < program.buffers.size(); ++b) {
      held = held || (live_buffer[b] && program.buffers[b].kind == BufferKind::kUnshardedGrads &&
                      program.buffers[b].unit == embed);
    }
    EXPECT_TRUE(held) << op.name << " runs without the embedding's gradient buffer";
  }
  EXPECT_TRUE(head_backward_seen);
}

// --------------------------------------------------------------- counts ----

TEST(ProgramBuilder, OpCountsFollowUnitsMicroBatchesAndResharding) {
  for (scenarios::Strategy strategy : {scenarios::RAGGED, scenarios::FSDP2, scenarios::ZERO3}) {
    for (int k : {1, 3}) {
      for (bool reshard : {true, false}) {
        for (int shard_group : {8, 4}) {
          ProgramSetup setup(strategy_field(strategy) + "gradient_accumulation_steps: " + std::to_string(k) +
                             " reshard_after_forward: " + (reshard ? "true" : "false") +
                             " shard_group_size: " + std::to_string(shard_group));
          const Program program = setup.build();
          const size_t U = static_cast<size_t>(setup.units());
          const size_t K = static_cast<size_t>(k);
          SCOPED_TRACE(scenarios::Strategy_Name(strategy) + " k=" + std::to_string(k) +
                       " reshard=" + std::to_string(reshard) + " group=" + std::to_string(shard_group));
          ASSERT_EQ(U, 6u);  // embed, four blocks, head
          EXPECT_EQ(program.micro_batches, k);
          EXPECT_EQ(program.count(OpKind::kComputeFwd), U * K);
          EXPECT_EQ(program.count(OpKind::kComputeBwd), U * K + K);  // with the head's loss backward
          EXPECT_EQ(program.count(OpKind::kReduceScatter), U * K);
          EXPECT_EQ(program.count(OpKind::kGradAccumulate), U * K);
          // The last unit's forward gather serves its backward as well, and
          // so does the embedding's in FSDP's root group; ZeRO-3 gathers
          // each of a unit's fetch groups by a collective of its own.
          std::vector<size_t> per_gather(U, 1);
          for (size_t u = 0; u < U; ++u) {
            per_gather[u] = std::max<size_t>(1, setup.plan().units[u].layout.fetch_groups.size());
          }
          size_t gathers = 0;
          for (size_t u = 0; u < U; ++u) {
            const bool kept = u + 1 == U || (u == 0 && root_group(strategy));
            gathers += per_gather[u] * (reshard && !kept ? 2 : 1);
          }
          EXPECT_EQ(program.count(OpKind::kAllGather), gathers * K);
          EXPECT_EQ(program.count(OpKind::kAllReduce), shard_group < 8 ? U * K : 0u);
          EXPECT_EQ(program.count(OpKind::kRecompute), 0u);
          EXPECT_EQ(program.count(OpKind::kAllToAll), 0u);
          EXPECT_EQ(program.count(OpKind::kOptimizer), U);  // AdamW: one update per unit
          for (int u = 0; u < setup.units(); ++u) {
            for (int mb = 0; mb < k; ++mb) {
              only_op(program, OpKind::kComputeFwd, u, mb);
              only_op(program, OpKind::kComputeBwd, u, mb);
              only_op(program, OpKind::kReduceScatter, u, mb);
            }
            only_op(program, OpKind::kOptimizer, u, -1);
          }
        }
      }
    }
  }
}

TEST(ProgramBuilder, OptimizerUpdateWaitsForTheLastMicroBatchGradients) {
  ProgramSetup setup("gradient_accumulation_steps: 2");
  const Program program = setup.build();
  for (int u = 0; u < setup.units(); ++u) {
    const Op& update = only_op(program, OpKind::kOptimizer, u, -1);
    EXPECT_TRUE(depends_on(program, update.id, only_op(program, OpKind::kGradAccumulate, u, 1).id)) << u;
    EXPECT_TRUE(depends_on(program, update.id, only_op(program, OpKind::kReduceScatter, u, 1).id)) << u;
  }
}

// ------------------------------------------------- streams and collectives ----

TEST(ProgramBuilder, StreamsGroupsAndCollectiveBytes) {
  ProgramSetup setup("shard_group_size: 4 gradient_accumulation_steps: 2 precision { param: BF16 reduce: FP32 }");
  const Program program = setup.build(3);
  ASSERT_EQ(setup.plan().ranks, 4);
  for (const Op& op : program.ops) {
    const int64_t S = op.unit >= 0 ? setup.shard(op.unit) : 0;
    switch (op.kind) {
      case OpKind::kAllGather:
        EXPECT_EQ(op.stream, Stream::kAllGather) << op.name;
        EXPECT_EQ(op.group, Group::kShard) << op.name;
        EXPECT_EQ(op.bytes, 4 * S * 2) << op.name;  // group * S * bf16
        ASSERT_GE(op.buffer, 0) << op.name;
        EXPECT_EQ(program.buffers[static_cast<size_t>(op.buffer)].kind, BufferKind::kUnshardedParams) << op.name;
        EXPECT_EQ(program.buffers[static_cast<size_t>(op.buffer)].bytes, op.bytes) << op.name;
        break;
      case OpKind::kReduceScatter:
        EXPECT_EQ(op.stream, Stream::kReduceScatter) << op.name;
        EXPECT_EQ(op.group, Group::kShard) << op.name;
        EXPECT_EQ(op.bytes, 4 * S * 4) << op.name;  // group * S * fp32
        ASSERT_GE(op.buffer, 0) << op.name;
        EXPECT_EQ(program.buffers[static_cast<size_t>(op.buffer)].bytes, op.bytes) << op.name;
        break;
      case OpKind::kAllReduce:
        EXPECT_EQ(op.stream, Stream::kAllReduce) << op.name;
        EXPECT_EQ(op.group, Group::kReplicate) << op.name;
        EXPECT_EQ(op.bytes, S * 4) << op.name;  // the reduced fp32 shard
        break;
      case OpKind::kComputeFwd:
      case OpKind::kComputeBwd:
      case OpKind::kRecompute:
        EXPECT_EQ(op.stream, Stream::kCompute) << op.name;
        EXPECT_EQ(op.group, Group::kNone) << op.name;
        EXPECT_GT(op.work.elementwise_bytes, 0) << op.name;
        // The embedding is a lookup; blocks and the head run GEMMs.
        if (setup.spec(op.unit).kind != models::UnitKind::kEmbedding && !op.loss_only) {
          EXPECT_GT(op.flops, 0) << op.name;
        }
        break;
      default:
        break;
    }
  }
  // Each HSDP all-reduce follows its unit's reduce-scatter of the same micro-batch.
  for (const Op* all_reduce : ops_of(program, OpKind::kAllReduce)) {
    const Op& rs = only_op(program, OpKind::kReduceScatter, all_reduce->unit, all_reduce->micro_batch);
    EXPECT_TRUE(depends_on(program, all_reduce->id, rs.id)) << all_reduce->name;
  }
}

TEST(ProgramBuilder, HybridShardingSplitsTheGpusIntoShardAndReplicaGroups) {
  ProgramSetup setup("shard_group_size: 4");
  EXPECT_EQ(setup.plan().ranks, 4);
  const Program program = setup.build(3);
  EXPECT_EQ(program.shard_ranks, 4);
  EXPECT_EQ(program.replicate_ranks, 2);
  EXPECT_EQ(program.rank, 3);
  EXPECT_EQ(program.count(OpKind::kAllReduce), static_cast<size_t>(setup.units()));

  ProgramSetup flat("");
  EXPECT_EQ(flat.plan().ranks, 8);
  EXPECT_EQ(flat.build().replicate_ranks, 1);
}

// ------------------------------------------------------------- prefetch ----

// The most gathered parameter sets alive at once, and whether a unit was ever
// gathered while an earlier gather of it was still alive.
struct GatherResidency {
  int max_sets = 0;
  std::vector<std::string> double_gathers;
};

// Counts the root group's units (embedding and head, held outside the
// window) unless `blocks_only`.
GatherResidency gather_residency(const Program& program, int units, bool blocks_only = false) {
  GatherResidency out;
  LiveBuffers live(program);
  for (const Op& op : program.ops) {
    const bool gather_alloc = op.kind == OpKind::kAlloc &&
                              program.buffers[static_cast<size_t>(op.buffer)].kind == BufferKind::kUnshardedParams;
    if (gather_alloc && live.gathered_sets(op.unit) > 0) {
      out.double_gathers.push_back(op.name + " (op " + std::to_string(op.id) + ")");
    }
    live.apply(op);
    if (!gather_alloc) continue;
    int sets = 0;
    for (int u = blocks_only ? 1 : 0; u < (blocks_only ? units - 1 : units); ++u) sets += live.gathered_sets(u);
    out.max_sets = std::max(out.max_sets, sets);
  }
  return out;
}

TEST(ProgramPrefetch, AtMostDepthPlusOneUnitsHoldGatheredParameters) {
  for (scenarios::Strategy strategy : kAllStrategies) {
    for (int depth : {0, 1, 2, 3}) {
      ProgramSetup setup(strategy_field(strategy) +
                         "gradient_accumulation_steps: 2 prefetch_depth: " + std::to_string(depth));
      const Program program = setup.build();
      const int limit = strategy == scenarios::FSDP1 ? std::min(depth + 1, 2) : depth + 1;
      GatherResidency residency = gather_residency(program, setup.units(), root_group(strategy));
      EXPECT_LE(residency.max_sets, limit) << scenarios::Strategy_Name(strategy) << " depth " << depth;
      // The window is used, not just respected (six units, two micro-batches).
      EXPECT_EQ(residency.max_sets, limit) << scenarios::Strategy_Name(strategy) << " depth " << depth;
    }
  }
}

TEST(ProgramPrefetch, DepthZeroGathersTheNextUnitOnlyAfterThisOneComputed) {
  for (scenarios::Strategy strategy : {scenarios::RAGGED, scenarios::FSDP2}) {
    ProgramSetup setup(strategy_field(strategy) + "prefetch_depth: 0");
    const Program program = setup.build();
    std::vector<const Op*> gathers = forward_gathers(program, setup.units());
    const int last = root_group(strategy) ? setup.units() - 2 : setup.units() - 1;  // the root's head: its own test
    for (int u = 0; u < last; ++u) {
      ASSERT_EQ(gathers[static_cast<size_t>(u + 1)]->unit, u + 1);
      const Op& fwd = only_op(program, OpKind::kComputeFwd, u, 0);
      EXPECT_TRUE(depends_on(program, gathers[static_cast<size_t>(u + 1)]->id, fwd.id))
          << scenarios::Strategy_Name(strategy) << ": all-gather of unit " << u + 1;
    }
  }
}

TEST(ProgramPrefetch, DepthOneOverlapsTheNextGatherWithThisUnitsCompute) {
  for (scenarios::Strategy strategy : {scenarios::RAGGED, scenarios::FSDP2, scenarios::FSDP1}) {
    ProgramSetup setup(strategy_field(strategy) + "prefetch_depth: 1");
    const Program program = setup.build();
    std::vector<const Op*> gathers = forward_gathers(program, setup.units());
    const int last = root_group(strategy) ? setup.units() - 2 : setup.units() - 1;
    for (int u = 0; u < last; ++u) {
      const Op& next = *gathers[static_cast<size_t>(u + 1)];
      ASSERT_EQ(next.unit, u + 1);
      // Not even through stream order: the all-gather may run during unit u's forward.
      EXPECT_FALSE(depends_on(program, next.id, only_op(program, OpKind::kComputeFwd, u, 0).id, true))
          << scenarios::Strategy_Name(strategy) << ": all-gather of unit " << u + 1;
      if (u >= 1) {
        EXPECT_TRUE(depends_on(program, next.id, only_op(program, OpKind::kComputeFwd, u - 1, 0).id))
            << scenarios::Strategy_Name(strategy) << ": all-gather of unit " << u + 1;
      }
    }
  }
}

TEST(ProgramPrefetch, WithoutReshardingEveryUnitStaysGatheredUntilItsBackward) {
  ProgramSetup setup("reshard_after_forward: false prefetch_depth: 1");
  const Program program = setup.build();
  for (int u = 0; u < setup.units(); ++u) {
    const Op& bwd = only_op(program, OpKind::kComputeBwd, u, 0);
    // The one gather of unit u is also the one its backward waits for.
    std::vector<const Op*> gathers;
    for (const Op* g : ops_of(program, OpKind::kAllGather)) {
      if (g->unit == u) gathers.push_back(g);
    }
    ASSERT_EQ(gathers.size(), 1u) << u;
    EXPECT_TRUE(depends_on(program, bwd.id, gathers[0]->id)) << u;
    // Its buffer is freed after the backward, not after the forward.
    int freed_at = -1;
    for (const Op& op : program.ops) {
      if (op.kind == OpKind::kFree && op.buffer == gathers[0]->buffer) freed_at = static_cast<int>(op.id);
    }
    EXPECT_GT(freed_at, static_cast<int>(bwd.id)) << u;
  }
}

// A unit gathered again while its earlier gather is still alive holds two
// copies of the same parameters for nothing; a re-gather issued before the
// unit's forward even ran makes reshard_after_forward a pure extra all-gather.
TEST(ProgramPrefetch, BackwardRegatherWaitsForTheUnitsForward) {
  for (scenarios::Strategy strategy : {scenarios::RAGGED, scenarios::FSDP2}) {
    for (int depth : {0, 1, 2, 4}) {
      ProgramSetup setup(strategy_field(strategy) + "prefetch_depth: " + std::to_string(depth));
      const Program program = setup.build();
      std::vector<std::string> early;
      for (int u = root_group(strategy) ? 1 : 0; u + 1 < setup.units(); ++u) {
        std::vector<const Op*> gathers;
        for (const Op* g : ops_of(program, OpKind::kAllGather)) {
          if (g->unit == u) gathers.push_back(g);
        }
        ASSERT_EQ(gathers.size(), 2u) << setup.spec(u).name;
        if (!depends_on(program, gathers[1]->id, only_op(program, OpKind::kComputeFwd, u, 0).id, true)) {
          early.push_back(gathers[1]->name + " (op " + std::to_string(gathers[1]->id) + ")");
        }
      }
      GatherResidency residency = gather_residency(program, setup.units());
      EXPECT_TRUE(early.empty() && residency.double_gathers.empty())
          << scenarios::Strategy_Name(strategy) << " prefetch_depth " << depth
          << ": backward all-gathers not waiting for their unit's forward:\n"
          << joined(early) << "allocated while the unit is still gathered:\n"
          << joined(residency.double_gathers);
    }
  }
}

TEST(ProgramPrefetch, WithoutReshardingTheNextMicroBatchWaitsForThisBackward) {
  ProgramSetup setup("reshard_after_forward: false gradient_accumulation_steps: 2 prefetch_depth: 1");
  const Program program = setup.build();
  std::vector<const Op*> gathers = ops_of(program, OpKind::kAllGather);
  ASSERT_EQ(gathers.size(), static_cast<size_t>(2 * setup.units()));
  std::vector<std::string> early;
  for (const Op* g : gathers) {
    if (g->micro_batch == 1 &&
        !depends_on(program, g->id, only_op(program, OpKind::kComputeBwd, g->unit, 0).id, true)) {
      early.push_back(g->name + " (op " + std::to_string(g->id) + ")");
    }
  }
  EXPECT_TRUE(early.empty()) << "micro-batch 1 all-gathers not waiting for micro-batch 0's backward of their unit:\n"
                             << joined(early);
  GatherResidency residency = gather_residency(program, setup.units());
  EXPECT_TRUE(residency.double_gathers.empty()) << "allocated while the unit is still gathered:\n"
                                                << joined(residency.double_gathers);
  EXPECT_LE(residency.max_sets, setup.units());
}

}  // namespace
}  // namespace ragged::planner
