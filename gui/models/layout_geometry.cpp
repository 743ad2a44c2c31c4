#include "gui/models/layout_geometry.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "common/units.hpp"
#include "gui/models/plan_summary.hpp"

namespace ragged::gui {
namespace {

// The elements of a rank-major chunk that hold data on `rank` (the rest pads it).
int64_t rank_major_data(const planner::UnitLayout& layout, const planner::PlanTensor& t, int64_t chunk, int64_t rank) {
  if (layout.chunk_rule == planner::ChunkRule::kDim0Rows && t.dim0_stride > 0) {
    const int64_t rows = chunk / t.dim0_stride;
    return std::clamp<int64_t>(t.dim0 - rank * rows, 0, rows) * t.dim0_stride;
  }
  return std::clamp<int64_t>(t.elements - rank * chunk, 0, chunk);
}

// Pads the gaps between the tensor pieces of one rank and appends them all.
void add_rank(std::vector<LayoutPiece> tensors, int rank, int64_t shard, std::vector<LayoutPiece>& out) {
  std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.begin < b.begin; });
  int64_t at = 0;
  for (const LayoutPiece& p : tensors) {
    RAGGED_ASSERT(p.begin >= at && p.end <= shard, "tensor pieces of a rank must not overlap");
    if (p.begin > at) out.push_back({rank, at, p.begin, -1, 0});
    out.push_back(p);
    at = p.end;
  }
  if (at < shard) out.push_back({rank, at, shard, -1, 0});
}

}  // namespace

int64_t LayoutBars::padding_elements() const {
  int64_t sum = 0;
  for (const LayoutPiece& p : pieces) sum += p.tensor < 0 ? p.length() : 0;
  return sum;
}

LayoutBars layout_bars(const std::string& strategy, const planner::UnitProblem& problem,
                       const planner::UnitLayout& layout, const std::vector<std::string>& tensor_names,
                       int max_ranks) {
  RAGGED_ASSERT(layout.slots.size() == problem.tensors.size(), "a layout has one slot per tensor");
  LayoutBars bars;
  bars.strategy = strategy;
  bars.shard_size = layout.shard_size;
  bars.ranks = layout.ranks;
  bars.drawn_ranks = static_cast<int>(std::min<int64_t>(layout.ranks, max_ranks));
  bars.contiguous = layout.placement == planner::Placement::kContiguous;
  bars.slots = layout.slots;
  bars.tensor_names = tensor_names;
  bars.tensor_names.resize(problem.tensors.size());
  for (const auto& t : problem.tensors) bars.tensor_granules.push_back(t.granule);
  const int64_t S = layout.shard_size;
  for (int rank = 0; rank < bars.drawn_ranks; ++rank) {
    std::vector<LayoutPiece> pieces;
    for (size_t i = 0; i < problem.tensors.size(); ++i) {
      const planner::TensorSlot& slot = layout.slots[i];
      const int tensor = static_cast<int>(i);
      if (layout.placement == planner::Placement::kContiguous) {
        const int64_t from = std::max(slot.offset, rank * S), to = std::min(slot.offset + slot.length, (rank + 1) * S);
        if (from < to) pieces.push_back({rank, from - rank * S, to - rank * S, tensor, from - slot.offset});
      } else {
        const int64_t data = rank_major_data(layout, problem.tensors[i], slot.length, rank);
        if (data > 0) pieces.push_back({rank, slot.offset, slot.offset + data, tensor, rank * slot.length});
      }
    }
    add_rank(std::move(pieces), rank, S, bars.pieces);
  }
  return bars;
}

std::string layout_header(const LayoutBars& bars) {
  return fmt::format("{}: S = {} over {} ranks{}\npadding {} of the unit's parameters (the model's {})", bars.strategy,
                     format_count(static_cast<double>(bars.shard_size)), bars.ranks,
                     bars.drawn_ranks < bars.ranks ? fmt::format(" (first {} drawn)", bars.drawn_ranks) : "",
                     padding_percent(bars.padding_ratio), padding_percent(bars.model_padding_ratio));
}

const LayoutPiece* piece_at(const LayoutBars& bars, int rank, int64_t element) {
  auto first = std::lower_bound(bars.pieces.begin(), bars.pieces.end(), rank,
                                [](const LayoutPiece& p, int r) { return p.rank < r; });
  for (auto it = first; it != bars.pieces.end() && it->rank == rank; ++it) {
    if (element >= it->begin && element < it->end) return &*it;
  }
  return nullptr;
}

std::string describe_piece(const LayoutBars& bars, const LayoutPiece& piece) {
  const std::string where = fmt::format("{}, rank {}, shard [{}, {})", bars.strategy, piece.rank, piece.begin, piece.end);
  if (piece.tensor < 0) {
    return fmt::format("padding: {} element{}\n{}", piece.length(), piece.length() == 1 ? "" : "s", where);
  }
  const auto t = static_cast<size_t>(piece.tensor);
  const planner::TensorSlot& slot = bars.slots[t];
  const std::string interval =
      bars.contiguous ? fmt::format("interval [{}, {}) of the {} x {} buffer", slot.offset, slot.offset + slot.length,
                                    bars.ranks, bars.shard_size)
                      : fmt::format("a chunk of {} elements at offset {} of every rank's shard", slot.length, slot.offset);
  return fmt::format("{}\n{}\nlocal units of rank {}: elements [{}, {}) of the tensor ({}), granule {}\n{}",
                     bars.tensor_names[t], interval, piece.rank, piece.tensor_begin, piece.tensor_begin + piece.length(),
                     format_count(static_cast<double>(piece.length())), bars.tensor_granules[t], where);
}

std::vector<int64_t> granule_marks(const LayoutBars& bars, const LayoutPiece& piece, double elements_per_pixel,
                                   double min_pixels) {
  std::vector<int64_t> marks;
  if (piece.tensor < 0) return marks;
  const int64_t granule = bars.tensor_granules[static_cast<size_t>(piece.tensor)];
  if (granule <= 1 || static_cast<double>(granule) < min_pixels * elements_per_pixel) return marks;
  // The first multiple of the granule (from the tensor's start) inside the piece.
  int64_t t = (piece.tensor_begin + granule - 1) / granule * granule;
  for (; t < piece.tensor_begin + piece.length(); t += granule) {
    if (t > piece.tensor_begin) marks.push_back(piece.begin + (t - piece.tensor_begin));
  }
  return marks;
}

}  // namespace ragged::gui
