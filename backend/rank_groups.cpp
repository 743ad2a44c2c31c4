#include "backend/rank_groups.hpp"

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged::backend {

RankGroups split_rank_groups(Communicator& world, int64_t shard_ranks, int64_t tp, int64_t cp, int64_t ep) {
  RAGGED_ASSERT(tp >= 1 && world.size() % tp == 0, "the tensor-parallel group divides the world");
  RAGGED_ASSERT(shard_ranks >= 1 && (world.size() / tp) % shard_ranks == 0, "the shard group size divides the world");
  RankGroups groups;
  groups.world = &world;
  groups.tp = tp;
  groups.cp = cp;
  RAGGED_ASSERT(cp >= 1 && shard_ranks % cp == 0, "the context-parallel group lies inside the shard group");
  const int rank = world.rank();
  const int place = groups.data_rank();       // the data-parallel place of this rank's tp group
  const int in_tp = rank % static_cast<int>(tp);  // this rank's place in it
  const int size = static_cast<int>(shard_ranks);
  if (tp > 1) {
    groups.own_tensor = world.split(place, rank);
    groups.tensor = groups.own_tensor.get();
  }
  if (cp > 1) {
    groups.own_context = world.split((place / static_cast<int>(cp)) * static_cast<int>(tp) + in_tp, rank);
    groups.context = groups.own_context.get();
  }
  if (tp == 1 && shard_ranks == world.size()) {
    groups.shard = &world;
    groups.own_replicas = make_local_communicator();
    groups.own_replicas->set_ordered_reductions(world.ordered_reductions());
  } else {
    groups.own_shard = world.split((place / size) * static_cast<int>(tp) + in_tp, rank);
    groups.own_replicas = world.split((place % size) * static_cast<int>(tp) + in_tp, rank);
    groups.shard = groups.own_shard.get();
  }
  groups.replicas = groups.own_replicas.get();
  RAGGED_ASSERT(ep >= 1 && shard_ranks % ep == 0, "the expert-parallel group lies inside the shard group");
  groups.ep = ep;
  if (ep > 1) {
    // A group of m members `stride` ranks apart, its color its first rank's
    // place among the groups (planner::group_span).
    const auto color = [rank](int64_t members, int64_t stride) {
      return static_cast<int>((rank / (members * stride)) * stride + rank % stride);
    };
    groups.own_expert = world.split(color(ep, tp), rank);
    groups.own_expert_shard = world.split(color(shard_ranks / ep, ep * tp), rank);
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
