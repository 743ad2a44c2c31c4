#include "planner/layout_check.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

namespace ragged::planner {
namespace {

void check_contiguous(const UnitProblem& p, const UnitLayout& l, std::vector<std::string>& out) {
  const int64_t S = l.shard_size;
  std::vector<size_t> order(p.tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return l.slots[a].offset < l.slots[b].offset; });
  int64_t end_of_previous = 0;
  for (size_t i : order) {
    const PlanTensor& t = p.tensors[i];
    const TensorSlot& slot = l.slots[i];
    if (slot.length != t.elements) out.push_back(fmt::format("tensor {}: length {} != {} elements", i, slot.length, t.elements));
    if (slot.offset < end_of_previous) out.push_back(fmt::format("tensor {}: starts at {} inside the previous tensor (ends {})", i, slot.offset, end_of_previous));
    if (slot.offset % p.tensor_align != 0) out.push_back(fmt::format("tensor {}: start {} not a multiple of {}", i, slot.offset, p.tensor_align));
    const int64_t end = slot.offset + t.elements;
    if (end > S * l.ranks) out.push_back(fmt::format("tensor {}: ends at {} beyond the buffer of {}", i, end, S * l.ranks));
    end_of_previous = std::max(end_of_previous, end);
    if (!l.honours_granularity || t.granule <= 1 || S <= 0) continue;
    // Every shard boundary strictly inside the tensor is on a granule boundary.
    for (int64_t b = (slot.offset / S + 1) * S; b < end; b += S) {
      if ((b - slot.offset) % t.granule != 0) {
        out.push_back(fmt::format("tensor {}: shard boundary {} cuts a granule of {} (offset {} into the tensor)", i, b, t.granule, b - slot.offset));
        break;
      }
    }
  }
}

void check_rank_major(const UnitProblem& p, const UnitLayout& l, std::vector<std::string>& out) {
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    const TensorSlot& slot = l.slots[i];
    int64_t need = chunk_elements(p.tensors[i], l.ranks, l.chunk_rule);
    if (slot.length < need) out.push_back(fmt::format("tensor {}: chunk {} < {} needed", i, slot.length, need));
    if (slot.offset < 0 || slot.offset + slot.length > l.shard_size) {
      out.push_back(fmt::format("tensor {}: chunk [{}, {}) outside the shard of {}", i, slot.offset, slot.offset + slot.length, l.shard_size));
    }
    spans.emplace_back(slot.offset, slot.offset + slot.length);
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].first < spans[i - 1].second) out.push_back(fmt::format("chunks overlap at {}", spans[i].first));
  }
}

}  // namespace

int64_t chunk_elements(const PlanTensor& t, int64_t ranks, ChunkRule rule) {
  if (rule == ChunkRule::kDim0Rows) return (t.dim0 + ranks - 1) / ranks * t.dim0_stride;
  return (t.elements + ranks - 1) / ranks;
}

std::vector<std::string> layout_problems(const UnitProblem& problem, const UnitLayout& layout) {
  std::vector<std::string> out;
  if (layout.slots.size() != problem.tensors.size()) {
    out.push_back(fmt::format("{} slots for {} tensors", layout.slots.size(), problem.tensors.size()));
    return out;
  }
  if (layout.ranks != problem.ranks) out.push_back(fmt::format("layout for {} ranks, problem has {}", layout.ranks, problem.ranks));
  if (layout.shard_size < 0 || (layout.aligned_shards && layout.shard_size % problem.collective_align != 0)) {
    out.push_back(fmt::format("shard size {} not a multiple of the collective alignment {}", layout.shard_size, problem.collective_align));
  }
  if (layout.shard_size * layout.ranks < problem.total_elements()) {
    out.push_back(fmt::format("buffer of {} holds fewer than the {} elements", layout.shard_size * layout.ranks, problem.total_elements()));
  }
  // The bound covers contiguous layouts that keep granules whole and shards aligned.
  if (layout.lower_bound_shard_size > layout.shard_size && layout.placement == Placement::kContiguous &&
      layout.honours_granularity && layout.aligned_shards) {
    out.push_back(fmt::format("shard size {} below the lower bound {}", layout.shard_size, layout.lower_bound_shard_size));
  }
  if (layout.placement == Placement::kContiguous) {
    check_contiguous(problem, layout, out);
  } else {
    check_rank_major(problem, layout, out);
  }
  return out;
}

}  // namespace ragged::planner
