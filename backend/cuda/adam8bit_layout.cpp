#include "backend/cuda/adam8bit_layout.hpp"

#include <algorithm>
#include <limits>

#include "backend/host_optimizer.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu {
namespace {

int32_t narrow(int64_t value) {
  RAGGED_ASSERT(value >= 0 && value <= std::numeric_limits<int32_t>::max(), "adam8bit: a tile side exceeds int32");
  return static_cast<int32_t>(value);
}

}  // namespace

Adam8bitLayout adam8bit_layout(const UnitShard& shard, const scenarios::Optimizer& optimizer) {
  RAGGED_ASSERT(optimizer.has_adam8bit(), "adam8bit_layout: the optimizer is not 8-bit Adam");
  Adam8bitLayout layout;
  for (const planner::ShardView& view : shard.views()) {
    const models::TensorSpec& t = shard.spec().tensors[static_cast<size_t>(view.tensor)];
    if (tensor_rule(optimizer, t) != TensorRule::kAdam8bit) {
      layout.adamw.push_back({view.shard_offset, layout.adamw_elements, view.elements});
      layout.adamw_elements += view.elements;
      continue;
    }
    const Adam8bitTiles tiles = adam8bit_tiles(optimizer, t, view.tensor_offset);
    RAGGED_ASSERT(starts_tile_row(tiles, view.tensor_offset), "a shard must start 8-bit Adam's tiles on a tile row");
    for (const Adam8bitBlock& b : adam8bit_blocks(view.elements, tiles)) {
      layout.tiles.push_back({view.shard_offset + b.start, b.row_stride, narrow(b.rows), narrow(b.cols)});
    }
  }
  return layout;
}

}  // namespace ragged::backend::gpu
