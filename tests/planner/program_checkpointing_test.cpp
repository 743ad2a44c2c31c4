// Block-level checkpointing (training.checkpoint_every): with FULL and n > 1
// the n-th, 2n-th, ... block is checkpointed as under FULL and the others
// keep their activations as under NONE, the way TorchTitan's "selective
// layer" AC wraps every n-th block.

#include <gtest/gtest.h>

#include <string>

#include "planner/memory_breakdown.hpp"
#include "program_test_util.hpp"

namespace ragged::planner {
namespace {

using program_test::ProgramSetup;

// Bytes of unit u's first micro-batch activation buffer.
int64_t activation_bytes(const Program& program, const std::string& unit_name) {
  for (const Buffer& b : program.buffers) {
    if (b.name == unit_name + " activations mb0") return b.bytes;
  }
  ADD_FAILURE() << "no activation buffer for " << unit_name;
  return -1;
}

bool recomputes(const Program& program, int unit) {
  for (const Op& op : program.ops) {
    if (op.kind == OpKind::kRecompute && op.unit == unit) return true;
  }
  return false;
}

TEST(ProgramCheckpointing, EveryNthBlockIsCheckpointedTheOthersKeepEverything) {
  const ProgramSetup none("strategy: FSDP2 activation_checkpointing: NONE");
  const ProgramSetup full("strategy: FSDP2 activation_checkpointing: FULL");
  const ProgramSetup every2("strategy: FSDP2 activation_checkpointing: FULL checkpoint_every: 2");
  const Program p_none = none.build(), p_full = full.build(), p_every2 = every2.build();
  ASSERT_EQ(every2.units(), 6);  // embed, four blocks, head
  for (int u = 0; u < every2.units(); ++u) {
    const models::UnitSpec& s = every2.spec(u);
    SCOPED_TRACE(s.name);
    if (s.kind != models::UnitKind::kBlock) {
      EXPECT_FALSE(recomputes(p_every2, u));
      continue;
    }
    // Units 1..4 are blocks 1..4 counted from 1: blocks 2 and 4 are wrapped.
    const bool wrapped = u % 2 == 0;
    EXPECT_EQ(recomputes(p_every2, u), wrapped);
    EXPECT_EQ(activation_bytes(p_every2, s.name), activation_bytes(wrapped ? p_full : p_none, s.name));
  }
  EXPECT_LT(activation_bytes(p_full, "layers.0"), activation_bytes(p_none, "layers.0"));
}

TEST(ProgramCheckpointing, PeakMemoryAndRecomputeLieBetweenNoneAndFull) {
  const Program p_none = ProgramSetup("strategy: FSDP2 activation_checkpointing: NONE").build();
  const Program p_full = ProgramSetup("strategy: FSDP2 activation_checkpointing: FULL").build();
  const Program p_every2 =
      ProgramSetup("strategy: FSDP2 activation_checkpointing: FULL checkpoint_every: 2").build();
  const int64_t peak_none = memory_breakdown(p_none).peak_total();
  const int64_t peak_full = memory_breakdown(p_full).peak_total();
  const int64_t peak_every2 = memory_breakdown(p_every2).peak_total();
  std::printf("peak bytes: none %lld, every 2nd block %lld, full %lld\n", static_cast<long long>(peak_none),
              static_cast<long long>(peak_every2), static_cast<long long>(peak_full));
  EXPECT_LT(peak_full, peak_every2);
  EXPECT_LT(peak_every2, peak_none);
  EXPECT_EQ(p_full.count(OpKind::kRecompute), 4u);
  EXPECT_EQ(p_every2.count(OpKind::kRecompute), 2u);
  EXPECT_EQ(p_none.count(OpKind::kRecompute), 0u);
}

TEST(ProgramCheckpointing, EveryOneIsFullCheckpointing) {
  const Program p_full = ProgramSetup("strategy: FSDP2 activation_checkpointing: FULL").build();
  const Program p_every1 = ProgramSetup("strategy: FSDP2 activation_checkpointing: FULL checkpoint_every: 1").build();
  EXPECT_EQ(memory_breakdown(p_every1).peak_total(), memory_breakdown(p_full).peak_total());
  EXPECT_EQ(p_every1.count(OpKind::kRecompute), p_full.count(OpKind::kRecompute));
}

}  // namespace
}  // namespace ragged::planner
