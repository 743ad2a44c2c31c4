#include "sim/collective_engine.hpp"

#include <algorithm>
#include <mutex>

#include <simgrid/s4u.hpp>

#include "common/errors.hpp"
#include "planner/expert_dispatch.hpp"
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
  double nvlink = 0, port = 0, busiest_pair = 0;
  for (const Flow& f : unit_flows) {
    if (f.src == Endpoint{0, 0}) {
      nvlink += f.bytes;
      busiest_pair = std::max(busiest_pair, f.bytes);
    }
    if (f.src == Endpoint{0, -1}) port += f.bytes;
  }
  // On a full mesh each peer's bytes take their own pair's links.
  const double nvlink_time = cluster.nvlink_full_mesh() ? busiest_pair / cluster.effective_pair_bytes_per_s()
                                                        : nvlink / cluster.effective_nvlink_bytes_per_s();
  const double time = std::max(nvlink_time, port / cluster.node_network_bytes_per_s());
  if (time <= 0) return 0;
  return (nvlink + port / static_cast<double>(cluster.gpus_per_node)) / time;
}

std::vector<int64_t> nodes_of(const std::vector<int64_t>& gpus, int64_t gpus_per_node) {
  std::vector<int64_t> nodes;
  for (int64_t gpu : gpus) nodes.push_back(gpu / gpus_per_node);
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

}  // namespace

CollectiveEngine::CollectiveEngine(const ClusterSpec& cluster, SimulationMode mode, const planner::Mesh& mesh,
                                   Participants participants)
    : cluster_(cluster),
      mode_(mode),
      mesh_(mesh),
      participants_(std::move(participants)),
      nvlink_nodes_(mode == SimulationMode::kSymmetric ? NodeList(nodes_of(participants_.gpus, cluster.gpus_per_node))
                    : mode == SimulationMode::kFull
                        ? NodeList(nvlink_representatives(ring_sets(), cluster,
                                                          nodes_of(participants_.gpus, cluster.gpus_per_node)))
                        : std::nullopt),
      // Symmetric stages: each stage's first nodes, the platform up to the last stage's.
      platform_(cluster,
                mode == SimulationMode::kSymmetric ? symmetric_platform_nodes()
                                                   : ::ragged::sim::simulated_nodes(cluster, flow_mode(mode)),
                nvlink_nodes_),
      link_scale_(participants_.gpus.size(), 1.0) {
  RAGGED_ASSERT(!participants_.gpus.empty(), "at least one simulated rank");
  RAGGED_ASSERT(mode != SimulationMode::kSymmetric ||
                    (participants_.gpus == symmetric_ranks() && !participants_.health.breaks_symmetry()),
                "the symmetric mode simulates a uniform cluster from rank 0 (a pipeline: from each stage's first)");
  for (int64_t node : participants_.health.slow_nodes()) {
    platform_.port_link(node)->set_bandwidth(cluster_.node_network_bytes_per_s() * participants_.health.nic_rate(node));
  }
  if (participants_.gpus.size() > 1) {
    mutex_ = sg4::Mutex::create();
    changed_ = sg4::ConditionVariable::create();
  }
}

std::vector<int64_t> CollectiveEngine::symmetric_ranks() const {
  std::vector<int64_t> ranks;
  const int64_t stages = std::max<int64_t>(1, mesh_.pp);
  for (int64_t s = 0; s < stages; ++s) ranks.push_back(s * (cluster_.gpus() / stages));
  return ranks;
}

// A stage's nodes, and its reduced cluster: its first nodes, at most two
// leaves (collective_flows.cpp).
int64_t CollectiveEngine::stage_nodes() const { return std::max<int64_t>(1, cluster_.nodes / std::max<int64_t>(1, mesh_.pp)); }
int64_t CollectiveEngine::stage_reduced_nodes() const { return std::min(stage_nodes(), 2 * cluster_.nodes_per_leaf); }

int64_t CollectiveEngine::symmetric_platform_nodes() const {
  return std::min(cluster_.nodes, (std::max<int64_t>(1, mesh_.pp) - 1) * stage_nodes() + stage_reduced_nodes());
}

int64_t CollectiveEngine::simulated_nodes() const {
  if (mode_ != SimulationMode::kSymmetric || mesh_.pp <= 1) return platform_.nodes();
  return mesh_.pp * stage_reduced_nodes();
}

sg4::Host* CollectiveEngine::platform_host(int rank) const {
  const int64_t gpu = participants_.gpus[static_cast<size_t>(rank)];
  return platform_.gpu(gpu / cluster_.gpus_per_node, static_cast<int>(gpu % cluster_.gpus_per_node));
}

RingSet CollectiveEngine::ring_set(Group group, int64_t stage) const {
  const planner::GroupSpan span = planner::group_span(mesh_, group);
  if (stage < 0 || mesh_.pp <= 1) return {span.members, span.stride, cluster_.gpus() / span.members};
  const int64_t stage_ranks = cluster_.gpus() / mesh_.pp;
  return {span.members, span.stride, stage_ranks / span.members, stage * stage_ranks};
}

int64_t CollectiveEngine::stage_of(int rank) const {
  return mesh_.pp <= 1 ? 0 : participants_.gpus[static_cast<size_t>(rank)] / (cluster_.gpus() / mesh_.pp);
}

std::vector<RingSet> CollectiveEngine::ring_sets() const {
  std::vector<RingSet> sets = {ring_set(Group::kShard), ring_set(Group::kReplicate)};
  for (Group group : {Group::kTensor, Group::kContext, Group::kExpert, Group::kExpertShard, Group::kPipeline}) {
    if (planner::group_span(mesh_, group).members > 1) sets.push_back(ring_set(group));
  }
  return sets;
}

const CollectiveEngine::Shape& CollectiveEngine::shape(OpKind kind, Group group, int64_t stage) {
  const auto key = std::make_tuple(static_cast<int>(kind), static_cast<int>(group), stage);
  auto it = shapes_.find(key);
  if (it != shapes_.end()) return it->second;
  Shape s;
  s.rings = ring_set(group, stage);
  s.latency = {s.rings.members, nodes_spanned(s.rings, cluster_), kind == OpKind::kAllReduce};
  s.unit_flows = kind == OpKind::kAllToAll ? all_to_all_flows(s.rings, 1.0, cluster_, flow_mode(mode_), nvlink_nodes_)
                                           : ring_flows(s.rings, 1.0, cluster_, flow_mode(mode_), nvlink_nodes_);
  s.gpu_send_rate = gpu_send_rate(s.unit_flows, cluster_);
  return shapes_.emplace(key, std::move(s)).first->second;
}

CollectiveDemand CollectiveEngine::demand(const planner::Op& op, int rank) {
  const Shape& s = shape(op.kind, op.group, stage_of(rank));
  if (s.rings.members <= 1 || op.bytes <= 0) return {};
  CollectiveDemand d;
  d.ctas = op.ctas >= 0 ? op.ctas : s.latency.nodes > 1 ? ctas_inter_node_ : ctas_intra_node_;
  d.hbm_bytes_per_s = hbm_traffic_per_byte(op.kind) * s.gpu_send_rate;
  return d;
}

void CollectiveEngine::scale_rank_links(int rank, double factor) {
  link_scale_[static_cast<size_t>(rank)] = factor;
  const int64_t gpu = participants_.gpus[static_cast<size_t>(rank)];
  const int64_t node = gpu / cluster_.gpus_per_node;
  const int local = static_cast<int>(gpu % cluster_.gpus_per_node);
  platform_.gpu_link(node, local)->set_bandwidth(cluster_.effective_nvlink_bytes_per_s() * factor);
  if (cluster_.nvlink_full_mesh()) {
    // A pair's links take the scale of the GPU that set it last (a node's
    // simulated GPUs share their HBM alike).
    for (sg4::Link* pair : platform_.pair_links(node, local)) {
      pair->set_bandwidth(cluster_.effective_pair_bytes_per_s() * factor);
    }
  }
  double port = factor;
  for (size_t r = 0; r < participants_.gpus.size(); ++r) {
    if (participants_.gpus[r] / cluster_.gpus_per_node == node) port = std::min(port, link_scale_[r]);
  }
  platform_.port_link(node)->set_bandwidth(cluster_.node_network_bytes_per_s() * participants_.health.nic_rate(node) * port);
}

double CollectiveEngine::launch_and_wait(const std::vector<Flow>& flows, double scale, const Holders& holders,
                                         double traffic, Endpoint* bottleneck, double network_share) {
  for (const auto& [gpu, held] : holders) gpu->set_collective_traffic(held, traffic);
  std::vector<sg4::CommPtr> comms;
  std::vector<const Flow*> started;
  comms.reserve(flows.size());
  started.reserve(flows.size());
  for (const Flow& f : flows) {
    const auto bytes = static_cast<uint64_t>(f.bytes * scale * (f.src.local < 0 ? network_share : 1.0));
    if (bytes == 0) continue;
    comms.push_back(sg4::Comm::sendto_async(platform_.host(f.src), platform_.host(f.dst), bytes));
    started.push_back(&f);
  }
  flows_started_ += static_cast<int64_t>(comms.size());
  const double start = sg4::Engine::get_clock();
  double last = -1;
  for (const auto& c : comms) {
    c->wait();
    last = std::max(last, c->get_finish_time());
  }
  // The flow that ended last, and of its two ends the slower NICs (among
  // flows ending together, the one touching the slowest NICs).
  double slowest = 2;
  for (size_t i = 0; i < comms.size(); ++i) {
    if (comms[i]->get_finish_time() < last) continue;
    for (const Endpoint& e : {started[i]->src, started[i]->dst}) {
      const double rate = e.local < 0 ? participants_.health.nic_rate(e.node) : 1.0;
      if (rate < slowest) {
        slowest = rate;
        *bottleneck = e;
      }
    }
  }
  for (const auto& [gpu, held] : holders) gpu->set_collective_traffic(held, 0.0);
  return sg4::Engine::get_clock() - start;
}

size_t CollectiveEngine::group_mates(Group group, int rank) const {
  const planner::GroupSpan span = planner::group_span(mesh_, group);
  const auto instance = [&](int64_t gpu) { return gpu / (span.members * span.stride) * span.stride + gpu % span.stride; };
  const int64_t mine = instance(participants_.gpus[static_cast<size_t>(rank)]);
  return static_cast<size_t>(std::count_if(participants_.gpus.begin(), participants_.gpus.end(),
                                           [&](int64_t gpu) { return instance(gpu) == mine; }));
}

// Registers simulated rank `rank` at op's meeting and, unless it is the last
// to arrive, waits there until the collective has ended.
CollectiveEngine::Meeting& CollectiveEngine::meet(const planner::Op& op, GpuShare* gpu, int held, int rank) {
  Meeting& m = meetings_[op.id];
  if (m.arrivals.empty()) m.arrivals.assign(participants_.gpus.size(), 0.0);
  m.arrivals[static_cast<size_t>(rank)] = sg4::Engine::get_clock();
  if (gpu != nullptr) m.holders.emplace_back(gpu, held);
  if (++m.arrived < participants_.gpus.size()) {
    std::unique_lock lock(*mutex_);
    changed_->wait(lock, [&m] { return m.done; });
  }
  return m;
}

double CollectiveEngine::run(const planner::Op& op, GpuShare* gpu, int rank) {
  const Shape& s = shape(op.kind, op.group, stage_of(rank));
  if (s.rings.members <= 1 || op.bytes <= 0) return 0;
  const double issued = sg4::Engine::get_clock();
  const CollectiveDemand d = demand(op, rank);
  // NCCL's kernel arrives when its CTAs are resident: after any persistent
  // kernel that holds the SMs (section 6b).
  const int held = gpu != nullptr ? gpu->begin_collective(d.ctas) : -1;
  const double arrival = sg4::Engine::get_clock();
  // A rank alone in its group (a simulated rank whose tp or cp group holds
  // no other) meets no one: the flows of its group's ring set run for it.
  const size_t mates = group_mates(op.group, rank);
  RAGGED_ASSERT(mates == 1 || mates == participants_.gpus.size(),
                "the simulated ranks are each alone in a group or all in it");
  if (mates == 1) {
    Endpoint bottleneck;
    run_phases(op, s, gpu != nullptr ? Holders{{gpu, held}} : Holders{}, d.hbm_bytes_per_s, &bottleneck);
    records_.push_back({op.id, op.kind, {arrival}, arrival, sg4::Engine::get_clock(), bottleneck});
  } else {
    Meeting& m = meet(op, gpu, held, rank);
    if (!m.done) {  // the last to arrive runs the flows for everyone
      const double start = sg4::Engine::get_clock();
      Endpoint bottleneck;
      run_phases(op, s, m.holders, d.hbm_bytes_per_s, &bottleneck);
      records_.push_back({op.id, op.kind, m.arrivals, start, sg4::Engine::get_clock(), bottleneck});
      std::unique_lock lock(*mutex_);
      m.done = true;
      changed_->notify_all();
    }
    if (++m.left == participants_.gpus.size()) meetings_.erase(op.id);
  }
  if (gpu != nullptr) gpu->end_collective(held);
  return sg4::Engine::get_clock() - issued;
}

double CollectiveEngine::network_share(const planner::Op& op, const Shape& s) {
  if (op.routed_experts <= 0) return 1.0;
  const int64_t ranks_per_node = s.rings.members / std::max<int64_t>(1, s.latency.nodes);
  const auto key = std::make_tuple(op.routed_experts, op.experts_per_token, ranks_per_node);
  auto it = network_shares_.find(key);
  if (it == network_shares_.end()) {
    it = network_shares_
             .emplace(key, planner::expert_network_share(op.routed_experts, op.experts_per_token, mesh_, ranks_per_node))
             .first;
  }
  return it->second;
}

double CollectiveEngine::run_phases(const planner::Op& op, const Shape& s, const Holders& holders, double traffic,
                                    Endpoint* bottleneck) {
  const double start = sg4::Engine::get_clock();
  const int64_t n = s.rings.members;
  const double buffer = static_cast<double>(op.bytes);
  // A direct transfer (Op::ctas >= 0) crosses one hop: a two-rank ring's latency.
  const RingShape latency = op.ctas >= 0 ? RingShape{2, s.latency.nodes, false} : s.latency;
  if (op.kind == OpKind::kAllToAll) {
    const double bandwidth = launch_and_wait(s.unit_flows, buffer, holders, traffic, bottleneck, network_share(op, s));
    const double total = best_collective_time(latency, bandwidth).seconds;
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
    const double step_latency = (ring_latency_seconds(Protocol::kSimple, latency) - base) / static_cast<double>(steps);
    sg4::this_actor::sleep_for(base);
    for (int64_t step = 0; step < steps; ++step) {
      launch_and_wait(s.unit_flows, per_hop / static_cast<double>(steps), holders, traffic, bottleneck);
      sg4::this_actor::sleep_for(std::max(0.0, step_latency));
    }
    return sg4::Engine::get_clock() - start;
  }
  const double bandwidth = launch_and_wait(s.unit_flows, per_hop, holders, traffic, bottleneck);
  const CollectiveTime t = best_collective_time(latency, bandwidth);
  sg4::this_actor::sleep_for(std::max(0.0, t.seconds - bandwidth));
  return sg4::Engine::get_clock() - start;
}

}  // namespace ragged::sim
