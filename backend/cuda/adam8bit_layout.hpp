#pragma once
// Where block-wise 8-bit Adam's quantisation blocks lie in one rank's shard,
// as the GPU kernel reads them (adam8bit_kernels.hpp): a table with one entry
// per block (tile), enumerated exactly as the host's adam8bit_step does it
// (backend/optimizer_adam8bit.cpp): the unit's shard views in order, and in
// each view of an 8-bit matrix, band by band, tiles left to right. Block k
// owns scale k, so the scales of consecutive views follow one another as in
// the host's HostOptimizer (scale_base). The views of every other tensor are
// AdamW ranges with fp32 moments packed one after another; padding between
// views belongs to neither and is never updated (as on the host).
//
// Host-only (no CUDA): built once per unit, tested without a GPU.

#include <cstdint>
#include <vector>

#include "backend/unit_shard.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::backend::gpu {

// One quantisation block: `rows` runs of `cols` elements, the first at shard
// offset `start`, each `row_stride` after the previous (a flat block is one run).
struct Adam8bitTile {
  int64_t start = 0;
  int64_t row_stride = 0;
  int32_t rows = 0;
  int32_t cols = 0;

  int64_t elements() const { return int64_t{rows} * cols; }
  bool operator==(const Adam8bitTile&) const = default;
};

// A view updated by AdamW: `elements` shard elements from `shard_offset`,
// whose fp32 m and v sit at `state_offset` of the unit's packed moments.
struct AdamWRange {
  int64_t shard_offset = 0;
  int64_t state_offset = 0;
  int64_t elements = 0;

  bool operator==(const AdamWRange&) const = default;
};

struct Adam8bitLayout {
  std::vector<Adam8bitTile> tiles;  // tile k owns m_scales[k] and v_scales[k]
  std::vector<AdamWRange> adamw;
  int64_t adamw_elements = 0;  // the packed fp32 moments' length
};

// The layout of `shard` under `optimizer` (which has adam8bit). Every 8-bit
// view must start on a tile row (plan_for_run checks it for every rank).
Adam8bitLayout adam8bit_layout(const UnitShard& shard, const scenarios::Optimizer& optimizer);

}  // namespace ragged::backend::gpu
