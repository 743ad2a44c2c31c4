#include "sim/cluster_health.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <set>

namespace ragged::sim {
namespace {

// std::mt19937_64's sequence is fixed by the standard; the distributions of
// <random> are not (they differ between standard libraries), so the draws
// below are written out.
class Draws {
 public:
  explicit Draws(uint64_t seed) : engine_(seed) {}

  // Uniform in [0, n), without modulo bias.
  int64_t index(int64_t n) {
    const uint64_t range = static_cast<uint64_t>(n);
    const uint64_t limit = UINT64_MAX - UINT64_MAX % range;
    uint64_t x = engine_();
    while (x >= limit) x = engine_();
    return static_cast<int64_t>(x % range);
  }
  // Uniform in (0, 1).
  double open_unit() { return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1p-53; }
  // A standard normal (Box-Muller).
  double normal() { return std::sqrt(-2.0 * std::log(open_unit())) * std::cos(2.0 * std::numbers::pi * open_unit()); }

 private:
  std::mt19937_64 engine_;
};

// The factor one GPU's compute time is multiplied by this step (mean 1).
double jitter_factor(const scenarios::ComputeJitter& jitter, Draws& draws) {
  const double sd = jitter.relative_stddev();
  const double z = draws.normal();
  if (jitter.distribution() == scenarios::LOGNORMAL) {
    const double s2 = std::log1p(sd * sd);
    return std::exp(std::sqrt(s2) * z - s2 / 2);
  }
  // A normal factor can go to or below zero: no GPU runs ten times faster than itself.
  return std::max(0.1, 1.0 + sd * z);
}

std::vector<int64_t> chosen(int32_t count, const google::protobuf::RepeatedField<int32_t>& listed, int64_t n,
                            uint64_t seed) {
  if (count > 0) return choose_distinct(count, n, seed);
  std::vector<int64_t> out(listed.begin(), listed.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<int64_t> choose_distinct(int64_t count, int64_t n, uint64_t seed) {
  // Floyd's algorithm: `count` draws for `count` distinct values.
  Draws draws(seed);
  std::set<int64_t> picked;
  for (int64_t j = n - count; j < n; ++j) {
    const int64_t t = draws.index(j + 1);
    if (!picked.insert(t).second) picked.insert(j);
  }
  return {picked.begin(), picked.end()};
}

ClusterHealth::ClusterHealth(const scenarios::WhatIf& whatif, int64_t gpus, int64_t nodes) {
  if (whatif.has_slow_gpus()) {
    const scenarios::SlowGpus& slow = whatif.slow_gpus();
    slow_gpus_ = chosen(slow.count(), slow.ranks(), gpus, slow.seed());
    if (!slow_gpus_.empty()) gpu_rate_.assign(static_cast<size_t>(gpus), 1.0);
    for (int64_t rank : slow_gpus_) gpu_rate_[static_cast<size_t>(rank)] = slow.fraction();
  }
  if (whatif.has_jitter() && whatif.jitter().relative_stddev() > 0) {
    if (gpu_rate_.empty()) gpu_rate_.assign(static_cast<size_t>(gpus), 1.0);
    Draws draws(whatif.jitter().seed());
    for (double& rate : gpu_rate_) rate /= jitter_factor(whatif.jitter(), draws);
  }
  if (whatif.has_slow_links()) {
    const scenarios::SlowLinks& slow = whatif.slow_links();
    const std::vector<int64_t> slow_nodes = chosen(slow.count(), slow.nodes(), nodes, slow.seed());
    if (!slow_nodes.empty()) nic_rate_.assign(static_cast<size_t>(nodes), 1.0);
    for (int64_t node : slow_nodes) nic_rate_[static_cast<size_t>(node)] = slow.fraction();
  }
}

std::vector<int64_t> ClusterHealth::slow_nodes() const {
  std::vector<int64_t> out;
  for (size_t n = 0; n < nic_rate_.size(); ++n) {
    if (nic_rate_[n] < 1.0) out.push_back(static_cast<int64_t>(n));
  }
  return out;
}

std::vector<SimulatedRank> simulated_ranks(const ClusterHealth& health, int64_t gpus) {
  const std::vector<int64_t>& slow = health.slow_gpus();
  int64_t reference = 0;
  while (reference < gpus && std::binary_search(slow.begin(), slow.end(), reference)) ++reference;
  if (reference == gpus) reference = 0;  // every GPU is slow: they are alike again
  std::vector<SimulatedRank> ranks = {{reference, health.gpu_rate(reference)}};
  int64_t slowest = reference;
  for (int64_t rank = 0; rank < gpus && health.breaks_symmetry(); ++rank) {
    if (health.gpu_rate(rank) < health.gpu_rate(slowest)) slowest = rank;
  }
  if (slowest != reference) ranks.push_back({slowest, health.gpu_rate(slowest)});
  return ranks;
}

}  // namespace ragged::sim
