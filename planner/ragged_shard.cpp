#include "planner/ragged_shard.hpp"

#include <algorithm>
#include <climits>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.hpp"

namespace ragged::planner {
namespace {

int64_t checked_product(const std::vector<int64_t>& shape, size_t from) {
  int64_t product = 1;
  for (size_t d = from; d < shape.size(); ++d) {
    if (shape[d] < 0) throw InputError(fmt::format("RaggedShard: dim {} has negative size {}", d, shape[d]));
    if (__builtin_mul_overflow(product, shape[d], &product)) {
      throw InputError(fmt::format("RaggedShard: shape [{}] overflows 64-bit element counts", fmt::join(shape, ", ")));
    }
  }
  return product;
}

int checked_world(int64_t ranks) {
  if (ranks < 1 || ranks > INT_MAX) throw InputError(fmt::format("RaggedShard: {} ranks is not a world size", ranks));
  return static_cast<int>(ranks);
}

}  // namespace

RaggedShard::RaggedShard(std::vector<int64_t> shape, int prefix_dims, std::vector<int64_t> local_units)
    : shape_(std::move(shape)), prefix_dims_(prefix_dims), local_units_(std::move(local_units)) {
  numel_ = checked_product(shape_, 0);
  if (numel_ == 0) throw InputError("RaggedShard: the tensor has no elements");
  if (prefix_dims_ < 0 || prefix_dims_ > static_cast<int>(shape_.size())) {
    throw InputError(fmt::format("RaggedShard: prefix dims {} outside [0, {}] for shape [{}]", prefix_dims_,
                                 shape_.size(), fmt::join(shape_, ", ")));
  }
  if (local_units_.empty() || local_units_.size() > static_cast<size_t>(INT_MAX)) {
    throw InputError(fmt::format("RaggedShard: {} local_units entries is not a world size", local_units_.size()));
  }
  prefix_.assign(local_units_.size() + 1, 0);
  for (size_t r = 0; r < local_units_.size(); ++r) {
    if (local_units_[r] < 0) throw InputError(fmt::format("RaggedShard: rank {} holds {} units", r, local_units_[r]));
    if (__builtin_add_overflow(prefix_[r], local_units_[r], &prefix_[r + 1])) {
      throw InputError("RaggedShard: local_units sum overflows 64 bits");
    }
  }
  const int64_t total = prefix_.back();
  if (total == 0 || numel_ % total != 0) {
    throw InputError(fmt::format("RaggedShard: local_units sum {} does not divide numel {}", total, numel_));
  }
  unit_ = numel_ / total;
  suffix_numel_ = checked_product(shape_, static_cast<size_t>(prefix_dims_));
  if (unit_ % suffix_numel_ != 0) {
    // Suffix dims are never split: a unit holds whole slices of them.
    throw InputError(
        fmt::format("RaggedShard: a unit of {} elements is not a whole number of the {}-element slices "
                    "below the {} prefix dims of shape [{}]",
                    unit_, suffix_numel_, prefix_dims_, fmt::join(shape_, ", ")));
  }
}

RaggedShard RaggedShard::whole_on(int root, int world, std::vector<int64_t> shape) {
  if (world < 1 || root < 0 || root >= world) {
    throw InputError(fmt::format("RaggedShard: root {} is not a rank of a world of {}", root, world));
  }
  std::vector<int64_t> units(static_cast<size_t>(world), 0);
  units[static_cast<size_t>(root)] = 1;
  return RaggedShard(std::move(shape), 0, std::move(units));
}

void RaggedShard::check_rank(int rank) const {
  RAGGED_ASSERT(rank >= 0 && rank < world_size(), fmt::format("rank {} outside a world of {}", rank, world_size()));
}

int64_t RaggedShard::local_units(int rank) const {
  check_rank(rank);
  return local_units_[static_cast<size_t>(rank)];
}

std::pair<int64_t, int64_t> RaggedShard::flat_interval(int rank) const {
  check_rank(rank);
  const auto r = static_cast<size_t>(rank);
  return {prefix_[r] * unit_, prefix_[r + 1] * unit_};
}

int64_t RaggedShard::local_numel(int rank) const { return local_units(rank) * unit_; }

std::vector<int64_t> RaggedShard::local_shape(int rank) const {
  const int64_t units = local_units(rank);
  if (prefix_dims_ == 0) return units > 0 ? shape_ : std::vector<int64_t>{0};
  std::vector<int64_t> local{units * unit_ / suffix_numel_};
  local.insert(local.end(), shape_.begin() + prefix_dims_, shape_.end());
  return local;
}

bool same_placement(const RaggedShard& a, const RaggedShard& b) {
  if (a.shape() != b.shape() || a.world_size() != b.world_size()) return false;
  for (int r = 0; r < a.world_size(); ++r) {
    if (a.flat_interval(r) != b.flat_interval(r)) return false;
  }
  return true;
}

RaggedShard shard_from_contiguous(const std::vector<int64_t>& shape, int64_t granule, int64_t offset,
                                  int64_t shard_size, int64_t ranks) {
  const int world = checked_world(ranks);
  const int64_t numel = checked_product(shape, 0);
  int64_t buffer = 0;
  if (granule < 1 || shard_size < 1 || offset < 0 || __builtin_mul_overflow(shard_size, ranks, &buffer) ||
      offset > buffer || numel > buffer - offset) {
    throw InputError(
        fmt::format("RaggedShard: a tensor of {} elements at offset {} (granule {}) does not fit "
                    "{} shards of {} elements",
                    numel, offset, granule, ranks, shard_size));
  }
  const int64_t end = offset + numel;
  const int64_t first = offset / shard_size;
  const int64_t last = numel > 0 ? (end - 1) / shard_size : first;
  auto piece = [&](int64_t r) { return std::min(end, (r + 1) * shard_size) - std::max(offset, r * shard_size); };

  // Pieces between the first and the last are all S long.
  int64_t unit = std::gcd(granule, numel);
  unit = std::gcd(unit, piece(first));
  unit = std::gcd(unit, piece(last));
  if (last - first >= 2) unit = std::gcd(unit, shard_size);

  // The fewest prefix dims whose suffix slices divide the unit.
  int k = 0;
  while (k < static_cast<int>(shape.size()) && unit % checked_product(shape, static_cast<size_t>(k)) != 0) ++k;

  std::vector<int64_t> units(static_cast<size_t>(world), 0);
  if (unit > 0) {
    for (int64_t r = first; r <= last; ++r) units[static_cast<size_t>(r)] = piece(r) / unit;
  }
  return RaggedShard(shape, k, std::move(units));
}

RaggedShard shard_from_rank_major(const std::vector<int64_t>& shape, ChunkRule rule, int64_t ranks) {
  const int world = checked_world(ranks);
  const int64_t numel = checked_product(shape, 0);
  std::vector<int64_t> units(static_cast<size_t>(world), 0);
  // Chunks of `chunk` units out of `total`: the trailing ranks get fewer or none.
  auto fill = [&](int64_t total, int64_t chunk) {
    for (int64_t r = 0; r < world && r * chunk < total; ++r)
      units[static_cast<size_t>(r)] = std::min(chunk, total - r * chunk);
  };
  if (rule == ChunkRule::kDim0Rows) {
    if (shape.empty()) throw InputError("RaggedShard: torch.chunk over dim 0 needs a tensor of at least one dim");
    fill(shape[0], (shape[0] + ranks - 1) / ranks);
    return RaggedShard(shape, 1, std::move(units));
  }
  fill(numel, (numel + ranks - 1) / ranks);
  return RaggedShard(shape, static_cast<int>(shape.size()), std::move(units));
}

}  // namespace ragged::planner
