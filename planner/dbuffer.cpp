#include "planner/dbuffer.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "planner/layout_check.hpp"

namespace ragged::planner {

DBufferMap::DBufferMap(const UnitProblem& problem, const UnitLayout& layout)
    : shard_size_(layout.shard_size),
      ranks_(layout.ranks),
      placement_(layout.placement),
      rule_(layout.chunk_rule),
      tensors_(problem.tensors),
      slots_(layout.slots) {
  RAGGED_ASSERT(slots_.size() == tensors_.size(),
                fmt::format("{} slots for {} tensors", slots_.size(), tensors_.size()));
  RAGGED_ASSERT(ranks_ >= 1 && shard_size_ >= 0, fmt::format("{} ranks, shard of {}", ranks_, shard_size_));
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (placement_ == Placement::kRankMajor) {
      const PlanTensor& t = tensors_[i];
      RAGGED_ASSERT(
          rule_ == ChunkRule::kElements || t.dim0 * t.dim0_stride == t.elements,
          fmt::format("tensor {}: {} rows of {} are not its {} elements", i, t.dim0, t.dim0_stride, t.elements));
      chunks_.push_back(chunk_elements(t, ranks_, rule_));
      RAGGED_ASSERT(slots_[i].length >= chunks_.back(), fmt::format("tensor {}: chunk slot too short", i));
    }
    if (tensors_[i].elements > 0) by_offset_.push_back(static_cast<int>(i));
  }
  std::sort(by_offset_.begin(), by_offset_.end(), [&](int a, int b) { return slots_[a].offset < slots_[b].offset; });
  const int64_t limit = placement_ == Placement::kContiguous ? shard_size_ * ranks_ : shard_size_;
  int64_t end_of_previous = 0;
  for (int i : by_offset_) {
    const TensorSlot& slot = slots_[static_cast<size_t>(i)];
    const int64_t end =
        slot.offset + (placement_ == Placement::kContiguous ? tensors_[static_cast<size_t>(i)].elements : slot.length);
    RAGGED_ASSERT(
        slot.offset >= end_of_previous && end <= limit,
        fmt::format("tensor {}: [{}, {}) overlaps another or leaves the buffer of {}", i, slot.offset, end, limit));
    end_of_previous = end;
    ends_.push_back(end);
  }
}

void DBufferMap::check_rank(int64_t rank) const {
  RAGGED_ASSERT(rank >= 0 && rank < ranks_, fmt::format("rank {} outside {} ranks", rank, ranks_));
}

void DBufferMap::check_tensor(int tensor) const {
  RAGGED_ASSERT(tensor >= 0 && static_cast<size_t>(tensor) < tensors_.size(), fmt::format("no tensor {}", tensor));
}

std::pair<int64_t, int64_t> DBufferMap::chunk_of(size_t tensor, int64_t rank) const {
  const int64_t chunk = chunks_[tensor];
  const int64_t begin = std::min(rank * chunk, tensors_[tensor].elements);
  return {begin, std::min(chunk, tensors_[tensor].elements - begin)};
}

std::vector<ShardView> DBufferMap::shard_views(int64_t rank) const {
  check_rank(rank);
  std::vector<ShardView> views;
  if (placement_ == Placement::kRankMajor) {
    for (int i : by_offset_) {
      const auto [tensor_offset, elements] = chunk_of(static_cast<size_t>(i), rank);
      if (elements > 0) views.push_back({i, slots_[static_cast<size_t>(i)].offset, tensor_offset, elements});
    }
    return views;
  }
  const int64_t window_begin = rank * shard_size_;
  const int64_t window_end = window_begin + shard_size_;
  // The first tensor ending after the window starts; tensors are disjoint, so ends are sorted too.
  auto k = static_cast<size_t>(std::upper_bound(ends_.begin(), ends_.end(), window_begin) - ends_.begin());
  for (; k < by_offset_.size(); ++k) {
    const int i = by_offset_[k];
    const int64_t offset = slots_[static_cast<size_t>(i)].offset;
    if (offset >= window_end) break;
    const int64_t begin = std::max(offset, window_begin);
    const int64_t end = std::min(ends_[k], window_end);
    views.push_back({i, begin - window_begin, begin - offset, end - begin});
  }
  return views;
}

int64_t DBufferMap::padding_in_shard(int64_t rank) const {
  int64_t used = 0;
  for (const ShardView& v : shard_views(rank)) used += v.elements;
  return shard_size_ - used;
}

int64_t DBufferMap::unsharded_offset(int tensor) const {
  check_tensor(tensor);
  RAGGED_ASSERT(placement_ == Placement::kContiguous, "a rank-major tensor has no view of the gathered buffer");
  return slots_[static_cast<size_t>(tensor)].offset;
}

std::vector<CopyPiece> DBufferMap::copy_out_pieces(int tensor) const {
  check_tensor(tensor);
  RAGGED_ASSERT(placement_ == Placement::kRankMajor,
                "a contiguous tensor is a view of the gathered buffer, not a copy");
  const auto t = static_cast<size_t>(tensor);
  std::vector<CopyPiece> pieces;
  pieces.reserve(static_cast<size_t>(ranks_));
  for (int64_t j = 0; j < ranks_; ++j) {
    const auto [tensor_offset, elements] = chunk_of(t, j);
    pieces.push_back({j * shard_size_ + slots_[t].offset, tensor_offset, elements});
  }
  return pieces;
}

std::vector<ShardView> shard_views(const UnitProblem& problem, const UnitLayout& layout, int64_t rank) {
  return DBufferMap(problem, layout).shard_views(rank);
}

std::vector<GroupOp> fused_group_ops(const UnitLayout& layout) {
  const int launches = layout.shard_size > 0 ? 1 : 0;
  std::vector<GroupOp> ops;
  for (const char* kind : {"zero", "scale", "cast", "add"}) ops.push_back({kind, layout.shard_size, launches});
  return ops;
}

}  // namespace ragged::planner
