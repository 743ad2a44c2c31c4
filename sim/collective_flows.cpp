#include "sim/collective_flows.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "common/errors.hpp"

namespace ragged::sim {
namespace {

using Key = std::pair<std::pair<int64_t, int>, std::pair<int64_t, int>>;

// Sums flows with the same endpoints.
class FlowSet {
 public:
  void add(Endpoint src, Endpoint dst, double bytes) {
    if (bytes <= 0 || src == dst) return;
    flows_[{{src.node, src.local}, {dst.node, dst.local}}] += bytes;
  }
  std::vector<Flow> take() const {
    std::vector<Flow> out;
    out.reserve(flows_.size());
    for (const auto& [key, bytes] : flows_) {
      out.push_back({{key.first.first, key.first.second}, {key.second.first, key.second.second}, bytes});
    }
    return out;
  }

 private:
  std::map<Key, double> flows_;
};

int64_t first_rank(const RingSet& r, int64_t group) {
  return r.first + (group / r.stride) * (r.members * r.stride) + group % r.stride;
}

// The member ranks of one group, split into runs of consecutive members that
// share a node.
struct NodeRun {
  int64_t node;
  std::vector<int> locals;
};

std::vector<NodeRun> node_runs(const RingSet& r, int64_t group, int64_t gpn) {
  std::vector<NodeRun> runs;
  const int64_t first = first_rank(r, group);
  for (int64_t i = 0; i < r.members; ++i) {
    const int64_t rank = first + i * r.stride;
    const int64_t node = rank / gpn;
    if (runs.empty() || runs.back().node != node) runs.push_back({node, {}});
    runs.back().locals.push_back(static_cast<int>(rank % gpn));
  }
  return runs;
}

// The nodes whose network flows are simulated: `nodes` from `base` (the
// cluster in full mode; in symmetric mode the first nodes, at most two
// leaves, of the ring set's tile: the cluster, or a pipeline stage).
struct Reduced {
  int64_t base = 0;
  int64_t nodes = 0;
  bool holds(int64_t node) const { return node >= base && node < base + nodes; }
};

Reduced reduced_of(const RingSet& r, const ClusterSpec& c, FlowMode mode) {
  if (mode == FlowMode::kFull) return {0, c.nodes};
  const int64_t gpn = c.gpus_per_node;
  const int64_t base = r.first / gpn;
  const int64_t end = (r.first + r.members * r.groups + gpn - 1) / gpn;
  return {base, std::min(end - base, 2 * c.nodes_per_leaf)};
}

// Where a network hop from `from` to `to` lands in the reduced cluster:
// unchanged inside it, else the same offset in the other simulated leaf (or
// the same leaf when only one is simulated), leaves counted from its base.
int64_t fold(int64_t from, int64_t to, const Reduced& reduced, int64_t per_leaf) {
  if (reduced.holds(to)) return to;
  const int64_t sim_nodes = reduced.nodes;
  from -= reduced.base;
  to -= reduced.base;
  const int64_t leaves = std::max<int64_t>(1, sim_nodes / per_leaf);
  const int64_t from_leaf = from / per_leaf;
  const bool same_leaf = to / per_leaf == from_leaf;
  const int64_t leaf = same_leaf || leaves == 1 ? from_leaf : (from_leaf + 1) % leaves;
  return reduced.base + std::min(sim_nodes - 1, leaf * per_leaf + to % per_leaf);
}

// A ring's hops among a node's members, `share` bytes from each. Through an
// NVSwitch each member sends to the next; on a full mesh NCCL lays its
// channels' rings over every pair's links, so each member sends to every
// other member an equal part (one flow a pair: one link each).
void add_node_ring(const NodeRun& run, double share, const ClusterSpec& c, FlowSet& flows) {
  const size_t k = run.locals.size();
  for (size_t i = 0; i < k; ++i) {
    if (!c.nvlink_full_mesh()) {
      flows.add({run.node, run.locals[i]}, {run.node, run.locals[(i + 1) % k]}, share);
      continue;
    }
    for (size_t j = 0; j < k; ++j) {
      if (j != i) flows.add({run.node, run.locals[i]}, {run.node, run.locals[j]}, share / static_cast<double>(k - 1));
    }
  }
}

// Adds one group's flows. `keep` decides which source nodes are simulated.
template <class KeepNvlink, class KeepNetwork>
void add_group(const RingSet& r, int64_t group, double bytes, const ClusterSpec& c, const Reduced& reduced,
               FlowSet& flows, KeepNvlink keep_nvlink, KeepNetwork keep_network) {
  std::vector<NodeRun> runs = node_runs(r, group, c.gpus_per_node);
  const bool one_node = runs.size() == 1;
  for (size_t t = 0; t < runs.size(); ++t) {
    const NodeRun& run = runs[t];
    const size_t k = run.locals.size();
    if (keep_nvlink(run.node) && k > 1) {
      // Inside a node each member passes (k-1)/k of the hop's bytes to the
      // next member (all of them when the ring never leaves the node).
      const double share = one_node ? bytes : bytes * static_cast<double>(k - 1) / static_cast<double>(k);
      add_node_ring(run, share, c, flows);
    }
    if (!one_node && keep_network(run.node)) {
      const int64_t next = runs[(t + 1) % runs.size()].node;
      flows.add({run.node, -1}, {fold(run.node, next, reduced, c.nodes_per_leaf), -1}, bytes);
    }
  }
}

// The groups with at least one member on a node below `limit`.
std::vector<int64_t> groups_touching(const RingSet& r, int64_t limit_rank) {
  std::vector<int64_t> groups;
  for (int64_t g = 0; g < r.groups; ++g) {
    if (first_rank(r, g) < limit_rank) groups.push_back(g);
  }
  return groups;
}

// Full mode: whether a node's NVLink flows are simulated.
class NvlinkFilter {
 public:
  explicit NvlinkFilter(const NodeList& nodes) : nodes_(nodes) {}
  bool operator()(int64_t node) const {
    return !nodes_ || std::binary_search(nodes_->begin(), nodes_->end(), node);
  }

 private:
  const NodeList& nodes_;
};

}  // namespace

int64_t simulated_nodes(const ClusterSpec& cluster, FlowMode mode) {
  if (mode == FlowMode::kFull) return cluster.nodes;
  return std::min(cluster.nodes, 2 * cluster.nodes_per_leaf);
}

int64_t nodes_spanned(const RingSet& rings, const ClusterSpec& cluster) {
  return static_cast<int64_t>(node_runs(rings, 0, cluster.gpus_per_node).size());
}

std::vector<Flow> ring_flows(const RingSet& r, double bytes, const ClusterSpec& c, FlowMode mode, const NodeList& nvlink_nodes) {
  RAGGED_ASSERT(r.first + r.members * r.groups <= c.gpus(), "a ring set tiles ranks of the cluster");
  FlowSet flows;
  if (r.members <= 1) return {};
  const Reduced reduced = reduced_of(r, c, mode);
  if (mode == FlowMode::kFull) {
    const NvlinkFilter keep_nvlink(nvlink_nodes);
    for (int64_t g = 0; g < r.groups; ++g) {
      add_group(r, g, bytes, c, reduced, flows, keep_nvlink, [](int64_t) { return true; });
    }
    return flows.take();
  }
  // Groups whose first member lies in the simulated nodes cover them: the
  // groups tile the ranks, so every rank of those nodes belongs to one.
  for (int64_t g : groups_touching(r, (reduced.base + reduced.nodes) * c.gpus_per_node)) {
    add_group(r, g, bytes, c, reduced, flows, [&](int64_t node) { return node == reduced.base; },
              [&](int64_t node) { return reduced.holds(node); });
  }
  return flows.take();
}

std::vector<Flow> all_to_all_flows(const RingSet& r, double bytes_per_group, const ClusterSpec& c, FlowMode mode,
                                   const NodeList& nvlink_nodes, bool network) {
  FlowSet flows;
  if (r.members <= 1) return {};
  const Reduced reduced = reduced_of(r, c, mode);
  const double per_member = bytes_per_group / static_cast<double>(r.members);
  const double m = static_cast<double>(r.members);
  const NvlinkFilter keep_nvlink(nvlink_nodes);
  auto emit = [&](int64_t g, bool symmetric) {
    std::vector<NodeRun> runs = node_runs(r, g, c.gpus_per_node);
    for (size_t t = 0; t < runs.size(); ++t) {
      const NodeRun& run = runs[t];
      const double k = static_cast<double>(run.locals.size());
      if ((symmetric ? run.node == reduced.base : keep_nvlink(run.node)) && run.locals.size() > 1) {
        add_node_ring(run, per_member * (k - 1) / m, c, flows);
      }
      if (network && runs.size() > 1 && (!symmetric || reduced.holds(run.node))) {
        // NCCL's all-to-all is a send and a receive per peer: the node's
        // members send each other node's members their share.
        for (size_t o = 0; o < runs.size(); ++o) {
          if (o == t) continue;
          const double peers = static_cast<double>(runs[o].locals.size());
          flows.add({run.node, -1}, {fold(run.node, runs[o].node, reduced, c.nodes_per_leaf), -1},
                    k * per_member * peers / m);
        }
      }
    }
  };
  if (mode == FlowMode::kFull) {
    for (int64_t g = 0; g < r.groups; ++g) emit(g, false);
  } else {
    for (int64_t g : groups_touching(r, (reduced.base + reduced.nodes) * c.gpus_per_node)) emit(g, true);
  }
  return flows.take();
}

std::vector<int64_t> nvlink_representatives(const std::vector<RingSet>& ring_sets, const ClusterSpec& c,
                                            const std::vector<int64_t>& required) {
  // Each node's NVLink flows over every ring set, ring and all-to-all: (set,
  // shape, source, destination, bytes), in a fixed order (FlowSet sorts).
  using Entry = std::tuple<size_t, int, int, int, double>;
  std::vector<std::vector<Entry>> pattern(static_cast<size_t>(c.nodes));
  for (size_t i = 0; i < ring_sets.size(); ++i) {
    const RingSet& r = ring_sets[i];
    for (int shape = 0; shape < 2; ++shape) {
      // NVLink flows only: an all-to-all's network flows are every pair of its nodes.
      const std::vector<Flow> flows =
          shape == 0 ? ring_flows(r, 1.0, c, FlowMode::kFull)
                     : all_to_all_flows(r, static_cast<double>(r.members), c, FlowMode::kFull, std::nullopt, false);
      for (const Flow& f : flows) {
        if (f.src.local >= 0) pattern[static_cast<size_t>(f.src.node)].emplace_back(i, shape, f.src.local, f.dst.local, f.bytes);
      }
    }
  }
  std::vector<int64_t> nodes = required;
  nodes.push_back(0);
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  std::map<std::vector<Entry>, int64_t> seen;
  for (int64_t n : nodes) seen.emplace(pattern[static_cast<size_t>(n)], n);
  for (int64_t n = 0; n < c.nodes; ++n) {
    if (seen.emplace(pattern[static_cast<size_t>(n)], n).second) nodes.push_back(n);
  }
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

}  // namespace ragged::sim
