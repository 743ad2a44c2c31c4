#pragma once
// The SimGrid platform of a cluster, behind our own builder (SimGrid 4
// renames these APIs). Each node is a star zone: one host per GPU with a
// split-duplex NVLink/NVSwitch link (only on the nodes whose NVLink flows are
// simulated, collective_flows.hpp), and one network-port host whose link
// carries the node's NICs together. A node whose GPUs are an NVLink full mesh
// (ClusterSpec::full_mesh_gpus) is a full zone instead: one link per pair of
// GPUs at the pair's share, besides each GPU's link to the port. Nodes are the leaves of a fat tree whose
// links have the node's network bandwidth; the leaf's uplinks are divided by
// the oversubscription. CM02 with the settings of
// ../shared/reference/simgrid.md is set in code.

#include <cstdint>
#include <string>
#include <vector>

#include <simgrid/s4u.hpp>

#include "sim/cluster_spec.hpp"
#include "sim/collective_flows.hpp"

namespace ragged::sim {

// Network model settings and quiet logs; call before building the platform.
void configure_engine();

class Platform {
 public:
  // Builds `nodes` nodes of `cluster` (all of them, or a reduced set) in the
  // current engine, with GPUs on `gpu_nodes` (sorted; nullopt: every node).
  Platform(const ClusterSpec& cluster, int64_t nodes, const NodeList& gpu_nodes = std::nullopt);

  simgrid::s4u::Host* host(const Endpoint& endpoint) const;
  simgrid::s4u::Host* gpu(int64_t node, int local) const;
  int64_t nodes() const { return static_cast<int64_t>(gpus_.size()); }
  // A GPU's NVLink link and a node's network port (both directions).
  simgrid::s4u::Link* gpu_link(int64_t node, int local) const;
  simgrid::s4u::Link* port_link(int64_t node) const { return port_links_[node]; }
  // On a full-mesh node, the links joining a GPU to each of its peers.
  const std::vector<simgrid::s4u::Link*>& pair_links(int64_t node, int local) const;

 private:
  void add_mesh_routes(simgrid::s4u::NetZone* zone, const ClusterSpec& c, unsigned long id, const std::string& name,
                       simgrid::s4u::Host* port, simgrid::s4u::Link* nic, simgrid::kernel::routing::NetPoint* gateway);

  std::vector<std::vector<simgrid::s4u::Host*>> gpus_;
  std::vector<simgrid::s4u::Host*> ports_;
  std::vector<std::vector<simgrid::s4u::Link*>> gpu_links_;
  std::vector<simgrid::s4u::Link*> port_links_;
  std::vector<std::vector<std::vector<simgrid::s4u::Link*>>> pair_links_;  // [node][local]: full-mesh nodes only
};

}  // namespace ragged::sim
