// Overlapped tensor parallelism (planner/tp_overlap.hpp): which sides of a
// block part the overlap takes over, how its compute is cut by the GEMMs'
// roles, and the Program's steps and chunks, with the bytes each moves worked
// out by hand beside what the builder emits.

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "planner/mesh.hpp"
#include "planner/tp_overlap.hpp"
#include "program_test_util.hpp"

namespace ragged::planner {
namespace {

using program_test::ProgramSetup;

// The tiny Llama (width 256, 8 heads of 32, 4 key/value heads, FFN 704, 4
// blocks) on 8 GPUs, tp 4, 2 x 512 tokens a micro-batch.
const std::string kMesh = "micro_batch_size: 2 sequence_length: 512 mesh { tp: 4 ";
constexpr int64_t kTokens = 2 * 512;
constexpr int64_t kGathered = kTokens * 256 * 2;  // the block's hidden states in bf16 (S)

MicroBatch batch_of(const ProgramSetup& s) {
  MicroBatch batch;
  batch.sequences = s.training().micro_batch_size();
  batch.seq_len = s.training().sequence_length();
  return batch;
}

double flops(const ComputeWork& w) { return total_flops(w); }

TEST(TpOverlap, SidesFollowTheCollectivesAPartHas) {
  ProgramSetup async(kMesh + "tp_overlap: ASYNC_TP }");
  ProgramSetup none(kMesh + "}");
  const Mesh on = mesh_of(async.training());
  const Mesh off = mesh_of(none.training());
  const models::UnitSpec& block = async.spec(1);
  const MicroBatch batch = batch_of(async);
  for (const Pass pass : {Pass::kForward, Pass::kRecompute, Pass::kBackward}) {
    for (const models::UnitPart part : {models::UnitPart::kAttention, models::UnitPart::kMlp}) {
      const TpOverlapSides sides = tp_overlap_sides(block, async.model(), on, batch, 2, pass, part);
      EXPECT_EQ(sides.gathered, kGathered);
      EXPECT_EQ(sides.scattered, kGathered);
      EXPECT_FALSE(tp_overlap_sides(block, none.model(), off, batch, 2, pass, part).any());
    }
  }
  // Selective recompute's gathers run whole; so do the embedding and head.
  EXPECT_FALSE(tp_overlap_sides(block, async.model(), on, batch, 2, Pass::kSelectiveRecompute,
                                models::UnitPart::kMlp).any());
  EXPECT_FALSE(tp_overlap_sides(async.spec(0), async.model(), on, batch, 2, Pass::kForward,
                                models::UnitPart::kWhole).any());
}

TEST(TpOverlap, GemmsSplitByWhatTheyReadAndWrite) {
  ProgramSetup s(kMesh + "tp_overlap: ASYNC_TP }");
  const Mesh mesh = mesh_of(s.training());
  const models::UnitSpec& block = s.spec(1);
  const MicroBatch batch = batch_of(s);
  const models::UnitPart mlp = models::UnitPart::kMlp;
  const TpOverlapSides sides = tp_overlap_sides(block, s.model(), mesh, batch, 2, Pass::kForward, mlp);
  // Forward MLP: gate and up (256 -> 704 / 4 each) read the gathered input,
  // down (176 -> 256) writes the partial sums.
  const ComputeWork forward = forward_work(block, batch, mlp);
  const TpOverlapWork fwd = split_tp_overlap_work(block, s.model(), batch, Pass::kForward, mlp, sides, forward);
  const double column = 2.0 * kTokens * 176 * 256;
  std::printf("forward MLP: gathered-side GEMMs 2 x %.0f FLOPs, scattered-side %.0f; split %.0f and %.0f\n", column,
              column, flops(fwd.gather_consumers), flops(fwd.scatter_producers));
  EXPECT_DOUBLE_EQ(flops(fwd.gather_consumers), 2 * column);
  EXPECT_DOUBLE_EQ(flops(fwd.scatter_producers), column);
  EXPECT_TRUE(fwd.beside_scatter.gemms.empty());
  EXPECT_DOUBLE_EQ(flops(fwd.gather_consumers) + flops(fwd.rest) + flops(fwd.scatter_producers), flops(forward));
  EXPECT_DOUBLE_EQ(fwd.rest.elementwise_bytes, forward.elementwise_bytes);
  // Backward: down's input gradient reads the gathered output gradient (its
  // weight gradient reads it transposed and stays whole); gate's and up's
  // input gradients make the sums to scatter, their weight gradients run
  // beside it.
  const ComputeWork backward = backward_work(block, batch, mlp);
  const TpOverlapWork bwd = split_tp_overlap_work(block, s.model(), batch, Pass::kBackward, mlp, sides, backward);
  EXPECT_DOUBLE_EQ(flops(bwd.gather_consumers), column);
  for (const Gemm& g : bwd.gather_consumers.gemms) EXPECT_FALSE(g.weight_gradient);
  EXPECT_DOUBLE_EQ(flops(bwd.scatter_producers), 2 * column);
  EXPECT_DOUBLE_EQ(flops(bwd.beside_scatter), 2 * column);
  for (const Gemm& g : bwd.beside_scatter.gemms) EXPECT_TRUE(g.weight_gradient);
  EXPECT_DOUBLE_EQ(flops(bwd.gather_consumers) + flops(bwd.rest) + flops(bwd.scatter_producers) +
                       flops(bwd.beside_scatter),
                   flops(backward));
  // A chunk cuts the tokens: rows of a GEMM, the reduction of a weight gradient.
  const ComputeWork piece = tp_chunk(bwd.gather_consumers, 4);
  EXPECT_DOUBLE_EQ(flops(piece) * 4, flops(bwd.gather_consumers));
}

struct TensorTraffic {
  int gathers = 0, scatters = 0;
  int64_t gathered = 0, scattered = 0;  // bytes into (out of) each rank: S x (tp - 1) / tp per whole collective
};

TensorTraffic tensor_traffic(const Program& p, int unit, const std::string& pass) {
  TensorTraffic t;
  for (const Op& op : p.ops) {
    if (op.unit != unit || op.micro_batch != 0 || op.group != Group::kTensor) continue;
    if (op.name.find(pass) == std::string::npos || op.name.find("recompute") != std::string::npos) continue;
    const int64_t moved = op.bytes * (p.mesh.tp - 1) / p.mesh.tp;
    if (op.kind == OpKind::kAllGather) {
      ++t.gathers;
      t.gathered += moved;
    } else {
      ++t.scatters;
      t.scattered += moved;
    }
  }
  return t;
}

TEST(TpOverlap, StepsMoveWhatTheWholeCollectivesMoved) {
  ProgramSetup none(kMesh + "}");
  ProgramSetup async(kMesh + "tp_overlap: ASYNC_TP }");
  ProgramSetup userbuffers(kMesh + "tp_overlap: USERBUFFERS }");
  const TensorTraffic whole = tensor_traffic(none.build(), 2, "(fwd)");
  const int64_t per_block = 2 * kGathered * 3 / 4;  // two regions, S x (tp - 1) / tp each
  std::printf("a block's forward moves 2 x S x 3/4 = %lld bytes each way; whole %lld / %lld\n",
              static_cast<long long>(per_block), static_cast<long long>(whole.gathered),
              static_cast<long long>(whole.scattered));
  EXPECT_EQ(whole.gathered, per_block);
  EXPECT_EQ(whole.gathers, 2);
  // PyTorch: tp - 1 = 3 gather steps and 3 scatter transfers a region.
  const TensorTraffic a = tensor_traffic(async.build(), 2, "(fwd)");
  EXPECT_EQ(a.gathers, 2 * 3);
  EXPECT_EQ(a.scatters, 2 * 3);
  // (each step's bytes rounded down to whole bytes)
  EXPECT_NEAR(static_cast<double>(a.gathered), static_cast<double>(per_block), 2 * 3);
  EXPECT_NEAR(static_cast<double>(a.scattered), static_cast<double>(per_block), 2 * 3);
  // Transformer Engine: 3 ring-exchange steps, 4 reduce-scattered chunks.
  const TensorTraffic u = tensor_traffic(userbuffers.build(), 2, "(fwd)");
  EXPECT_EQ(u.gathers, 2 * 3);
  EXPECT_EQ(u.scatters, 2 * 4);
  EXPECT_NEAR(static_cast<double>(u.gathered), static_cast<double>(per_block), 2 * 3);
  EXPECT_NEAR(static_cast<double>(u.scattered), static_cast<double>(per_block), 2 * 4);
}

TEST(TpOverlap, EachChunkWaitsForItsStepAndTheCopyEnginesMoveThem) {
  ProgramSetup s(kMesh + "tp_overlap: ASYNC_TP }");
  const Program p = s.build();
  int chunks = 0;
  for (const Op& op : p.ops) {
    if (op.unit != 2 || op.micro_batch != 0) continue;
    const bool chunk = op.name.find(" step ") != std::string::npos || op.name.find(" chunk ") != std::string::npos;
    if (op.group == Group::kTensor) {
      // The norms' gradient all-reduce stays NCCL's kernel.
      EXPECT_EQ(op.ctas, chunk ? 0 : -1) << op.name;
    }
    if (op.kind != OpKind::kComputeFwd || op.name.find("gathered chunk") == std::string::npos) continue;
    ++chunks;
    const bool own = op.name.find("chunk 1/") != std::string::npos;
    int steps = 0;
    for (uint32_t d : op.deps) steps += p.ops[d].group == Group::kTensor ? 1 : 0;
    EXPECT_EQ(steps, own ? 0 : 1) << op.name;
  }
  EXPECT_EQ(chunks, 2 * 4);  // attention and MLP, tp chunks each
  // PyTorch sums the partial-sum chunks after the last copy, which it waits for.
  int sums = 0;
  for (const Op& op : p.ops) {
    if (op.unit != 2 || op.kind != OpKind::kComputeFwd || op.name.find("tp partial sums") == std::string::npos) continue;
    if (op.micro_batch != 0) continue;
    ++sums;
    EXPECT_EQ(op.deps.size(), 3u) << op.name;
    EXPECT_DOUBLE_EQ(op.work.elementwise_bytes, kGathered * (1 + 0.25));
  }
  EXPECT_EQ(sums, 2);
}

// Every form a stack runs (strategies, checkpointing, layouts, compiled)
// builds a Program whose tp stream holds only tp collectives, each issued
// gather step consumed by its part.
TEST(TpOverlap, EveryStrategyAndCheckpointingBuildsAConsistentProgram) {
  for (const char* strategy : {"FSDP2", "RAGGED", "MEGATRON_DDP"}) {
    for (const char* ac : {"NONE", "SELECTIVE", "FULL"}) {
      for (const char* extra : {"", "sequence_layout: BATCH_FIRST", "column_input: PER_PROJECTION"}) {
        for (const char* overlap : {"ASYNC_TP", "USERBUFFERS"}) {
          const std::string fields = std::string("strategy: ") + strategy + " activation_checkpointing: " + ac +
                                     " compiled: true " + kMesh + extra + " tp_overlap: " + overlap + " }";
          ProgramSetup s(fields);
          const Program p = s.build();
          int steps = 0;
          for (const Op& op : p.ops) {
            if (op.stream != Stream::kTensorParallel) continue;
            EXPECT_EQ(op.group, Group::kTensor) << fields << ": " << op.name;
            steps += op.name.find(" step ") != std::string::npos ? 1 : 0;
          }
          int waited = 0;
          for (const Op& op : p.ops) {
            if (op.name.find("gathered chunk") == std::string::npos) continue;
            for (uint32_t d : op.deps) waited += p.ops[d].name.find(" step ") != std::string::npos ? 1 : 0;
          }
          EXPECT_GT(steps, 0) << fields;
          EXPECT_EQ(waited, steps) << fields;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ragged::planner
