#include "backend/rank_groups.hpp"

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged::backend {

RankGroups split_rank_groups(Communicator& world, int64_t shard_ranks) {
  RAGGED_ASSERT(shard_ranks >= 1 && world.size() % shard_ranks == 0, "the shard group size divides the world");
  RankGroups groups;
  groups.world = &world;
  if (shard_ranks == world.size()) {
    groups.shard = &world;
    groups.own_replicas = make_local_communicator();
    groups.own_replicas->set_ordered_reductions(world.ordered_reductions());
  } else {
    const int rank = world.rank();
    const int size = static_cast<int>(shard_ranks);
    groups.own_shard = world.split(rank / size, rank);
    groups.own_replicas = world.split(rank % size, rank);
    groups.shard = groups.own_shard.get();
  }
  groups.replicas = groups.own_replicas.get();
  return groups;
}

std::string describe(const RankGroups& groups, std::string_view kind) {
  const int ranks = groups.world->size();
  std::string text = fmt::format("{} {} rank{}", ranks, kind, ranks == 1 ? "" : "s");
  if (groups.replicas->size() > 1) {
    text += fmt::format(" (HSDP: {} replicas of {}-rank shard groups)", groups.replicas->size(), groups.shard->size());
  }
  return text;
}

}  // namespace ragged::backend
