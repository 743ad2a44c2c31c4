#pragma once
// The communicators one rank runs with, split from the world for HSDP.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "backend/communicator.hpp"
#include "planner/group.hpp"

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
  Communicator* context = nullptr;   // the cp group's keys and values (null without context parallelism)
  // Expert parallelism: the ep group's token all-to-alls, and the ranks
  // FSDP shards one ep rank's experts over (the same place in every ep
  // group of a shard group); null without it.
  Communicator* expert = nullptr;
  Communicator* expert_shard = nullptr;
  std::unique_ptr<Communicator> own_shard, own_replicas, own_tensor, own_context, own_expert, own_expert_shard;
  int64_t tp = 1;
  int64_t cp = 1;
  int64_t ep = 1;
  // The FSDP group of a unit planned over `group` (planner::UnitPlan::group).
  Communicator& fsdp(planner::Group group) const {
    return group == planner::Group::kExpertShard ? *expert_shard : *shard;
  }
  // This rank's data-parallel place (its tp group's ranks share its tokens)
  // and the number of such places; a cp group's places read the same
  // sequences, each its share of their tokens.
  int data_rank() const { return world->rank() / static_cast<int>(tp); }
  int data_ranks() const { return world->size() / static_cast<int>(tp); }
  int reading_rank() const { return data_rank() / static_cast<int>(cp); }
  int reading_ranks() const { return data_ranks() / static_cast<int>(cp); }
};
// Splits `world` (every rank calls it); without HSDP, tp and cp the shard
// group is the world itself. The cp group is the places cp x (place / cp)
// and on at the same tp place (ranks numbered tp innermost, then cp); the ep
// group `ep` consecutive places, the expert shard group the places of a
// shard group at the same place in their ep group (planner::group_span).
// Ordered reductions carry over from `world`.
RankGroups split_rank_groups(Communicator& world, int64_t shard_ranks, int64_t tp = 1, int64_t cp = 1,
                             int64_t ep = 1);

// "4 mpi ranks", or under HSDP "4 mpi ranks (HSDP: 2 replicas of 2-rank shard groups)".
std::string describe(const RankGroups& groups, std::string_view kind);

}  // namespace ragged::backend
