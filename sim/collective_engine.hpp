#pragma once
// Runs the Program's collectives as flows on the SimGrid platform: called by
// a stream actor, it starts the flows of one collective (collective_flows.hpp),
// waits for all of them, then adds NCCL's latency for the protocol NCCL would
// pick (nccl_latency.hpp). Flow shapes are computed once per kind and group
// and scaled by each collective's bytes. Where several ranks' Programs run
// (a cluster that is not uniform, cluster_health.hpp), each collective is a
// meeting: its flows start when the last of them arrives.

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "planner/program.hpp"
#include "sim/cluster_health.hpp"
#include "sim/cluster_spec.hpp"
#include "sim/collective_flows.hpp"
#include "sim/gpu_share.hpp"
#include "sim/nccl_latency.hpp"
#include "sim/platform.hpp"
#include "sim/straggler_report.hpp"

namespace ragged::sim {

enum class SimulationMode {
  kFull,       // every node's network, NVLink of the nodes that differ, collapsed rings
  kSymmetric,  // node 0 and a reduced network, collapsed rings
  kSteps,      // every node and NVLink, every ring step (validation at small scale)
};

// The ranks whose Programs run, on the cluster `health` describes.
struct Participants {
  std::vector<int64_t> gpus = {0};  // each simulated rank's global GPU index
  ClusterHealth health;             // NIC rates of the nodes (GPU rates are the executors')
};

class CollectiveEngine {
 public:
  // `mesh` places every group of the Program's collectives (planner/mesh.hpp).
  CollectiveEngine(const ClusterSpec& cluster, SimulationMode mode, const planner::Mesh& mesh,
                   Participants participants = {});

  // Runs op (a collective) to completion in simulated time for simulated
  // rank `rank`; returns seconds. With several simulated ranks the flows
  // start when the last of them reaches the collective (a ring moves nothing
  // until every member has joined) and every rank waits for the end. With
  // `gpu`, the collective holds NCCL's CTAs on that rank's GPU from its
  // arrival to the end and makes its HBM traffic while its bytes move.
  double run(const planner::Op& op, GpuShare* gpu = nullptr, int rank = 0);

  // Runs op (a pipeline kSend or kRecv) for simulated rank `rank`: the
  // transfer starts when the send and its receive (the same Op::message)
  // have both been reached, and both wait for its end (NCCL's send and
  // receive meet). The peer stage's rank must be simulated too. Returns
  // seconds.
  double transfer(const planner::Op& op, int rank);

  // The CTAs NCCL runs a ring with inside one node and across nodes (0: the
  // collectives take nothing from concurrent work).
  void set_nccl_ctas(int intra_node, int inter_node) {
    ctas_intra_node_ = intra_node;
    ctas_inter_node_ = inter_node;
  }
  // What op (a collective) takes from a GPU while it runs: NCCL's CTAs, and
  // HBM traffic of (hbm_traffic_per_byte) times the bytes that GPU sends per
  // second when the collective runs alone.
  CollectiveDemand demand(const planner::Op& op, int rank = 0);
  // Scales the rates of simulated rank `rank`'s NVLink and of its node's
  // network port to `factor` of their own (HBM contention, gpu_share.hpp);
  // a port shared by several simulated ranks takes the smallest factor.
  void scale_rank_links(int rank, double factor);

  int64_t flows_started() const { return flows_started_; }
  // Nodes whose network flows run (symmetric stages: each stage's reduced cluster).
  int64_t simulated_nodes() const;
  // The host simulated rank `rank`'s stream actors run on.
  simgrid::s4u::Host* platform_host(int rank = 0) const;
  const std::vector<CollectiveRecord>& records() const { return records_; }

 private:
  struct Shape {
    RingSet rings;
    RingShape latency;
    std::vector<Flow> unit_flows;  // flows for one byte per hop (or per group for all-to-all)
    double gpu_send_rate = 0;      // bytes/s the representative GPU sends when the collective runs alone
  };
  // The GPUs taking part in a running collective: (share, its collective id).
  using Holders = std::vector<std::pair<GpuShare*, int>>;
  // Simulated ranks that reached a collective whose flows have not ended.
  struct Meeting {
    Holders holders;
    std::vector<double> arrivals;
    size_t arrived = 0;
    size_t left = 0;
    bool done = false;
  };
  // A pipeline message whose send or receive has been reached.
  struct Transfer {
    int arrived = 0;
    bool done = false;
  };
  // The groups of `group` over the whole cluster, or over the ranks of one
  // pipeline stage (`stage` >= 0): a stage's collectives load its nodes alone.
  RingSet ring_set(planner::Group group, int64_t stage = -1) const;
  int64_t stage_of(int rank) const;
  // The symmetric mode's ranks: rank 0, or each pipeline stage's first rank;
  // and the nodes its platform holds (up to the last stage's reduced cluster).
  std::vector<int64_t> symmetric_ranks() const;
  int64_t symmetric_platform_nodes() const;
  int64_t stage_nodes() const;
  int64_t stage_reduced_nodes() const;
  // The flow of a transfer between two simulated ranks, and its seconds.
  double run_transfer(const planner::Op& op, int sender, int receiver);
  // The simulated ranks in simulated rank `rank`'s group of `group`, itself
  // included. The what-ifs simulate every member of a group or one of them.
  size_t group_mates(planner::Group group, int rank) const;
  std::vector<RingSet> ring_sets() const;  // every group the mesh has
  const Shape& shape(planner::OpKind kind, planner::Group group, int64_t stage);
  // Both return seconds and set `bottleneck` to the end of the flow that
  // ended last with the slower NICs (each collective its own: several run at once).
  double run_phases(const planner::Op& op, const Shape& s, const Holders& holders, double traffic, Endpoint* bottleneck);
  // An ep all-to-all's share of its bytes between nodes that crosses the
  // network (planner::expert_network_share, computed once per routing).
  double network_share(const planner::Op& op, const Shape& s);
  // `network_share` scales the flows between nodes beside `scale`.
  double launch_and_wait(const std::vector<Flow>& flows, double scale, const Holders& holders, double traffic,
                         Endpoint* bottleneck, double network_share = 1.0);
  Meeting& meet(const planner::Op& op, GpuShare* gpu, int held, int rank);

  ClusterSpec cluster_;
  SimulationMode mode_;
  planner::Mesh mesh_;
  Participants participants_;
  NodeList nvlink_nodes_;  // nodes whose NVLink flows run (collective_flows.hpp)
  Platform platform_;
  std::map<std::tuple<int, int, int64_t>, Shape> shapes_;  // (kind, group, stage)
  std::map<std::tuple<int64_t, int64_t, int64_t>, double> network_shares_;  // (experts, top_k, ep ranks a node)
  int64_t flows_started_ = 0;
  int ctas_intra_node_ = 0;
  int ctas_inter_node_ = 0;
  std::vector<double> link_scale_;  // per simulated rank
  std::map<uint32_t, Meeting> meetings_;
  std::map<int64_t, Transfer> transfers_;
  std::vector<CollectiveRecord> records_;
  simgrid::s4u::MutexPtr mutex_;
  simgrid::s4u::ConditionVariablePtr changed_;
};

}  // namespace ragged::sim
