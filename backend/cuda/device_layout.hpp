#pragma once
// Where a unit's data sits in the buffers the GPU executor moves, computed
// on the host once (no CUDA here, so it is tested on every machine): the
// DBuffer's copy-out pieces as one table per unit, and the gaps of a
// gathered buffer that hold no tensor element (padding), which must be zero
// before a reduce-scatter sums them.

#include <cstdint>
#include <utility>
#include <vector>

#include "backend/unit_shard.hpp"

namespace ragged::backend::gpu {

// One run of a piece copy, offsets in elements (the device array is made of
// these; see executor_kernels.hpp).
struct PieceRun {
  int64_t src_offset = 0;
  int64_t dst_offset = 0;
  int64_t elements = 0;
};

// Rank-major units: every tensor's pieces from the gathered [m][S] buffer
// to the per-tensor concatenation (empty pieces dropped). Contiguous units
// have none.
std::vector<PieceRun> copy_out_runs(const UnitShard& shard);
// The same runs, per-tensor concatenation -> gathered buffer.
std::vector<PieceRun> reversed(std::vector<PieceRun> runs);

// [begin, end) ranges of the gathered [m][S] buffer that no tensor element
// occupies: for contiguous units the gaps between the tensors' intervals,
// for rank-major units the tails of the ranks' chunks.
std::vector<std::pair<int64_t, int64_t>> gathered_padding(const UnitShard& shard);

}  // namespace ragged::backend::gpu
