// The Program builder: the op graph of one step is well formed for every
// strategy, has the op counts, streams and collective sizes that
// shared/reference/baselines.md section 8 prescribes, keeps the prefetch
// window, charges each strategy its casts and copies, and carries the
// model's compute and activation checkpointing.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "planner/compute_work.hpp"
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
using program_test::strategy_field;

double gemm_flops(const ComputeWork& work) {
  double total = 0;
  for (const Gemm& g : work.gemms) total += g.flops();
  return total;
}

// The op of `kind` for (unit, micro_batch); fails the test unless there is exactly one.
const Op& only_op(const Program& program, OpKind kind, int unit, int micro_batch) {
  const Op* found = nullptr;
  int n = 0;
  for (const Op& op : program.ops) {
    if (op.kind == kind && op.unit == unit && op.micro_batch == micro_batch) {
      found = &op;
      ++n;
    }
  }
  EXPECT_EQ(n, 1) << op_kind_name(kind) << " of unit " << unit << " micro-batch " << micro_batch;
  static const Op kNone;
  return found ? *found : kNone;
}

// The forward all-gathers of micro-batch 0 in issue order, one per unit.
std::vector<const Op*> forward_gathers(const Program& program, int units) {
  std::vector<const Op*> gathers = ops_of(program, OpKind::kAllGather);
  gathers.resize(static_cast<size_t>(units));
  return gathers;
}

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
    Plan plan = plan_model(resolved.model, resolved.granularity, t.shard_group_size(), *make_strategy(t.strategy()));
    const Program program = build_program(program_inputs(resolved, plan), static_cast<int>(plan.ranks) - 1);
    EXPECT_EQ(program.rank, plan.ranks - 1) << name;
    EXPECT_EQ(program.tokens_per_step,
              int64_t{t.micro_batch_size()} * t.sequence_length() * t.gradient_accumulation_steps())
        << name;
    EXPECT_EQ(program.count(OpKind::kComputeFwd),
              plan.units.size() * static_cast<size_t>(t.gradient_accumulation_steps()))
        << name;
    std::vector<std::string> problems = graph_problems(program);
    EXPECT_TRUE(problems.empty()) << name << ":\n" << joined(problems);
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
          EXPECT_EQ(program.count(OpKind::kComputeBwd), U * K);
          EXPECT_EQ(program.count(OpKind::kReduceScatter), U * K);
          EXPECT_EQ(program.count(OpKind::kGradAccumulate), U * K);
          // The last unit's forward gather serves its backward as well.
          EXPECT_EQ(program.count(OpKind::kAllGather), reshard ? (2 * U - 1) * K : U * K);
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
        if (setup.spec(op.unit).kind != models::UnitKind::kEmbedding) {
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

GatherResidency gather_residency(const Program& program, int units) {
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
    for (int u = 0; u < units; ++u) sets += live.gathered_sets(u);
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
      GatherResidency residency = gather_residency(program, setup.units());
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
    for (int u = 0; u + 1 < setup.units(); ++u) {
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
    for (int u = 0; u + 1 < setup.units(); ++u) {
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
      for (int u = 0; u + 1 < setup.units(); ++u) {
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

// ------------------------------------------------------- strategy costs ----

struct GatherChain {
  bool cast = false;
  bool copy_in = false;
  bool copy_out = false;
};

// What each all-gather is preceded by (through its dependency chain on the
// all-gather stream back to its alloc) and whether a copy-out reads it.
std::vector<GatherChain> gather_chains(const Program& program, std::vector<const Op*>* gathers) {
  *gathers = ops_of(program, OpKind::kAllGather);
  std::vector<GatherChain> chains;
  for (const Op* g : *gathers) {
    GatherChain chain;
    const Op* op = g;
    while (!op->deps.empty() && op->kind != OpKind::kAlloc) {
      op = &program.ops[op->deps.front()];
      if (op->unit != g->unit) break;
      chain.cast |= op->kind == OpKind::kCast;
      chain.copy_in |= op->kind == OpKind::kCopyIn;
    }
    for (const Op& other : program.ops) {
      if (other.kind != OpKind::kCopyOut) continue;
      for (uint32_t dep : other.deps) chain.copy_out |= dep == g->id;
    }
    chains.push_back(chain);
  }
  return chains;
}

// The op the reduce-scatter directly waits for (the copy, cast, or backward).
OpKind reduce_scatter_input_kind(const Program& program, const Op& rs) {
  const Op* op = &program.ops[rs.deps.front()];
  return op->kind;
}

TEST(ProgramStrategy, RaggedAndVescaleCastIntoTheGatherAndReduceInPlace) {
  for (scenarios::Strategy strategy : {scenarios::RAGGED, scenarios::VESCALE_PAPER}) {
    ProgramSetup setup(strategy_field(strategy) + "precision { param: BF16 reduce: FP32 master: FP32 }");
    const Program program = setup.build();
    EXPECT_EQ(program.count(OpKind::kCopyIn), 0u) << scenarios::Strategy_Name(strategy);
    EXPECT_EQ(program.count(OpKind::kCopyOut), 0u) << scenarios::Strategy_Name(strategy);
    std::vector<const Op*> gathers;
    std::vector<GatherChain> chains = gather_chains(program, &gathers);
    for (size_t i = 0; i < gathers.size(); ++i) {
      EXPECT_TRUE(chains[i].cast) << gathers[i]->name << ": master fp32 -> bf16 cast into the all-gather input";
    }
    EXPECT_EQ(program.count(OpKind::kCast), gathers.size()) << "a cast per all-gather and none for gradients";
    for (const Op* rs : ops_of(program, OpKind::kReduceScatter)) {
      EXPECT_EQ(reduce_scatter_input_kind(program, *rs), OpKind::kComputeBwd) << rs->name;
      const Buffer& grads = program.buffers[static_cast<size_t>(rs->buffer)];
      EXPECT_EQ(grads.kind, BufferKind::kUnshardedGrads) << rs->name;  // in place: backward wrote fp32
      EXPECT_EQ(grads.bytes, 8 * setup.shard(rs->unit) * 4) << rs->name;
    }
    EXPECT_EQ(program.persistent.compute_params, 0);
  }
}

TEST(ProgramStrategy, RankMajorStrategiesCopyInAndOutOfEveryGatherAndPackGradients) {
  for (scenarios::Strategy strategy : {scenarios::FSDP2, scenarios::ZERO3}) {
    ProgramSetup setup(strategy_field(strategy));
    const Program program = setup.build();
    std::vector<const Op*> gathers;
    std::vector<GatherChain> chains = gather_chains(program, &gathers);
    for (size_t i = 0; i < gathers.size(); ++i) {
      // ZeRO-3 gathers a single-parameter unit straight into its storage
      // (baselines.md section 3): the embedding here.
      const bool single_param = setup.spec(gathers[i]->unit).tensors.size() == 1;
      const bool copies = !(strategy == scenarios::ZERO3 && single_param);
      EXPECT_EQ(chains[i].copy_in, copies) << scenarios::Strategy_Name(strategy) << ": " << gathers[i]->name;
      EXPECT_EQ(chains[i].copy_out, copies) << scenarios::Strategy_Name(strategy) << ": " << gathers[i]->name;
      EXPECT_EQ(chains[i].cast, strategy == scenarios::FSDP2)
          << scenarios::Strategy_Name(strategy) << ": " << gathers[i]->name;
    }
    for (const Op* rs : ops_of(program, OpKind::kReduceScatter)) {
      EXPECT_EQ(reduce_scatter_input_kind(program, *rs), OpKind::kCopyIn)
          << scenarios::Strategy_Name(strategy) << ": " << rs->name;
      EXPECT_EQ(program.buffers[static_cast<size_t>(rs->buffer)].kind, BufferKind::kReduceInput) << rs->name;
    }
  }
}

TEST(ProgramStrategy, CopyOutMovesTheWholeGatheredBuffer) {
  ProgramSetup setup("strategy: FSDP2");
  const Program program = setup.build();
  for (const Op* copy : ops_of(program, OpKind::kCopyOut)) {
    const int64_t gathered = setup.plan().units[static_cast<size_t>(copy->unit)].layout.padded_elements();
    EXPECT_EQ(copy->bytes, gathered * 2 * 2) << copy->name;  // read + write N*S bf16
    ASSERT_GE(copy->buffer, 0);
    EXPECT_EQ(program.buffers[static_cast<size_t>(copy->buffer)].kind, BufferKind::kParamCopies);
  }
  for (const Op* copy : ops_of(program, OpKind::kCopyIn)) {
    if (copy->stream != Stream::kAllGather) continue;
    EXPECT_EQ(copy->bytes, setup.shard(copy->unit) * 2 * 2) << copy->name;  // read + write S bf16
  }
}

TEST(ProgramStrategy, MegatronGathersZeroCopyAndRefreshesAPersistentShard) {
  ProgramSetup setup("strategy: MEGATRON precision { param: BF16 master: FP32 }");
  const Program program = setup.build();
  EXPECT_EQ(program.count(OpKind::kCopyOut), 0u);
  std::vector<const Op*> gathers;
  std::vector<GatherChain> chains = gather_chains(program, &gathers);
  for (size_t i = 0; i < gathers.size(); ++i) {
    EXPECT_FALSE(chains[i].copy_in) << gathers[i]->name;
    EXPECT_FALSE(chains[i].cast) << gathers[i]->name;
  }
  for (const Op* rs : ops_of(program, OpKind::kReduceScatter)) {
    EXPECT_EQ(reduce_scatter_input_kind(program, *rs), OpKind::kCopyIn) << rs->name;  // grads into the bucket
  }
  EXPECT_EQ(program.persistent.compute_params, setup.shard_total() * 2);
}

TEST(ProgramStrategy, PersistentComputeShardReplacesTheCastBeforeGathering) {
  for (scenarios::Strategy strategy : kAllStrategies) {
    ProgramSetup setup(strategy_field(strategy) + "precision { param: BF16 master: FP32 }");
    const Program program = setup.build();
    const bool persistent = strategy == scenarios::ZERO3 || strategy == scenarios::MEGATRON;
    EXPECT_EQ(program.persistent.compute_params, persistent ? setup.shard_total() * 2 : 0)
        << scenarios::Strategy_Name(strategy);
    std::vector<const Op*> gathers;
    std::vector<GatherChain> chains = gather_chains(program, &gathers);
    for (size_t i = 0; i < gathers.size(); ++i) {
      EXPECT_EQ(chains[i].cast, !persistent) << scenarios::Strategy_Name(strategy) << ": " << gathers[i]->name;
    }
  }
  // Same dtype everywhere: nothing to cast.
  ProgramSetup fp32("precision { param: FP32 reduce: FP32 master: FP32 }");
  EXPECT_EQ(fp32.build().count(OpKind::kCast), 0u);
}

TEST(ProgramStrategy, Fsdp1CastsGradientsToTheReduceDtypeAndRaggedDoesNot) {
  ProgramSetup fsdp1("strategy: FSDP1 precision { param: BF16 reduce: FP32 }");
  const Program program = fsdp1.build();
  EXPECT_EQ(program.count(OpKind::kCopyIn) + program.count(OpKind::kCopyOut), 0u);
  for (const Op* rs : ops_of(program, OpKind::kReduceScatter)) {
    EXPECT_EQ(reduce_scatter_input_kind(program, *rs), OpKind::kCast) << rs->name;
    const Op& cast = program.ops[rs->deps.front()];
    EXPECT_EQ(cast.stream, Stream::kReduceScatter) << cast.name;
    EXPECT_EQ(cast.bytes, 8 * fsdp1.shard(rs->unit) * (2 + 4)) << cast.name;  // read bf16, write fp32
    EXPECT_EQ(program.buffers[static_cast<size_t>(rs->buffer)].kind, BufferKind::kReduceInput) << rs->name;
  }
  // Its unsharded gradients are bf16 as autograd produces them.
  for (const Buffer& b : program.buffers) {
    if (b.kind == BufferKind::kUnshardedGrads) {
      EXPECT_EQ(b.bytes, 8 * fsdp1.shard(b.unit) * 2) << b.name;
    }
  }

  ProgramSetup same("strategy: FSDP1 precision { param: BF16 reduce: BF16 }");
  const Program bf16 = same.build();
  for (const Op* rs : ops_of(bf16, OpKind::kReduceScatter)) {
    EXPECT_EQ(reduce_scatter_input_kind(bf16, *rs), OpKind::kComputeBwd) << rs->name;
    EXPECT_EQ(rs->bytes, 8 * same.shard(rs->unit) * 2) << rs->name;
  }

  ProgramSetup ragged("strategy: RAGGED precision { param: BF16 reduce: FP32 }");
  for (const Op* rs : ops_of(ragged.build(), OpKind::kReduceScatter)) EXPECT_EQ(rs->deps.size(), 1u) << rs->name;
}

// ZeRO-3 keeps parameters of at most stage3_param_persistence_threshold
// (1e5) elements gathered between uses (baselines.md section 3): they are
// charged once, as persistent memory, and not all-gathered with their unit.
TEST(ProgramStrategy, Zero3PersistentSmallParametersAreNotGatheredAgain) {
  ProgramSetup setup("strategy: ZERO3");
  const Program program = setup.build();
  EXPECT_GT(program.persistent.gathered_small_params, 0);
  std::vector<std::string> regathered;
  for (const Op* gather : ops_of(program, OpKind::kAllGather)) {
    const UnitPlan& unit = setup.plan().units[static_cast<size_t>(gather->unit)];
    int64_t small = 0, small_chunks = 0;
    for (size_t t = 0; t < unit.problem.tensors.size(); ++t) {
      if (unit.problem.tensors[t].elements > 100'000) continue;
      small += unit.problem.tensors[t].elements;
      small_chunks += unit.layout.slots[t].length;
    }
    ASSERT_EQ(small, unit.layout.persistent_elements) << gather->name;
    if (small == 0) continue;
    const int64_t other_bytes = unit.layout.ranks * (unit.layout.shard_size - small_chunks) * 2;
    if (gather->bytes > other_bytes) {
      regathered.push_back(gather->name + ": " + std::to_string(gather->bytes) + " bytes, " +
                           std::to_string(other_bytes) + " without its " + std::to_string(small) +
                           " persistent elements");
    }
  }
  EXPECT_TRUE(regathered.empty()) << "persistent parameters (already charged in persistent.gathered_small_params = "
                                  << program.persistent.gathered_small_params << " bytes) all-gathered again:\n"
                                  << joined(regathered, 3);
}

// -------------------------------------------------- activation checkpointing ----

int64_t activation_bytes(const Program& program) {
  int64_t total = 0;
  for (const Buffer& b : program.buffers) total += b.kind == BufferKind::kActivations ? b.bytes : 0;
  return total;
}

TEST(ProgramCheckpointing, RecomputeFollowsTheMode) {
  const std::string base = "gradient_accumulation_steps: 2 sequence_length: 512 ";
  ProgramSetup none(base + "activation_checkpointing: NONE");
  ProgramSetup full(base + "activation_checkpointing: FULL");
  ProgramSetup selective(base + "activation_checkpointing: SELECTIVE");
  const Program none_program = none.build(), full_program = full.build(), selective_program = selective.build();

  EXPECT_EQ(none_program.count(OpKind::kRecompute), 0u);

  int blocks = 0;
  for (int u = 0; u < full.units(); ++u) blocks += full.spec(u).kind == models::UnitKind::kBlock;
  ASSERT_EQ(blocks, 4);
  EXPECT_EQ(full_program.count(OpKind::kRecompute), static_cast<size_t>(blocks * 2));
  for (const Op* recompute : ops_of(full_program, OpKind::kRecompute)) {
    EXPECT_EQ(full.spec(recompute->unit).kind, models::UnitKind::kBlock) << recompute->name;
    const Op& fwd = only_op(full_program, OpKind::kComputeFwd, recompute->unit, recompute->micro_batch);
    EXPECT_DOUBLE_EQ(recompute->flops, fwd.flops) << recompute->name;
    EXPECT_GT(recompute->flops, 0) << recompute->name;
    // The backward waits for it.
    const Op& bwd = only_op(full_program, OpKind::kComputeBwd, recompute->unit, recompute->micro_batch);
    EXPECT_TRUE(depends_on(full_program, bwd.id, recompute->id)) << recompute->name;
  }

  EXPECT_EQ(selective_program.count(OpKind::kRecompute), static_cast<size_t>(blocks * 2));
  // TorchTitan's op-level policy: every other matmul (the 2nd, 4th, ...) and
  // every element-wise op run again; attention is saved.
  for (const Op* recompute : ops_of(selective_program, OpKind::kRecompute)) {
    const Op& fwd = only_op(selective_program, OpKind::kComputeFwd, recompute->unit, recompute->micro_batch);
    double every_other = 0;
    for (size_t i = 1; i < fwd.work.gemms.size(); i += 2) every_other += fwd.work.gemms[i].flops();
    EXPECT_DOUBLE_EQ(gemm_flops(recompute->work), every_other) << recompute->name;
    EXPECT_GT(every_other, 0.0) << recompute->name;
    EXPECT_EQ(recompute->work.attention.flops, 0.0) << recompute->name;
    EXPECT_DOUBLE_EQ(recompute->work.elementwise_bytes, fwd.work.elementwise_bytes) << recompute->name;
  }

  EXPECT_GT(activation_bytes(none_program), activation_bytes(selective_program));
  EXPECT_GT(activation_bytes(selective_program), activation_bytes(full_program));
  EXPECT_GT(activation_bytes(full_program), 0);
}

// ---------------------------------------------------------- compute work ----

TEST(ProgramCompute, BackwardIsTwiceTheGemmsAndTwoAndAHalfTimesTheAttention) {
  ProgramSetup setup("micro_batch_size: 2 sequence_length: 512");
  const Program program = setup.build();
  int blocks = 0;
  for (int u = 0; u < setup.units(); ++u) {
    const Op& fwd = only_op(program, OpKind::kComputeFwd, u, 0);
    const Op& bwd = only_op(program, OpKind::kComputeBwd, u, 0);
    EXPECT_EQ(bwd.work.gemms.size(), 2 * fwd.work.gemms.size()) << fwd.name;  // dX and dW per forward GEMM
    EXPECT_DOUBLE_EQ(gemm_flops(bwd.work), 2.0 * gemm_flops(fwd.work)) << fwd.name;
    EXPECT_DOUBLE_EQ(bwd.work.attention.flops, 2.5 * fwd.work.attention.flops) << fwd.name;
    EXPECT_DOUBLE_EQ(bwd.flops, 2.0 * gemm_flops(fwd.work) + 2.5 * fwd.work.attention.flops) << fwd.name;
    if (setup.spec(u).kind != models::UnitKind::kBlock) continue;
    ++blocks;
    EXPECT_GT(fwd.work.attention.flops, 0) << fwd.name;
    EXPECT_EQ(fwd.work.attention.batch, 2);
    EXPECT_EQ(fwd.work.attention.seq_len, 512);
    // Every GEMM sees all 1,024 tokens of the micro-batch (dense blocks).
    for (const Gemm& g : fwd.work.gemms) EXPECT_EQ(g.m, 1024) << fwd.name;
  }
  EXPECT_EQ(blocks, 4);
}

TEST(ProgramCompute, ForwardFlopsOfAStepAreTheModelsForwardFlopsPerToken) {
  ProgramSetup setup("micro_batch_size: 2 sequence_length: 384 gradient_accumulation_steps: 3");
  const Program program = setup.build();
  EXPECT_EQ(program.tokens_per_step, 2 * 384 * 3);
  double per_token = 0, backward_per_token = 0;
  for (const models::UnitSpec& unit : setup.model().units) {
    per_token += unit.compute.forward_flops_per_token(384);
    backward_per_token += unit.compute.backward_flops_per_token(384);
  }
  double forward = 0, backward = 0;
  for (const Op* op : ops_of(program, OpKind::kComputeFwd)) forward += op->flops;
  for (const Op* op : ops_of(program, OpKind::kComputeBwd)) backward += op->flops;
  const double tokens = static_cast<double>(program.tokens_per_step);
  EXPECT_NEAR(forward / (per_token * tokens), 1.0, 1e-9);
  EXPECT_NEAR(backward / (backward_per_token * tokens), 1.0, 1e-9);
  EXPECT_NEAR((forward + backward) / (setup.model().executed_flops_per_token(384) * tokens), 1.0, 1e-9);
  EXPECT_DOUBLE_EQ(program.model_flops_per_step, setup.model().model_flops_per_token(384) * tokens);
}

}  // namespace
}  // namespace ragged::planner
