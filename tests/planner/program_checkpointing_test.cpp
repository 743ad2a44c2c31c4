// Block-level checkpointing (training.checkpoint_every): with FULL and n > 1
// the n-th, 2n-th, ... block is checkpointed as under FULL and the others
// keep their activations as under NONE, the way TorchTitan's "selective
// layer" AC wraps every n-th block. The routed experts' own mode
// (training.experts.checkpointing): Megatron-Core's --recompute-modules moe
// reruns the whole mixture-of-experts layer, its all-to-alls too.

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "mesh_test_util.hpp"
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

// The experts unit FULL under a SELECTIVE block: the experts keep their
// input alone and their backward reruns the forward with its dispatch and
// combine; the block's own unit is checkpointed as before.
TEST(ProgramCheckpointing, TheExpertsOwnFullModeRerunsTheMoeLayerWithItsAllToAlls) {
  const std::string base = std::string(mesh_test::kSequence) + "mesh { ep: 4 } activation_checkpointing: SELECTIVE ";
  ProgramSetup selective(base, mesh_test::kTinyMoe);
  ProgramSetup moe(base + "experts { checkpointing: FULL }", mesh_test::kTinyMoe);
  const Program p_selective = selective.build(), p_moe = moe.build();
  ASSERT_EQ(moe.spec(2).name, "layers.0.experts");
  ASSERT_EQ(moe.spec(2).kind, models::UnitKind::kExperts);
  const auto selective_ops = mesh_test::mesh_ops_of(p_selective, 2);
  const auto moe_ops = mesh_test::mesh_ops_of(p_moe, 2);
  const mesh_test::Key recompute{Group::kExpert, OpKind::kAllToAll, "recompute"};
  const mesh_test::Key forward{Group::kExpert, OpKind::kAllToAll, "fwd"};
  EXPECT_EQ(selective_ops.count(recompute), 0u);
  ASSERT_EQ(moe_ops.count(recompute), 1u);
  // The dispatch and the combine again, at the forward's bytes.
  EXPECT_EQ(moe_ops.at(recompute), moe_ops.at(forward));
  EXPECT_TRUE(recomputes(p_moe, 2));
  EXPECT_LT(activation_bytes(p_moe, "layers.0.experts"), activation_bytes(p_selective, "layers.0.experts"));
  EXPECT_EQ(activation_bytes(p_moe, "layers.0"), activation_bytes(p_selective, "layers.0"));
  EXPECT_LT(memory_breakdown(p_moe).peak_total(), memory_breakdown(p_selective).peak_total());
  // NONE keeps the experts' activations whole under a FULL block.
  ProgramSetup kept(std::string(mesh_test::kSequence) +
                        "mesh { ep: 4 } activation_checkpointing: FULL experts { checkpointing: NONE }",
                    mesh_test::kTinyMoe);
  const Program p_kept = kept.build();
  EXPECT_FALSE(recomputes(p_kept, 2));
  EXPECT_TRUE(recomputes(p_kept, 1));
}

std::string setup_error(const std::string& training, const std::string& model) {
  try {
    ProgramSetup setup(training, model);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Each misuse one located line naming the field and the fix.
TEST(ProgramCheckpointing, TheExpertsOwnModeNeedsExpertsOfTheirOwn) {
  const std::string seq = mesh_test::kSequence;
  const std::string no_ep = setup_error(seq + "experts { checkpointing: FULL }", mesh_test::kTinyMoe);
  EXPECT_NE(no_ep.find("training.experts.checkpointing"), std::string::npos) << no_ep;
  EXPECT_NE(no_ep.find("set mesh.ep"), std::string::npos) << no_ep;
  const std::string dense = setup_error(seq + "experts { checkpointing: FULL }", program_test::kTinyLlama);
  EXPECT_NE(dense.find("no routed experts"), std::string::npos) << dense;
  const std::string named =
      setup_error(seq + "mesh { ep: 4 } experts { checkpointing: SAVED_NAMES }", mesh_test::kTinyMoe);
  EXPECT_NE(named.find("training.experts.checkpointing"), std::string::npos) << named;
  EXPECT_NE(named.find("use NONE, SELECTIVE or FULL"), std::string::npos) << named;
  EXPECT_EQ(setup_error(seq + "mesh { ep: 4 } experts { checkpointing: FULL }", mesh_test::kTinyMoe), "");
}

}  // namespace
}  // namespace ragged::planner
