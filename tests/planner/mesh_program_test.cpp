// The Program of one rank of a device mesh: the tensor-, context- and
// expert-parallel collectives around each unit's compute, on their groups and
// streams, with the bytes worked out by hand beside what the builder emits;
// per-rank memory and tokens; where each group's ranks lie.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "planner/compute_work.hpp"
#include "planner/mesh.hpp"
#include "planner/mesh_collectives.hpp"
#include "planner/optimizer_program.hpp"
#include "program_test_util.hpp"

namespace ragged::planner {
namespace {

using program_test::ProgramSetup;

// Bytes of the mesh collectives of one unit's ops, by (group, kind, pass).
struct Key {
  Group group;
  OpKind kind;
  std::string pass;
  bool operator<(const Key& o) const {
    return std::tie(group, kind, pass) < std::tie(o.group, o.kind, o.pass);
  }
};

std::map<Key, std::pair<int, int64_t>> mesh_ops_of(const Program& p, int unit) {
  std::map<Key, std::pair<int, int64_t>> out;
  for (const Op& op : p.ops) {
    if (op.unit != unit || op.micro_batch != 0) continue;
    if (op.group != Group::kTensor && op.group != Group::kContext && op.group != Group::kExpert) continue;
    const std::string pass = op.name.find("(recompute)") != std::string::npos ? "recompute"
                             : op.name.find("(bwd)") != std::string::npos    ? "bwd"
                                                                             : "fwd";
    auto& [count, bytes] = out[{op.group, op.kind, pass}];
    ++count;
    bytes = op.bytes;
    EXPECT_EQ(op.stream, mesh_stream(op.group)) << op.name;
  }
  return out;
}

// The tiny Llama (width 256, 8 heads of 32, 4 key/value heads, 4 blocks) on 8 GPUs.
constexpr const char* kSequence = "micro_batch_size: 2 sequence_length: 512 ";

TEST(MeshProgram, TensorParallelSequenceParallelBytesPerBlock) {
  ProgramSetup s(std::string(kSequence) + "mesh { tp: 2 }");
  const Program p = s.build();
  // Each block: an all-gather before attention and before the MLP, a
  // reduce-scatter after each, of the micro-batch's tokens at the hidden
  // width in bf16; the backward the same four the other way.
  const int64_t tokens = 2 * 512;
  const int64_t expected = tokens * 256 * 2;
  const auto ops = mesh_ops_of(p, 1);
  std::printf("tp 2, per block and pass: 2 all-gathers + 2 reduce-scatters of %lld bytes (tokens x hidden x 2); "
              "built %lld\n", static_cast<long long>(expected),
              static_cast<long long>(ops.at({Group::kTensor, OpKind::kAllGather, "fwd"}).second));
  for (const std::string pass : {"fwd", "bwd"}) {
    EXPECT_EQ(ops.at({Group::kTensor, OpKind::kAllGather, pass}), std::make_pair(2, expected)) << pass;
    EXPECT_EQ(ops.at({Group::kTensor, OpKind::kReduceScatter, pass}), std::make_pair(2, expected)) << pass;
  }
  // The two norms' weights are not cut: their partial gradients (each tp
  // rank saw its own tokens) are summed over the tp group, in bf16.
  const int64_t norms = 2 * 256 * 2;
  std::printf("uncut weights' gradient all-reduce: %lld bytes (2 norms x hidden x 2); built %lld\n",
              static_cast<long long>(norms),
              static_cast<long long>(ops.at({Group::kTensor, OpKind::kAllReduce, "bwd"}).second));
  EXPECT_EQ(ops.at({Group::kTensor, OpKind::kAllReduce, "bwd"}), std::make_pair(1, norms));
  EXPECT_EQ(ops.size(), 5u);
  // The embedding's partial sums are reduced after its forward, the head's
  // input gathered before it, with the vocabulary-parallel loss's three
  // fp32 values per token all-reduced.
  const auto head = mesh_ops_of(p, s.units() - 1);
  EXPECT_EQ(head.at({Group::kTensor, OpKind::kAllReduce, "fwd"}), std::make_pair(1, tokens * 3 * 4));
  EXPECT_EQ(mesh_ops_of(p, 0).at({Group::kTensor, OpKind::kReduceScatter, "fwd"}), std::make_pair(1, expected));
}

// KempnerForge's tp plan: ColwiseParallel(input_layouts=Shard(1)) on each
// of q, k, v, gate and up, no PrepareModuleInput: each projection gathers
// its own input in the forward (eager; torch.compile's CSE merges the
// identical gathers into one a region) and reduce-scatters its own input's
// gradient in the backward (three for the attention, two for the MLP).
TEST(MeshProgram, PerProjectionInputsReduceEachProjectionsInputGradient) {
  const int64_t expected = 2 * 512 * 256 * 2;
  for (const bool compiled : {false, true}) {
    ProgramSetup s(std::string(kSequence) + "mesh { tp: 2 column_input: PER_PROJECTION } compiled: " +
                   (compiled ? "true" : "false"));
    const auto ops = mesh_ops_of(s.build(), 1);
    const int forward_gathers = compiled ? 2 : 3 + 2;
    std::printf("per-projection inputs, %s: forward %d all-gathers, backward %d reduce-scatters of %lld bytes\n",
                compiled ? "compiled" : "eager", ops.at({Group::kTensor, OpKind::kAllGather, "fwd"}).first,
                ops.at({Group::kTensor, OpKind::kReduceScatter, "bwd"}).first, static_cast<long long>(expected));
    EXPECT_EQ(ops.at({Group::kTensor, OpKind::kAllGather, "fwd"}), std::make_pair(forward_gathers, expected));
    EXPECT_EQ(ops.at({Group::kTensor, OpKind::kReduceScatter, "fwd"}), std::make_pair(2, expected));
    EXPECT_EQ(ops.at({Group::kTensor, OpKind::kAllGather, "bwd"}), std::make_pair(2, expected));
    EXPECT_EQ(ops.at({Group::kTensor, OpKind::kReduceScatter, "bwd"}), std::make_pair(3 + 2, expected));
  }
  // Without sequence parallelism the input gradients are all-reduced, one a projection.
  ProgramSetup plain(std::string(kSequence) + "mesh { tp: 2 sequence_parallel: false column_input: PER_PROJECTION }");
  const auto ops = mesh_ops_of(plain.build(), 1);
  EXPECT_EQ(ops.at({Group::kTensor, OpKind::kAllReduce, "fwd"}), std::make_pair(2, expected));
  EXPECT_EQ(ops.at({Group::kTensor, OpKind::kAllReduce, "bwd"}), std::make_pair(3 + 2, expected));
}

TEST(MeshProgram, TensorParallelWithoutSequenceParallelAllReduces) {
  ProgramSetup s(std::string(kSequence) + "mesh { tp: 2 sequence_parallel: false }");
  const auto ops = mesh_ops_of(s.build(), 1);
  const int64_t expected = 2 * 512 * 256 * 2;
  EXPECT_EQ(ops.at({Group::kTensor, OpKind::kAllReduce, "fwd"}), std::make_pair(2, expected));
  EXPECT_EQ(ops.at({Group::kTensor, OpKind::kAllReduce, "bwd"}), std::make_pair(2, expected));
  EXPECT_EQ(ops.size(), 2u);
}

// A tp plan that leaves the embedding and the head out (KempnerForge's
// pipeline stages: apply_tensor_parallel parallelizes the output head only
// under sequence parallelism, never the token embedding): both whole on each
// tp rank, their tensors uncut, no tp collectives around them.
TEST(MeshProgram, AReplicatedVocabularyKeepsTheWholeTablesAndNoTensorParallelCollectives) {
  ProgramSetup split(std::string(kSequence) + "mesh { tp: 2 sequence_parallel: false }");
  ProgramSetup whole(std::string(kSequence) + "mesh { tp: 2 sequence_parallel: false vocabulary_parallel: false }");
  const Program p = whole.build();
  const int head = whole.units() - 1;
  std::printf("tp 2: embedding %lld and head %lld parameters a rank replicated, %lld and %lld vocabulary-parallel\n",
              static_cast<long long>(whole.spec(0).params()), static_cast<long long>(whole.spec(head).params()),
              static_cast<long long>(split.spec(0).params()), static_cast<long long>(split.spec(head).params()));
  EXPECT_EQ(whole.spec(0).params(), 2 * split.spec(0).params());
  EXPECT_GT(whole.spec(head).params(), split.spec(head).params());
  for (const models::TensorSpec& t : whole.spec(0).tensors) EXPECT_EQ(t.tp_cut, models::TensorCut::kWhole) << t.name;
  for (const models::TensorSpec& t : whole.spec(head).tensors) EXPECT_EQ(t.tp_cut, models::TensorCut::kWhole) << t.name;
  EXPECT_TRUE(mesh_ops_of(p, 0).empty());
  EXPECT_TRUE(mesh_ops_of(p, head).empty());
  EXPECT_FALSE(mesh_ops_of(split.build(), head).empty());
  // The blocks keep their tp all-reduces.
  const Program q = split.build();
  for (const OpKind kind : {OpKind::kAllReduce}) {
    for (const std::string pass : {"fwd", "bwd"}) {
      EXPECT_EQ(mesh_ops_of(p, 1).at({Group::kTensor, kind, pass}), mesh_ops_of(q, 1).at({Group::kTensor, kind, pass}));
    }
  }
}

// KempnerForge's tp plan under sequence parallelism: the token embedding
// whole on every tp rank (its output's gradient all-gathered back over tp),
// the head column-parallel with its logits all-gathered to every rank, so
// each rank's loss and the logits it holds cover the whole vocabulary.
TEST(MeshProgram, GatheredLogitsHoldTheWholeVocabularyOnEveryRank) {
  ProgramSetup split(std::string(kSequence) + "mesh { tp: 2 }");
  ProgramSetup gathered(std::string(kSequence) + "mesh { tp: 2 gathered_logits: true }");
  const int head = gathered.units() - 1;
  const int64_t tokens = 2 * 512;
  const int64_t vocabulary = 2 * split.model().arch.vocab;  // the split's rank holds half
  EXPECT_EQ(gathered.spec(0).params(), 2 * split.spec(0).params());
  for (const models::TensorSpec& t : gathered.spec(0).tensors) EXPECT_EQ(t.tp_cut, models::TensorCut::kWhole) << t.name;
  EXPECT_EQ(gathered.spec(head).params(), split.spec(head).params());
  EXPECT_DOUBLE_EQ(gathered.spec(head).activations.loss_logits, 2 * split.spec(head).activations.loss_logits);
  EXPECT_DOUBLE_EQ(gathered.spec(head).compute.elementwise.back().bytes_per_token,
                   2 * split.spec(head).compute.elementwise.back().bytes_per_token);

  const Program p = gathered.build();
  const auto head_ops = mesh_ops_of(p, head);
  // The hidden states gathered before the GEMM, then the logits after it.
  EXPECT_EQ(head_ops.at({Group::kTensor, OpKind::kAllGather, "fwd"}), std::make_pair(2, tokens * vocabulary * 2));
  EXPECT_EQ(head_ops.count({Group::kTensor, OpKind::kAllReduce, "fwd"}), 0u);  // no vocabulary-parallel loss
  EXPECT_EQ(mesh_ops_of(split.build(), head).count({Group::kTensor, OpKind::kAllReduce, "fwd"}), 1u);
  const auto embedding_ops = mesh_ops_of(p, 0);
  ASSERT_EQ(embedding_ops.size(), 1u);
  EXPECT_EQ(embedding_ops.at({Group::kTensor, OpKind::kAllGather, "bwd"}), std::make_pair(1, tokens * 256 * 2));
}

TEST(MeshProgram, ContextParallelGathersKeysAndValues) {
  ProgramSetup s(std::string(kSequence) + "mesh { cp: 2 }");
  const Program p = s.build();
  // Each cp rank holds 512 / 2 tokens of each of the 2 sequences; the
  // all-gather brings every rank's keys and values (4 heads of 32, twice).
  const int64_t local_tokens = 2 * 512 / 2;
  const int64_t expected = 2 * local_tokens * 2 * 4 * 32 * 2;
  const auto ops = mesh_ops_of(p, 1);
  std::printf("cp 2, per block: key/value all-gather of %lld bytes (cp x tokens x 2 x kv heads x head dim x 2); "
              "built %lld\n", static_cast<long long>(expected),
              static_cast<long long>(ops.at({Group::kContext, OpKind::kAllGather, "fwd"}).second));
  EXPECT_EQ(ops.at({Group::kContext, OpKind::kAllGather, "fwd"}), std::make_pair(1, expected));
  EXPECT_EQ(ops.at({Group::kContext, OpKind::kAllGather, "bwd"}), std::make_pair(1, expected));
  // PyTorch's ring passes its fp32 gradient accumulators on: the last pass's
  // bytes leave each rank, as many as a reduce-scatter of twice the bf16
  // buffer moves at cp 2.
  std::printf("cp 2, per block: key/value gradients' last fp32 pass %lld bytes (local tokens x 2 x kv heads x "
              "head dim x 4) = a reduce-scatter of %lld; built %lld\n",
              static_cast<long long>(local_tokens * 2 * 4 * 32 * 4), static_cast<long long>(2 * expected),
              static_cast<long long>(ops.at({Group::kContext, OpKind::kReduceScatter, "bwd"}).second));
  EXPECT_EQ(ops.at({Group::kContext, OpKind::kReduceScatter, "bwd"}), std::make_pair(1, 2 * expected));
  // A GPU's share of the tokens, for tokens/s: the cp rank's.
  EXPECT_EQ(p.tokens_per_step, local_tokens);
  // Megatron's runtimes run Transformer Engine's context parallelism: the
  // gradients reduce-scattered in bf16.
  ProgramSetup megatron(std::string(kSequence) + "strategy: MEGATRON mesh { cp: 2 }");
  EXPECT_EQ(mesh_ops_of(megatron.build(), 1).at({Group::kContext, OpKind::kReduceScatter, "bwd"}),
            std::make_pair(1, expected));
}

// A stack that copies the keys and values to every query head before the
// attention (torchtitan's repeat_kv before 2026-01-27) hands the ring the
// copies: 8 heads of 32 instead of the 4 kv heads.
TEST(MeshProgram, RepeatedKeysAndValuesGoRoundTheRingAsCopies) {
  ProgramSetup native(std::string(kSequence) + "mesh { cp: 2 }");
  ProgramSetup repeated(std::string(kSequence) + "mesh { cp: 2 } kv_heads: REPEATED_KV");
  EXPECT_EQ(key_value_width(native.spec(1), native.model()), 2 * 4 * 32);
  EXPECT_EQ(key_value_width(repeated.spec(1), repeated.model()), 2 * 8 * 32);
  const int64_t local_tokens = 2 * 512 / 2;
  const int64_t expected = 2 * local_tokens * 2 * 8 * 32 * 2;
  const auto ops = mesh_ops_of(repeated.build(), 1);
  std::printf("cp 2, repeated kv, per block: key/value all-gather of %lld bytes (cp x tokens x 2 x heads x head dim "
              "x 2); built %lld\n",
              static_cast<long long>(expected),
              static_cast<long long>(ops.at({Group::kContext, OpKind::kAllGather, "fwd"}).second));
  EXPECT_EQ(ops.at({Group::kContext, OpKind::kAllGather, "fwd"}), std::make_pair(1, expected));
}

TEST(MeshProgram, PyTorchsRingMergesEachStepInFp32) {
  ProgramSetup s(std::string(kSequence) + "mesh { cp: 2 }");
  const models::UnitSpec& block = s.spec(1);
  MicroBatch ring{2, 512, false};
  ring.cp = 2;
  ring.key_value_width = key_value_width(block, s.model());
  MicroBatch merged_by_kernels = ring;
  ring.ring_merges_in_fp32 = true;
  const double tokens = 2 * 512 / 2;
  const double out = 8 * 32, kv = 2 * 4 * 32;
  ASSERT_EQ(ring.key_value_width, 256);
  const auto extra = [&](const MicroBatch& batch, auto work) {
    return work(batch).elementwise_bytes - work(merged_by_kernels).elementwise_bytes;
  };
  const auto core = models::UnitPart::kAttentionCore;
  const auto forward = [&](const MicroBatch& b) { return forward_work(block, b, core); };
  const auto backward = [&](const MicroBatch& b) { return backward_work(block, b, core); };
  // Eager, cp 2: two casts to fp32 (6 B), one merge (32 B), the cast back
  // (6 B) per output element; the keys and values concatenated once (4 B).
  const double forward_bytes = tokens * ((6 * 2 + 32 + 6) * out + 4 * kv);
  // Zeroed fp32 accumulators (4 B), two adds (10 B), the cast back (6 B) per
  // query-gradient element; per key/value element also a half-chunk
  // concatenation (13 B after the first step) and two flattenings (8 B).
  const double backward_bytes = tokens * ((10 + 10 * 2) * out + (20 + 13 + 8 * 2) * kv);
  std::printf("cp 2 eager ring merges per block: forward %.0f bytes, backward %.0f; built %.0f, %.0f\n",
              forward_bytes, backward_bytes, extra(ring, forward), extra(ring, backward));
  EXPECT_DOUBLE_EQ(extra(ring, forward), forward_bytes);
  EXPECT_DOUBLE_EQ(extra(ring, backward), backward_bytes);
  // Only the attention core merges; selective recomputation reruns none of it
  // (SAC saves the attention's output), full recomputation all of it.
  EXPECT_DOUBLE_EQ(forward_work(block, ring, models::UnitPart::kMlp).elementwise_bytes,
                   forward_work(block, merged_by_kernels, models::UnitPart::kMlp).elementwise_bytes);
  EXPECT_DOUBLE_EQ(recompute_work(block, ring, models::Checkpointing::kSelective, core).elementwise_bytes,
                   recompute_work(block, merged_by_kernels, models::Checkpointing::kSelective, core).elementwise_bytes);
  EXPECT_DOUBLE_EQ(recompute_work(block, ring, models::Checkpointing::kFull, core).elementwise_bytes,
                   forward_work(block, ring, core).elementwise_bytes);
  // Compiled: one pass per merge and per accumulation (10 B).
  ring.fused_elementwise = merged_by_kernels.fused_elementwise = true;
  EXPECT_DOUBLE_EQ(extra(ring, forward), tokens * 10 * out);
  EXPECT_DOUBLE_EQ(extra(ring, backward), tokens * 10 * 2 * (out + kv));
}

TEST(MeshProgram, FullRecomputationRepeatsTheForwardsCollectives) {
  ProgramSetup s(std::string(kSequence) + "activation_checkpointing: FULL mesh { tp: 2 cp: 2 }");
  const auto ops = mesh_ops_of(s.build(), 1);
  EXPECT_EQ(ops.at({Group::kTensor, OpKind::kAllGather, "recompute"}).first, 2);
  EXPECT_EQ(ops.at({Group::kTensor, OpKind::kReduceScatter, "recompute"}).first, 2);
  EXPECT_EQ(ops.at({Group::kContext, OpKind::kAllGather, "recompute"}).first, 1);
}

TEST(MeshProgram, SelectiveRecomputationGathersTheRecomputedMatmulsInputsAgain) {
  // TorchTitan's op-level policy saves reduce_scatter_tensor's output, not the
  // all-gathers': the two all-gathers of each block run again, nothing else.
  ProgramSetup s(std::string(kSequence) + "activation_checkpointing: SELECTIVE mesh { tp: 2 cp: 2 }");
  const auto ops = mesh_ops_of(s.build(), 1);
  EXPECT_EQ(ops.at({Group::kTensor, OpKind::kAllGather, "recompute"}), std::make_pair(2, int64_t{2 * 512 / 2 * 256 * 2}));
  EXPECT_EQ(ops.count({Group::kTensor, OpKind::kReduceScatter, "recompute"}), 0u);
  EXPECT_EQ(ops.count({Group::kContext, OpKind::kAllGather, "recompute"}), 0u);
}

// Element-wise traffic and kernels of unit `unit`'s compute ops (micro-batch 0), by op kind.
std::map<OpKind, std::pair<double, int64_t>> compute_traffic_of(const Program& p, int unit) {
  std::map<OpKind, std::pair<double, int64_t>> out;
  for (const Op& op : p.ops) {
    if (op.unit != unit || op.micro_batch != 0 || op.stream != Stream::kCompute) continue;
    if (op.kind != OpKind::kComputeFwd && op.kind != OpKind::kComputeBwd && op.kind != OpKind::kRecompute) continue;
    out[op.kind].first += op.work.elementwise_bytes;
    out[op.kind].second += op.work.elementwise_kernels;
  }
  return out;
}

TEST(MeshProgram, BatchFirstLayoutCopiesEverySequenceParallelBuffer) {
  // DTensor's Shard(1) on [b, s, h]: torch's all_gather_tensor rearranges the
  // rank-major gathered buffer with chunk + cat, reduce_scatter_tensor
  // concatenates its input's chunks along dim 0 first: one copy of the whole
  // buffer (read and written) on the compute stream per collective. A block
  // has 2 all-gathers and 2 reduce-scatters in each of its forward, its
  // recompute (full checkpointing) and its backward.
  const std::string base = std::string(kSequence) + "activation_checkpointing: FULL ";
  ProgramSetup seq(base + "mesh { tp: 2 }");
  ProgramSetup batch(base + "mesh { tp: 2 sequence_layout: BATCH_FIRST }");
  const auto before = compute_traffic_of(seq.build(), 1);
  const auto after = compute_traffic_of(batch.build(), 1);
  const double buffer = 2.0 * 512 * 256 * 2;  // tokens x hidden x bf16, the gathered buffer
  const std::pair<OpKind, const char*> passes[] = {
      {OpKind::kComputeFwd, "forward"}, {OpKind::kRecompute, "recompute"}, {OpKind::kComputeBwd, "backward"}};
  for (const auto& [kind, pass] : passes) {
    const double added = after.at(kind).first - before.at(kind).first;
    std::printf("batch-first copies, a block's %s: 4 collectives x 2 x %.0f bytes = %.0f; built %.0f more\n", pass,
                buffer, 4 * 2 * buffer, added);
    EXPECT_DOUBLE_EQ(added, 4 * 2 * buffer);
    EXPECT_EQ(after.at(kind).second - before.at(kind).second, 4);
  }
  // The collectives themselves are the same.
  const auto seq_ops = mesh_ops_of(seq.build(), 1);
  const auto batch_ops = mesh_ops_of(batch.build(), 1);
  ASSERT_EQ(seq_ops.size(), batch_ops.size());
  for (const auto& [key, value] : seq_ops) EXPECT_EQ(batch_ops.at(key), value);
  // Without sequence parallelism the all-reduces leave the layout alone.
  ProgramSetup plain(base + "mesh { tp: 2 sequence_parallel: false }");
  ProgramSetup plain_batch(base + "mesh { tp: 2 sequence_parallel: false sequence_layout: BATCH_FIRST }");
  EXPECT_EQ(compute_traffic_of(plain.build(), 1), compute_traffic_of(plain_batch.build(), 1));
}

TEST(MeshProgram, EachPartOfABlockWaitsForItsOwnCollectives) {
  ProgramSetup s(std::string(kSequence) + "mesh { tp: 2 }");
  const Program p = s.build();
  // Block 2's forward, in issue order: all-gather, attention, reduce-scatter,
  // all-gather, MLP, reduce-scatter (Megatron's sequence-parallel block).
  std::vector<const Op*> forward;
  for (const Op& op : p.ops) {
    const bool mesh = op.group == Group::kTensor;
    if (op.unit == 2 && op.micro_batch == 0 && (op.kind == OpKind::kComputeFwd || mesh) &&
        op.name.find("(bwd)") == std::string::npos && op.name.find("recompute") == std::string::npos) {
      forward.push_back(&op);
    }
  }
  ASSERT_EQ(forward.size(), 6u);
  const std::vector<std::pair<OpKind, models::UnitPart>> expected = {
      {OpKind::kAllGather, models::UnitPart::kAttention}, {OpKind::kComputeFwd, models::UnitPart::kAttention},
      {OpKind::kReduceScatter, models::UnitPart::kAttention}, {OpKind::kAllGather, models::UnitPart::kMlp},
      {OpKind::kComputeFwd, models::UnitPart::kMlp}, {OpKind::kReduceScatter, models::UnitPart::kMlp}};
  for (size_t i = 0; i < expected.size(); ++i) {
    std::printf("  %s\n", forward[i]->name.c_str());
    EXPECT_EQ(forward[i]->kind, expected[i].first) << forward[i]->name;
    EXPECT_EQ(forward[i]->part, expected[i].second) << forward[i]->name;
  }
  const auto waits_for = [](const Op& op, const Op& on) {
    return std::find(op.deps.begin(), op.deps.end(), on.id) != op.deps.end();
  };
  EXPECT_TRUE(waits_for(*forward[1], *forward[0])) << "the attention waits for its all-gather";
  EXPECT_TRUE(waits_for(*forward[2], *forward[1])) << "the reduce-scatter waits for the attention";
  EXPECT_TRUE(waits_for(*forward[3], *forward[2])) << "the MLP's all-gather reads the attention's residual";
  EXPECT_TRUE(waits_for(*forward[4], *forward[3])) << "the MLP waits for its all-gather";
  // The attention also waits for the previous block's last reduce-scatter.
  bool previous = false;
  for (uint32_t d : forward[1]->deps) previous = previous || (p.ops[d].unit == 1 && p.ops[d].kind == OpKind::kReduceScatter);
  EXPECT_TRUE(previous);
  // The parts' work sums to the block's: the same FLOPs as one op would run.
  const double parts = forward[1]->flops + forward[4]->flops;
  MicroBatch batch;
  batch.sequences = 2;
  batch.seq_len = 512;
  const double whole = total_flops(forward_work(s.spec(2), batch));
  std::printf("block forward FLOPs: attention %.4g + MLP %.4g = %.6g; whole block %.6g\n", forward[1]->flops,
              forward[4]->flops, parts, whole);
  EXPECT_NEAR(parts, whole, whole * 1e-12);
}

std::string part_name(models::UnitPart part) {
  switch (part) {
    case models::UnitPart::kWhole: return " whole";
    case models::UnitPart::kAttention: return " attention";
    case models::UnitPart::kAttentionInput: return " attention input";
    case models::UnitPart::kAttentionCore: return " attention core";
    case models::UnitPart::kMlp: return " mlp";
  }
  return "?";
}

TEST(MeshProgram, ContextParallelGathersKeysAndValuesBetweenProjectionsAndCore) {
  ProgramSetup s(std::string(kSequence) + "mesh { tp: 2 cp: 2 }");
  const Program p = s.build();
  // Block 2's ops in issue order, forward then backward (no checkpointing).
  std::vector<std::string> order;
  for (const Op& op : p.ops) {
    const bool mesh = op.group == Group::kTensor || op.group == Group::kContext;
    const bool compute = op.kind == OpKind::kComputeFwd || op.kind == OpKind::kComputeBwd;
    if (op.unit != 2 || op.micro_batch != 0 || !(mesh || compute)) continue;
    order.push_back(std::string(op_kind_name(op.kind)) + (op.group == Group::kContext ? " cp" : "") + " " +
                    part_name(op.part));
  }
  const std::vector<std::string> expected = {
      "all_gather  attention input", "compute_fwd  attention input", "all_gather cp  attention core",
      "compute_fwd  attention core", "reduce_scatter  attention core", "all_gather  mlp", "compute_fwd  mlp",
      "reduce_scatter  mlp",
      // backward: the MLP, the core (the output gradient gathered, the keys
      // and values gathered again, their gradients reduce-scattered), the
      // projections.
      "all_gather  mlp", "compute_bwd  mlp", "reduce_scatter  mlp", "all_gather  attention core",
      "all_gather cp  attention core", "compute_bwd  attention core", "reduce_scatter cp  attention core",
      "compute_bwd  attention input", "reduce_scatter  attention input", "all_reduce  whole"};
  for (const std::string& line : order) std::printf("  %s\n", line.c_str());
  EXPECT_EQ(order, expected);
}

TEST(MeshProgram, TensorParallelDividesThePersistentState) {
  // The same shard group of 4 with and without tp 2 (8 GPUs either way).
  ProgramSetup fsdp("shard_group_size: 4");
  ProgramSetup tp("mesh { tp: 2 }");
  ASSERT_EQ(tp.training().shard_group_size(), 4);
  const int64_t one = fsdp.build().persistent.master_params;
  const int64_t two = tp.build().persistent.master_params;
  std::printf("master weights per rank: tp 1 %lld bytes, tp 2 %lld (about half: the norms stay whole)\n",
              static_cast<long long>(one), static_cast<long long>(two));
  EXPECT_LT(two, one * 0.52);
  EXPECT_GT(two, one * 0.48);
}

constexpr const char* kTinyMoe =
    "model { inline_spec { family: \"qwen3_moe\" hidden_size: 128 num_layers: 2 vocab_size: 512\n"
    "                      intermediate_size: 256 num_attention_heads: 4 num_key_value_heads: 2 head_dim: 32\n"
    "                      num_experts: 8 experts_per_token: 2 moe_intermediate_size: 64 } }\n"
    "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n";

TEST(MeshProgram, ExpertParallelDispatchAndCombineBytes) {
  ProgramSetup s(std::string(kSequence) + "mesh { ep: 4 }", kTinyMoe);
  const Program p = s.build();
  // embed, layers.0, layers.0.experts, layers.1, layers.1.experts, head.
  ASSERT_EQ(s.units(), 6);
  EXPECT_EQ(s.spec(2).name, "layers.0.experts");
  EXPECT_EQ(s.plan().units[2].group, Group::kExpertShard);
  EXPECT_EQ(s.plan().units[2].layout.ranks, 8 / 4);
  // Each rank sends its tokens' top-2 copies at the hidden width; the group's
  // all-to-all carries 4 ranks' worth, (ep - 1) / ep of it off each rank.
  const int64_t per_rank = 2 * 512 * 2 * 128 * 2;
  const auto ops = mesh_ops_of(p, 2);
  std::printf("ep 4: each rank dispatches %lld bytes (tokens x top-k x hidden x 2), %lld leave it; group all-to-all "
              "%lld\n", static_cast<long long>(per_rank), static_cast<long long>(per_rank * 3 / 4),
              static_cast<long long>(ops.at({Group::kExpert, OpKind::kAllToAll, "fwd"}).second));
  EXPECT_EQ(ops.at({Group::kExpert, OpKind::kAllToAll, "fwd"}), std::make_pair(2, 4 * per_rank));
  EXPECT_EQ(ops.at({Group::kExpert, OpKind::kAllToAll, "bwd"}), std::make_pair(2, 4 * per_rank));
  // The experts' FSDP collectives run over their own group.
  for (const Op& op : p.ops) {
    if (op.unit == 2 && (op.kind == OpKind::kAllGather || op.kind == OpKind::kReduceScatter)) {
      EXPECT_EQ(op.group, Group::kExpertShard) << op.name;
    }
  }
}

// An uneven router: the rank holding the busiest expert receives more than
// its share and the group waits for it. Tiny MoE, 8 experts top 2 on ep 4
// (two a rank), the busiest at 3 mean loads, the other seven sharing 5:
// that rank receives (3 + 5/7) / 2 = 13/7 of a balanced rank's copies.
TEST(MeshProgram, AnUnevenRouterChargesTheBusiestRanksDispatch) {
  ProgramSetup s(std::string(kSequence) + "mesh { ep: 4 } experts { busiest_load: 3 }", kTinyMoe);
  const Program p = s.build();
  const int64_t per_rank = 2 * 512 * 2 * 128 * 2;
  const int64_t by_hand = std::llround(4.0 * static_cast<double>(per_rank) * 13.0 / 7.0);
  const auto ops = mesh_ops_of(p, 2);
  std::printf("ep 4, busiest expert at 3x the mean: group all-to-all by hand %lld (balanced %lld), built %lld\n",
              static_cast<long long>(by_hand), static_cast<long long>(4 * per_rank),
              static_cast<long long>(ops.at({Group::kExpert, OpKind::kAllToAll, "fwd"}).second));
  EXPECT_EQ(ops.at({Group::kExpert, OpKind::kAllToAll, "fwd"}), std::make_pair(2, by_hand));
  EXPECT_EQ(ops.at({Group::kExpert, OpKind::kAllToAll, "bwd"}), std::make_pair(2, by_hand));
}

// DeepEP sends a token once to each rank holding one of its experts; with
// NeMo Automodel's FakeBalancedGate token i takes experts 2i and 2i + 1 of
// 8, both on rank (i mod 4) of ep 4: one copy a token instead of top-2.
TEST(MeshProgram, DeepEpSendsATokenOncePerRank) {
  ProgramSetup s(std::string(kSequence) + "mesh { ep: 4 expert_dispatcher: DEEPEP expert_routing: CONSECUTIVE }",
                 kTinyMoe);
  const Program p = s.build();
  const int64_t per_rank = 2 * 512 * 1 * 128 * 2;
  const auto ops = mesh_ops_of(p, 2);
  std::printf("ep 4, DeepEP + FakeBalancedGate: each rank dispatches %lld bytes (tokens x 1 rank x hidden x 2); "
              "group all-to-all %lld\n", static_cast<long long>(per_rank),
              static_cast<long long>(ops.at({Group::kExpert, OpKind::kAllToAll, "fwd"}).second));
  EXPECT_EQ(ops.at({Group::kExpert, OpKind::kAllToAll, "fwd"}), std::make_pair(2, 4 * per_rank));
  EXPECT_EQ(ops.at({Group::kExpert, OpKind::kAllToAll, "bwd"}), std::make_pair(2, 4 * per_rank));
}

// Whole experts under tp (expert_tp 1, Megatron-Core's
// --expert-tensor-parallel-size 1), tp 2 x ep 4 on 8 GPUs: each tp rank
// dispatches its own half of the tokens, nothing is gathered or reduced over
// tp around the routed experts (the tiny MoE has no shared experts), and each
// expert is whole on its rank, FSDP-sharded over tp x dp_shard / ep = 2 ranks
// where split experts are over dp_shard / ep = 1.
TEST(MeshProgram, WholeExpertsDispatchTheRanksOwnTokens) {
  ProgramSetup split(std::string(kSequence) + "mesh { tp: 2 ep: 4 }", kTinyMoe);
  ProgramSetup whole(std::string(kSequence) + "mesh { tp: 2 ep: 4 expert_tp: 1 }", kTinyMoe);
  const Program ps = split.build();
  const Program pw = whole.build();
  ASSERT_EQ(whole.spec(2).name, "layers.0.experts");
  EXPECT_EQ(split.plan().units[2].layout.ranks, 1);
  EXPECT_EQ(whole.plan().units[2].layout.ranks, 2);
  // The dispatch: ep x (the rank's tokens) x top-2 x hidden x 2 bytes.
  const int64_t tokens = 2 * 512;
  const int64_t split_bytes = 4 * tokens * 2 * 128 * 2;
  const int64_t whole_bytes = 4 * (tokens / 2) * 2 * 128 * 2;
  const auto split_ops = mesh_ops_of(ps, 2);
  const auto whole_ops = mesh_ops_of(pw, 2);
  std::printf("tp 2 x ep 4: group all-to-all, split experts by hand %lld built %lld; whole experts by hand %lld "
              "built %lld\n",
              static_cast<long long>(split_bytes),
              static_cast<long long>(split_ops.at({Group::kExpert, OpKind::kAllToAll, "fwd"}).second),
              static_cast<long long>(whole_bytes),
              static_cast<long long>(whole_ops.at({Group::kExpert, OpKind::kAllToAll, "fwd"}).second));
  EXPECT_EQ(split_ops.at({Group::kExpert, OpKind::kAllToAll, "fwd"}), std::make_pair(2, split_bytes));
  EXPECT_EQ(whole_ops.at({Group::kExpert, OpKind::kAllToAll, "fwd"}), std::make_pair(2, whole_bytes));
  EXPECT_EQ(whole_ops.at({Group::kExpert, OpKind::kAllToAll, "bwd"}), std::make_pair(2, whole_bytes));
  // Split experts reduce their combined output over tp; whole ones do not,
  // and their block gathers only for the attention.
  EXPECT_EQ(split_ops.count({Group::kTensor, OpKind::kReduceScatter, "fwd"}), 1u);
  for (const auto& [key, value] : whole_ops) EXPECT_NE(key.group, Group::kTensor) << value.first;
  EXPECT_EQ(mesh_ops_of(ps, 1).at({Group::kTensor, OpKind::kAllGather, "fwd"}).first, 2);
  EXPECT_EQ(mesh_ops_of(pw, 1).at({Group::kTensor, OpKind::kAllGather, "fwd"}).first, 1);
  // Whole experts hold twice the split ones' elements and do the same FLOPs
  // on half the tokens at twice the width.
  int64_t split_elements = 0, whole_elements = 0;
  for (const models::TensorSpec& t : split.spec(2).tensors) split_elements += t.numel();
  for (const models::TensorSpec& t : whole.spec(2).tensors) whole_elements += t.numel();
  EXPECT_EQ(whole_elements, 2 * split_elements);
  double split_flops = 0, whole_flops = 0;
  for (const models::GemmShape& g : split.spec(2).compute.gemms) split_flops += g.forward_flops_per_token();
  for (const models::GemmShape& g : whole.spec(2).compute.gemms) whole_flops += g.forward_flops_per_token();
  std::printf("routed experts' forward FLOPs per token of a rank: split %.0f, whole %.0f\n", split_flops, whole_flops);
  EXPECT_DOUBLE_EQ(whole_flops, split_flops);
}

TEST(MeshProgram, RaisingEpLowersTheFsdpAllGatherBytes) {
  int64_t previous = -1;
  for (int ep : {1, 2, 4, 8}) {
    ProgramSetup s("mesh { ep: " + std::to_string(ep) + " }", kTinyMoe);
    int64_t gathered = 0;
    for (const Op& op : s.build().ops) {
      if (op.kind == OpKind::kAllGather && (op.group == Group::kShard || op.group == Group::kExpertShard)) {
        gathered += op.bytes;
      }
    }
    std::printf("ep %d: FSDP all-gather bytes per step %lld\n", ep, static_cast<long long>(gathered));
    if (previous >= 0) {
      EXPECT_LT(gathered, previous);
    }
    previous = gathered;
  }
}

// Muon under expert parallelism: each ep rank holds its own experts, sharded
// over its expert shard group, so their matrices are owned there (8 ranks,
// ep 4: expert shard groups of 2, shard-group ranks r and r + 4) and travel
// over that group; the dense matrices are owned over the shard group of 8.
TEST(MeshProgram, MuonOwnsTheRoutedExpertsWithinTheirExpertShardGroup) {
  constexpr int kSteps = 2;
  ProgramSetup s("mesh { ep: 4 } optimizer { muon { ns_steps: 2 } }", kTinyMoe);
  const std::vector<OwnedMatrix> matrices = owned_matrices(s.optimizer_context());
  std::map<Group, int> count;
  for (const OwnedMatrix& m : matrices) {
    const bool expert = s.model().units[static_cast<size_t>(m.unit)].kind == models::UnitKind::kExperts;
    EXPECT_EQ(m.group, expert ? Group::kExpertShard : Group::kShard);
    EXPECT_LT(m.owner, expert ? 2 : 8);
    ++count[m.group];
  }
  // Per layer: q, k, v, o (4 dense; the router is a vector-like [8, 128]
  // matrix, owned too) and 2 local experts x 3 projections.
  std::printf("muon, ep 4: %d dense matrices owned over 8 ranks, %d routed-expert matrices per ep rank over 2\n",
              count[Group::kShard], count[Group::kExpertShard]);
  EXPECT_EQ(count[Group::kExpertShard], 2 * 2 * 3);
  for (int r = 0; r < 8; ++r) EXPECT_EQ(rank_in_group(s.plan(), Group::kExpertShard, r), r / 4);
  // The experts' Newton-Schulz GEMMs over both ranks of each expert shard
  // group run every local expert matrix once, the all-to-alls on that group.
  for (int place = 0; place < 4; ++place) {
    size_t gemms = 0;
    for (int r : {place, place + 4}) {
      const Program p = s.build(r);
      for (const Op& op : p.ops) {
        if (s.spec(op.unit).kind != models::UnitKind::kExperts) continue;
        if (op.kind == OpKind::kAllToAll && op.phase != OptimizerPhase::kNone) {
          EXPECT_EQ(op.group, Group::kExpertShard) << op.name;
        }
        if (op.kind == OpKind::kOptimizer && op.phase == OptimizerPhase::kOrthogonalize) gemms += op.work.gemms.size();
      }
    }
    EXPECT_EQ(gemms, static_cast<size_t>(3 * kSteps * count[Group::kExpertShard])) << "ep place " << place;
  }
}

TEST(Mesh, GroupsAreStridedRunsThatTileTheCluster) {
  // dp_replicate 2 x dp_shard 4 x cp 2 x tp 2 = 32 ranks, ep 4 of dp_shard x cp.
  const Mesh m{2, 4, 2, 2, 4, true};
  EXPECT_EQ(m.gpus(), 32);
  const std::map<Group, std::pair<int64_t, int64_t>> expected = {
      {Group::kTensor, {2, 1}},      {Group::kContext, {2, 2}},       {Group::kShard, {8, 2}},
      {Group::kExpert, {4, 2}},      {Group::kExpertShard, {2, 8}},   {Group::kReplicate, {2, 16}}};
  for (const auto& [group, span] : expected) {
    const GroupSpan g = group_span(m, group);
    EXPECT_EQ(std::make_pair(g.members, g.stride), span) << group_name(group);
    EXPECT_EQ(m.gpus() % g.members, 0) << group_name(group);
  }
  EXPECT_EQ(mesh_text(m), "tp 2 x cp 2 x dp_shard 4 x dp_replicate 2 (ep 4 of dp_shard x cp)");
  EXPECT_EQ(mesh_text(Mesh{}), "");
}

// With whole experts ep is carved out of tp x cp x dp_shard: its groups are
// ep consecutive ranks, the experts' shard groups every ep-th rank of a
// replica, and each kind's groups cover every rank once.
TEST(Mesh, WholeExpertGroupsTileEachReplica) {
  Mesh m{2, 4, 2, 2, 4, true};
  m.whole_experts = true;
  EXPECT_EQ(m.expert_shard_ranks(), 4);
  for (const auto& [group, span] : std::map<Group, std::pair<int64_t, int64_t>>{
           {Group::kExpert, {4, 1}}, {Group::kExpertShard, {4, 4}}}) {
    const GroupSpan g = group_span(m, group);
    EXPECT_EQ(std::make_pair(g.members, g.stride), span) << group_name(group);
    // Groups start at the lowest rank not yet in one.
    std::vector<int> seen(static_cast<size_t>(m.gpus()), 0);
    for (int64_t first = 0; first < m.gpus(); ++first) {
      if (seen[static_cast<size_t>(first)] > 0) continue;
      for (int64_t i = 0; i < g.members; ++i) {
        const int64_t rank = first + i * g.stride;
        ASSERT_LT(rank, m.gpus()) << group_name(group);
        ++seen[static_cast<size_t>(rank)];
      }
    }
    for (int count : seen) EXPECT_EQ(count, 1) << group_name(group);
  }
  EXPECT_EQ(mesh_text(m), "tp 2 x cp 2 x dp_shard 4 x dp_replicate 2 (ep 4 of tp x dp_shard x cp, experts whole)");
}

}  // namespace
}  // namespace ragged::planner
