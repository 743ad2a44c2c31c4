// Model tests of the mesh's collectives on the topology (docs/SIMULATOR.md
// section 11): each group's ranks where planner/mesh.hpp places them, the
// simulated time beside the analytic expectation from the documented link
// rates and NCCL's latencies (sim_model_harness.hpp).

#include "sim_model_harness.hpp"

#include "planner/mesh.hpp"

namespace ragged::sim {
namespace {

using namespace model_test;

planner::Program mesh_program(OpKind kind, Group group, int64_t bytes, const planner::Mesh& mesh) {
  planner::Program p;
  p.mesh = mesh;
  p.shard_ranks = mesh.shard_ranks();
  p.replicate_ranks = mesh.dp_replicate;
  planner::ProgramWriter w(&p);
  const Stream stream = group == Group::kTensor    ? Stream::kTensorParallel
                        : group == Group::kContext ? Stream::kContextParallel
                        : group == Group::kExpert  ? Stream::kExpertParallel
                                                   : Stream::kAllGather;
  w.collective(kind, stream, group, 0, 0, "collective", bytes, -1, {});
  return p;
}

planner::Mesh mesh_of(int64_t dp_shard, int64_t cp, int64_t tp, int64_t ep) { return {1, dp_shard, cp, tp, ep, true}; }

TEST(MeshSimModel, TensorParallelAllGatherStaysOnNvlink) {
  // tp 8 on 2 nodes of 8: each tp group is one node's ring over NVLink.
  const double S = 1e9;
  const double simulated = run(mesh_program(OpKind::kAllGather, Group::kTensor, static_cast<int64_t>(S), mesh_of(2, 1, 8, 1)),
                               h100_cluster(2), SimulationMode::kFull)["step"];
  const Expected analytic = nccl_ring((7.0 / 8.0) * S / kNvlink, 7, 0);
  report(std::string("tp 8 all-gather 1 GB, one node's NVLink (") + analytic.protocol + ")", analytic.seconds, simulated);
  expect_relative(simulated, analytic.seconds, kExact);
}

TEST(MeshSimModel, ContextParallelAcrossNodesSharesTheNics) {
  // tp 8 x cp 2 on 2 nodes: the 8 cp rings of 2 members each cross between
  // the nodes; a ring of 2 moves S / 2 per hop, all 8 through one node's NICs.
  const double S = 256e6;
  const double simulated = run(mesh_program(OpKind::kAllGather, Group::kContext, static_cast<int64_t>(S), mesh_of(1, 2, 8, 1)),
                               h100_cluster(2), SimulationMode::kFull)["step"];
  const Expected analytic = nccl_ring(8 * (S / 2) / kNodeNetwork, 1, 1);
  report(std::string("cp 2 all-gather 256 MB across 2 nodes (") + analytic.protocol + ")", analytic.seconds, simulated);
  expect_relative(simulated, analytic.seconds, kExact);
}

TEST(MeshSimModel, ExpertAllToAllSendsEveryPeerItsShare) {
  // ep 32 over 4 nodes: each member sends B / 32 spread over the 32; a node's
  // 8 members send 24 / 32 of theirs to the other three nodes, a third to each.
  const double B = 1e9;
  const double per_member = B / 32;
  const double port = 8 * per_member * 24.0 / 32.0;
  const double simulated = run(mesh_program(OpKind::kAllToAll, Group::kExpert, static_cast<int64_t>(B), mesh_of(32, 1, 1, 32)),
                               h100_cluster(4), SimulationMode::kFull)["step"];
  const Expected analytic = nccl_ring(port / kNodeNetwork, 31, 3);
  report(std::string("ep 32 all-to-all 1 GB over 4 nodes (") + analytic.protocol + ")", analytic.seconds, simulated);
  expect_relative(simulated, analytic.seconds, kExact);
}

// C(n, k) / C(m, k) for the probability that none of k distinct draws out of
// m lands in the m - n others' complement (k small: a product).
double none_of(int64_t m, int64_t n, int64_t k) {
  double p = 1.0;
  for (int64_t j = 0; j < k; ++j) p *= static_cast<double>(n - j) / static_cast<double>(m - j);
  return p;
}

TEST(MeshSimModel, DeepEpCrossesTheNetworkOnceANode) {
  // The same ep 32 over 4 nodes under DeepEP, 128 experts top 8 (4 a rank,
  // 32 a node): a token goes over the network once to each other node
  // holding one of its experts, not once to each such rank. Of the bytes an
  // even spread would send off the node, the network carries
  // 4 P(node hit) / (32 P(rank hit)), P(hit) = 1 - C(128 - held, 8) / C(128, 8).
  const double B = 1e9;
  const double per_member = B / 32;
  const double rank_hit = 1.0 - none_of(128, 124, 8);
  const double node_hit = 1.0 - none_of(128, 96, 8);
  const double share = (4.0 * node_hit) / (32.0 * rank_hit);
  const double port = 8 * per_member * 24.0 / 32.0 * share;
  planner::Mesh mesh = mesh_of(32, 1, 1, 32);
  mesh.expert_dispatcher = planner::ExpertDispatcher::kDeepEp;
  planner::Program p = mesh_program(OpKind::kAllToAll, Group::kExpert, static_cast<int64_t>(B), mesh);
  p.ops.back().routed_experts = 128;
  p.ops.back().experts_per_token = 8;
  const double simulated = run(p, h100_cluster(4), SimulationMode::kFull)["step"];
  const Expected analytic = nccl_ring(port / kNodeNetwork, 31, 3);
  report(std::string("DeepEP ep 32 dispatch 1 GB over 4 nodes, ") + std::to_string(share) + " of the spread's network bytes (" +
             analytic.protocol + ")",
         analytic.seconds, simulated);
  EXPECT_NEAR(share, 0.4931, 5e-4);  // 4 x 0.9073 / (32 x 0.2300)
  // Each flow's bytes are a whole number: the share's fraction of a byte in
  // 23 million is lost, 1e-8 of the time.
  expect_relative(simulated, analytic.seconds, 1e-7);
}

TEST(MeshSimModel, SymmetricModeAgreesWithFullModeOnAMesh) {
  // 16 nodes in leaves of 4; tp 8, cp 2, dp_shard 8: the FSDP group's ring
  // crosses leaves with stride 8.
  const planner::Mesh mesh = mesh_of(8, 2, 8, 1);
  for (Group group : {Group::kShard, Group::kContext}) {
    const auto p = mesh_program(OpKind::kAllGather, group, 512'000'000, mesh);
    const double full = run(p, h100_cluster(16), SimulationMode::kFull)["step"];
    const double symmetric = run(p, h100_cluster(16), SimulationMode::kSymmetric)["step"];
    report(std::string(planner::group_name(group)) + " all-gather, symmetric vs full", "full", full, "symmetric", symmetric);
    expect_relative(symmetric, full, 1e-6);
  }
}

TEST(MeshSimModel, ASlowGpuHoldsUpItsOwnTensorGroupAndTheShardGroupsItIsIn) {
  // tp 8 x dp_shard 2 on 2 nodes; rank 8 (node 1, tp rank 0) at half speed,
  // simulated beside rank 0 (node 0, tp rank 0): they share a shard group,
  // not a tp group. Each runs a GEMM, its tp all-gather, then the shard
  // group's all-gather: rank 0's tp all-gather follows its own GEMM, the shard
  // all-gather the slow rank's.
  const planner::Mesh mesh = mesh_of(2, 1, 8, 1);
  planner::Program p;
  p.mesh = mesh;
  p.shard_ranks = mesh.shard_ranks();
  planner::ProgramWriter w(&p);
  const uint32_t gemm = w.compute(OpKind::kComputeFwd, 0, 0, "gemm", cube_gemm(8192), {});
  const uint32_t tp = w.collective(OpKind::kAllGather, Stream::kTensorParallel, Group::kTensor, 0, 0, "tp", 64'000'000, -1, {gemm});
  w.collective(OpKind::kAllGather, Stream::kAllGather, Group::kShard, 0, 0, "shard", 64'000'000, -1, {tp});
  const nlohmann::json r = run(p, h100_cluster(2), SimulationMode::kFull, HostCosts::none(),
                               {SimulatedRank{0, 1.0}, SimulatedRank{8, 0.5}}, {}, false);
  const double gemm_end = r["ends"][0], tp_start = r["starts"][1], shard_end = r["ends"][2];
  report("rank 0's tp all-gather starts at its own GEMM's end", "GEMM end", gemm_end, "tp start", tp_start);
  expect_relative(tp_start, gemm_end, kExact);
  const double tp_end = r["ends"][1];
  EXPECT_LT(tp_end, 1.5 * gemm_end) << "rank 0's tp group does not wait for rank 8";
  // The slow rank's GEMM takes about twice as long: the shard all-gather
  // (rank 0 arrives and waits in it) ends after it.
  EXPECT_GT(shard_end, 1.9 * gemm_end);
}

}  // namespace
}  // namespace ragged::sim
