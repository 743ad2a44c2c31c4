#pragma once
// The color every group of a rank's mesh is split by (MPI_Comm_split,
// ncclCommSplit; key = the rank, so each group numbers its members in world
// order), shared by the host's RankGroups and the GPU's NCCL communicators
// so that both executors form the same groups. A group of `members` ranks
// `stride` apart (planner::group_span) is named by its first rank's place
// among the groups of its kind.

#include <cstdint>

#include "planner/mesh.hpp"

namespace ragged::backend {

// The mesh of one pipeline stage's `world` ranks as the executors split it:
// `shard_ranks` (training.shard_group_size) is dp_shard x cp, the replicas
// are what tp x shard_ranks leaves.
planner::Mesh run_mesh(int world, int64_t shard_ranks, int64_t tp = 1, int64_t cp = 1, int64_t ep = 1);

// (rank / (members x stride)) x stride + rank % stride.
int group_color(int rank, planner::GroupSpan span);

struct GroupColors {
  int shard = 0, replicas = 0, tensor = 0, context = 0, expert = 0, expert_shard = 0;
};
GroupColors group_colors(int rank, const planner::Mesh& mesh);

}  // namespace ragged::backend
