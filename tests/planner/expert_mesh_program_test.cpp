// The Program of one rank under expert parallelism: the dispatch and combine
// all-to-alls with their bytes worked out by hand beside what the builder
// emits (uneven routers, DeepEP, whole experts under tp), the experts' FSDP
// group and ownership; where each group's ranks lie.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "mesh_test_util.hpp"
#include "planner/mesh.hpp"
#include "planner/mesh_collectives.hpp"
#include "planner/optimizer_program.hpp"
#include "program_test_util.hpp"

namespace ragged::planner {
namespace {

using mesh_test::kSequence;
using mesh_test::kTinyMoe;
using mesh_test::mesh_ops_of;
using program_test::ProgramSetup;

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

// Transformer Engine's GroupedLinear (MULTI_STREAM) runs each local
// expert's GEMM as a cuBLAS call of its own over 4 streams: the same GEMM
// work as the grouped kernel, one framework op a local expert on the CPU
// where the grouped kernel issues one, ceil(local / 4) launches one after
// another on the GPU.
TEST(MeshProgram, TheMultiStreamKernelIssuesOneGemmPerLocalExpert) {
  const std::string mesh = std::string(kSequence) + "mesh { ep: 4 } ";
  ProgramSetup grouped_setup(mesh, kTinyMoe);
  ProgramSetup multi_setup(mesh + "experts { kernel: MULTI_STREAM }", kTinyMoe);
  const Program grouped = grouped_setup.build();
  const Program multi = multi_setup.build();
  ASSERT_EQ(multi_setup.spec(2).name, "layers.0.experts");
  const int64_t local = 8 / 4;  // 8 experts over ep 4
  ASSERT_EQ(grouped.ops.size(), multi.ops.size());
  int checked = 0;
  for (size_t i = 0; i < multi.ops.size(); ++i) {
    const Op& a = grouped.ops[i];
    const Op& b = multi.ops[i];
    ASSERT_EQ(a.kind, b.kind);
    if (b.unit != 2 || (b.kind != OpKind::kComputeFwd && b.kind != OpKind::kComputeBwd)) continue;
    ASSERT_EQ(a.work.gemms.size(), b.work.gemms.size()) << b.name;
    int64_t routed = 0;
    for (size_t g = 0; g < b.work.gemms.size(); ++g) {
      EXPECT_DOUBLE_EQ(a.work.gemms[g].flops(), b.work.gemms[g].flops()) << b.name;
      EXPECT_EQ(a.work.gemms[g].launches, 1);
      if (b.work.gemms[g].launches == 1) continue;
      ++routed;
      EXPECT_EQ(b.work.gemms[g].launches, local) << b.name;
      EXPECT_EQ(b.work.gemms[g].streams, 4) << b.name;
      EXPECT_EQ(b.work.gemms[g].serial_launches(), 1) << b.name;  // 2 experts on 4 streams
    }
    // SwiGLU's gate, up and down projections forward; each one's input and
    // weight gradients backward.
    EXPECT_EQ(routed, b.kind == OpKind::kComputeFwd ? 3 : 6) << b.name;
    std::printf(
        "%s: %lld routed GEMMs x %lld local experts: framework ops %lld grouped, %lld multi-stream "
        "(expected %lld)\n",
        b.name.c_str(), static_cast<long long>(routed), static_cast<long long>(local),
        static_cast<long long>(a.host.framework_ops), static_cast<long long>(b.host.framework_ops),
        static_cast<long long>(a.host.framework_ops + routed * (local - 1)));
    EXPECT_EQ(b.host.framework_ops, a.host.framework_ops + routed * (local - 1)) << b.name;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// Transformer Engine's experts hold gate and up as one projection (fc1):
// under FUSED_PROJECTIONS the multi-stream kernel issues 2 GEMMs a local
// expert forward and 4 backward where the checkpoint's layout issues 3 and
// 6, over the same FLOPs, so the CPU issues `local` framework ops fewer per
// GEMM the fusion removes.
TEST(MeshProgram, FusedProjectionsIssueTwoGemmsALocalExpert) {
  const std::string mesh = std::string(kSequence) + "mesh { ep: 4 } experts { kernel: MULTI_STREAM } ";
  ProgramSetup checkpoint_setup(mesh, kTinyMoe);
  ProgramSetup fused_setup(mesh + "projections: FUSED_PROJECTIONS", kTinyMoe);
  const Program checkpoint = checkpoint_setup.build();
  const Program fused = fused_setup.build();
  ASSERT_EQ(fused_setup.spec(2).name, "layers.0.experts");
  const int64_t local = 8 / 4;
  auto routed_of = [](const Op& op) {
    int64_t routed = 0;
    double flops = 0;
    for (const Gemm& g : op.work.gemms) {
      flops += g.flops();
      if (g.launches > 1) ++routed;
    }
    return std::make_pair(routed, flops);
  };
  // The experts unit's first forward and first backward.
  auto first_passes = [](const Program& p) {
    std::map<OpKind, const Op*> first;
    for (const Op& op : p.ops) {
      if (op.unit == 2 && (op.kind == OpKind::kComputeFwd || op.kind == OpKind::kComputeBwd))
        first.emplace(op.kind, &op);
    }
    return first;
  };
  const std::map<OpKind, const Op*> first_checkpoint = first_passes(checkpoint);
  const std::map<OpKind, const Op*> first_fused = first_passes(fused);
  for (const OpKind kind : {OpKind::kComputeFwd, OpKind::kComputeBwd}) {
    ASSERT_TRUE(first_checkpoint.count(kind) && first_fused.count(kind));
    const Op& a = *first_checkpoint.at(kind);
    const Op& b = *first_fused.at(kind);
    const auto [routed_a, flops_a] = routed_of(a);
    const auto [routed_b, flops_b] = routed_of(b);
    const bool forward = kind == OpKind::kComputeFwd;
    EXPECT_EQ(routed_a, forward ? 3 : 6) << a.name;
    EXPECT_EQ(routed_b, forward ? 2 : 4) << b.name;
    EXPECT_NEAR(flops_b, flops_a, 1e-9 * flops_a) << b.name;
    EXPECT_EQ(b.host.framework_ops, a.host.framework_ops - (routed_a - routed_b) * local) << b.name;
  }
}

// The dispatch's split sizes are host integers: the CPU waits for the
// router's kernels (the compute stream's op before the dispatch) before it
// issues a forward's or a recompute's dispatch; the backward's all-to-alls
// reuse the sizes and wait for nothing.
TEST(MeshProgram, TheForwardDispatchWaitsOnTheCpuForTheRouter) {
  ProgramSetup s(std::string(kSequence) + "mesh { ep: 4 } activation_checkpointing: FULL", kTinyMoe);
  const Program p = s.build();
  int forward = 0, recompute = 0, backward = 0;
  for (const Op& op : p.ops) {
    if (op.group != Group::kExpert || op.kind != OpKind::kAllToAll) continue;
    const bool dispatch = op.name.find("ep dispatch") != std::string::npos;
    const bool waits = !op.host.waits.empty();
    if (op.pass == Pass::kBackward) {
      EXPECT_FALSE(waits) << op.name;
      ++backward;
      continue;
    }
    if (!dispatch) {
      EXPECT_FALSE(waits) << op.name;  // the combine follows the experts' kernels on the GPU alone
      continue;
    }
    ASSERT_EQ(op.host.waits.size(), 1u) << op.name;
    const Op& router = p.ops[op.host.waits[0]];
    EXPECT_EQ(router.stream, Stream::kCompute) << op.name;
    EXPECT_LT(router.id, op.id) << op.name;
    EXPECT_NE(std::find(op.deps.begin(), op.deps.end(), router.id), op.deps.end())
        << op.name << " after " << router.name;
    (op.pass == Pass::kForward ? forward : recompute) += 1;
  }
  // Two expert units, one micro-batch: a forward and a recompute dispatch each.
  EXPECT_EQ(forward, 2);
  EXPECT_EQ(recompute, 2);
  EXPECT_EQ(backward, 4);
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

// training.experts.reduce: the routed experts' gradients reduced (and held
// under FSDP2's accumulation) in their own dtype, the other units in
// training.precision.reduce's (NeMo Automodel shards its experts without a
// MixedPrecisionPolicy). Under FSDP2 with fp32 reduction a unit's copy-in to
// the reduce-scatter input moves 2 + 4 bytes an element, its reduce-scatter
// 4; the experts at BF16 move 2 + 2 and reduce 2.
TEST(MeshProgram, TheExpertsReduceInTheirOwnDtype) {
  const std::string fields = std::string(kSequence) + "strategy: FSDP2 mesh { ep: 2 } ";
  ProgramSetup fp32(fields, kTinyMoe);
  ProgramSetup bf16(fields + "experts { reduce: BF16 }", kTinyMoe);
  const Program a = fp32.build(), b = bf16.build();
  const auto bytes_of = [](const Program& p, int unit, const std::string& suffix) {
    int64_t bytes = 0;
    for (const Op& op : p.ops) {
      const bool named = op.name.size() >= suffix.size() && op.name.ends_with(suffix);
      if (op.unit == unit && named) bytes += op.bytes;
    }
    return bytes;
  };
  int experts = 0;
  for (int u = 0; u < fp32.units(); ++u) {
    const UnitLayout& l = fp32.plan().units[u].layout;
    const int64_t elements = l.padded_elements(), packed = l.copies.reduce_scatter_in;
    const int64_t r = fp32.spec(u).kind == models::UnitKind::kExperts ? 2 : 4;
    experts += r == 2 ? 1 : 0;
    const int64_t rs_a = bytes_of(a, u, " reduce-scatter"), rs_b = bytes_of(b, u, " reduce-scatter");
    const int64_t in_a = bytes_of(a, u, " reduce-scatter copy-in"), in_b = bytes_of(b, u, " reduce-scatter copy-in");
    std::printf("%-18s %7lld elements: reduce-scatter %7lld B, with experts.reduce BF16 %7lld B (analytic %7lld); "
                "copy-in %7lld -> %7lld B (analytic %7lld)\n",
                fp32.spec(u).name.c_str(), static_cast<long long>(elements), static_cast<long long>(rs_a),
                static_cast<long long>(rs_b), static_cast<long long>(r * elements), static_cast<long long>(in_a),
                static_cast<long long>(in_b), static_cast<long long>((2 + r) * packed));
    EXPECT_GT(packed, 0) << fp32.spec(u).name;
    EXPECT_EQ(rs_a, 4 * elements) << fp32.spec(u).name;
    EXPECT_EQ(rs_b, r * elements) << fp32.spec(u).name;
    EXPECT_EQ(in_a, 6 * packed) << fp32.spec(u).name;
    EXPECT_EQ(in_b, (2 + r) * packed) << fp32.spec(u).name;
  }
  EXPECT_EQ(experts, 2);
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
