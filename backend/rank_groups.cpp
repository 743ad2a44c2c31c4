#include "backend/rank_groups.hpp"

#include <fmt/format.h>

#include "backend/group_colors.hpp"

namespace ragged::backend {

RankGroups split_rank_groups(Communicator& world, int64_t shard_ranks, int64_t tp, int64_t cp, int64_t ep) {
  const planner::Mesh mesh = run_mesh(world.size(), shard_ranks, tp, cp, ep);
  const GroupColors colors = group_colors(world.rank(), mesh);
  const int rank = world.rank();
  RankGroups groups;
  groups.world = &world;
  groups.tp = tp;
  groups.cp = cp;
  groups.ep = ep;
  if (tp > 1) {
    groups.own_tensor = world.split(colors.tensor, rank);
    groups.tensor = groups.own_tensor.get();
  }
  if (cp > 1) {
    groups.own_context = world.split(colors.context, rank);
    groups.context = groups.own_context.get();
  }
  if (tp == 1 && shard_ranks == world.size()) {
    groups.shard = &world;
    groups.own_replicas = make_local_communicator();
    groups.own_replicas->set_ordered_reductions(world.ordered_reductions());
  } else {
    groups.own_shard = world.split(colors.shard, rank);
    groups.own_replicas = world.split(colors.replicas, rank);
    groups.shard = groups.own_shard.get();
  }
  groups.replicas = groups.own_replicas.get();
  if (ep > 1) {
    groups.own_expert = world.split(colors.expert, rank);
    groups.own_expert_shard = world.split(colors.expert_shard, rank);
    groups.expert = groups.own_expert.get();
    groups.expert_shard = groups.own_expert_shard.get();
  }
  return groups;
}

std::string describe(const RankGroups& groups, std::string_view kind) {
  const int ranks = groups.world->size();
  std::string text = fmt::format("{} {} rank{}", ranks, kind, ranks == 1 ? "" : "s");
  if (groups.replicas->size() > 1) {
    text += fmt::format(" (HSDP: {} replicas of {}-rank shard groups)", groups.replicas->size(), groups.shard->size());
  }
  if (groups.tensor != nullptr) {
    text += fmt::format(" (tensor parallel: {} groups of {}; {}-rank shard groups)", ranks / groups.tensor->size(),
                        groups.tensor->size(), groups.shard->size());
  }
  if (groups.context != nullptr) {
    text += fmt::format(" (context parallel: {} groups of {})", ranks / groups.context->size(), groups.context->size());
  }
  if (groups.expert != nullptr) {
    const int count = ranks / groups.expert->size();
    text += fmt::format(" (expert parallel: {} group{} of {}; experts sharded over {} rank{})", count,
                        count == 1 ? "" : "s", groups.expert->size(), groups.expert_shard->size(),
                        groups.expert_shard->size() == 1 ? "" : "s");
  }
  return text;
}

}  // namespace ragged::backend
