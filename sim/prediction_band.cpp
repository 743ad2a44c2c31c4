#include "sim/prediction_band.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ragged::sim {
namespace {

std::string percent(double error) { return fmt::format("{:+.1f}%", 100 * error); }

// Widens [low, high] by the residual band around `predicted`.
void cover(double predicted, const ErrorBand& band, double& low, double& high) {
  if (band.rows == 0) return;
  const auto [from, to] = published_range(predicted, band);
  low = std::min(low, from);
  high = std::max(high, to);
}

void cover_memory(int64_t predicted, const ErrorBand& band, PredictionBand& out) {
  double low = static_cast<double>(out.memory_low), high = static_cast<double>(out.memory_high);
  cover(static_cast<double>(predicted), band, low, high);
  out.memory_low = std::llround(low);
  out.memory_high = std::llround(high);
}

}  // namespace

PredictionBand regime_band(const scenarios::Scenario& scenario, const traces::Summary& predicted,
                           const ResidualTable& table) {
  PredictionBand band;
  const Regime regime = regime_of(scenario, predicted);
  band.throughput = error_band(table.rows, regime, BandMetric::kThroughput, table.throughput_level.share);
  band.throughput.calibrated = table.throughput_level.calibrated;
  band.memory = error_band(table.rows, regime, BandMetric::kPeakMemory, table.memory_level.share);
  band.memory.calibrated = table.memory_level.calibrated;
  band.tokens_low = band.tokens_high = predicted.tokens_per_s_per_gpu();
  band.memory_low = band.memory_high = predicted.peak_reserved_bytes();
  cover(predicted.tokens_per_s_per_gpu(), band.throughput, band.tokens_low, band.tokens_high);
  cover_memory(predicted.peak_reserved_bytes(), band.memory, band);
  return band;
}

PredictionBand prediction_band(const planner::ResolvedScenario& resolved, const traces::Summary& predicted,
                               const SimulationOptions& options, const ResidualTable& table,
                               const VariantSimulator& simulate) {
  PredictionBand band = regime_band(resolved.scenario(), predicted, table);
  band.widened_by = sensitivity(resolved, {predicted.tokens_per_s_per_gpu(), predicted.peak_reserved_bytes(), predicted.oom()}, options,
                                [](const PlausibleInput& input) { return input.widens_band(); }, simulate);
  for (const InputSensitivity& s : band.widened_by) {
    for (const InputOutcome& o : s.outcomes) {
      if (!o.simulated) continue;
      cover(o.tokens_per_s_per_gpu, band.throughput, band.tokens_low, band.tokens_high);
      cover_memory(o.peak_reserved_bytes, band.memory, band);
    }
  }
  return band;
}

std::string band_sentence(const ErrorBand& band) {
  if (band.rows == 0) return "no validation row to compare";
  std::string sentence =
      fmt::format("{} of {} comparable validation rows ({:.0f}%) were within {}..{} of their prediction", band.held,
                  band.rows, 100.0 * band.held / band.rows, percent(band.low), percent(band.high));
  if (band.share > kBandShare + 1e-9) {
    sentence += band.calibrated
                    ? fmt::format(" (the width that held {:.0f}% of another stack's rows)", 100 * kBandShare)
                    : fmt::format(" (every row of its regime: no narrower width held {:.0f}% of another stack's rows)",
                                  100 * kBandShare);
  }
  return sentence;
}

std::string regime_sentence(const Regime& regime, const ErrorBand& band) {
  std::vector<std::string> kept;
  for (RegimeFactor f : band.matched) kept.push_back(fmt::format("{} {}", regime_factor_name(f), regime.value(f)));
  std::vector<std::string> dropped;
  for (RegimeFactor f : band.dropped) dropped.push_back(regime_factor_name(f));
  if (kept.empty()) {
    return fmt::format("every validation row with this figure (fewer than {} shared any factor with the scenario)",
                       kMinRegimeRows);
  }
  std::string out = fmt::format("{}", fmt::join(kept, ", "));
  if (!dropped.empty()) {
    out += fmt::format("; not matched (fewer than {} rows shared it, or unknown): {}", kMinRegimeRows,
                       fmt::join(dropped, ", "));
  }
  return out;
}

std::string widening_sentence(const PredictionBand& band) {
  std::vector<std::string> parts;
  for (const InputSensitivity& s : band.widened_by) {
    std::vector<std::string> values;
    for (const InputOutcome& o : s.outcomes) {
      if (o.simulated) values.push_back(fmt::format("{}: {:.0f}", o.label, o.tokens_per_s_per_gpu));
    }
    parts.push_back(fmt::format("{} (left to the default {}; simulated at {} tokens/s per GPU)", s.input.name,
                                s.input.simulated, fmt::join(values, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace ragged::sim
