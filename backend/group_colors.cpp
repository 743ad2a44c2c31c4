#include "backend/group_colors.hpp"

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged::backend {

planner::Mesh run_mesh(int world, int64_t shard_ranks, int64_t tp, int64_t cp, int64_t ep) {
  RAGGED_ASSERT(tp >= 1 && world % tp == 0, "the tensor-parallel group divides the world");
  RAGGED_ASSERT(shard_ranks >= 1 && (world / tp) % shard_ranks == 0, "the shard group size divides the world");
  RAGGED_ASSERT(cp >= 1 && shard_ranks % cp == 0, "the context-parallel group lies inside the shard group");
  RAGGED_ASSERT(ep >= 1 && shard_ranks % ep == 0, "the expert-parallel group lies inside the shard group");
  planner::Mesh mesh;
  mesh.tp = tp;
  mesh.cp = cp;
  mesh.ep = ep;
  mesh.dp_shard = shard_ranks / cp;
  mesh.dp_replicate = world / tp / shard_ranks;
  return mesh;
}

int group_color(int rank, planner::GroupSpan span) {
  RAGGED_ASSERT(rank >= 0 && span.members >= 1 && span.stride >= 1,
                fmt::format("group_color: rank {} of a group of {} members {} apart", rank, span.members, span.stride));
  return static_cast<int>((rank / (span.members * span.stride)) * span.stride + rank % span.stride);
}

GroupColors group_colors(int rank, const planner::Mesh& mesh) {
  const auto color = [&](planner::Group group) { return group_color(rank, planner::group_span(mesh, group)); };
  GroupColors out;
  out.shard = color(planner::Group::kShard);
  out.replicas = color(planner::Group::kReplicate);
  out.tensor = color(planner::Group::kTensor);
  out.context = color(planner::Group::kContext);
  out.expert = color(planner::Group::kExpert);
  out.expert_shard = color(planner::Group::kExpertShard);
  return out;
}

}  // namespace ragged::backend
