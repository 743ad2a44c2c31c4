#pragma once
// The communicators one rank runs with, split from the world for HSDP.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "backend/communicator.hpp"

namespace ragged::backend {

// The communicators of one rank. The world numbers the data, sums the losses
// and judges; shard groups are consecutive ranks (rank / shard size: HSDP
// keeps a shard group inside a node); a shard's replicas are the ranks at the
// same place in every group (rank % shard size).
//
// Under tensor parallelism (docs/MESH.md: ranks numbered tp innermost) the
// tp group is `tp` consecutive ranks and the shard groups and replicas are
// formed as above among the ranks at the same place in every tp group.
struct RankGroups {
  Communicator* world = nullptr;
  Communicator* shard = nullptr;     // all-gathers, reduce-scatters, the optimizers' all-to-alls
  Communicator* replicas = nullptr;  // HSDP all-reduces (one rank without HSDP)
  Communicator* tensor = nullptr;    // the tp group's exchanges (null without tensor parallelism)
  std::unique_ptr<Communicator> own_shard, own_replicas, own_tensor;
  int64_t tp = 1;
  // This rank's data-parallel place (which sequences it reads; its tp group's
  // ranks share them) and the number of such places.
  int data_rank() const { return world->rank() / static_cast<int>(tp); }
  int data_ranks() const { return world->size() / static_cast<int>(tp); }
};
// Splits `world` (every rank calls it); without HSDP and tp the shard group
// is the world itself. Ordered reductions carry over from `world`.
RankGroups split_rank_groups(Communicator& world, int64_t shard_ranks, int64_t tp = 1);

// "4 mpi ranks", or under HSDP "4 mpi ranks (HSDP: 2 replicas of 2-rank shard groups)".
std::string describe(const RankGroups& groups, std::string_view kind);

}  // namespace ragged::backend
