#include "sim/prediction_regime.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "common/errors.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::sim {
namespace {

std::optional<double> error_of(const ResidualRow& row, BandMetric metric) {
  return metric == BandMetric::kThroughput ? row.throughput_error : row.memory_error;
}

bool matches(const Regime& a, const Regime& b, const std::vector<RegimeFactor>& factors) {
  return std::all_of(factors.begin(), factors.end(), [&](RegimeFactor f) { return a.value(f) == b.value(f); });
}

// The central interval holding `need` of the sorted errors: the rest cut
// from the two ends alike (the odd one from the top).
void set_interval(std::vector<double> errors, double share, ErrorBand& band) {
  std::sort(errors.begin(), errors.end());
  const int n = static_cast<int>(errors.size());
  const int need = std::min(n, static_cast<int>(std::ceil(share * (n + 1) - 1e-9)));
  const int below = (n - need) / 2;
  band.rows = n;
  band.held = need;
  band.low = errors[static_cast<size_t>(below)];
  band.high = errors[static_cast<size_t>(below + need - 1)];
}

}  // namespace

std::string regime_factor_name(RegimeFactor factor) {
  switch (factor) {
    case RegimeFactor::kStrategy: return "strategy";
    case RegimeFactor::kCheckpointing: return "activation checkpointing";
    case RegimeFactor::kCommunication: return "exposed communication";
    case RegimeFactor::kSequence: return "sequence length";
    case RegimeFactor::kGeneration: return "GPU generation";
    case RegimeFactor::kModel: return "model";
  }
  RAGGED_ASSERT(false, "every regime factor has a name");
}

const std::string& Regime::value(RegimeFactor factor) const {
  switch (factor) {
    case RegimeFactor::kStrategy: return strategy;
    case RegimeFactor::kCheckpointing: return checkpointing;
    case RegimeFactor::kCommunication: return communication;
    case RegimeFactor::kSequence: return sequence;
    case RegimeFactor::kGeneration: return generation;
    case RegimeFactor::kModel: return model;
  }
  RAGGED_ASSERT(false, "every regime factor has a value");
}

std::string gpu_generation(const std::string& preset) {
  auto starts = [&](const char* prefix) { return preset.rfind(prefix, 0) == 0; };
  if (starts("a100")) return "ampere";
  if (starts("h100") || starts("h200") || starts("h800")) return "hopper";
  if (starts("b200") || starts("gb200")) return "blackwell";
  if (starts("mi300")) return "cdna3";
  return "";
}

std::string communication_class(double exposed_comm_share) {
  if (exposed_comm_share < 0.01) return "hidden";
  return exposed_comm_share < 0.05 ? "partly exposed" : "exposed";
}

std::string sequence_class(int64_t tokens) {
  if (tokens <= 4096) return "short";
  return tokens < 16384 ? "medium" : "long";
}

Regime regime_of(const ResidualRow& row) {
  return {gpu_generation(row.gpu), row.checkpointing, communication_class(row.exposed_comm_share),
          sequence_class(row.sequence), row.strategy, row.model};
}

Regime regime_of(const scenarios::Scenario& scenario, const traces::Summary& predicted) {
  const scenarios::Training& t = scenario.training();
  const double share = predicted.step_time_s() > 0 ? predicted.exposed_comm_s() / predicted.step_time_s() : 0.0;
  return {gpu_generation(scenario.cluster().gpu().preset()), scenarios::checkpointing_name(t.activation_checkpointing()),
          communication_class(share), sequence_class(t.sequence_length()), scenarios::strategy_name(t.strategy()),
          std::string(model_kind(predicted.mixture_of_experts()))};
}

namespace {

// A row as the band reads it: its regime worked out once.
struct Sample {
  Regime regime;
  std::optional<double> error;
  const std::string* id;
};

std::vector<Sample> samples_of(const std::vector<ResidualRow>& rows, BandMetric metric) {
  std::vector<Sample> samples;
  samples.reserve(rows.size());
  for (const ResidualRow& row : rows) samples.push_back({regime_of(row), error_of(row, metric), &row.id});
  return samples;
}

ErrorBand band_over(const std::vector<const Sample*>& samples, const Regime& regime, double share, int min_rows) {
  ErrorBand band;
  band.share = share;
  std::vector<RegimeFactor> factors;
  for (int f = 0; f < kRegimeFactors; ++f) {
    const auto factor = static_cast<RegimeFactor>(f);
    (regime.value(factor).empty() ? band.dropped : factors).push_back(factor);
  }
  for (;;) {
    std::vector<double> errors;
    std::vector<std::string> ids;
    for (const Sample* sample : samples) {
      if (!sample->error || !matches(sample->regime, regime, factors)) continue;
      errors.push_back(*sample->error);
      ids.push_back(*sample->id);
    }
    if (static_cast<int>(errors.size()) >= min_rows || factors.empty()) {
      band.matched = factors;
      band.ids = std::move(ids);
      if (!errors.empty()) set_interval(std::move(errors), share, band);
      return band;
    }
    band.dropped.push_back(factors.front());
    factors.erase(factors.begin());
  }
}

}  // namespace

ErrorBand error_band(const std::vector<ResidualRow>& rows, const Regime& regime, BandMetric metric, double share,
                     int min_rows) {
  const std::vector<Sample> samples = samples_of(rows, metric);
  std::vector<const Sample*> all;
  for (const Sample& sample : samples) all.push_back(&sample);
  return band_over(all, regime, share, min_rows);
}

std::pair<double, double> published_range(double predicted, const ErrorBand& band) {
  return {predicted / (1 + band.high), predicted / (1 + band.low)};
}

HeldOutCoverage held_out_coverage(const std::vector<ResidualRow>& rows, BandMetric metric, double share,
                                  int min_rows) {
  const std::vector<Sample> samples = samples_of(rows, metric);
  // Each stack's rows against the rows of every other stack.
  std::map<std::string, std::vector<const Sample*>> others;
  for (const ResidualRow& row : rows) others.try_emplace(row.stack);
  for (auto& [stack, rest] : others) {
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i].stack != stack) rest.push_back(&samples[i]);
    }
  }
  HeldOutCoverage coverage;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::optional<double>& error = samples[i].error;
    if (!error) continue;
    const ErrorBand band = band_over(others.at(rows[i].stack), samples[i].regime, share, min_rows);
    if (band.rows == 0) continue;
    ++coverage.rows;
    if (*error >= band.low && *error <= band.high) ++coverage.inside;
  }
  return coverage;
}

std::optional<double> held_out_level(const std::vector<ResidualRow>& rows, BandMetric metric, double target,
                                     int min_rows) {
  const auto reaches = [&](double level) {
    const HeldOutCoverage c = held_out_coverage(rows, metric, level, min_rows);
    return c.rows == 0 || c.share() >= target;
  };
  if (reaches(target)) return target;
  if (!reaches(1.0)) return std::nullopt;
  // Coverage grows with the level; 12 halvings find it within 0.0001.
  double low = target, high = 1.0;
  for (int i = 0; i < 12; ++i) {
    const double mid = (low + high) / 2;
    (reaches(mid) ? high : low) = mid;
  }
  return high;
}

BandLevel band_level(const std::vector<ResidualRow>& rows, BandMetric metric) {
  const std::optional<double> level = held_out_level(rows, metric);
  return level ? BandLevel{*level, true} : BandLevel{1.0, false};
}

}  // namespace ragged::sim
