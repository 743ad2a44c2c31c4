#include "sim/collective_flows.hpp"

#include <map>

#include <gtest/gtest.h>

#include "sim/nccl_latency.hpp"

namespace ragged::sim {
namespace {

ClusterSpec cluster(int64_t nodes, int64_t per_leaf = 4) {
  ClusterSpec c;
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.nodes_per_leaf = std::min(per_leaf, nodes);
  return c;
}

// Bytes each link direction carries: GPU out/in over NVLink, node out/in over the network.
struct Loads {
  std::map<std::pair<int64_t, int>, double> out, in;
};

Loads loads(const std::vector<Flow>& flows) {
  Loads l;
  for (const Flow& f : flows) {
    l.out[{f.src.node, f.src.local}] += f.bytes;
    l.in[{f.dst.node, f.dst.local}] += f.bytes;
  }
  return l;
}

TEST(CollectiveFlows, OneNodeRingIsACycleOverNvlink) {
  auto flows = ring_flows({8, 1, 1}, 1.0, cluster(1), FlowMode::kFull);
  ASSERT_EQ(flows.size(), 8u);
  for (const Flow& f : flows) {
    EXPECT_EQ(f.src.node, 0);
    EXPECT_EQ(f.dst.local, (f.src.local + 1) % 8);
    EXPECT_DOUBLE_EQ(f.bytes, 1.0);
  }
}

// On an NVLink full mesh (HGX 4-GPU boards) NCCL's rings cover every pair's
// links: each member sends an equal part of its hop to every other member.
TEST(CollectiveFlows, AFullMeshRingSendsToEveryPeerOverItsOwnPair) {
  ClusterSpec c = cluster(1);
  c.gpus_per_node = 4;
  c.full_mesh_gpus = 4;
  auto flows = ring_flows({4, 1, 1}, 1.0, c, FlowMode::kFull);
  ASSERT_EQ(flows.size(), 12u);  // every ordered pair
  for (const Flow& f : flows) EXPECT_DOUBLE_EQ(f.bytes, 1.0 / 3.0);
  // Two pairs of a board: each member sends only to its partner.
  flows = ring_flows({2, 1, 2}, 1.0, c, FlowMode::kFull);
  ASSERT_EQ(flows.size(), 4u);
  for (const Flow& f : flows) {
    EXPECT_EQ(f.dst.local, f.src.local ^ 1);
    EXPECT_DOUBLE_EQ(f.bytes, 1.0);
  }
}

TEST(CollectiveFlows, MultiNodeRingSpreadsChannelsOverNvlinkAndNetwork) {
  auto flows = ring_flows({32, 1, 1}, 1.0, cluster(4), FlowMode::kFull);
  Loads l = loads(flows);
  for (int64_t node = 0; node < 4; ++node) {
    EXPECT_DOUBLE_EQ((l.out[{node, -1}]), 1.0);  // the node sends the hop's bytes once over its NICs
    EXPECT_DOUBLE_EQ((l.in[{node, -1}]), 1.0);
    for (int g = 0; g < 8; ++g) EXPECT_DOUBLE_EQ((l.out[{node, g}]), 7.0 / 8.0);  // (k-1)/k inside the node
  }
}

TEST(CollectiveFlows, HsdpReplicaRingsCrossNodesWithStride) {
  // 4 nodes, shard groups of 16 GPUs (2 nodes), 2 replicas: the all-reduce
  // groups are {r, r+16}: node n talks to node n+2, with 8 rings per node.
  auto flows = ring_flows({2, 16, 16}, 1.0, cluster(4), FlowMode::kFull);
  Loads l = loads(flows);
  EXPECT_DOUBLE_EQ((l.out[{0, -1}]), 8.0);
  for (const Flow& f : flows) {
    EXPECT_EQ(f.src.local, -1);
    EXPECT_EQ(f.dst.node, (f.src.node + 2) % 4);
  }
}

TEST(CollectiveFlows, SymmetricModeKeepsEveryLinkLoad) {
  // 16 nodes of 8 in leaves of 4: the symmetric mode simulates 8 nodes.
  ClusterSpec c = cluster(16);
  for (RingSet rings : {RingSet{128, 1, 1}, RingSet{32, 1, 4}, RingSet{4, 32, 32}, RingSet{8, 1, 16}}) {
    Loads full = loads(ring_flows(rings, 1.0, c, FlowMode::kFull));
    Loads sym = loads(ring_flows(rings, 1.0, c, FlowMode::kSymmetric));
    EXPECT_EQ(simulated_nodes(c, FlowMode::kSymmetric), 8);
    for (const auto& [endpoint, bytes] : sym.out) {
      EXPECT_DOUBLE_EQ(bytes, full.out[endpoint]) << rings.members << "x" << rings.groups << " out " << endpoint.first << "/" << endpoint.second;
    }
    for (const auto& [endpoint, bytes] : sym.in) {
      EXPECT_DOUBLE_EQ(bytes, full.in[endpoint]) << rings.members << "x" << rings.groups << " in " << endpoint.first << "/" << endpoint.second;
    }
    // Node 0's GPUs are simulated in both.
    for (int g = 0; g < 8; ++g) EXPECT_DOUBLE_EQ((sym.out[{0, g}]), (full.out[{0, g}]));
  }
}

// A pipeline stage's ring set (the second half of 32 nodes in leaves of 4):
// its symmetric flows start at the stage's first node, and every link they
// load carries what the full simulation puts on it.
TEST(CollectiveFlows, SymmetricModeFoldsAStageIntoItsFirstNodes) {
  ClusterSpec c = cluster(32);
  const RingSet stage{128, 1, 1, 128};  // ranks 128-255: nodes 16-31
  Loads full = loads(ring_flows(stage, 1.0, c, FlowMode::kFull));
  const std::vector<Flow> flows = ring_flows(stage, 1.0, c, FlowMode::kSymmetric);
  Loads sym = loads(flows);
  for (const Flow& f : flows) {
    EXPECT_GE(f.src.node, 16);
    EXPECT_LT(f.src.node, 24);  // two leaves of the stage
    EXPECT_GE(f.dst.node, 16);
    EXPECT_LT(f.dst.node, 24);
  }
  for (const auto& [endpoint, bytes] : sym.out) {
    EXPECT_DOUBLE_EQ(bytes, full.out[endpoint]) << "out " << endpoint.first << "/" << endpoint.second;
  }
  for (const auto& [endpoint, bytes] : sym.in) {
    EXPECT_DOUBLE_EQ(bytes, full.in[endpoint]) << "in " << endpoint.first << "/" << endpoint.second;
  }
  for (int g = 0; g < 8; ++g) EXPECT_DOUBLE_EQ((sym.out[{16, g}]), (full.out[{16, g}]));  // the stage's first node's NVLink
}

TEST(CollectiveFlows, SymmetricModeIsMuchSmaller) {
  ClusterSpec c = cluster(1280, 32);
  auto full = ring_flows({10240, 1, 1}, 1.0, c, FlowMode::kFull);
  auto sym = ring_flows({10240, 1, 1}, 1.0, c, FlowMode::kSymmetric);
  EXPECT_EQ(full.size(), 1280u * 9u);
  EXPECT_EQ(sym.size(), 8u + 64u);
}

TEST(CollectiveFlows, FullModeRunsEveryNetworkFlowAndTheNvlinkOfTheNodesAsked) {
  ClusterSpec c = cluster(1280, 32);
  const std::vector<int64_t> nodes = {0, 700};
  auto flows = ring_flows({10240, 1, 1}, 1.0, c, FlowMode::kFull, nodes);
  EXPECT_EQ(flows.size(), 1280u + 2u * 8u);
  Loads every = loads(ring_flows({10240, 1, 1}, 1.0, c, FlowMode::kFull));
  Loads some = loads(flows);
  for (int64_t node = 0; node < 1280; ++node) EXPECT_DOUBLE_EQ((some.out[{node, -1}]), (every.out[{node, -1}]));
  for (int64_t node : nodes) {
    for (int g = 0; g < 8; ++g) EXPECT_DOUBLE_EQ((some.out[{node, g}]), (every.out[{node, g}]));
  }
  EXPECT_EQ(some.out.count({1, 0}), 0u);
}

TEST(CollectiveFlows, NvlinkRepresentativesCoverEveryPattern) {
  // Node-aligned groups: every node's NVLink flows are node 0's.
  ClusterSpec big = cluster(1280, 32);
  EXPECT_EQ(nvlink_representatives({{10240, 1, 1}, {1, 10240, 10240}}, big, {}), (std::vector<int64_t>{0}));
  EXPECT_EQ(nvlink_representatives({{2048, 1, 5}, {5, 2048, 2048}}, big, {37}), (std::vector<int64_t>{0, 37}));
  // Groups of 12 on nodes of 8 straddle nodes: nodes 0, 3, ... hold 8 members
  // of one group, nodes 1, 4, ... 4 of two groups, nodes 2, 5, ... 8 of the
  // second; a group's share of NVLink depends on its run, so two patterns.
  ClusterSpec c = cluster(6, 6);
  const std::vector<int64_t> reps = nvlink_representatives({{12, 1, 4}, {1, 12, 48}}, c, {});
  EXPECT_EQ(reps, (std::vector<int64_t>{0, 1}));
  // Every node's NVLink loads are those of a representative's.
  Loads every = loads(ring_flows({12, 1, 4}, 1.0, c, FlowMode::kFull));
  for (int64_t node = 0; node < 6; ++node) {
    const int64_t rep = node % 3 == 1 ? 1 : 0;
    for (int g = 0; g < 8; ++g) EXPECT_DOUBLE_EQ((every.out[{node, g}]), (every.out[{rep, g}])) << node << "/" << g;
  }
}

TEST(CollectiveFlows, AllToAllLoadsFollowAnEvenSpread) {
  auto flows = all_to_all_flows({16, 1, 1}, 16.0, cluster(2), FlowMode::kFull);
  Loads l = loads(flows);
  // Each member sends 1 byte: 7/16 to its node's others, 8/16 off the node.
  EXPECT_DOUBLE_EQ((l.out[{0, 0}]), 7.0 / 16.0);
  EXPECT_DOUBLE_EQ((l.out[{0, -1}]), 8.0 * 8.0 / 16.0);
}

// NCCL's tuner (src/graph/tuning.cc) for rings on Hopper, as
// docs/SIMULATOR.md section 5 gives it: base {LL 6.6, LL128 14.0, Simple 8.4}
// us, per NVLink step {0.6, 1.9, 3.4}, per network step {2.7, 4.0, 14.0} plus
// 1 us (x3 for Simple). Exact to rounding: 1e-9 relative.
TEST(NcclLatency, TunerConstants) {
  auto expect_us = [](double seconds, double us) { EXPECT_NEAR(seconds, us * 1e-6, 1e-9 * us * 1e-6); };
  // 8 GPUs in one node, Simple: 8.4 + 7 * 3.4 us.
  expect_us(ring_latency_seconds(Protocol::kSimple, {8, 1, false}), 8.4 + 7 * 3.4);
  // LL on one node: 6.6 + 7 * 0.6 = 10.8 us (the reference's ~11 us floor).
  expect_us(ring_latency_seconds(Protocol::kLL, {8, 1, false}), 6.6 + 7 * 0.6);
  // LL128 across 4 nodes: 28 NVLink steps and 3 network steps.
  expect_us(ring_latency_seconds(Protocol::kLL128, {32, 4, false}), 14.0 + 28 * 1.9 + 3 * (4.0 + 1.0));
  // 16 GPUs on 2 nodes, Simple: 14 NVLink steps and 1 network step (14 + 3).
  expect_us(ring_latency_seconds(Protocol::kSimple, {16, 2, false}), 8.4 + 14 * 3.4 + (14.0 + 3.0));
  // All-reduce doubles the steps.
  expect_us(ring_latency_seconds(Protocol::kSimple, {8, 1, true}), 8.4 + 14 * 3.4);
  expect_us(ring_latency_seconds(Protocol::kSimple, {2, 2, true}), 8.4 + 2 * (14.0 + 3.0));
  EXPECT_EQ(ring_latency_seconds(Protocol::kSimple, {1, 1, true}), 0.0);
}

TEST(NcclLatency, SmallMessagesPickLLLargeOnesSimple) {
  RingShape shape{8, 1, false};
  EXPECT_EQ(best_collective_time(shape, 1e-6).protocol, Protocol::kLL);
  EXPECT_EQ(best_collective_time(shape, 10e-3).protocol, Protocol::kSimple);
  // 1 us of Simple bandwidth time: LL takes 2 us + 10.8 us of latency.
  EXPECT_NEAR(best_collective_time(shape, 1e-6).seconds, (2.0 + 6.6 + 7 * 0.6) * 1e-6, 1e-9 * 12.8e-6);
  const CollectiveTime t = best_collective_time(shape, 10e-3);
  EXPECT_NEAR(t.seconds, 10e-3 + (8.4 + 7 * 3.4) * 1e-6, 1e-9 * 10e-3);
  EXPECT_NEAR(t.latency_seconds, (8.4 + 7 * 3.4) * 1e-6, 1e-9 * 32.2e-6);
  // In between LL128 wins: over 32 GPUs on 4 nodes, 100 us of Simple bandwidth
  // time take 100 / 0.92 + 82.2 = 190.9 us (Simple 254.6, LL 234.5).
  const CollectiveTime mid = best_collective_time({32, 4, false}, 100e-6);
  EXPECT_EQ(mid.protocol, Protocol::kLL128);
  EXPECT_NEAR(mid.seconds, 100e-6 / 0.92 + (14.0 + 28 * 1.9 + 3 * 5.0) * 1e-6, 1e-9 * 190e-6);
}

}  // namespace
}  // namespace ragged::sim
