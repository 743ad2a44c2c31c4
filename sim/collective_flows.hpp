#pragma once
// The flows that carry a collective through the network, as NCCL's rings move
// its bytes. A ring collective is collapsed to one flow per hop carrying all
// the bytes that hop moves over the whole collective ((n-1)/n of the buffer
// for all-gather and reduce-scatter, twice that for all-reduce); the ring's
// per-step latencies are added analytically (nccl_latency.hpp). This is exact
// for bandwidth-bound symmetric rings and keeps the contention between
// concurrent collectives and on oversubscribed links.
//
// NCCL rotates the GPU that leaves a node across its channels, one per NIC:
// so inside a node each member sends to the next member (k-1)/k of the hop's
// bytes over NVLink, and the node sends the hop's bytes to the next node once,
// spread over its NICs (modelled as one network port per node).
//
// Two modes:
//  - full: every node's network flows, for every group of the collective;
//    NVLink flows only on the nodes asked for (`nvlink_nodes`). A node's
//    NVLink links carry only its own flows, so a node whose NVLink flows are
//    those of a simulated node behaves exactly like it and is folded onto it
//    (nvlink_representatives below);
//  - symmetric: all nodes behave alike, so only node 0's NVLink flows and the
//    network flows of a reduced cluster of at most two leaves are simulated,
//    hops leaving the reduced cluster folded back onto the same leaf offsets,
//    which keeps every simulated link's load equal to the full cluster's. A
//    ring set that tiles a pipeline stage's ranks (RingSet::first) has its
//    own reduced cluster: the first nodes of the stage, its first node's
//    NVLink; the stage's nodes must start on a leaf boundary when it spans
//    more than two leaves (sim/simulation.cpp falls back to full mode).

#include <cstdint>
#include <optional>
#include <vector>

#include "sim/cluster_spec.hpp"

namespace ragged::sim {

enum class FlowMode { kFull, kSymmetric };

struct Endpoint {
  int64_t node = 0;
  int local = -1;  // GPU index in the node; -1: the node's network port
  bool operator==(const Endpoint&) const = default;
};

struct Flow {
  Endpoint src;
  Endpoint dst;
  double bytes = 0;
};

// Identical ring collectives running at once, one per group. Group j's
// members are ranks first_j + i * stride (i < members); the groups tile the
// `members * groups` ranks from `first` on (shard groups: stride 1; replica
// groups of HSDP: stride = shard group size; a pipeline stage's groups: its
// ranks alone, from the stage's first).
struct RingSet {
  int64_t members = 1;
  int64_t stride = 1;
  int64_t groups = 1;
  int64_t first = 0;
};

// Nodes the network part of the simulation needs.
int64_t simulated_nodes(const ClusterSpec& cluster, FlowMode mode);

// The nodes whose NVLink flows a full-mode simulation runs, sorted; nullopt
// (or nothing given): every node. Symmetric mode runs node 0's only.
using NodeList = std::optional<std::vector<int64_t>>;

// Flows of a ring set in which each hop carries `bytes_per_hop`.
std::vector<Flow> ring_flows(const RingSet& rings, double bytes_per_hop, const ClusterSpec& cluster, FlowMode mode,
                             const NodeList& nvlink_nodes = std::nullopt);

// Flows of an all-to-all inside each group moving `bytes_per_group` in total
// (each member sends bytes/members spread evenly over the members): NVLink to
// the next local member with the load an even spread puts on it, and from
// each node to every other node of the group its members' share for that
// node's members (NCCL's send/receive per peer).
// `network` false: the NVLink flows alone.
std::vector<Flow> all_to_all_flows(const RingSet& groups, double bytes_per_group, const ClusterSpec& cluster, FlowMode mode,
                                   const NodeList& nvlink_nodes = std::nullopt, bool network = true);

// The nodes a full-mode simulation must run NVLink flows on so that every
// node is represented: `required` (sorted, e.g. the nodes of the simulated
// ranks), then the first node of each distinct pattern of NVLink flows over
// `ring_sets` (ring and all-to-all alike) not yet covered. Node 0 is always
// in. On a uniform cluster with node-aligned groups: node 0 alone.
std::vector<int64_t> nvlink_representatives(const std::vector<RingSet>& ring_sets, const ClusterSpec& cluster,
                                            const std::vector<int64_t>& required);

// Nodes one group of the ring set spans.
int64_t nodes_spanned(const RingSet& rings, const ClusterSpec& cluster);

}  // namespace ragged::sim
