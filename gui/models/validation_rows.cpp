#include "gui/models/validation_rows.hpp"

#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "common/text_case.hpp"
#include "validation/validation_set.hpp"

namespace ragged::gui {

bool row_matches(const sim::ResidualRow& row, std::string_view filter) {
  const std::string haystack =
      lower_case(row.id + ' ' + row.stack + ' ' + row.gpu + ' ' + row.strategy + ' ' + row.checkpointing);
  std::istringstream words{lower_case(filter)};
  for (std::string word; words >> word;) {
    if (haystack.find(word) == std::string::npos) return false;
  }
  return true;
}

ValidationSummary summarize(const std::vector<const sim::ResidualRow*>& rows) {
  ValidationSummary s;
  s.rows = static_cast<int>(rows.size());
  double sum = 0, memory_sum = 0;
  int within = 0;
  for (const sim::ResidualRow* row : rows) {
    if (row->memory_error) {
      ++s.memory_compared;
      memory_sum += std::fabs(*row->memory_error);
    }
    if (!row->throughput_error) continue;
    const double error = *row->throughput_error;
    ++s.compared;
    sum += std::fabs(error);
    if (std::fabs(error) <= 0.10) ++within;
    if (s.worst_id.empty() || std::fabs(error) > std::fabs(s.worst_error)) {
      s.worst_id = row->id;
      s.worst_error = error;
    }
  }
  if (s.compared > 0) {
    s.mean_abs_error = sum / s.compared;
    s.within_ten_percent = static_cast<double>(within) / s.compared;
  }
  if (s.memory_compared > 0) s.mean_abs_memory_error = memory_sum / s.memory_compared;
  return s;
}

std::string error_text(const std::optional<double>& error) {
  return error ? fmt::format("{:+.1f}%", 100 * *error) : std::string("-");
}

std::string summary_text(const ValidationSummary& s) {
  std::string text = fmt::format("{} run{}; tokens/s compared on {}", s.rows, s.rows == 1 ? "" : "s", s.compared);
  if (s.compared > 0) {
    text += fmt::format(": mean |error| {:.1f}%, {:.0f}% within 10%, worst {} ({})", 100 * s.mean_abs_error,
                        100 * s.within_ten_percent, s.worst_id, error_text(s.worst_error));
  }
  text += fmt::format("; peak memory compared on {}", s.memory_compared);
  if (s.memory_compared > 0) text += fmt::format(": mean |error| {:.1f}%", 100 * s.mean_abs_memory_error);
  return text;
}

std::string run_scenario(const std::string& folder, const std::string& run_id) {
  const validation::ValidationSet set = validation::load_validation_set(folder);
  for (const validation::Run& run : set.runs) {
    if (run.id() != run_id) continue;
    if (!run.shipped_scenario().empty()) return run.shipped_scenario();
    const std::filesystem::path path = set.scenario_path(run);
    if (path.empty()) throw InputError(fmt::format("validation run '{}' has no scenario (it is excluded)", run_id));
    return path.string();
  }
  throw InputError(fmt::format("{}: no validation run '{}' (the binary's residual table is older than the folder: "
                               "rebuild)", folder, run_id));
}

}  // namespace ragged::gui
