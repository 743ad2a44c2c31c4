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

// HBM traffic per byte a GPU sends on the ring (docs/SIMULATOR.md section
// 6b): every byte it sends is read from its HBM and every byte it receives
// (as many) is written there; a reduction also reads its own contribution.
// An all-reduce is a reduce-scatter then an all-gather over the same bytes.
double hbm_traffic_per_byte(OpKind kind) {
  switch (kind) {
    case OpKind::kReduceScatter: return 3.0;
    case OpKind::kAllReduce: return 2.5;
    default: return 2.0;
  }
}

// Bytes/s the GPU (node 0, local 0) sends when the flows of one unit run
// alone at their links' rates: its NVLink flows plus its share of its node's
// network traffic, over the time the busier of its NVLink and its node's port
// takes.
double gpu_send_rate(const std::vector<Flow>& unit_flows, const ClusterSpec& cluster) {
  double nvlink = 0, port = 0;
  for (const Flow& f : unit_flows) {
    if (f.src == Endpoint{0, 0}) nvlink += f.bytes;
    if (f.src == Endpoint{0, -1}) port += f.bytes;
  }
  const double time = std::max(nvlink / cluster.effective_nvlink_bytes_per_s(), port / cluster.node_network_bytes_per_s());
  if (time <= 0) return 0;
  return (nvlink + port / static_cast<double>(cluster.gpus_per_node)) / time;
}

}  // namespace

CollectiveEngine::CollectiveEngine(const ClusterSpec& cluster, SimulationMode mode, int64_t shard_ranks,
                                   int64_t replicate_ranks, const std::vector<int64_t>& gpu_nodes)
    : cluster_(cluster),
      mode_(mode),
      shard_ranks_(shard_ranks),
      replicate_ranks_(replicate_ranks),
      nvlink_nodes_(mode == SimulationMode::kSymmetric ? NodeList(std::vector<int64_t>{0})
                    : mode == SimulationMode::kFull
                        ? NodeList(nvlink_representatives({ring_set(Group::kShard), ring_set(Group::kReplicate)}, cluster, gpu_nodes))
                        : std::nullopt),
      platform_(cluster, ::ragged::sim::simulated_nodes(cluster, flow_mode(mode)), nvlink_nodes_) {}

RingSet CollectiveEngine::ring_set(Group group) const {
  if (group == Group::kReplicate) return {replicate_ranks_, shard_ranks_, cluster_.gpus() / replicate_ranks_};
  return {shard_ranks_, 1, cluster_.gpus() / shard_ranks_};
}

const CollectiveEngine::Shape& CollectiveEngine::shape(OpKind kind, Group group) {
  const auto key = std::make_pair(static_cast<int>(kind), static_cast<int>(group));
  auto it = shapes_.find(key);
  if (it != shapes_.end()) return it->second;
  Shape s;
  s.rings = ring_set(group);
  s.latency = {s.rings.members, nodes_spanned(s.rings, cluster_), kind == OpKind::kAllReduce};
  s.unit_flows = kind == OpKind::kAllToAll ? all_to_all_flows(s.rings, 1.0, cluster_, flow_mode(mode_), nvlink_nodes_)
                                           : ring_flows(s.rings, 1.0, cluster_, flow_mode(mode_), nvlink_nodes_);
  s.gpu_send_rate = gpu_send_rate(s.unit_flows, cluster_);
  return shapes_.emplace(key, std::move(s)).first->second;
}

CollectiveDemand CollectiveEngine::demand(const planner::Op& op) {
  const Shape& s = shape(op.kind, op.group);
  if (s.rings.members <= 1 || op.bytes <= 0) return {};
  CollectiveDemand d;
  d.ctas = s.latency.nodes > 1 ? ctas_inter_node_ : ctas_intra_node_;
  d.hbm_bytes_per_s = hbm_traffic_per_byte(op.kind) * s.gpu_send_rate;
  return d;
}

void CollectiveEngine::scale_representative_links(double factor) {
  platform_.gpu_link(0, 0)->set_bandwidth(cluster_.effective_nvlink_bytes_per_s() * factor);
  platform_.port_link(0)->set_bandwidth(cluster_.node_network_bytes_per_s() * factor);
}

double CollectiveEngine::launch_and_wait(const std::vector<Flow>& flows, double scale, GpuShare* gpu, int held,
                                         double traffic) {
  if (gpu != nullptr) gpu->set_collective_traffic(held, traffic);
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
  if (gpu != nullptr) gpu->set_collective_traffic(held, 0.0);
  return sg4::Engine::get_clock() - start;
}

double CollectiveEngine::run(const planner::Op& op, GpuShare* gpu) {
  const Shape& s = shape(op.kind, op.group);
  if (s.rings.members <= 1 || op.bytes <= 0) return 0;
  const CollectiveDemand d = demand(op);
  const int held = gpu != nullptr ? gpu->begin_collective(d.ctas) : -1;
  const double seconds = run_phases(op, gpu, held, d.hbm_bytes_per_s);
  if (gpu != nullptr) gpu->end_collective(held);
  return seconds;
}

double CollectiveEngine::run_phases(const planner::Op& op, GpuShare* gpu, int held, double traffic) {
  const double start = sg4::Engine::get_clock();
  const Shape& s = shape(op.kind, op.group);
  const int64_t n = s.rings.members;
  const double buffer = static_cast<double>(op.bytes);
  if (op.kind == OpKind::kAllToAll) {
    const double bandwidth = launch_and_wait(s.unit_flows, buffer, gpu, held, traffic);
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
      launch_and_wait(s.unit_flows, per_hop / static_cast<double>(steps), gpu, held, traffic);
      sg4::this_actor::sleep_for(std::max(0.0, step_latency));
    }
    return sg4::Engine::get_clock() - start;
  }
  const double bandwidth = launch_and_wait(s.unit_flows, per_hop, gpu, held, traffic);
  const CollectiveTime t = best_collective_time(s.latency, bandwidth);
  sg4::this_actor::sleep_for(std::max(0.0, t.seconds - bandwidth));
  return sg4::Engine::get_clock() - start;
}

}  // namespace ragged::sim
