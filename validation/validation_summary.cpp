#include "validation/validation_summary.hpp"

#include <cmath>

#include "common/units.hpp"
#include "traces/metrics.hpp"
#include "validation/validation_set.hpp"

namespace ragged::validation {

std::optional<double> throughput_error(const RowResult& row) {
  if (row.status != RowStatus::kSimulated) return std::nullopt;
  const std::optional<double> published = published_tokens_per_s(row.run.published());
  if (!published) return std::nullopt;
  return row.predicted.tokens_per_s_per_gpu / *published - 1;
}

std::optional<double> memory_error(const RowResult& row) {
  if (row.status != RowStatus::kSimulated || !row.run.published().has_peak_memory_gib()) return std::nullopt;
  const double predicted_gib = static_cast<double>(row.predicted.peak_reserved_bytes) / kGiB;
  return predicted_gib / row.run.published().peak_memory_gib() - 1;
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
  double error_sum = 0, memory_error_sum = 0;
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
    if (auto error = throughput_error(row)) {
      ++s.throughput_rows;
      error_sum += std::fabs(*error);
      if (s.max_error_id.empty() || std::fabs(*error) > s.max_abs_error) {
        s.max_abs_error = std::fabs(*error);
        s.max_error_id = row.run.id();
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
    if (auto error = memory_error(row)) {
      ++s.memory_rows;
      memory_error_sum += std::fabs(*error);
      if (std::fabs(*error) <= kMemoryTolerance) ++s.memory_within_tolerance;
    }
  }
  if (s.throughput_rows > 0) s.mean_abs_error = error_sum / s.throughput_rows;
  if (s.memory_rows > 0) s.mean_abs_memory_error = memory_error_sum / s.memory_rows;
  return s;
}

}  // namespace ragged::validation
