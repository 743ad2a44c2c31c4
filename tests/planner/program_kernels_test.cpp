// What the attention and loss kernels put in the Program (docs/MODELS.md,
// "Kernels"): the buffers each unit allocates around its forward and
// backward, one allocation per tensor the framework makes, so the caching
// allocator sees the tensors it would.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/planner/program_test_util.hpp"

namespace ragged::planner {
namespace {

using program_test::ProgramSetup;

// The tiny Llama: hidden 256, 8 heads, vocab 1024, bf16; one sequence of 256 tokens.
constexpr double kTokens = 256, kVocab = 1024, kHeads = 8, kBytes = 2, kHidden = 256;

const Buffer& named(const Program& program, const std::string& name) {
  for (const Buffer& b : program.buffers) {
    if (b.name == name) return b;
  }
  ADD_FAILURE() << "no buffer " << name;
  static const Buffer none;
  return none;
}

std::vector<int64_t> pieces(const Buffer& b) { return b.pieces.empty() ? std::vector<int64_t>{b.bytes} : b.pieces; }

int64_t bytes(double per_token) { return static_cast<int64_t>(per_token * kTokens); }

TEST(ProgramKernels, TheFp32LossMakesItsCopiesAndGradientsAsTensors) {
  ProgramSetup setup("sequence_length: 256");
  const Program program = setup.build();
  // Forward: the logits and their fp32 copy, freed after the loss;
  // the loss's backward: nll_loss's and log_softmax's fp32 gradients, the
  // second turning into the logits' gradient in bf16 (kept for the GEMMs);
  // the GEMMs' backward: the logits GEMM's input gradient.
  EXPECT_EQ(pieces(named(program, "head forward workspace")),
            (std::vector<int64_t>{bytes(kBytes * kVocab), bytes(4 * kVocab)}));
  EXPECT_EQ(pieces(named(program, "head loss workspace")),
            (std::vector<int64_t>{bytes(4 * kVocab), bytes((4 - kBytes) * kVocab)}));
  EXPECT_EQ(pieces(named(program, "head logits gradient")), (std::vector<int64_t>{bytes(kBytes * kVocab)}));
  EXPECT_EQ(pieces(named(program, "head backward workspace")), (std::vector<int64_t>{bytes(kBytes * kHidden)}));
  // Blocks have no forward workspace with FlashAttention.
  for (const Buffer& b : program.buffers) EXPECT_NE(b.name, "layers.0 forward workspace");
}

// The op that allocates (kAlloc) or frees (kFree) the buffer named `name`.
uint32_t memory_op(const Program& program, OpKind kind, const std::string& name) {
  for (const Op& op : program.ops) {
    if (op.kind == kind && op.buffer >= 0 && program.buffers[static_cast<size_t>(op.buffer)].name == name) return op.id;
  }
  ADD_FAILURE() << "no " << op_kind_name(kind) << " of " << name;
  return 0;
}

// Autograd's order in the head: the loss's backward frees its fp32 gradients
// before the GEMMs' backward makes the weight gradient, so the two never
// coexist; the logits' gradient passes from one op to the other.
TEST(ProgramKernels, TheHeadsWeightGradientFollowsTheLossBackward) {
  for (const std::string loss : {"FP32_LOGITS", "SHIFTED_FP32_LOGITS", "FUSED"}) {
    SCOPED_TRACE(loss);
    ProgramSetup setup("sequence_length: 256 loss: " + loss);
    const Program program = setup.build();
    const int head = setup.units() - 1;
    const Op& gemms = program_test::only_op(program, OpKind::kComputeBwd, head, 0);
    const Op* loss_op = nullptr;
    for (const Op& op : program.ops) loss_op = op.loss_only && op.unit == head ? &op : loss_op;
    ASSERT_NE(loss_op, nullptr);
    EXPECT_EQ(loss_op->buffer, gemms.buffer);
    EXPECT_EQ(program.buffers[static_cast<size_t>(gemms.buffer)].name, "head logits gradient");
    EXPECT_TRUE(loss_op->work.gemms.empty());
    EXPECT_GT(loss_op->work.elementwise_bytes, 0);
    EXPECT_TRUE(program_test::depends_on(program, gemms.id, loss_op->id));
    EXPECT_LT(memory_op(program, OpKind::kAlloc, "head logits gradient"), loss_op->id);
    EXPECT_GT(memory_op(program, OpKind::kFree, "head logits gradient"), gemms.id);
    EXPECT_LT(memory_op(program, OpKind::kAlloc, "head unsharded grads"), gemms.id);
    EXPECT_GT(memory_op(program, OpKind::kAlloc, "head unsharded grads"), loss_op->id);
    // The fused loss writes the logits' gradient alone: no other working tensor.
    if (loss == "FUSED") continue;
    EXPECT_LT(memory_op(program, OpKind::kFree, "head loss workspace"),
              memory_op(program, OpKind::kAlloc, "head unsharded grads"));
  }
}

TEST(ProgramKernels, MathAttentionKeepsTheProbabilitiesUnlessCheckpointed) {
  const double scores = kHeads * kBytes * 256;  // per token: one score per head and key
  {
    ProgramSetup setup("sequence_length: 256 attention: MATH");
    const Program program = setup.build();
    const double saved = setup.model().units[1].activations.saved_none;
    EXPECT_EQ(pieces(named(program, "layers.0 activations mb0")), (std::vector<int64_t>{bytes(saved), bytes(scores)}));
    EXPECT_EQ(pieces(named(program, "layers.0 forward workspace")), (std::vector<int64_t>{bytes(scores)}));
    const std::vector<int64_t> backward = pieces(named(program, "layers.0 backward workspace"));
    ASSERT_EQ(backward.size(), 3u);  // the unit's working memory, the gradients of the probabilities and the scores
    EXPECT_EQ(backward[1], bytes(scores));
    EXPECT_EQ(backward[2], bytes(scores));
  }
  {
    ProgramSetup setup("sequence_length: 256 attention: MATH activation_checkpointing: SELECTIVE");
    const Program program = setup.build();
    EXPECT_EQ(pieces(named(program, "layers.0 activations mb0")).size(), 1u);
    EXPECT_EQ(pieces(named(program, "layers.0 forward workspace")), (std::vector<int64_t>{bytes(scores), bytes(scores)}));
    EXPECT_EQ(pieces(named(program, "layers.0 backward workspace")).size(), 4u);  // + the recomputed probabilities
  }
}

// Liger's fused linear cross-entropy computes the head's weight gradient in
// its forward: the head's unsharded gradient buffer is allocated before the
// head's forward, and the backward reuses it.
TEST(ProgramKernels, AChunkedLossAllocatesTheHeadGradientsBeforeItsForward) {
  ProgramSetup setup("sequence_length: 256 loss: CHUNKED gradient_accumulation_steps: 2");
  const Program program = setup.build();
  const int head = setup.units() - 1;
  std::vector<uint32_t> forward, backward, grads_alloc;
  for (const Op& op : program.ops) {
    if (op.unit == head && op.kind == OpKind::kComputeFwd) forward.push_back(op.id);
    if (op.unit == head && op.kind == OpKind::kComputeBwd) backward.push_back(op.id);
    if (op.kind == OpKind::kAlloc) {
      const Buffer& b = program.buffers[static_cast<size_t>(op.buffer)];
      if (b.kind == BufferKind::kUnshardedGrads && b.unit == head) grads_alloc.push_back(op.id);
    }
  }
  // One gradient buffer of the head per micro-batch, as with the other
  // losses, each allocated before that micro-batch's head forward.
  ASSERT_EQ(forward.size(), 2u);
  ASSERT_EQ(backward.size(), 2u);
  ASSERT_EQ(grads_alloc.size(), 2u);
  EXPECT_LT(grads_alloc[0], forward[0]);
  EXPECT_GT(grads_alloc[1], backward[0]);
  EXPECT_LT(grads_alloc[1], forward[1]);
}

}  // namespace
}  // namespace ragged::planner
