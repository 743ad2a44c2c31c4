#include "bench/validation_remeasured_section.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "bench/validation_format.hpp"
#include "validation/validation_set.hpp"

namespace ragged::bench {
namespace {

using validation::RowResult;

constexpr double kShownSpread = 0.05;  // rows whose measurements lie closer are counted, not listed

double mean_abs(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += std::fabs(v);
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

}  // namespace

void remeasured_section(std::ostringstream& md, const std::vector<RowResult>& rows, double far_off) {
  md << "## Rows their source measured more than once\n\n";
  std::vector<const RowResult*> measured;
  for (const RowResult& row : rows) {
    if (row.run.set() == validation::VALIDATION && validation::throughput_error(row) &&
        validation::published_spread(row.run)) {
      measured.push_back(&row);
    }
  }
  if (measured.empty()) {
    md << "No validation row lists another measurement (`remeasured` in `validation/runs.textproto`).\n\n";
    return;
  }
  std::vector<double> spreads, against_published, against_others;
  int others = 0, within = 0, apart = 0, far_apart = 0;
  std::vector<std::string> far_but_remeasured_close;
  for (const RowResult* row : measured) {
    const double spread = *validation::published_spread(row->run);
    spreads.push_back(spread);
    apart += spread > kShownSpread;
    far_apart += spread > far_off;
    within += validation::within_published_range(*row);
    const std::vector<double> errors = validation::remeasured_errors(*row);
    others += static_cast<int>(errors.size());
    against_published.push_back(*validation::throughput_error(*row));
    against_others.push_back(mean_abs(errors));
    const bool close = std::any_of(errors.begin(), errors.end(), [&](double e) { return std::fabs(e) <= far_off; });
    if (std::fabs(against_published.back()) > far_off && close) {
      far_but_remeasured_close.push_back(fmt::format("`{}`", row->run.id()));
    }
  }
  std::vector<double> sorted = spreads;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  md << fmt::format(
      "{} validation rows list {} other measurements of their configuration that their source published (another "
      "version of the table, a results file beside it: `remeasured` in `validation/runs.textproto`, with what each "
      "states differently, such as the software image or the mixed-precision mode). The measurements of one "
      "configuration lie {} apart at the median and {} at most; {} rows' measurements lie more than {:.0f}% apart, {} "
      "more than {:.0f}%. Every statistic above uses the figure each row cites; this is the spread a prediction of a "
      "single published run cannot get under. {} of the {} predictions lie within the range of their row's "
      "measurements. Mean |error| over these rows: {:.1f}% against the cited figures, {:.1f}% against the other "
      "measurements (each row's mean over them).\n\n",
      measured.size(), others, fmt::format("{:.1f}%", 100 * median), fmt::format("{:.1f}%", 100 * sorted.back()), apart,
      100 * kShownSpread, far_apart, 100 * far_off, within, measured.size(), 100 * mean_abs(against_published),
      100 * mean_abs(against_others));
  std::string close_ids;
  for (const std::string& id : far_but_remeasured_close) close_ids += (close_ids.empty() ? "" : ", ") + id;
  md << fmt::format("Far-off rows (|error| > {:.0f}%) that another measurement of the same configuration puts within "
                    "{:.0f}% of the prediction: {}.\n\n",
                    100 * far_off, 100 * far_off, close_ids.empty() ? std::string("none") : close_ids);
  md << fmt::format("Rows whose measurements lie more than {:.0f}% apart (* the other measurement states a "
                    "difference):\n\n",
                    100 * kShownSpread);
  md << "| id | published | error | other measurements (error against each) | spread | prediction within |\n"
        "|---|---:|---:|---|---:|---|\n";
  for (const RowResult* row : measured) {
    const double spread = *validation::published_spread(row->run);
    if (spread <= kShownSpread) continue;
    const std::vector<double> errors = validation::remeasured_errors(*row);
    std::string list;
    for (int i = 0; i < row->run.remeasured_size(); ++i) {
      const validation::Remeasurement& r = row->run.remeasured(i);
      list += fmt::format("{}{}{} ({}, {})", list.empty() ? "" : "; ", format_throughput(r.tokens_per_s_per_gpu()),
                          r.differs().empty() ? "" : "*", pct(errors[static_cast<size_t>(i)]), r.source().table());
    }
    md << fmt::format("| {} | {} | {} | {} | {:.1f}% | {} |\n", row->run.id(),
                      format_throughput(*validation::published_tokens_per_s(row->run.published())),
                      pct(*validation::throughput_error(*row)), list, 100 * spread,
                      validation::within_published_range(*row) ? "yes" : "no");
  }
  md << "\n";
}

}  // namespace ragged::bench
