#pragma once
// NCCL's latency terms for ring collectives, from its tuner (src/graph/
// tuning.cc, ../shared/reference/baselines.md section 7): per protocol a base
// latency plus a per-step cost on NVLink and on the network. The simulator
// adds them to the bandwidth time the flows take, and picks the protocol NCCL
// would pick: the one with the smallest total.

#include <cstdint>
#include <string_view>

namespace ragged::sim {

enum class Protocol { kLL, kLL128, kSimple };

std::string_view protocol_name(Protocol protocol);

struct RingShape {
  int64_t ranks = 1;  // n
  int64_t nodes = 1;  // nodes the ring crosses
  bool all_reduce = false;  // 2(n-1) steps instead of n-1
};

// Latency in seconds of one ring collective under `protocol`.
double ring_latency_seconds(Protocol protocol, const RingShape& shape);
// The base latency of a ring under `protocol` (no steps).
double ring_base_latency_seconds(Protocol protocol);
// Share of the Simple protocol's bandwidth a protocol reaches (LL 0.5, LL128 0.92).
double protocol_bandwidth_factor(Protocol protocol);

struct CollectiveTime {
  double seconds = 0;
  Protocol protocol = Protocol::kSimple;
  double latency_seconds = 0;
};

// The fastest protocol for a collective whose flows take `bandwidth_seconds`
// at the Simple protocol's rates.
CollectiveTime best_collective_time(const RingShape& shape, double bandwidth_seconds);

}  // namespace ragged::sim
