// The Program of one rank of a device mesh: the tensor- and
// context-parallel collectives around each unit's compute, on their groups and
// streams, with the bytes worked out by hand beside what the builder emits;
// per-rank memory and tokens (expert parallelism and where each group's ranks
// lie: expert_mesh_program_test.cpp).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "planner/compute_work.hpp"
#include "planner/mesh.hpp"
#include "planner/mesh_collectives.hpp"
#include "mesh_test_util.hpp"
#include "program_test_util.hpp"

namespace ragged::planner {
namespace {

using mesh_test::kSequence;
using mesh_test::mesh_ops_of;
using program_test::ProgramSetup;


// The most bytes of the head's workspace buffers live at once, forward
// (before the head's backward) and backward.
std::pair<int64_t, int64_t> head_workspace_peaks(const ProgramSetup& s) {
  const Program p = s.build();
  const int head = s.units() - 1;
  program_test::LiveBuffers live(p);
  int64_t forward = 0, backward = 0;
  bool in_backward = false;
  for (const Op& op : p.ops) {
    live.apply(op);
    if (op.kind == OpKind::kComputeBwd && op.unit == head) in_backward = true;
    int64_t bytes = 0;
    for (size_t b = 0; b < p.buffers.size(); ++b) {
      const Buffer& buffer = p.buffers[b];
      if (live.live(static_cast<int>(b)) && buffer.unit == head && buffer.kind == BufferKind::kWorkspace) {
        bytes += buffer.bytes;
      }
    }
    (in_backward ? backward : forward) = std::max(in_backward ? backward : forward, bytes);
  }
  return {forward, backward};
}

// torch's loss_parallel in eager mode (torch/distributed/tensor/parallel/
// loss.py): one fp32 copy of the rank's vocabulary shard of the logits more
// than aten's cross_entropy, in the forward (_log_softmax's shifted logits)
// and in the backward (the zeros, the exponential and their sum at once).
TEST(MeshProgram, LossParallelHoldsOneMoreFp32CopyOfTheLocalLogitsEachWay) {
  const ProgramSetup plain(std::string(kSequence) + "mesh { tp: 2 } loss: FP32_LOGITS");
  const ProgramSetup parallel(std::string(kSequence) + "mesh { tp: 2 } loss: LOSS_PARALLEL");
  const int64_t tokens = 2 * 512;
  const int64_t one_copy = tokens * (1024 / 2) * 4;
  const auto [plain_forward, plain_backward] = head_workspace_peaks(plain);
  const auto [forward, backward] = head_workspace_peaks(parallel);
  std::printf("head workspace peaks, FP32_LOGITS %lld / %lld, LOSS_PARALLEL %lld / %lld bytes (one fp32 copy %lld)\n",
              static_cast<long long>(plain_forward), static_cast<long long>(plain_backward),
              static_cast<long long>(forward), static_cast<long long>(backward), static_cast<long long>(one_copy));
  EXPECT_EQ(forward - plain_forward, one_copy);
  EXPECT_EQ(backward - plain_backward, one_copy);
}

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

}  // namespace
}  // namespace ragged::planner
