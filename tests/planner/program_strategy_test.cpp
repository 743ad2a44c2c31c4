// The Program builder, continued: each strategy's casts and copies,
// activation checkpointing, and the model's compute carried by the ops.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "planner/compute_work.hpp"
#include "planner/strategy_traits.hpp"
#include "tests/planner/program_test_util.hpp"

namespace ragged::planner {
namespace {

using program_test::depends_on;
using program_test::gemm_flops;
using program_test::graph_problems;
using program_test::joined;
using program_test::kAllStrategies;
using program_test::LiveBuffers;
using program_test::only_op;
using program_test::ops_of;
using program_test::ProgramSetup;
using program_test::strategy_field;

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
      // ZeRO-3 gathers a single parameter straight into its storage
      // (baselines.md section 3) and copies out of the flat buffer of a
      // prefetch set only (planner/zero3_fetch.hpp).
      const std::vector<int>& group = program.buffers[static_cast<size_t>(gathers[i]->buffer)].tensors;
      const bool copies = strategy == scenarios::FSDP2 || group.size() > 1;
      if (strategy == scenarios::ZERO3) {
        EXPECT_FALSE(group.empty()) << gathers[i]->name;
      }
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

// FSDP1's post-backward over a unit's unsharded gradients (sources in
// planner/strategy_traits.cpp): autograd's cat of the per-parameter
// gradients into the flat gradient on the compute stream, then on the
// post-backward stream the cast to the reduce dtype and the pre-divide, the
// reduce-scatter, the post-divide of the reduced shard. Over 8 ranks the
// factors are 4 and 2.
TEST(ProgramStrategy, Fsdp1ConcatenatesCastsAndDividesGradientsAndRaggedDoesNot) {
  ProgramSetup fsdp1("strategy: FSDP1 precision { param: BF16 reduce: FP32 }");
  const Program program = fsdp1.build();
  EXPECT_EQ(program.count(OpKind::kCopyOut), 0u);
  const std::vector<const Op*> reductions = ops_of(program, OpKind::kReduceScatter);
  EXPECT_EQ(program.count(OpKind::kScale), 2 * reductions.size());  // a pre- and a post-divide each
  for (const Op* rs : reductions) {
    const int64_t gathered = 8 * fsdp1.shard(rs->unit);
    const Op& predivide = program.ops[rs->deps.front()];
    EXPECT_EQ(predivide.kind, OpKind::kScale) << predivide.name;
    EXPECT_EQ(predivide.stream, Stream::kReduceScatter) << predivide.name;
    EXPECT_EQ(predivide.bytes, gathered * 4 * 2) << predivide.name;  // fp32, in place
    const Op& cast = program.ops[predivide.deps.front()];
    EXPECT_EQ(cast.kind, OpKind::kCast) << cast.name;
    EXPECT_EQ(cast.stream, Stream::kReduceScatter) << cast.name;
    EXPECT_EQ(cast.bytes, gathered * (2 + 4)) << cast.name;  // read bf16, write fp32
    const Op& cat = program.ops[cast.deps.front()];
    EXPECT_EQ(cat.kind, OpKind::kCopyIn) << cat.name;
    EXPECT_EQ(cat.stream, Stream::kCompute) << cat.name;
    EXPECT_EQ(cat.bytes, gathered * 2 * 2) << cat.name;  // bf16 in, bf16 out
    EXPECT_EQ(program.buffers[static_cast<size_t>(cat.buffer)].kind, BufferKind::kUnshardedGrads) << cat.name;
    EXPECT_EQ(program.ops[cat.deps.front()].kind, OpKind::kComputeBwd) << cat.name;
    EXPECT_EQ(program.buffers[static_cast<size_t>(rs->buffer)].kind, BufferKind::kReduceInput) << rs->name;
    const Op* postdivide = nullptr;
    for (const Op& op : program.ops) {
      if (op.kind == OpKind::kScale && !op.deps.empty() && op.deps.front() == rs->id) postdivide = &op;
    }
    ASSERT_NE(postdivide, nullptr) << rs->name;
    EXPECT_EQ(postdivide->bytes, fsdp1.shard(rs->unit) * 4 * 2) << postdivide->name;
  }
  // Autograd's per-parameter gradients are one allocation each, the flat
  // gradient one; both bf16 as autograd produces them.
  int per_parameter = 0, flat = 0;
  for (const Buffer& b : program.buffers) {
    if (b.kind != BufferKind::kUnshardedGrads) continue;
    EXPECT_EQ(b.bytes, 8 * fsdp1.shard(b.unit) * 2) << b.name;
    if (b.pieces.empty()) {
      ++flat;
    } else {
      ++per_parameter;
      EXPECT_EQ(std::accumulate(b.pieces.begin(), b.pieces.end(), int64_t{0}), b.bytes) << b.name;
    }
  }
  EXPECT_EQ(per_parameter, flat);
  EXPECT_EQ(flat, static_cast<int>(reductions.size()));

  ProgramSetup same("strategy: FSDP1 precision { param: BF16 reduce: BF16 }");
  const Program bf16 = same.build();
  for (const Op* rs : ops_of(bf16, OpKind::kReduceScatter)) {
    const Op& predivide = bf16.ops[rs->deps.front()];
    EXPECT_EQ(predivide.kind, OpKind::kScale) << rs->name;  // on the flat gradient: no cast
    EXPECT_EQ(bf16.ops[predivide.deps.front()].kind, OpKind::kCopyIn) << rs->name;
    EXPECT_EQ(rs->bytes, 8 * same.shard(rs->unit) * 2) << rs->name;
  }
  EXPECT_EQ(ProgramSetup("strategy: FSDP2").build().count(OpKind::kScale), 0u);  // NCCL's average

  ProgramSetup ragged("strategy: RAGGED precision { param: BF16 reduce: FP32 }");
  const Program ragged_program = ragged.build();  // alive while the loop reads its ops
  for (const Op* rs : ops_of(ragged_program, OpKind::kReduceScatter)) EXPECT_EQ(rs->deps.size(), 1u) << rs->name;
}

// _get_gradient_predivide_factor: f doubles while it divides the world and
// world / f > f; the post-divide is world / f (1.5 over 6 ranks).
TEST(ProgramStrategy, Fsdp1PredivideFactorIsPyTorchs) {
  const std::pair<int64_t, int64_t> cases[] = {{1, 1}, {2, 2}, {6, 4}, {8, 4}, {16, 4}, {64, 8}, {96, 16}, {128, 16}};
  for (const auto& [world, factor] : cases) EXPECT_EQ(gradient_predivide_factor(world), factor) << world;
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


// FSDP2's set_requires_gradient_sync(False) on all but the last
// accumulation micro-batch (NeMo Automodel's get_sync_ctx, KempnerForge's
// maybe_no_sync): one reduce-scatter a unit a step, after the last
// micro-batch's backward, where the default reduces every micro-batch; each
// micro-batch's unsharded gradients accumulated on the compute stream in the
// reduce dtype (the first cast to it, the later ones added: bf16 read, fp32
// read and written).
TEST(ProgramStrategy, Fsdp2WithoutGradientSyncReducesOnceAfterTheLastMicroBatch) {
  const std::string fields = "strategy: FSDP2 gradient_accumulation_steps: 4 precision { param: BF16 reduce: FP32 } ";
  ProgramSetup every(fields);
  ProgramSetup last(fields + "accumulation_gradient_sync: LAST_MICRO_BATCH");
  const Program per_micro_batch = every.build();
  const Program deferred = last.build();
  for (int u = 0; u < last.units(); ++u) {
    int reductions = 0, reduced_micro_batch = -1;
    for (const Op* rs : ops_of(deferred, OpKind::kReduceScatter)) {
      if (rs->unit != u) continue;
      ++reductions;
      reduced_micro_batch = rs->micro_batch;
    }
    EXPECT_EQ(reductions, 1) << u;
    EXPECT_EQ(reduced_micro_batch, 3) << u;
    int every_reductions = 0;
    for (const Op* rs : ops_of(per_micro_batch, OpKind::kReduceScatter)) every_reductions += rs->unit == u;
    EXPECT_EQ(every_reductions, 4) << u;
    std::vector<int64_t> accumulated;
    for (const Op* acc : ops_of(deferred, OpKind::kGradAccumulate)) {
      if (acc->unit == u && acc->stream == Stream::kCompute) accumulated.push_back(acc->bytes);
    }
    ASSERT_EQ(accumulated.size(), 4u) << u;
    const int64_t elements = last.shard(u) * 8;  // the unit's padded unsharded elements over the 8 ranks
    EXPECT_EQ(accumulated[0], elements * (2 + 4)) << u;
    std::printf("unit %d: %lld elements; accumulated %lld, %lld, %lld, %lld bytes (first x (2 + 4), then x (2 + 2 x 4))\n", u,
                static_cast<long long>(elements), static_cast<long long>(accumulated[0]),
                static_cast<long long>(accumulated[1]), static_cast<long long>(accumulated[2]),
                static_cast<long long>(accumulated[3]));
    for (size_t mb = 1; mb < 4; ++mb) EXPECT_EQ(accumulated[mb], elements * (2 + 2 * 4)) << u;
  }
  EXPECT_THROW(ProgramSetup("strategy: FSDP1 gradient_accumulation_steps: 4 accumulation_gradient_sync: LAST_MICRO_BATCH"),
               std::exception);
}

// A loop that never steps its optimizer (training.optimizer_step false, as
// vectorlm's benchmark harness): no optimizer op and no optimizer states, no
// gradient reduction, every unit's gradients held whole in the reduce dtype
// as persistent memory and added to in place each micro-batch (bf16 read,
// bf16 read and written); the parameters as with optimizer steps.
TEST(ProgramStrategy, WithoutOptimizerStepsNothingIsReducedOrUpdated) {
  for (const char* strategy : {"FSDP1", "FSDP2", "RAGGED"}) {
    const std::string fields = std::string("strategy: ") + strategy +
                               " gradient_accumulation_steps: 2 precision { param: BF16 reduce: BF16 } ";
    ProgramSetup stepped(fields);
    ProgramSetup forward_backward(fields + "optimizer_step: false");
    const Program with = stepped.build(), without = forward_backward.build();
    EXPECT_EQ(joined(graph_problems(without)), "") << strategy;
    EXPECT_TRUE(ops_of(without, OpKind::kOptimizer).empty()) << strategy;
    EXPECT_TRUE(ops_of(without, OpKind::kReduceScatter).empty()) << strategy;
    EXPECT_TRUE(ops_of(without, OpKind::kAllReduce).empty()) << strategy;
    EXPECT_FALSE(ops_of(with, OpKind::kOptimizer).empty()) << strategy;
    EXPECT_EQ(ops_of(without, OpKind::kAllGather).size(), ops_of(with, OpKind::kAllGather).size()) << strategy;
    EXPECT_EQ(without.persistent.optimizer_states, 0) << strategy;
    EXPECT_GT(with.persistent.optimizer_states, 0) << strategy;
    EXPECT_EQ(without.persistent.master_params, with.persistent.master_params) << strategy;
    int64_t whole = 0, accumulated = 0;
    for (int u = 0; u < forward_backward.units(); ++u) whole += forward_backward.shard(u) * 8;
    for (const Op* acc : ops_of(without, OpKind::kGradAccumulate)) accumulated += acc->bytes;
    std::printf("%s: held gradients %lld B (analytic: %lld padded elements x 2 B), accumulated %lld B a step "
                "(2 micro-batches x elements x (2 + 2 x 2) B)\n",
                strategy, static_cast<long long>(without.persistent.gradients), static_cast<long long>(whole),
                static_cast<long long>(accumulated));
    EXPECT_EQ(without.persistent.gradients, whole * 2) << strategy;
    EXPECT_EQ(accumulated, 2 * whole * (2 + 2 * 2)) << strategy;
  }
  EXPECT_THROW(ProgramSetup("strategy: DDP optimizer_step: false"), std::exception);
}

}  // namespace
}  // namespace ragged::planner
