#pragma once
// Ragged -> Ragged redistribution as one variable-size all-to-all: every rank
// sends the intersection of its source interval with each destination
// interval. Muon gathers a whole matrix to its root with
// redistribute(shard, RaggedShard::whole_on(root, ...)) and scatters the
// result back with the reverse.
//
// The transfers come out in increasing order of the flattened tensor, so for
// every rank its sends (and its receives) are consecutive slices of its local
// storage in peer order: send_counts/recv_counts with their exclusive prefix
// sums as displacements drive an all-to-allv straight on the local shards.

#include <cstdint>
#include <vector>

#include "planner/ragged_shard.hpp"

namespace ragged::planner {

struct Transfer {
  int src_rank = 0;
  int dst_rank = 0;
  int64_t src_offset = 0;  // into the source rank's local flat storage
  int64_t dst_offset = 0;  // into the destination rank's local flat storage
  int64_t elements = 0;

  bool operator==(const Transfer&) const = default;
};

// Throws InputError unless both have the same shape and world size. Every
// transfer is non-empty; a rank's transfer to itself (a local copy) is included.
// O(world + transfers).
std::vector<Transfer> redistribute(const RaggedShard& from, const RaggedShard& to);

// Elements `rank` sends to (receives from) each of the `world` peers, itself included.
std::vector<int64_t> send_counts(const std::vector<Transfer>& transfers, int rank, int world);
std::vector<int64_t> recv_counts(const std::vector<Transfer>& transfers, int rank, int world);

// What one redistribution moves over the network; transfers from a rank to
// itself are local copies, counted only in local_elements.
struct RedistributionCost {
  int64_t max_send_elements = 0;  // the busiest sender
  int64_t max_recv_elements = 0;  // the busiest receiver
  int64_t total_elements = 0;     // over all messages
  int messages = 0;               // transfers between distinct ranks
  int64_t local_elements = 0;     // copied within a rank
};

RedistributionCost redistribution_cost(const std::vector<Transfer>& transfers, int world);

}  // namespace ragged::planner
