#pragma once
// What `ragged simulate` shows: the predicted step (summary and per-unit
// breakdown), strategies side by side, or a scaling table.

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/compute_breakdown.hpp"
#include "sim/memory_fit.hpp"
#include "sim/prediction_band.hpp"
#include "sim/simulation.hpp"

namespace ragged::cli {

// Why a step that does not fit does not, and what would (sim/memory_fit.hpp).
struct OutOfMemoryAdvice {
  std::vector<sim::MemoryPart> parts;  // largest first
  sim::MemoryFixes fixes;
};

struct SimulationReport {
  std::string label;  // scenario name, strategy, GPUs
  sim::SimulationResult result;
  int64_t max_rss_bytes = 0;  // peak of the simulation's process
  int64_t sim_memory_bytes = 0;  // what the simulation added to the memory it started with
  scenarios::Scenario scenario;  // as simulated (its what-if block)
  std::optional<OutOfMemoryAdvice> oom_advice;  // out of memory, for the text report: it leads with this
  std::optional<sim::PredictionBand> band;      // the prediction's band (sim/prediction_band.hpp)
  std::vector<sim::InputSensitivity> sensitivity;  // --sensitivity
};

// Out of memory: the first lines say so, with oom_advice when it is there,
// and the figures below are what the step would take if it fit.
void print_simulation(const SimulationReport& report, std::ostream& out);
// Those first lines alone (simulate_report_oom.cpp).
void print_out_of_memory(const SimulationReport& report, std::ostream& out);
void print_simulation_comparison(const std::vector<SimulationReport>& reports, std::ostream& out);
void print_sweep(const std::vector<SimulationReport>& reports, std::ostream& out);
nlohmann::json simulation_to_json(const SimulationReport& report);
// `--breakdown`: each unit's compute time by what runs it, with the rates.
void print_compute_breakdown(const std::vector<sim::UnitComputeParts>& rows, std::ostream& out);
nlohmann::json compute_breakdown_to_json(const std::vector<sim::UnitComputeParts>& rows);

}  // namespace ragged::cli
