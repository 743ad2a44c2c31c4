#pragma once
// A cluster that is not uniform, read off a scenario's `whatif` block
// (docs/SIMULATOR.md section 10): each GPU's compute rate (slow GPUs, per-step
// jitter) and each node's NIC bandwidth, as fractions of the healthy ones.
// Random choices are drawn from the block's seeds with a fixed generator and
// fixed transforms, so a seed gives the same cluster on every platform.

#include <cstdint>
#include <vector>

#include "scenarios/scenario.pb.h"

namespace ragged::sim {

class ClusterHealth {
 public:
  ClusterHealth() = default;  // a healthy cluster
  ClusterHealth(const scenarios::WhatIf& whatif, int64_t gpus, int64_t nodes);

  // Fraction of its healthy compute rate GPU `rank` runs at this step.
  double gpu_rate(int64_t rank) const { return gpu_rate_.empty() ? 1.0 : gpu_rate_[static_cast<size_t>(rank)]; }
  // Fraction of its NICs' bandwidth node `node` has.
  double nic_rate(int64_t node) const { return nic_rate_.empty() ? 1.0 : nic_rate_[static_cast<size_t>(node)]; }
  // The nodes whose NICs are slow, ascending.
  std::vector<int64_t> slow_nodes() const;
  // The GPUs listed or drawn as slow (not those jitter slows), ascending.
  const std::vector<int64_t>& slow_gpus() const { return slow_gpus_; }

  // Whether nodes differ (slow GPUs, slow NICs, jitter): the symmetric
  // simulation no longer holds.
  bool breaks_symmetry() const { return !gpu_rate_.empty() || !nic_rate_.empty(); }

 private:
  std::vector<double> gpu_rate_;  // empty: every GPU at 1
  std::vector<double> nic_rate_;  // empty: every node at 1
  std::vector<int64_t> slow_gpus_;
};

// `count` distinct indices below `n`, drawn with `seed`, ascending.
std::vector<int64_t> choose_distinct(int64_t count, int64_t n, uint64_t seed);

// The ranks a full-mode simulation runs Programs for: the reference rank
// (rank 0, or the lowest rank that is not a listed slow GPU), whose trace is
// reported, then the slowest GPU when it is slower than the reference. Every
// other GPU's ops all run at least as fast as the slowest's, and the
// collectives wait for their last member, so none of them sets the pace.
struct SimulatedRank {
  int64_t rank = 0;
  double compute_rate = 1.0;  // fraction of the healthy compute rate
};
std::vector<SimulatedRank> simulated_ranks(const ClusterHealth& health, int64_t gpus);

}  // namespace ragged::sim
