#pragma once
// The numbers of a cluster the simulator needs, read off a scenario: GPUs per
// node and nodes, NVLink, NICs, the switch fabric, and the fraction of line
// rate NCCL achieves on each kind of link.

#include <cstdint>

#include "scenarios/scenario.pb.h"

namespace ragged::sim {

enum class Fabric { kFatTree, kRailOptimized };

struct ClusterSpec {
  int64_t nodes = 1;
  int64_t gpus_per_node = 8;
  double nvlink_bytes_per_s = 0;  // per GPU per direction, line rate
  double nvlink_latency_s = 0;
  // 0: an NVSwitch (any peer at the whole bandwidth); else the GPUs of an
  // NVLink full-mesh board, each pair joined by a 1/(n - 1) share.
  int64_t full_mesh_gpus = 0;
  int64_t nics_per_node = 8;
  double nic_bytes_per_s = 0;     // per NIC per direction, line rate
  double nic_latency_s = 0;
  Fabric fabric = Fabric::kFatTree;
  int levels = 2;
  double oversubscription = 1;    // down:up bandwidth at the leaf
  int64_t nodes_per_leaf = 32;    // nodes under one leaf (fat tree: half the switch radix; rails: per rail switch)
  double hop_latency_s = 0;
  // NCCL's achieved share of line rate for large messages (Simple protocol),
  // from the measurements in ../shared/reference/baselines.md section 7:
  // ring all-gather/reduce-scatter ~360 of 450 GB/s on H100 NVLink
  // (nccl-tests #212, #326, NCCL #1281); 46-48 of 50 GB/s per 400 Gb/s NIC
  // (nccl-tests #290, #267).
  double nvlink_efficiency = 0.80;
  double nic_efficiency = 0.94;

  int64_t gpus() const { return nodes * gpus_per_node; }
  double node_network_bytes_per_s() const { return static_cast<double>(nics_per_node) * nic_bytes_per_s * nic_efficiency; }
  double effective_nvlink_bytes_per_s() const { return nvlink_bytes_per_s * nvlink_efficiency; }
  bool nvlink_full_mesh() const { return full_mesh_gpus > 1; }
  // What one pair of GPUs exchanges per direction: the whole NVLink through
  // an NVSwitch, the pair's links on a full mesh.
  double effective_pair_bytes_per_s() const {
    return nvlink_full_mesh() ? effective_nvlink_bytes_per_s() / static_cast<double>(full_mesh_gpus - 1)
                              : effective_nvlink_bytes_per_s();
  }

  static ClusterSpec from_scenario(const scenarios::Cluster& cluster);
};

}  // namespace ragged::sim
