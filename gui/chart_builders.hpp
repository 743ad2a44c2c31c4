#pragma once
// The dashboard's charts, built from its models' plain data: one function
// per chart, each returning a new QChart for a QChartView to own.

#include <QChart>

#include <vector>

#include "gui/models/memory_breakdown_model.hpp"
#include "gui/models/simulation_results_model.hpp"
#include "gui/models/sweep_series.hpp"
#include "traces/unit_breakdown.hpp"

namespace ragged::gui {

enum class StrategyMetric { kTokensPerGpu, kMfu, kPeakMemory };

// One bar per finished strategy; kPeakMemory (in the binary unit its figures
// read best in) adds the allocator's capacity as a line. A run out of memory
// is named "<strategy> OOM" and its bar drawn red (selected) in every metric.
// Axes run from 0 in round ticks; each bar's value is printed after it, and hovering shows it too.
QChart* strategy_chart(const std::vector<SimulationRow>& rows, StrategyMetric metric);

// A stacked bar per unit row, one segment per phase (ms per step).
QChart* unit_breakdown_chart(const std::vector<traces::UnitTimes>& rows);

// A horizontal bar per part (its short label on the axis, its name and value
// on hover), in the unit its largest part reads best in, with the
// allocator's capacity and the HBM in the title.
// capacity_bytes: what the allocator may reserve (the HBM less the CUDA context and NCCL).
QChart* memory_breakdown_chart(const std::vector<MemoryPart>& parts, int64_t capacity_bytes, int64_t hbm_bytes);

// Throughput (tokens/s per GPU) or peak memory (GiB, the allocator's
// capacity as a line) against the GPU count on a log axis, a line per
// strategy; GPU ranges where every
// strategy is out of memory are shaded. A strategy's line and OOM markers
// carry its name in the kStrategyProperty property (what a click opens).
inline constexpr const char* kStrategyProperty = "strategy";
// A bar series keeps the text its last hovered bar showed here.
inline constexpr const char* kHoverTextProperty = "hover_text";
enum class SweepMetric { kThroughput, kPeakMemory };
QChart* sweep_chart(const std::vector<SweepSeries>& series, SweepMetric metric, int64_t capacity_bytes);

// The colour of a strategy, the same in every chart.
QColor strategy_color(const std::string& strategy);

}  // namespace ragged::gui
