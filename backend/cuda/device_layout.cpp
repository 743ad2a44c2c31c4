#include "backend/cuda/device_layout.hpp"

#include <algorithm>

namespace ragged::backend::gpu {

std::vector<PieceRun> copy_out_runs(const UnitShard& shard) {
  std::vector<PieceRun> runs;
  if (shard.contiguous()) return runs;
  const std::vector<int64_t> per_tensor = shard.tensor_offsets(true);
  for (size_t t = 0; t < per_tensor.size(); ++t) {
    for (const planner::CopyPiece& piece : shard.map().copy_out_pieces(static_cast<int>(t))) {
      if (piece.elements > 0) runs.push_back({piece.src_offset, per_tensor[t] + piece.dst_offset, piece.elements});
    }
  }
  return runs;
}

std::vector<PieceRun> reversed(std::vector<PieceRun> runs) {
  for (PieceRun& run : runs) std::swap(run.src_offset, run.dst_offset);
  return runs;
}

std::vector<std::pair<int64_t, int64_t>> gathered_padding(const UnitShard& shard) {
  std::vector<std::pair<int64_t, int64_t>> covered;
  if (shard.contiguous()) {
    const std::vector<int64_t> offsets = shard.tensor_offsets(false);
    for (size_t t = 0; t < offsets.size(); ++t) {
      covered.emplace_back(offsets[t], offsets[t] + shard.spec().tensors[t].numel());
    }
  } else {
    for (const PieceRun& run : copy_out_runs(shard)) covered.emplace_back(run.src_offset, run.src_offset + run.elements);
  }
  std::sort(covered.begin(), covered.end());
  std::vector<std::pair<int64_t, int64_t>> gaps;
  int64_t at = 0;
  for (const auto& [begin, end] : covered) {
    if (begin > at) gaps.emplace_back(at, begin);
    at = std::max(at, end);
  }
  const int64_t total = shard.shard_size() * shard.ranks();
  if (at < total) gaps.emplace_back(at, total);
  return gaps;
}

}  // namespace ragged::backend::gpu
