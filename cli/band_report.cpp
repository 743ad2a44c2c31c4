#include "cli/band_report.hpp"

#include <fmt/format.h>

#include "cli/table.hpp"
#include "common/units.hpp"

namespace ragged::cli {
namespace {

nlohmann::json error_band_json(const sim::ErrorBand& band) {
  nlohmann::json matched = nlohmann::json::array(), dropped = nlohmann::json::array();
  for (sim::RegimeFactor f : band.matched) matched.push_back(sim::regime_factor_name(f));
  for (sim::RegimeFactor f : band.dropped) dropped.push_back(sim::regime_factor_name(f));
  // share: what the band claims for a run of any stack; regime_share: the
  // share of its regime's rows it holds to do so, and calibrated: whether
  // that share held `share` of another stack's rows (sim::band_level).
  return {{"share", sim::kBandShare}, {"regime_share", band.share}, {"calibrated", band.calibrated}, {"rows", band.rows},
          {"rows_within", band.held}, {"low_error", band.low},      {"high_error", band.high},
          {"matched", matched},       {"dropped", dropped},         {"row_ids", band.ids}};
}

nlohmann::json outcome_json(const sim::InputOutcome& o) {
  if (!o.simulated) return {{"value", o.label}, {"simulated", false}, {"why", o.why}};
  return {{"value", o.label},
          {"simulated", true},
          {"tokens_per_s_per_gpu", o.tokens_per_s_per_gpu},
          {"peak_memory_bytes", o.peak_reserved_bytes},
          {"oom", o.oom}};
}

nlohmann::json input_json(const sim::InputSensitivity& s) {
  nlohmann::json values = nlohmann::json::array();
  for (const sim::InputOutcome& o : s.outcomes) values.push_back(outcome_json(o));
  auto end = [&](int i) { return i < 0 ? nlohmann::json() : outcome_json(s.outcomes[static_cast<size_t>(i)]); };
  return {{"input", s.input.name},
          {"field", s.input.field},
          {"simulated_value", s.input.simulated},
          {"left_to_default", s.input.left_to_default},
          {"widens_band", s.input.widens_band()},
          {"low_end", end(s.low)},
          {"high_end", end(s.high)},
          {"values", values},
          {"tokens_effect", s.tokens_effect},
          {"memory_effect", s.memory_effect}};
}

std::string end_text(const sim::InputSensitivity& s, int index) {
  if (index < 0) return "-";
  const sim::InputOutcome& o = s.outcomes[static_cast<size_t>(index)];
  return fmt::format("{}: {}{}", o.label, format_rounded(o.tokens_per_s_per_gpu), o.oom ? " (OOM)" : "");
}

std::string memory_end_text(const sim::InputSensitivity& s, int index) {
  if (index < 0) return "-";
  return format_gib(s.outcomes[static_cast<size_t>(index)].peak_reserved_bytes);
}

}  // namespace

std::string tokens_range_text(int64_t rows, double low, double high) {
  if (rows == 0) return "-";
  return fmt::format("{}..{}", format_rounded(low), format_rounded(high));
}

std::string tokens_range_text(const sim::PredictionBand& band) {
  return tokens_range_text(band.throughput.rows, band.tokens_low, band.tokens_high);
}

void print_band(const sim::PredictionBand& band, const sim::Regime& regime, std::ostream& out) {
  out << fmt::format("  tokens/s band      {} per GPU: {}\n", tokens_range_text(band),
                     sim::band_sentence(band.throughput));
  out << fmt::format("                     regime: {}\n", sim::regime_sentence(regime, band.throughput));
  if (!band.widened_by.empty()) {
    out << fmt::format("                     widened for inputs left to the defaults: {}\n",
                       sim::widening_sentence(band));
  }
  if (band.memory.rows == 0) {
    out << "  memory band        none: no validation row publishes its memory\n";
    return;
  }
  out << fmt::format("  memory band        {}..{} GiB reserved: {}\n                     regime: {}\n",
                     format_gib(band.memory_low), format_gib(band.memory_high), sim::band_sentence(band.memory),
                     sim::regime_sentence(regime, band.memory));
}

void add_band_json(const sim::PredictionBand& band, const sim::Regime& regime, nlohmann::json& out) {
  out["tokens_per_s_per_gpu_range"] = {band.tokens_low, band.tokens_high};
  out["peak_memory_bytes_range"] = {band.memory_low, band.memory_high};
  nlohmann::json widened = nlohmann::json::array();
  for (const sim::InputSensitivity& s : band.widened_by) widened.push_back(input_json(s));
  out["band"] = {{"what",
                  "the published figure's range: the prediction over (1 + error) for the central errors of "
                  "comparable validation rows (docs/SIMULATOR.md section 13)"},
                 {"regime",
                  {{"gpu_generation", regime.generation},
                   {"activation_checkpointing", regime.checkpointing},
                   {"exposed_communication", regime.communication},
                   {"sequence_length", regime.sequence},
                   {"strategy", regime.strategy}}},
                 {"throughput", error_band_json(band.throughput)},
                 {"memory", error_band_json(band.memory)},
                 {"widened_by", widened}};
}

void print_sensitivity(const std::vector<sim::InputSensitivity>& rows, std::ostream& out) {
  Table table;
  table.column("input", Table::Align::kLeft).column("simulated", Table::Align::kLeft);
  table.column("low end: tokens/s/GPU", Table::Align::kLeft).column("high end: tokens/s/GPU", Table::Align::kLeft);
  table.column("tokens effect").column("peak GiB at ends", Table::Align::kLeft).column("memory effect");
  for (const sim::InputSensitivity& s : rows) {
    table.row({s.input.name, s.input.simulated + (s.input.left_to_default ? " (default)" : ""), end_text(s, s.low),
               end_text(s, s.high), fmt::format("{:.1f}%", 100 * s.tokens_effect),
               fmt::format("{} / {}", memory_end_text(s, s.low), memory_end_text(s, s.high)),
               fmt::format("{:.1f}%", 100 * s.memory_effect)});
  }
  out << "\n  sensitivity: each input re-simulated over its plausible range (`--set FIELD=VALUE`), largest tokens "
         "effect first, then memory effect; effect = (highest - lowest) / this prediction, over the values and the "
         "scenario's own:\n";
  table.print(out, "  ");
  for (const sim::InputSensitivity& s : rows) {
    for (const sim::InputOutcome& o : s.outcomes) {
      if (!o.simulated) out << fmt::format("  {} {}: not simulated, {}\n", s.input.name, o.label, o.why);
    }
  }
}

nlohmann::json sensitivity_to_json(const std::vector<sim::InputSensitivity>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const sim::InputSensitivity& s : rows) out.push_back(input_json(s));
  return out;
}

}  // namespace ragged::cli
