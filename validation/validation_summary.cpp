#include "validation/validation_summary.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "common/units.hpp"
#include "traces/metrics.hpp"
#include "validation/validation_set.hpp"

namespace ragged::validation {

bool throughput_compared(const RowResult& row) {
  return row.status == RowStatus::kSimulated && row.run.throughput_excluded().empty();
}

bool memory_only(const RowResult& row) {
  return row.status == RowStatus::kSimulated && !row.run.throughput_excluded().empty();
}

std::optional<double> throughput_error(const RowResult& row) {
  if (!throughput_compared(row)) return std::nullopt;
  const std::optional<double> published = published_tokens_per_s(row.run.published());
  if (!published) return std::nullopt;
  return row.predicted.tokens_per_s_per_gpu / *published - 1;
}

std::optional<double> first_prediction_error(const RowResult& row) {
  if (!row.run.has_first_prediction() || !throughput_error(row)) return std::nullopt;
  const double published = *published_tokens_per_s(row.run.published());
  return row.run.first_prediction().tokens_per_s_per_gpu() / published - 1;
}

std::vector<double> remeasured_errors(const RowResult& row) {
  std::vector<double> errors;
  if (!throughput_compared(row)) return errors;
  for (const Remeasurement& r : row.run.remeasured()) {
    errors.push_back(row.predicted.tokens_per_s_per_gpu / r.tokens_per_s_per_gpu() - 1);
  }
  return errors;
}

namespace {

// The lowest and highest of the run's published throughputs.
std::optional<std::pair<double, double>> published_range(const Run& run) {
  const std::optional<double> published = published_tokens_per_s(run.published());
  if (!published || run.remeasured().empty()) return std::nullopt;
  double lo = *published, hi = *published;
  for (const Remeasurement& r : run.remeasured()) {
    lo = std::min(lo, r.tokens_per_s_per_gpu());
    hi = std::max(hi, r.tokens_per_s_per_gpu());
  }
  return std::pair{lo, hi};
}

}  // namespace

std::optional<double> published_spread(const Run& run) {
  const auto range = published_range(run);
  if (!range) return std::nullopt;
  return range->second / range->first - 1;
}

bool within_published_range(const RowResult& row) {
  const auto range = published_range(row.run);
  if (!throughput_compared(row) || !range) return false;
  const double predicted = row.predicted.tokens_per_s_per_gpu;
  return predicted >= range->first && predicted <= range->second;
}

std::optional<PublishedMemory> published_memory(const Published& published) {
  if (published.has_peak_memory_gib()) return PublishedMemory{published.peak_memory_gib(), false};
  if (published.has_peak_allocated_gib()) return PublishedMemory{published.peak_allocated_gib(), true};
  return std::nullopt;
}

int64_t predicted_memory_bytes(const RowResult& row) {
  const Published& figures = row.run.published();
  const std::optional<PublishedMemory> published = published_memory(figures);
  const bool allocated = published && published->allocated;
  const Prediction& p = row.predicted;
  if (figures.has_memory_rank() && !p.stages.empty()) {
    // The stages run consecutive blocks of ranks: the measured rank's is the
    // last one starting at or before it.
    const Prediction::StagePeaks* stage = &p.stages.front();
    for (const Prediction::StagePeaks& s : p.stages) {
      if (s.first_rank <= figures.memory_rank()) stage = &s;
    }
    return allocated ? stage->allocated_bytes : stage->reserved_bytes;
  }
  return allocated ? p.peak_allocated_bytes : p.peak_reserved_bytes;
}

std::string published_memory_text(const Published& published) {
  const std::optional<PublishedMemory> memory = published_memory(published);
  if (!memory) return "-";
  return fmt::format("{:.1f}{}{}", memory->gib, memory->allocated ? " alloc" : "",
                     published.has_memory_rank() ? fmt::format(" r{}", published.memory_rank()) : "");
}

std::optional<double> memory_error(const RowResult& row) {
  const std::optional<PublishedMemory> published = published_memory(row.run.published());
  if (row.status != RowStatus::kSimulated || !published) return std::nullopt;
  return static_cast<double>(predicted_memory_bytes(row)) / kGiB / published->gib - 1;
}

OomAgreement oom_agreement(const RowResult& row) {
  if (row.status != RowStatus::kSimulated) return OomAgreement::kNotApplicable;
  const bool ran = published_ran(row.run.published());
  if (ran && row.predicted.oom) return OomAgreement::kFalseOom;
  if (!ran && !row.predicted.oom) return OomAgreement::kMissedOom;
  return OomAgreement::kAgree;
}

bool fits_tightly(const RowResult& row) {
  if (row.status != RowStatus::kSimulated) return false;
  const Prediction& p = row.predicted;
  return traces::fits_tightly(p.peak_reserved_bytes, p.allocator_capacity_bytes, p.oom);
}

std::string oom_agreement_name(OomAgreement agreement) {
  switch (agreement) {
    case OomAgreement::kAgree: return "agree";
    case OomAgreement::kFalseOom: return "false OOM";
    case OomAgreement::kMissedOom: return "missed OOM";
    case OomAgreement::kNotApplicable: break;
  }
  return "-";
}

std::string status_name(RowStatus status) {
  switch (status) {
    case RowStatus::kSimulated: return "simulated";
    case RowStatus::kFailed: return "failed";
    case RowStatus::kExcluded: break;
  }
  return "excluded";
}

SetSummary summarize(const std::vector<RowResult>& rows, Set set) {
  SetSummary s;
  s.set = set;
  double error_sum = 0, memory_error_sum = 0, first_sum = 0, current_of_first_sum = 0;
  for (const RowResult& row : rows) {
    if (row.run.set() != set) continue;
    if (row.status == RowStatus::kExcluded) {
      ++s.excluded;
      continue;
    }
    ++s.rows;
    if (row.status == RowStatus::kFailed) {
      ++s.failed;
      continue;
    }
    ++s.simulated;
    if (memory_only(row)) ++s.throughput_excluded;
    if (auto error = throughput_error(row)) {
      ++s.throughput_rows;
      error_sum += std::fabs(*error);
      if (s.max_error_id.empty() || std::fabs(*error) > s.max_abs_error) {
        s.max_abs_error = std::fabs(*error);
        s.max_error_id = row.run.id();
      }
      if (auto first = first_prediction_error(row)) {
        ++s.first_prediction_rows;
        first_sum += std::fabs(*first);
        current_of_first_sum += std::fabs(*error);
        s.first_max_abs_error = std::max(s.first_max_abs_error, std::fabs(*first));
      }
    }
    ++s.oom_rows;
    switch (oom_agreement(row)) {
      case OomAgreement::kAgree: ++s.oom_agree; break;
      case OomAgreement::kFalseOom: ++s.false_ooms; break;
      case OomAgreement::kMissedOom: ++s.missed_ooms; break;
      case OomAgreement::kNotApplicable: break;
    }
    if (fits_tightly(row)) ++s.tight_fits;
    if (auto spread = published_spread(row.run); spread && throughput_compared(row)) {
      ++s.remeasured_rows;
      if (within_published_range(row)) ++s.within_published_range;
      if (s.max_spread_id.empty() || *spread > s.max_published_spread) {
        s.max_published_spread = *spread;
        s.max_spread_id = row.run.id();
      }
    }
    if (auto error = memory_error(row)) {
      ++s.memory_rows;
      memory_error_sum += std::fabs(*error);
      if (std::fabs(*error) <= kMemoryTolerance) ++s.memory_within_tolerance;
    }
  }
  if (s.throughput_rows > 0) s.mean_abs_error = error_sum / s.throughput_rows;
  if (s.memory_rows > 0) s.mean_abs_memory_error = memory_error_sum / s.memory_rows;
  if (s.first_prediction_rows > 0) {
    s.first_mean_abs_error = first_sum / s.first_prediction_rows;
    s.current_mean_abs_error_of_first = current_of_first_sum / s.first_prediction_rows;
  }
  return s;
}

std::vector<SourceSummary> summarize_by_source(const std::vector<RowResult>& rows, Set set) {
  std::map<std::string, std::vector<RowResult>> by_source;
  for (const RowResult& row : rows) {
    if (row.run.set() == set) by_source[row.run.source().title()].push_back(row);
  }
  std::vector<SourceSummary> out;
  for (const auto& [source, its_rows] : by_source) {
    const SetSummary s = summarize(its_rows, set);
    if (s.throughput_rows == 0) continue;
    out.push_back({source, s.throughput_rows, s.mean_abs_error, s.first_prediction_rows, s.first_mean_abs_error,
                   s.current_mean_abs_error_of_first});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const SourceSummary& a, const SourceSummary& b) { return a.throughput_rows > b.throughput_rows; });
  return out;
}

}  // namespace ragged::validation
