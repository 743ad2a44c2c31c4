#pragma once
// A prediction with its band: where the published figure of a run like it
// lay, from the validation residuals of its regime (prediction_regime.hpp),
// widened by the hardware the scenario leaves to the defaults (each such
// input re-simulated at the ends of its plausible range, sensitivity.hpp).
// What `ragged simulate` (text and --json), `ragged tune` and the
// dashboard's Explore tab show. Descriptive statistics of past errors, not
// a model: docs/SIMULATOR.md section 13.

#include <cstdint>
#include <string>
#include <vector>

#include "planner/resolved_scenario.hpp"
#include "sim/prediction_regime.hpp"
#include "sim/sensitivity.hpp"

namespace ragged::sim {

struct PredictionBand {
  ErrorBand throughput;  // of tokens/s per GPU
  ErrorBand memory;      // of peak memory
  // The published figures the band allows (rows == 0: no band, the prediction twice).
  double tokens_low = 0;
  double tokens_high = 0;
  int64_t memory_low = 0;
  int64_t memory_high = 0;
  // The hardware inputs left to the defaults, simulated at their ends; the
  // band covers the residual band around each of their predictions too.
  std::vector<InputSensitivity> widened_by;
};

// From the regime alone, nothing re-simulated (ragged tune's rankings).
PredictionBand regime_band(const scenarios::Scenario& scenario, const traces::Summary& predicted,
                           const ResidualTable& table = shipped_residual_table());

// The regime's band widened by the hardware inputs left to the defaults
// (each value one more simulation, `simulate` as in sensitivity()).
PredictionBand prediction_band(const planner::ResolvedScenario& resolved, const traces::Summary& predicted,
                               const SimulationOptions& options,
                               const ResidualTable& table = shipped_residual_table(),
                               const VariantSimulator& simulate = {});

// "17 of 20 comparable validation rows (85%) were within -6.0%..+9.1%"; "no
// validation row to compare" when none.
std::string band_sentence(const ErrorBand& band);
// "hopper, checkpointing full, communication hidden, sequence long; dropped for
// too few rows: strategy"
std::string regime_sentence(const Regime& regime, const ErrorBand& band);
// "NIC bandwidth (left to the default 400 Gb/s; 200-400 Gb/s)", joined by "; "
std::string widening_sentence(const PredictionBand& band);

}  // namespace ragged::sim
