#pragma once
// The DBuffer address map of one unit (../shared/reference/vescale.md): where
// every tensor's sharded and unsharded views live in the unit's buffer.
//  - contiguous placement: rank k's shard is [k*S, (k+1)*S) of the global
//    buffer; tensor t's sharded view there is that window ∩ [l_t, l_t + e_t),
//    its unsharded view is [l_t, l_t + e_t) of the gathered buffer (zero copy);
//  - rank-major placement (FSDP2, ZeRO-3): every shard holds the valid part of
//    one chunk of every tensor at slot.offset; the gathered buffer is [m][S]
//    and the tensor is copied out of it piece by piece.

#include <cstdint>
#include <string>
#include <vector>

#include "planner/unit_layout.hpp"
#include "planner/unit_problem.hpp"

namespace ragged::planner {

// Elements [tensor_offset, +elements) of tensor `tensor`'s flat data stored at
// [shard_offset, +elements) of one rank's shard.
struct ShardView {
  int tensor = 0;
  int64_t shard_offset = 0;
  int64_t tensor_offset = 0;
  int64_t elements = 0;

  bool operator==(const ShardView&) const = default;
};

// One copy of a rank-major copy-out: from the [m][S] gathered buffer into the tensor.
struct CopyPiece {
  int64_t src_offset = 0;  // j*S + slot.offset for rank j
  int64_t dst_offset = 0;  // into the tensor's flat data
  int64_t elements = 0;    // the valid part of rank j's chunk (0 for trailing ranks)
};

class DBufferMap {
 public:
  // Asserts (InternalError) that the layout fits the problem: one slot per
  // tensor, tensors disjoint and inside the buffer, chunks inside the shard.
  DBufferMap(const UnitProblem& problem, const UnitLayout& layout);

  int64_t shard_size() const { return shard_size_; }
  int64_t ranks() const { return ranks_; }
  Placement placement() const { return placement_; }

  // The views of `rank`'s shard, sorted by shard_offset, empty ones left out.
  // O(log T + views) for contiguous placement, O(T) for rank-major.
  std::vector<ShardView> shard_views(int64_t rank) const;
  // S minus the elements of every view on `rank`.
  int64_t padding_in_shard(int64_t rank) const;
  // Contiguous placement: l_t, the start of the tensor's view of the gathered buffer.
  int64_t unsharded_offset(int tensor) const;
  // Rank-major placement: one piece per rank j (pieces[j]), in rank order.
  std::vector<CopyPiece> copy_out_pieces(int tensor) const;

 private:
  // Rank j's valid chunk of tensor t (rank-major): {offset in the tensor, elements}.
  std::pair<int64_t, int64_t> chunk_of(size_t tensor, int64_t rank) const;
  void check_rank(int64_t rank) const;
  void check_tensor(int tensor) const;

  int64_t shard_size_ = 0;
  int64_t ranks_ = 1;
  Placement placement_ = Placement::kContiguous;
  ChunkRule rule_ = ChunkRule::kElements;
  std::vector<PlanTensor> tensors_;
  std::vector<TensorSlot> slots_;
  std::vector<int64_t> chunks_;  // rank-major: the nominal chunk of each tensor
  std::vector<int> by_offset_;   // non-empty tensors by slot offset
  std::vector<int64_t> ends_;    // contiguous: their ends, in the same order (non-decreasing)
};

// Free-function form of DBufferMap(problem, layout).shard_views(rank).
std::vector<ShardView> shard_views(const UnitProblem& problem, const UnitLayout& layout, int64_t rank);

// An element-wise kernel over a group's shards: DBuffer runs identical kernels
// of every tensor of the unit as one launch over the whole shard of S
// elements. The padding holds zeros, which zero, scale, cast and add keep at
// zero, so covering it is harmless and keeps the launch a single flat loop.
struct GroupOp {
  std::string kind;  // "zero", "scale", "cast", "add"
  int64_t elements = 0;
  int launches = 0;
};

// Per rank and step: zero (the gradient shard), scale (gradient averaging),
// cast (master fp32 -> compute dtype), add (gradient accumulation); one launch
// each, none when the shard is empty.
std::vector<GroupOp> fused_group_ops(const UnitLayout& layout);

}  // namespace ragged::planner
