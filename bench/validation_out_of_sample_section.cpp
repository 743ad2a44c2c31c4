#include "bench/validation_out_of_sample_section.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "bench/validation_format.hpp"

namespace ragged::bench {

void out_of_sample_section(std::ostringstream& md, const std::vector<validation::RowResult>& rows) {
  const validation::SetSummary v = validation::summarize(rows, validation::VALIDATION);
  const std::vector<validation::SourceSummary> sources = validation::summarize_by_source(rows, validation::VALIDATION);
  md << "## Out of sample: first predictions beside today's\n\n";
  md << fmt::format(
      "A row's first prediction (`first_prediction` in `validation/runs.textproto`: the value and the commit that "
      "made it) is the simulator's answer before anything was changed because of that row; today's error shows what "
      "the model can explain, the first one what it predicts. {} of the {} validation rows compared on throughput "
      "recorded one (the field exists since the thirty-first session; earlier rows recorded theirs in their notes or "
      "not at all, validation/CHANGES.md has the batch figures): mean |error| {} as first predicted (max {}), {} now "
      "over the same rows.\n\n",
      v.first_prediction_rows, v.throughput_rows, abs_pct(v.first_mean_abs_error), abs_pct(v.first_max_abs_error),
      abs_pct(v.current_mean_abs_error_of_first));
  md << "| source | rows | share of the set | mean \\|error\\| now | first predicted (rows) | now, same rows |\n"
        "|---|---:|---:|---:|---:|---:|\n";
  for (const validation::SourceSummary& s : sources) {
    const bool first = s.first_prediction_rows > 0;
    md << fmt::format("| {} | {} | {:.1f}% | {} | {} | {} |\n", s.source, s.throughput_rows,
                      100.0 * s.throughput_rows / std::max(1, v.throughput_rows), abs_pct(s.mean_abs_error),
                      first ? fmt::format("{} ({})", abs_pct(s.first_mean_abs_error), s.first_prediction_rows) : "-",
                      first ? abs_pct(s.current_mean_abs_error_of_first) : "-");
  }
  md << "\n";
}

}  // namespace ragged::bench
