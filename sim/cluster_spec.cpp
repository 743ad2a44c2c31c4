#include "sim/cluster_spec.hpp"

#include <algorithm>

namespace ragged::sim {

ClusterSpec ClusterSpec::from_scenario(const scenarios::Cluster& c) {
  ClusterSpec spec;
  spec.nodes = c.nodes();
  spec.gpus_per_node = c.gpus_per_node();
  spec.nvlink_bytes_per_s = c.intra_node().bandwidth_gbytes_per_s() * 1e9;
  spec.nvlink_latency_s = c.intra_node().latency_us() * 1e-6;
  spec.full_mesh_gpus = c.intra_node().full_mesh_gpus();
  spec.nics_per_node = std::max(1, c.nics().per_node());
  spec.nic_bytes_per_s = c.nics().bandwidth_gbits_per_s() * 1e9 / 8;
  spec.nic_latency_s = c.nics().latency_us() * 1e-6;
  spec.hop_latency_s = c.topology().hop_latency_us() * 1e-6;
  if (c.topology().has_rail_optimized()) {
    // Rails are folded into one network per node: a rail switch serves the
    // same group of nodes on every rail, so the group behaves as one leaf
    // with the node's whole NIC bandwidth (docs/SIMULATOR.md).
    spec.fabric = Fabric::kRailOptimized;
    spec.levels = 2;
    spec.nodes_per_leaf = c.topology().rail_optimized().nodes_per_rail_switch();
    spec.oversubscription = c.topology().rail_optimized().spine_oversubscription();
  } else {
    const auto& tree = c.topology().fat_tree();
    spec.levels = tree.levels();
    spec.nodes_per_leaf = std::max(1, tree.switch_radix() / 2);
    spec.oversubscription = tree.oversubscription();
  }
  spec.nodes_per_leaf = std::min(spec.nodes_per_leaf, spec.nodes);
  return spec;
}

}  // namespace ragged::sim
