// Model tests of the what-ifs (docs/SIMULATOR.md section 10): slow GPUs and
// slow NICs on hand-built Programs, each simulated value printed beside the
// expectation computed from the documented constants
// (`build/tests/sim/test_sim --gtest_filter='WhatIfModel.*'`).

#include "sim_model_harness.hpp"

namespace ragged::sim {
namespace {

using namespace model_test;

// A cluster whose nodes `slow` have NICs at `fraction`.
ClusterHealth slow_nics(int64_t gpus, int64_t nodes, std::vector<int32_t> slow, double fraction) {
  scenarios::WhatIf whatif;
  for (int32_t node : slow) whatif.mutable_slow_links()->add_nodes(node);
  whatif.mutable_slow_links()->set_fraction(fraction);
  return ClusterHealth(whatif, gpus, nodes);
}

TEST(WhatIfModel, SlowNicSetsTheRingsPace) {
  // 32 GPUs on 4 nodes, NIC-bound: node 2's NICs at half their bandwidth
  // carry the hops into and out of it at half the rate, so the bandwidth
  // part of the ring takes twice as long; NCCL's latency is unchanged.
  const double S = 1e9;
  auto p = collective_program(OpKind::kAllGather, Group::kShard, static_cast<int64_t>(S), 32, 1);
  const double network = S * 31.0 / 32.0 / kNodeNetwork;
  const Expected healthy = nccl_ring(network, 31, 3);
  const Expected slow = nccl_ring(2 * network, 31, 3);
  nlohmann::json r = run(p, h100_cluster(4), SimulationMode::kFull, HostCosts::none(), {SimulatedRank{}},
                         slow_nics(32, 4, {2}, 0.5));
  report("all-gather 1 GB, 32 GPUs, node 2's NICs at 0.5", slow.seconds, r["step"].get<double>());
  report("  (the healthy ring)", "analytic", healthy.seconds, "", healthy.seconds);
  expect_relative(r["step"].get<double>(), slow.seconds, kExact);
  EXPECT_EQ(r["collectives"][0]["bottleneck_node"].get<int64_t>(), 2);
  EXPECT_EQ(r["collectives"][0]["bottleneck_local"].get<int>(), -1);
}

// An 8192^3 GEMM at a fraction of the SM clock: compute-bound even at half
// the clock (1.1e12 FLOPs against 403 MB of traffic, section 6).
double gemm_8192(double clock) { return gemm_seconds(8192, 8192, 8192, kH100Gemm8192 * clock); }

TEST(WhatIfModel, SlowGpuDelaysTheCollectiveForEveryone) {
  // GEMM, then an all-gather that depends on it, then a GEMM that depends on
  // the all-gather; 16 GPUs on 2 nodes, GPU 9 at half its compute rate. The
  // ring moves nothing until GPU 9 has finished its first GEMM, so rank 0
  // waits that long at the all-gather, and the step ends with GPU 9's
  // second GEMM.
  planner::Program p;
  p.shard_ranks = 16;
  planner::ProgramWriter w(&p);
  const uint32_t a = w.compute(OpKind::kComputeFwd, 0, 0, "a", cube_gemm(8192), {});
  const uint32_t ag = w.collective(OpKind::kAllGather, Stream::kAllGather, Group::kShard, 1, 0, "all-gather", 1'000'000'000, -1, {a});
  w.compute(OpKind::kComputeFwd, 1, 0, "b", cube_gemm(8192), {ag});
  scenarios::WhatIf whatif;
  whatif.mutable_slow_gpus()->add_ranks(9);
  whatif.mutable_slow_gpus()->set_fraction(0.5);
  const ClusterHealth health(whatif, 16, 2);
  const std::vector<SimulatedRank> ranks = simulated_ranks(health, 16);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[1].rank, 9);
  nlohmann::json r = run(p, h100_cluster(2), SimulationMode::kFull, HostCosts::none(), ranks, health);
  nlohmann::json healthy = run(p, h100_cluster(2), SimulationMode::kFull);
  // Each hop carries 15/16 of the buffer; the node's NICs are the bottleneck.
  const Expected comm = nccl_ring(1e9 * 15.0 / 16.0 / kNodeNetwork, 15, 1);
  const double slow_step = gemm_8192(0.5) + comm.seconds + gemm_8192(0.5);
  const double rank0_step = gemm_8192(0.5) + comm.seconds + gemm_8192(1.0);
  report("slow GPU: healthy step (GEMM, all-gather, GEMM)", 2 * gemm_8192(1.0) + comm.seconds, healthy["step"].get<double>());
  report("slow GPU: rank 0 waits at the all-gather", gemm_8192(0.5) - gemm_8192(1.0), r["waited"].get<double>());
  report("slow GPU: rank 0's step", rank0_step, r["rank_steps"][0].get<double>());
  report("slow GPU: the step = GPU 9's", slow_step, r["step"].get<double>());
  expect_relative(healthy["step"].get<double>(), 2 * gemm_8192(1.0) + comm.seconds, kExact);
  expect_relative(r["waited"].get<double>(), gemm_8192(0.5) - gemm_8192(1.0), kExact);
  expect_relative(r["rank_steps"][0].get<double>(), rank0_step, kExact);
  expect_relative(r["step"].get<double>(), slow_step, kExact);
}

// Four units: each one's all-gather (all issued at once, run in order on
// their stream) feeds its compute; compute k waits for all-gather k.
planner::Program pipeline(int64_t gather_bytes, int64_t gemm) {
  planner::Program p;
  p.shard_ranks = 32;
  planner::ProgramWriter w(&p);
  for (int unit = 0; unit < 4; ++unit) {
    const uint32_t ag = w.collective(OpKind::kAllGather, Stream::kAllGather, Group::kShard, unit, 0, "all-gather",
                                     gather_bytes, -1, {});
    w.compute(OpKind::kComputeFwd, unit, 0, "compute", cube_gemm(gemm), {ag});
  }
  return p;
}

TEST(WhatIfModel, SlowNicMattersInProportionToExposedCommunication) {
  // 32 GPUs on 4 nodes, node 2's NICs at half their bandwidth; GPU sharing
  // off so that the all-gathers and the GEMMs beside them keep their rates
  // alone. Compute-bound: 150 MB gathers hide behind 8192^3 GEMMs, healthy
  // or slow, and only the first is exposed. Communication-bound: 1 GB
  // gathers and 4096^3 GEMMs, every gather exposed.
  const ClusterHealth health = slow_nics(32, 4, {2}, 0.5);
  auto gather = [](double bytes, double nic_share) {
    return nccl_ring(bytes * 31.0 / 32.0 / (kNodeNetwork * nic_share), 31, 3).seconds;
  };
  struct Case {
    const char* what;
    int64_t bytes, gemm;
    double gemm_s;
    bool compute_bound;
  };
  for (const Case& c : {Case{"compute-bound", 150'000'000, 8192, gemm_8192(1.0), true},
                        Case{"communication-bound", 1'000'000'000, 4096, gemm_seconds(4096, 4096, 4096, kH100Gemm4096), false}}) {
    const planner::Program p = pipeline(c.bytes, c.gemm);
    const double a = gather(static_cast<double>(c.bytes), 1.0), slow_a = gather(static_cast<double>(c.bytes), 0.5);
    // Compute-bound: the first gather, then the GEMMs back to back (each
    // later gather ends before its GEMM may start). Communication-bound:
    // the gathers back to back, then the last GEMM.
    const double healthy_step = c.compute_bound ? a + 4 * c.gemm_s : 4 * a + c.gemm_s;
    const double slow_step = c.compute_bound ? slow_a + 4 * c.gemm_s : 4 * slow_a + c.gemm_s;
    ASSERT_EQ(c.compute_bound, slow_a < c.gemm_s);  // the case is what it says
    const double healthy_sim = run(p, h100_cluster(4), SimulationMode::kFull, HostCosts::none(), {SimulatedRank{}}, {},
                                   false)["step"];
    const double slow_sim = run(p, h100_cluster(4), SimulationMode::kFull, HostCosts::none(), {SimulatedRank{}}, health,
                                false)["step"];
    const double exposed_share = (c.compute_bound ? a : 4 * a) / healthy_step;
    report(std::string("slow NIC, ") + c.what + ": healthy step", healthy_step, healthy_sim);
    report(std::string("slow NIC, ") + c.what + ": NICs of node 2 at 0.5", slow_step, slow_sim);
    std::printf("%-50s exposed communication %.1f%% of the healthy step, slowdown %.3fx\n",
                (std::string("slow NIC, ") + c.what).c_str(), 100 * exposed_share, slow_sim / healthy_sim);
    expect_relative(healthy_sim, healthy_step, kExact);
    expect_relative(slow_sim, slow_step, kExact);
  }
}

}  // namespace
}  // namespace ragged::sim
