#include "planner/expert_dispatch.hpp"

#include <set>

#include "common/errors.hpp"

namespace ragged::planner {

double expert_ranks_per_token(int64_t experts, int64_t top_k, int64_t ep, ExpertRouting routing) {
  if (experts < 1 || top_k < 1 || top_k > experts || ep < 1 || experts % ep != 0) {
    throw InternalError("expert_ranks_per_token: top_k, ep must fit the experts");
  }
  const int64_t per_rank = experts / ep;
  if (routing == ExpertRouting::kUniform) {
    double missed = 1.0;  // a given rank holds none of the token's experts
    for (int64_t j = 0; j < top_k; ++j) {
      missed *= static_cast<double>(experts - per_rank - j) / static_cast<double>(experts - j);
    }
    return static_cast<double>(ep) * (1.0 - std::max(0.0, missed));
  }
  int64_t ranks = 0;
  for (int64_t i = 0; i < experts; ++i) {
    std::set<int64_t> hit;
    for (int64_t j = 0; j < top_k; ++j) hit.insert((i * top_k + j) % experts / per_rank);
    ranks += static_cast<int64_t>(hit.size());
  }
  return static_cast<double>(ranks) / static_cast<double>(experts);
}

double expert_dispatch_copies(int64_t experts, int64_t top_k, const Mesh& mesh) {
  if (mesh.expert_dispatcher == ExpertDispatcher::kAllToAll) return static_cast<double>(top_k);
  return expert_ranks_per_token(experts, top_k, mesh.ep, mesh.expert_routing);
}

double expert_network_share(int64_t experts, int64_t top_k, const Mesh& mesh, int64_t ranks_per_node) {
  if (mesh.expert_dispatcher != ExpertDispatcher::kDeepEp || ranks_per_node <= 1 || ranks_per_node >= mesh.ep ||
      mesh.ep % ranks_per_node != 0) {
    return 1.0;
  }
  // A node's ranks hold consecutive experts: the nodes are ep / ranks_per_node
  // runs of experts, counted as the ranks are.
  const double ranks = expert_ranks_per_token(experts, top_k, mesh.ep, mesh.expert_routing);
  const double nodes = expert_ranks_per_token(experts, top_k, mesh.ep / ranks_per_node, mesh.expert_routing);
  return nodes / ranks;
}

}  // namespace ragged::planner
