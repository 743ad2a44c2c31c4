#include "sim/nccl_latency.hpp"

#include <array>

namespace ragged::sim {
namespace {

struct ProtocolCosts {
  double base_us;
  double nvlink_step_us;
  double network_step_us;
  double bandwidth_factor;
};

// NCCL tuning.cc (master) for rings on Hopper: base {LL 6.6, LL128 14.0,
// Simple 8.4} us; per-step NVLink {0.6, 1.9, 3.4}; network {2.7, 4.0, 14.0}
// plus the network overhead (1 us, x3 for Simple). LL moves half the
// bandwidth, LL128 92%.
constexpr std::array<ProtocolCosts, 3> kCosts = {{
    {6.6, 0.6, 2.7 + 1.0, 0.5},
    {14.0, 1.9, 4.0 + 1.0, 0.92},
    {8.4, 3.4, 14.0 + 3.0, 1.0},
}};

}  // namespace

std::string_view protocol_name(Protocol protocol) {
  switch (protocol) {
    case Protocol::kLL: return "LL";
    case Protocol::kLL128: return "LL128";
    case Protocol::kSimple: return "Simple";
  }
  return "?";
}

double protocol_bandwidth_factor(Protocol protocol) { return kCosts[static_cast<size_t>(protocol)].bandwidth_factor; }

double ring_base_latency_seconds(Protocol protocol) { return kCosts[static_cast<size_t>(protocol)].base_us * 1e-6; }

double ring_latency_seconds(Protocol protocol, const RingShape& shape) {
  if (shape.ranks <= 1) return 0;
  const ProtocolCosts& c = kCosts[static_cast<size_t>(protocol)];
  const int64_t rounds = shape.all_reduce ? 2 : 1;
  const int64_t steps = rounds * (shape.ranks - 1);
  const int64_t network_steps = shape.nodes > 1 ? rounds * (shape.nodes - 1) : 0;
  return (c.base_us + static_cast<double>(steps - network_steps) * c.nvlink_step_us +
          static_cast<double>(network_steps) * c.network_step_us) * 1e-6;
}

CollectiveTime best_collective_time(const RingShape& shape, double bandwidth_seconds) {
  CollectiveTime best{-1, Protocol::kSimple, 0};
  for (Protocol p : {Protocol::kSimple, Protocol::kLL128, Protocol::kLL}) {
    const double latency = ring_latency_seconds(p, shape);
    const double total = latency + bandwidth_seconds / protocol_bandwidth_factor(p);
    if (best.seconds < 0 || total < best.seconds) best = {total, p, latency};
  }
  return best;
}

}  // namespace ragged::sim
