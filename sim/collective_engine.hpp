#pragma once
// Runs the Program's collectives as flows on the SimGrid platform: called by
// a stream actor, it starts the flows of one collective (collective_flows.hpp),
// waits for all of them, then adds NCCL's latency for the protocol NCCL would
// pick (nccl_latency.hpp). Flow shapes are computed once per kind and group
// and scaled by each collective's bytes.

#include <cstdint>
#include <map>
#include <vector>

#include "planner/program.hpp"
#include "sim/cluster_spec.hpp"
#include "sim/collective_flows.hpp"
#include "sim/gpu_share.hpp"
#include "sim/nccl_latency.hpp"
#include "sim/platform.hpp"

namespace ragged::sim {

enum class SimulationMode {
  kFull,       // every node's network, NVLink of the nodes that differ, collapsed rings
  kSymmetric,  // node 0 and a reduced network, collapsed rings
  kSteps,      // every node and NVLink, every ring step (validation at small scale)
};

class CollectiveEngine {
 public:
  // `gpu_nodes`: nodes whose GPUs must exist on the platform (those of the
  // simulated ranks; node 0 always does).
  CollectiveEngine(const ClusterSpec& cluster, SimulationMode mode, int64_t shard_ranks, int64_t replicate_ranks,
                   const std::vector<int64_t>& gpu_nodes = {});

  // Runs op (a collective) to completion in simulated time; returns seconds.
  // With `gpu`, the collective holds NCCL's CTAs on the representative GPU
  // while it runs and makes its HBM traffic while its bytes move.
  double run(const planner::Op& op, GpuShare* gpu = nullptr);

  // The CTAs NCCL runs a ring with inside one node and across nodes (0: the
  // collectives take nothing from concurrent work).
  void set_nccl_ctas(int intra_node, int inter_node) {
    ctas_intra_node_ = intra_node;
    ctas_inter_node_ = inter_node;
  }
  // What op (a collective) takes from the representative GPU while it runs:
  // NCCL's CTAs, and HBM traffic of (hbm_traffic_per_byte) times the bytes
  // that GPU sends per second when the collective runs alone.
  CollectiveDemand demand(const planner::Op& op);
  // Scales the rates of the representative GPU's NVLink and of its node's
  // network port to `factor` of their own (HBM contention, gpu_share.hpp).
  void scale_representative_links(double factor);

  int64_t flows_started() const { return flows_started_; }
  int64_t simulated_nodes() const { return platform_.nodes(); }
  // The host the representative rank's stream actors run on.
  simgrid::s4u::Host* platform_host() const { return platform_.gpu(0, 0); }

 private:
  struct Shape {
    RingSet rings;
    RingShape latency;
    std::vector<Flow> unit_flows;  // flows for one byte per hop (or per group for all-to-all)
    double gpu_send_rate = 0;      // bytes/s the representative GPU sends when the collective runs alone
  };
  RingSet ring_set(planner::Group group) const;
  const Shape& shape(planner::OpKind kind, planner::Group group);
  double run_phases(const planner::Op& op, GpuShare* gpu, int held, double traffic);
  double launch_and_wait(const std::vector<Flow>& flows, double scale, GpuShare* gpu, int held, double traffic);

  ClusterSpec cluster_;
  SimulationMode mode_;
  int64_t shard_ranks_;
  int64_t replicate_ranks_;
  NodeList nvlink_nodes_;  // nodes whose NVLink flows run (collective_flows.hpp)
  Platform platform_;
  std::map<std::pair<int, int>, Shape> shapes_;
  int64_t flows_started_ = 0;
  int ctas_intra_node_ = 0;
  int ctas_inter_node_ = 0;
};

}  // namespace ragged::sim
