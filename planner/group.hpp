#pragma once

#include <cstddef>
#include <string_view>

namespace ragged::planner {

// Which ranks a collective runs over (planner/mesh.hpp places them).
enum class Group {
  kNone,
  kShard,        // the shard group (FSDP over dp_shard x cp)
  kReplicate,    // the replicas of one shard (HSDP all-reduce)
  kTensor,       // the tp ranks of one model copy
  kContext,      // the cp ranks sharing one sequence
  kExpert,       // the ep ranks the routed experts are spread over
  kExpertShard,  // the ranks FSDP shards one rank's routed experts over (dp_shard x cp / ep)
  kPipeline,     // the pp ranks of one stage's coordinates: a send or receive goes to a neighbour
};
inline constexpr size_t kGroups = 8;
std::string_view group_name(Group group);  // "shard", "tensor", ...

}  // namespace ragged::planner
