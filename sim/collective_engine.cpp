#include "sim/collective_engine.hpp"

#include <simgrid/s4u.hpp>

#include "common/errors.hpp"
#include "sim/nccl_latency.hpp"

namespace ragged::sim {

namespace sg4 = simgrid::s4u;
using planner::Group;
using planner::OpKind;

namespace {

FlowMode flow_mode(SimulationMode mode) { return mode == SimulationMode::kSymmetric ? FlowMode::kSymmetric : FlowMode::kFull; }

}  // namespace

CollectiveEngine::CollectiveEngine(const ClusterSpec& cluster, SimulationMode mode, int64_t shard_ranks, int64_t replicate_ranks)
    : cluster_(cluster),
      mode_(mode),
      shard_ranks_(shard_ranks),
      replicate_ranks_(replicate_ranks),
      platform_(cluster, ::ragged::sim::simulated_nodes(cluster, flow_mode(mode))) {}

const CollectiveEngine::Shape& CollectiveEngine::shape(OpKind kind, Group group) {
  const auto key = std::make_pair(static_cast<int>(kind), static_cast<int>(group));
  auto it = shapes_.find(key);
  if (it != shapes_.end()) return it->second;
  Shape s;
  if (group == Group::kReplicate) {
    s.rings = {replicate_ranks_, shard_ranks_, cluster_.gpus() / replicate_ranks_};
  } else {
    s.rings = {shard_ranks_, 1, cluster_.gpus() / shard_ranks_};
  }
  s.latency = {s.rings.members, nodes_spanned(s.rings, cluster_), kind == OpKind::kAllReduce};
  s.unit_flows = kind == OpKind::kAllToAll ? all_to_all_flows(s.rings, 1.0, cluster_, flow_mode(mode_))
                                           : ring_flows(s.rings, 1.0, cluster_, flow_mode(mode_));
  return shapes_.emplace(key, std::move(s)).first->second;
}

double CollectiveEngine::launch_and_wait(const std::vector<Flow>& flows, double scale) {
  std::vector<sg4::CommPtr> comms;
  comms.reserve(flows.size());
  for (const Flow& f : flows) {
    const auto bytes = static_cast<uint64_t>(f.bytes * scale);
    if (bytes == 0) continue;
    comms.push_back(sg4::Comm::sendto_async(platform_.host(f.src), platform_.host(f.dst), bytes));
  }
  flows_started_ += static_cast<int64_t>(comms.size());
  const double start = sg4::Engine::get_clock();
  for (auto& c : comms) c->wait();
  return sg4::Engine::get_clock() - start;
}

double CollectiveEngine::run(const planner::Op& op) {
  const double start = sg4::Engine::get_clock();
  const Shape& s = shape(op.kind, op.group);
  const int64_t n = s.rings.members;
  if (n <= 1 || op.bytes <= 0) return 0;
  const double buffer = static_cast<double>(op.bytes);
  if (op.kind == OpKind::kAllToAll) {
    const double bandwidth = launch_and_wait(s.unit_flows, buffer);
    const double total = best_collective_time(s.latency, bandwidth).seconds;
    sg4::this_actor::sleep_for(std::max(0.0, total - bandwidth));
    return sg4::Engine::get_clock() - start;
  }
  // Bytes each ring hop carries over the whole collective.
  const double rounds = op.kind == OpKind::kAllReduce ? 2.0 : 1.0;
  const double per_hop = rounds * buffer * static_cast<double>(n - 1) / static_cast<double>(n);
  if (mode_ == SimulationMode::kSteps) {
    // Every step moves 1/n of the buffer per hop, then pays one step latency.
    const int64_t steps = static_cast<int64_t>(rounds) * (n - 1);
    const double base = ring_base_latency_seconds(Protocol::kSimple);
    const double step_latency = (ring_latency_seconds(Protocol::kSimple, s.latency) - base) / static_cast<double>(steps);
    sg4::this_actor::sleep_for(base);
    for (int64_t step = 0; step < steps; ++step) {
      launch_and_wait(s.unit_flows, per_hop / static_cast<double>(steps));
      sg4::this_actor::sleep_for(std::max(0.0, step_latency));
    }
    return sg4::Engine::get_clock() - start;
  }
  const double bandwidth = launch_and_wait(s.unit_flows, per_hop);
  const CollectiveTime t = best_collective_time(s.latency, bandwidth);
  sg4::this_actor::sleep_for(std::max(0.0, t.seconds - bandwidth));
  return sg4::Engine::get_clock() - start;
}

}  // namespace ragged::sim
