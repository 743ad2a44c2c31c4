// Model tests of the what-ifs (docs/SIMULATOR.md section 9): slow GPUs and
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

}  // namespace
}  // namespace ragged::sim
