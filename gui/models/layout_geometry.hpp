#pragma once
// One unit's flat buffer as the Layout tab draws it: a bar per rank, each
// cut into pieces of tensors and padding in shard coordinates [0, S). For a
// contiguous strategy tensor t is the interval [l_t, r_t) of the m*S buffer
// and rank k holds its part of [kS, (k+1)S); for a rank-major one (FSDP2,
// ZeRO-3) every rank holds a padded chunk of every tensor at the same
// offset. Plain code, no Qt: the widget only scales it.

#include <cstdint>
#include <string>
#include <vector>

#include "planner/unit_layout.hpp"
#include "planner/unit_problem.hpp"

namespace ragged::gui {

struct LayoutPiece {
  int rank = 0;
  int64_t begin = 0;  // in the rank's shard, elements
  int64_t end = 0;
  int tensor = -1;    // index into LayoutBars::tensor_names; -1: padding
  int64_t tensor_begin = 0;  // the tensor's element at `begin` (the local units' start)

  int64_t length() const { return end - begin; }
};

struct LayoutBars {
  std::string strategy;
  int64_t shard_size = 0;  // S
  int64_t ranks = 0;       // m (all of them, even when fewer are drawn)
  int drawn_ranks = 0;     // bars built: the first min(ranks, max_ranks)
  bool contiguous = true;  // tensors are intervals of the m*S buffer (else rank-major chunks)
  std::vector<std::string> tensor_names;
  std::vector<int64_t> tensor_granules;
  std::vector<planner::TensorSlot> slots;  // per tensor: [l_t, l_t + e_t), or a chunk's offset and length
  std::vector<LayoutPiece> pieces;  // by rank, then by begin; they tile [0, S) of every drawn rank

  int64_t padding_elements() const;  // over the drawn ranks
  // The padding as the plan counts it (planner::Plan::padding_ratio, docs/METRICS.md: (m*S - params) /
  // params), of this unit and of the whole model under the same strategy: the figure Explore's plan
  // line shows. Set by unit_layouts; 0 when built from a bare layout.
  double padding_ratio = 0;
  double model_padding_ratio = 0;
};

// "fsdp2: S = 1.2M over 256 ranks\npadding 98.246% of the unit's parameters (the model's 0.590%)": the
// header of one strategy's bars (two lines); padding percentages read as Explore's plan line writes them.
std::string layout_header(const LayoutBars& bars);

LayoutBars layout_bars(const std::string& strategy, const planner::UnitProblem& problem,
                       const planner::UnitLayout& layout, const std::vector<std::string>& tensor_names,
                       int max_ranks = 1024);

// The piece under `element` of `rank`'s shard, nullptr outside.
const LayoutPiece* piece_at(const LayoutBars& bars, int rank, int64_t element);

// What hovering `piece` shows: the tensor, its interval of the m*S buffer
// (a rank-major chunk: its offset in every shard), the rank's local units of
// it and the granule; or how much padding.
std::string describe_piece(const LayoutBars& bars, const LayoutPiece& piece);

// Granule (row, block) boundaries inside a tensor piece, in shard
// coordinates, only where they are at least `min_pixels` apart at
// `elements_per_pixel` (none otherwise: a solid piece reads better).
std::vector<int64_t> granule_marks(const LayoutBars& bars, const LayoutPiece& piece, double elements_per_pixel,
                                   double min_pixels = 4);

}  // namespace ragged::gui
