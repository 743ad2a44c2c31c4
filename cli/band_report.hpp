#pragma once
// How `ragged simulate` shows a prediction's band (sim/prediction_band.hpp)
// and `--sensitivity` (sim/sensitivity.hpp), as text and as JSON.

#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/prediction_band.hpp"

namespace ragged::cli {

// The band lines under the figures: throughput and memory, the rows behind
// each, the regime they share and the inputs that widened it.
void print_band(const sim::PredictionBand& band, const sim::Regime& regime, std::ostream& out);
// The fields merged into simulate's JSON object: tokens_per_s_per_gpu_range,
// peak_memory_bytes_range and "band" with the share, rows and regime.
void add_band_json(const sim::PredictionBand& band, const sim::Regime& regime, nlohmann::json& out);
// "2,110..3,430" for a tune table's column; "-" without comparable rows.
std::string tokens_range_text(int64_t rows, double low, double high);
std::string tokens_range_text(const sim::PredictionBand& band);

void print_sensitivity(const std::vector<sim::InputSensitivity>& rows, std::ostream& out);
nlohmann::json sensitivity_to_json(const std::vector<sim::InputSensitivity>& rows);

}  // namespace ragged::cli
