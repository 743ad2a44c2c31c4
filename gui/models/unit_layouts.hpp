#pragma once
// The layouts the Layout tab puts side by side: one unit of a scenario's
// model laid out by several strategies over the scenario's shard group.

#include <vector>

#include "gui/models/layout_geometry.hpp"
#include "planner/resolved_scenario.hpp"

namespace ragged::gui {

// "embed", "layers.0", ... in model order.
std::vector<std::string> unit_names(const models::ModelSpec& model);

// The unit the Layout tab opens on: the first with the most tensors (an
// MoE block with its experts, rather than the embedding).
int most_interesting_unit(const models::ModelSpec& model);

std::vector<LayoutBars> unit_layouts(const planner::ResolvedScenario& resolved, int unit_index,
                                     const std::vector<scenarios::Strategy>& strategies, int max_ranks = 1024);

}  // namespace ragged::gui
