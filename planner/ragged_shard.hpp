#pragma once
// RaggedShard placement (../shared/reference/vescale.md): `dims` is a prefix
// (0..k-1) of the tensor's dims flattened together, the suffix dims are never
// split; rank r holds local_units[r] units (0 and uneven allowed) of
// numel / sum(local_units) elements each, i.e. the flat 1-D slice
// [P(r)*u, P(r+1)*u) of the flattened tensor (P the prefix sum).
// k = 0 (dims = ()) keeps the whole tensor on one rank (Muon's root).

#include <cstdint>
#include <utility>
#include <vector>

#include "planner/unit_layout.hpp"

namespace ragged::planner {

class RaggedShard {
 public:
  // Throws InputError when the shape is empty of elements, prefix_dims is not
  // in [0, ndim], a count is negative, the unit count does not divide numel,
  // or a unit is not a whole number of suffix slices.
  RaggedShard(std::vector<int64_t> shape, int prefix_dims, std::vector<int64_t> local_units);

  // dims = (): the whole tensor on `root` of `world` ranks.
  static RaggedShard whole_on(int root, int world, std::vector<int64_t> shape);

  const std::vector<int64_t>& shape() const { return shape_; }
  int prefix_dims() const { return prefix_dims_; }
  int world_size() const { return static_cast<int>(local_units_.size()); }
  int64_t numel() const { return numel_; }
  int64_t unit_elements() const { return unit_; }
  int64_t units_total() const { return prefix_.back(); }
  int64_t suffix_numel() const { return suffix_numel_; }  // elements of one slice of the unsplit dims

  int64_t local_units(int rank) const;
  const std::vector<int64_t>& all_local_units() const { return local_units_; }
  std::pair<int64_t, int64_t> flat_interval(int rank) const;  // [begin, end) of the flattened tensor
  int64_t local_numel(int rank) const;
  // k = 0: the full shape on the owner, {0} elsewhere; otherwise the number of
  // prefix-flattened rows held, then the suffix dims.
  std::vector<int64_t> local_shape(int rank) const;
  bool is_whole_on(int rank) const { return local_numel(rank) == numel_; }

  bool operator==(const RaggedShard& other) const {
    return shape_ == other.shape_ && prefix_dims_ == other.prefix_dims_ && local_units_ == other.local_units_;
  }

 private:
  void check_rank(int rank) const;

  std::vector<int64_t> shape_;
  int prefix_dims_ = 0;
  std::vector<int64_t> local_units_;
  std::vector<int64_t> prefix_;  // prefix_[r] = units held by ranks < r; size world + 1
  int64_t numel_ = 0;
  int64_t suffix_numel_ = 1;
  int64_t unit_ = 0;
};

// True when both place every element on the same rank (the units may differ).
bool same_placement(const RaggedShard& a, const RaggedShard& b);

// The placement a contiguous UnitLayout gives a tensor at `offset` of a buffer
// of ranks * shard_size: rank r holds [offset, offset + numel) ∩ [r*S, (r+1)*S).
// The unit is gcd(granule, numel, every piece), over the fewest prefix dims
// whose suffix slices divide it (row granules give row units, element-wise
// ones k = ndim, a tensor on one rank with a whole-tensor granule dims = ()).
// O(ranks).
RaggedShard shard_from_contiguous(const std::vector<int64_t>& shape, int64_t granule, int64_t offset,
                                  int64_t shard_size, int64_t ranks);

// The placement of a rank-major strategy: kDim0Rows is torch.chunk over dim 0
// (ceil(d0/m) rows per rank, trailing ranks fewer or none; row units),
// kElements is ZeRO-3 (ceil(n/m) elements per rank, the last ones fewer; element units).
RaggedShard shard_from_rank_major(const std::vector<int64_t>& shape, ChunkRule rule, int64_t ranks);

}  // namespace ragged::planner
