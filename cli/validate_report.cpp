#include "cli/validate_report.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "cli/table.hpp"
#include "common/units.hpp"
#include "traces/metrics.hpp"

namespace ragged::cli {
namespace {

using validation::RowResult;
using validation::RowStatus;

const validation::Set kSets[] = {validation::CALIBRATION, validation::VALIDATION};
// Rows whose measurements lie closer than this are left to --json.
constexpr double kSpreadShown = 0.05;

std::string percent(std::optional<double> value) { return value ? fmt::format("{:+.1f}%", 100 * *value) : "-"; }

std::string published_text(const RowResult& row) {
  auto value = validation::published_tokens_per_s(row.run.published());
  return value ? format_throughput(*value) : "OOM";
}

std::string oom_text(const RowResult& row) {
  const auto agreement = validation::oom_agreement(row);
  if (agreement == validation::OomAgreement::kAgree) {
    if (row.predicted.oom) return "agree (OOM)";
    return validation::fits_tightly(row) ? "agree (fits, tightly)" : "agree (fits)";
  }
  const validation::Prediction& p = row.predicted;
  const bool marginal = traces::oom_marginally(p.peak_reserved_bytes, p.allocator_capacity_bytes, p.oom);
  return validation::oom_agreement_name(agreement) + (marginal ? " (marginal)" : "");
}

void print_rows(const std::vector<RowResult>& rows, validation::Set set, std::ostream& out) {
  Table table;
  table.column("id", Table::Align::kLeft).column("model", Table::Align::kLeft).column("GPUs");
  table.column("strategy", Table::Align::kLeft).column("AC", Table::Align::kLeft);
  table.column("published").column("predicted").column("error");
  table.column("mem GiB").column("predicted").column("error").column("OOM", Table::Align::kLeft);
  int count = 0;
  for (const RowResult& row : rows) {
    if (row.run.set() != set || row.status == RowStatus::kExcluded) continue;
    ++count;
    const bool simulated = row.status == RowStatus::kSimulated;
    const auto& published = row.run.published();
    table.row({row.calibrated ? row.run.id() + " *" : row.run.id(), row.model, std::to_string(row.gpus), row.strategy,
               row.checkpointing, published_text(row),
               simulated ? format_throughput(row.predicted.tokens_per_s_per_gpu) : "failed",
               percent(validation::throughput_error(row)), validation::published_memory_text(published),
               simulated ? format_gib(validation::predicted_memory_bytes(row), 1) : "-",
               percent(validation::memory_error(row)), simulated ? oom_text(row) : "-"});
  }
  if (count == 0) return;
  out << fmt::format(
      "{} set: tokens/s per GPU, published against predicted; memory: peak reserved GiB "
      "(alloc: peak allocated, where the source gives that; rN: rank N's, against its pipeline stage)\n",
      validation::set_name(set));
  table.print(out, "  ");
  out << '\n';
}

// Rows their source published more than once: each other measurement, what
// differs in it, and the prediction's error against it.
void print_remeasured(const std::vector<RowResult>& rows, std::ostream& out) {
  bool any = false;
  for (const RowResult& row : rows) {
    const auto spread = validation::published_spread(row.run);
    if (!validation::throughput_compared(row) || !spread || *spread <= kSpreadShown) continue;
    if (!any) {
      out << fmt::format(
          "measured again by their source, {:.0f}% apart or more (the summary uses the published figure "
          "above; * = the source states a difference; --json lists every row measured again):\n",
          100 * kSpreadShown);
    }
    any = true;
    const std::vector<double> errors = validation::remeasured_errors(row);
    std::string others;
    for (int i = 0; i < row.run.remeasured_size(); ++i) {
      const validation::Remeasurement& r = row.run.remeasured(i);
      others += fmt::format("{}{}{} ({})", others.empty() ? "" : ", ", format_throughput(r.tokens_per_s_per_gpu()),
                            r.differs().empty() ? "" : "*", percent(errors[static_cast<size_t>(i)]));
    }
    out << fmt::format("  {}: published {} ({}); also {}{}\n", row.run.id(), published_text(row),
                       percent(validation::throughput_error(row)), others,
                       validation::within_published_range(row) ? "; predicted within their range" : "");
  }
  if (any) out << '\n';
}

// A source's title, cut to fit a table column.
std::string validation_source_name(const std::string& title) {
  constexpr size_t kWidth = 60;
  return title.size() <= kWidth ? title : title.substr(0, kWidth - 3) + "...";
}

void print_summary(const std::vector<RowResult>& rows, std::ostream& out) {
  Table table;
  table.column("set", Table::Align::kLeft).column("rows").column("simulated").column("failed").column("excluded");
  table.column("mean |error|").column("max |error|").column("worst row", Table::Align::kLeft);
  table.column("OOM agree").column("false OOM").column("missed OOM").column("tight fits").column("memory within 10%");
  std::vector<validation::SetSummary> summaries;
  for (validation::Set set : kSets) {
    const validation::SetSummary& s = summaries.emplace_back(validation::summarize(rows, set));
    if (s.rows + s.excluded == 0) continue;
    const bool any = s.throughput_rows > 0;
    table.row({validation::set_name(set), std::to_string(s.rows), std::to_string(s.simulated), std::to_string(s.failed),
               std::to_string(s.excluded), any ? fmt::format("{:.1f}%", 100 * s.mean_abs_error) : "-",
               any ? fmt::format("{:.1f}%", 100 * s.max_abs_error) : "-", any ? s.max_error_id : "-",
               fmt::format("{}/{}", s.oom_agree, s.oom_rows), std::to_string(s.false_ooms),
               std::to_string(s.missed_ooms), std::to_string(s.tight_fits),
               s.memory_rows > 0 ? fmt::format("{}/{}", s.memory_within_tolerance, s.memory_rows) : "-"});
  }
  out << "summary (error = predicted / published - 1 of tokens/s per GPU, over the simulated rows with a published "
         "throughput)\n";
  table.print(out, "  ");
  for (const validation::SetSummary& s : summaries) {
    if (s.throughput_excluded == 0) continue;
    out << fmt::format(
        "  {}: {} of the simulated rows compared on memory and OOM only, not in the throughput "
        "columns\n",
        validation::set_name(s.set), s.throughput_excluded);
  }
  const std::vector<validation::SourceSummary> sources = validation::summarize_by_source(rows, validation::VALIDATION);
  if (!sources.empty()) {
    int total = 0;
    for (const validation::SourceSummary& s : sources) total += s.throughput_rows;
    Table by_source;
    by_source.column("validation source", Table::Align::kLeft).column("rows").column("share").column("mean |error|");
    by_source.column("first predicted").column("rows").column("now, same rows");
    for (const validation::SourceSummary& s : sources) {
      const bool first = s.first_prediction_rows > 0;
      by_source.row({validation_source_name(s.source), std::to_string(s.throughput_rows),
                     fmt::format("{:.1f}%", 100.0 * s.throughput_rows / total),
                     fmt::format("{:.1f}%", 100 * s.mean_abs_error),
                     first ? fmt::format("{:.1f}%", 100 * s.first_mean_abs_error) : "-",
                     first ? std::to_string(s.first_prediction_rows) : "-",
                     first ? fmt::format("{:.1f}%", 100 * s.current_mean_abs_error_of_first) : "-"});
    }
    out << "\n";
    by_source.print(out, "  ");
  }
  for (const validation::SetSummary& s : summaries) {
    if (s.first_prediction_rows == 0) continue;
    out << fmt::format(
        "  {}: out of sample, {} of the {} rows recorded their first prediction (made before any "
        "change for them): mean |error| {:.1f}% as first predicted, max {:.1f}%; {:.1f}% now over the "
        "same rows\n",
        validation::set_name(s.set), s.first_prediction_rows, s.throughput_rows, 100 * s.first_mean_abs_error,
        100 * s.first_max_abs_error, 100 * s.current_mean_abs_error_of_first);
  }
  for (const validation::SetSummary& s : summaries) {
    if (s.remeasured_rows == 0) continue;
    out << fmt::format(
        "  {}: {} rows measured more than once by their source, the measurements {:.1f}% apart at most "
        "({}); {} predicted within the range of their measurements\n",
        validation::set_name(s.set), s.remeasured_rows, 100 * s.max_published_spread, s.max_spread_id,
        s.within_published_range);
  }
}

nlohmann::json optional_number(std::optional<double> value) {
  return value ? nlohmann::json(*value) : nlohmann::json();
}

nlohmann::json row_json(const RowResult& row) {
  const auto& run = row.run;
  const auto& p = run.published();
  nlohmann::json published = {
      {"tokens_per_s_per_gpu", optional_number(validation::published_tokens_per_s(p))},
      {"ran", validation::published_ran(p)},
      {"peak_memory_gib", p.has_peak_memory_gib() ? nlohmann::json(p.peak_memory_gib()) : nlohmann::json()},
      {"peak_allocated_gib", p.has_peak_allocated_gib() ? nlohmann::json(p.peak_allocated_gib()) : nlohmann::json()}};
  if (p.has_tflops()) {
    published["tflops"] = {{"per_gpu", p.tflops().per_gpu()},
                           {"flops_per_token", p.tflops().flops_per_token()},
                           {"convention", p.tflops().convention()}};
  }
  nlohmann::json out = {
      {"id", run.id()},
      {"set", validation::set_name(run.set())},
      {"status", validation::status_name(row.status)},
      {"scenario", run.scenario_source_case() == validation::Run::kShippedScenario ? "builtin:" + run.shipped_scenario()
                                                                                   : run.scenario()},
      {"source",
       {{"title", run.source().title()},
        {"url", run.source().url()},
        {"commit", run.source().commit()},
        {"table", run.source().table()},
        {"row", run.source().row()}}},
      {"published", published},
      {"notes", run.notes()}};
  if (row.status == RowStatus::kExcluded) {
    out["excluded"] = run.excluded();
    return out;
  }
  out["model"] = row.model;
  out["gpus"] = row.gpus;
  out["gpu"] = row.gpu;
  out["gpu_memory_gib"] = row.gpu_memory_gib;
  out["strategy"] = row.strategy;
  out["activation_checkpointing"] = row.checkpointing;
  if (row.calibrated) out["calibrated"] = true;  // simulated with --calibration's file
  if (row.status == RowStatus::kFailed) {
    out["failure"] = row.failure;
    return out;
  }
  const auto& q = row.predicted;
  out["predicted"] = {{"tokens_per_s_per_gpu", q.tokens_per_s_per_gpu},
                      {"step_time_s", q.step_time_s},
                      {"mfu", q.mfu},
                      {"compute_s", q.compute_s},
                      {"comm_s", q.comm_s},
                      {"exposed_comm_s", q.exposed_comm_s},
                      {"peak_reserved_bytes", q.peak_reserved_bytes},
                      {"peak_allocated_bytes", q.peak_allocated_bytes},
                      {"hbm_capacity_bytes", q.capacity_bytes},
                      {"allocator_capacity_bytes", q.allocator_capacity_bytes},
                      {"oom", q.oom},
                      {"fits_tightly", validation::fits_tightly(row)},
                      {"simulation_mode", q.mode},
                      {"simulation_wall_s", q.wall_seconds}};
  out["error"] = optional_number(validation::throughput_error(row));
  if (row.run.has_first_prediction()) {
    const validation::FirstPrediction& f = row.run.first_prediction();
    out["first_prediction"] = {{"tokens_per_s_per_gpu", f.tokens_per_s_per_gpu()},
                               {"oom", f.oom()},
                               {"commit", f.commit()},
                               {"date", f.date()},
                               {"error", optional_number(validation::first_prediction_error(row))}};
  }
  if (!run.throughput_excluded().empty()) out["throughput_excluded"] = run.throughput_excluded();
  out["memory_error"] = optional_number(validation::memory_error(row));
  out["oom_agreement"] = validation::oom_agreement_name(validation::oom_agreement(row));
  if (!run.remeasured().empty()) {
    const std::vector<double> errors = validation::remeasured_errors(row);
    nlohmann::json list = nlohmann::json::array();
    for (int i = 0; i < run.remeasured_size(); ++i) {
      const validation::Remeasurement& r = run.remeasured(i);
      list.push_back({{"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu()},
                      {"error", errors[static_cast<size_t>(i)]},
                      {"differs", r.differs()},
                      {"source",
                       {{"title", r.source().title()},
                        {"url", r.source().url()},
                        {"commit", r.source().commit()},
                        {"table", r.source().table()},
                        {"row", r.source().row()}}}});
    }
    out["remeasured"] = list;
    out["published_spread"] = optional_number(validation::published_spread(run));
    out["within_published_range"] = validation::within_published_range(row);
  }
  return out;
}

nlohmann::json summary_json(const validation::SetSummary& s) {
  return {{"rows", s.rows},
          {"simulated", s.simulated},
          {"failed", s.failed},
          {"excluded", s.excluded},
          {"throughput_excluded", s.throughput_excluded},
          {"throughput_rows", s.throughput_rows},
          {"mean_abs_error", s.mean_abs_error},
          {"max_abs_error", s.max_abs_error},
          {"max_error_id", s.max_error_id},
          {"oom_rows", s.oom_rows},
          {"oom_agree", s.oom_agree},
          {"false_ooms", s.false_ooms},
          {"missed_ooms", s.missed_ooms},
          {"tight_fits", s.tight_fits},
          {"memory_rows", s.memory_rows},
          {"memory_within_tolerance", s.memory_within_tolerance},
          {"memory_tolerance", validation::kMemoryTolerance},
          {"mean_abs_memory_error", s.mean_abs_memory_error},
          {"first_prediction_rows", s.first_prediction_rows},
          {"first_mean_abs_error", s.first_mean_abs_error},
          {"first_max_abs_error", s.first_max_abs_error},
          {"current_mean_abs_error_of_first", s.current_mean_abs_error_of_first},
          {"remeasured_rows", s.remeasured_rows},
          {"within_published_range", s.within_published_range},
          {"max_published_spread", s.max_published_spread},
          {"max_spread_id", s.max_spread_id}};
}

int64_t calibrated_rows(const std::vector<RowResult>& rows) {
  return std::count_if(rows.begin(), rows.end(), [](const RowResult& row) { return row.calibrated; });
}

}  // namespace

void print_validation(const validation::ValidationSet& set, const std::vector<RowResult>& rows, std::ostream& out,
                      const validation::RunOptions& options) {
  out << fmt::format("{}: {} runs", set.origin, rows.size());
  for (const scenarios::FieldOverride& o : options.overrides) out << fmt::format(" --set {}={}", o.path, o.value);
  if (options.calibration) {
    out << fmt::format(" --calibration {} ({} rows on {} simulated with it, marked *)", options.calibration->string(),
                       calibrated_rows(rows), options.calibrated_preset);
  }
  out << "\n\n";
  for (validation::Set s : kSets) print_rows(rows, s, out);
  bool any_failed = false;
  for (const RowResult& row : rows) {
    if (row.status != RowStatus::kFailed) continue;
    if (!any_failed) out << "failed to simulate:\n";
    any_failed = true;
    out << fmt::format("  {}: {}\n", row.run.id(), row.failure);
  }
  if (any_failed) out << '\n';
  bool any_excluded = false;
  for (const RowResult& row : rows) {
    if (row.status != RowStatus::kExcluded) continue;
    if (!any_excluded) out << "excluded from the summary:\n";
    any_excluded = true;
    out << fmt::format("  {} ({}, published {}): {}\n", row.run.id(), validation::set_name(row.run.set()),
                       published_text(row), row.run.excluded());
  }
  if (any_excluded) out << '\n';
  bool any_memory_only = false;
  for (const RowResult& row : rows) {
    if (!validation::memory_only(row)) continue;
    if (!any_memory_only) out << "compared on memory and OOM only (throughput left out of the summary):\n";
    any_memory_only = true;
    out << fmt::format("  {} ({}, published {}, predicted {}): {}\n", row.run.id(), validation::set_name(row.run.set()),
                       published_text(row), format_throughput(row.predicted.tokens_per_s_per_gpu),
                       row.run.throughput_excluded());
  }
  if (any_memory_only) out << '\n';
  print_remeasured(rows, out);
  print_summary(rows, out);
}

nlohmann::json validation_to_json(const validation::ValidationSet& set, const std::vector<RowResult>& rows,
                                  const validation::RunOptions& options) {
  nlohmann::json out = {
      {"manifest", set.origin}, {"rows", nlohmann::json::array()}, {"summary", nlohmann::json::object()}};
  if (!options.overrides.empty()) {
    out["overrides"] = nlohmann::json::array();
    for (const scenarios::FieldOverride& o : options.overrides) out["overrides"].push_back(o.path + "=" + o.value);
  }
  if (options.calibration) {
    out["calibration"] = {{"file", options.calibration->string()},
                          {"gpu", options.calibrated_preset},
                          {"rows", calibrated_rows(rows)}};
  }
  for (const RowResult& row : rows) out["rows"].push_back(row_json(row));
  for (validation::Set s : kSets)
    out["summary"][validation::set_name(s)] = summary_json(validation::summarize(rows, s));
  return out;
}

}  // namespace ragged::cli
