#include "planner/redistribution.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.hpp"

namespace ragged::planner {
namespace {

std::vector<int64_t> counts(const std::vector<Transfer>& transfers, int rank, int world, bool sending) {
  RAGGED_ASSERT(world >= 1 && rank >= 0 && rank < world, fmt::format("rank {} outside a world of {}", rank, world));
  std::vector<int64_t> out(static_cast<size_t>(world), 0);
  for (const Transfer& t : transfers) {
    const int self = sending ? t.src_rank : t.dst_rank;
    const int peer = sending ? t.dst_rank : t.src_rank;
    if (self != rank) continue;
    RAGGED_ASSERT(peer >= 0 && peer < world, fmt::format("transfer peer {} outside a world of {}", peer, world));
    out[static_cast<size_t>(peer)] += t.elements;
  }
  return out;
}

}  // namespace

std::vector<Transfer> redistribute(const RaggedShard& from, const RaggedShard& to) {
  if (from.shape() != to.shape() || from.world_size() != to.world_size()) {
    throw InputError(fmt::format("redistribution between shape [{}] over {} ranks and shape [{}] over {} ranks",
                                 fmt::join(from.shape(), ", "), from.world_size(), fmt::join(to.shape(), ", "),
                                 to.world_size()));
  }
  // Both placements tile [0, numel) in rank order: sweep the two tilings.
  const int world = from.world_size();
  std::vector<Transfer> transfers;
  int src = 0, dst = 0;
  int64_t pos = 0;
  while (pos < from.numel()) {
    while (from.flat_interval(src).second <= pos) ++src;  // skips ranks holding nothing
    while (to.flat_interval(dst).second <= pos) ++dst;
    RAGGED_ASSERT(src < world && dst < world, "both placements cover the tensor");
    const auto [src_begin, src_end] = from.flat_interval(src);
    const auto [dst_begin, dst_end] = to.flat_interval(dst);
    const int64_t end = std::min(src_end, dst_end);
    transfers.push_back({src, dst, pos - src_begin, pos - dst_begin, end - pos});
    pos = end;
  }
  return transfers;
}

std::vector<int64_t> send_counts(const std::vector<Transfer>& transfers, int rank, int world) {
  return counts(transfers, rank, world, true);
}

std::vector<int64_t> recv_counts(const std::vector<Transfer>& transfers, int rank, int world) {
  return counts(transfers, rank, world, false);
}

RedistributionCost redistribution_cost(const std::vector<Transfer>& transfers, int world) {
  RAGGED_ASSERT(world >= 1, "a redistribution needs at least one rank");
  std::vector<int64_t> sent(static_cast<size_t>(world), 0), received(static_cast<size_t>(world), 0);
  RedistributionCost cost;
  for (const Transfer& t : transfers) {
    RAGGED_ASSERT(t.src_rank >= 0 && t.src_rank < world && t.dst_rank >= 0 && t.dst_rank < world,
                  fmt::format("transfer {} -> {} outside a world of {}", t.src_rank, t.dst_rank, world));
    if (t.src_rank == t.dst_rank) {
      cost.local_elements += t.elements;
      continue;
    }
    sent[static_cast<size_t>(t.src_rank)] += t.elements;
    received[static_cast<size_t>(t.dst_rank)] += t.elements;
    cost.total_elements += t.elements;
    ++cost.messages;
  }
  cost.max_send_elements = *std::max_element(sent.begin(), sent.end());
  cost.max_recv_elements = *std::max_element(received.begin(), received.end());
  return cost;
}

}  // namespace ragged::planner
