// Writes docs/results/validation.md: every published run of the repository's
// validation/ folder predicted by the simulator against its published figure
// (`ragged validate`), the summary of the validation and calibration sets
// apart against the issue's bar, the coverage, errors by group, a look at the
// predicted trace of every far-off row, the sources and the excluded rows,
// and, given the previous report, every prediction that moved since with the
// model changes that moved it (validation/CHANGES.md), and what is left to
// explain (validation/LEFT.md, written by hand).
// Usage: ragged-validation-report [--dir DIR] [--output FILE] [--previous FILE --changes FILE] [--left FILE]

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/validation_format.hpp"
#include "bench/validation_memory_section.hpp"
#include "bench/validation_out_of_sample_section.hpp"
#include "bench/validation_remeasured_section.hpp"
#include "common/file_io.hpp"
#include "common/task_pool.hpp"
#include "common/units.hpp"
#include "planner/resolved_scenario.hpp"
#include "sim/child_process.hpp"
#include "sim/simulation.hpp"
#include "traces/metrics.hpp"
#include "traces/trace.pb.h"
#include "validation/validation_run.hpp"

namespace {

using namespace ragged;
using validation::RowResult;
using validation::RowStatus;
using bench::abs_pct;
using bench::pct;

constexpr double kMeanBar = 0.05, kMaxBar = 0.15, kCalibrationBar = 0.05;
constexpr double kFarOff = 0.15;  // rows beyond this |error| get a look at their trace
constexpr int64_t kLongSequence = 16384;  // the tokens from which a row counts as a long sequence


std::string gpu_label(const RowResult& row) {
  if (row.gpu == "h100-sxm-95g") return "H100 95GB 500W";
  if (row.gpu.rfind("a100", 0) == 0) return row.gpu_memory_gib < 50 ? "A100 40GB" : "A100 80GB";
  if (row.gpu == "h100") return "H100 80GB";
  return row.gpu;
}
std::string gpu_range(const RowResult& row) {
  if (row.gpus <= 8) return "4-8 GPUs";
  if (row.gpus <= 64) return "16-64 GPUs";
  if (row.gpus <= 128) return "96-128 GPUs";
  return "512 GPUs";
}
std::string source_label(const RowResult& row) {
  const std::string& t = row.run.source().title();
  if (t.find("llm-foundry") != std::string::npos) return "MosaicML llm-foundry";
  if (t.find("Maximizing") != std::string::npos) return "IBM/PyTorch FSDP blog";
  if (t.find("Accelerate") != std::string::npos) return "Hugging Face Accelerate blog";
  if (t.find("ATorch") != std::string::npos) return "ATorch (dlrover) Llama2 example";
  if (t.find("TorchTitan:") != std::string::npos) return "TorchTitan paper";
  if (t.find("torchtitan") != std::string::npos) return "torchtitan docs";
  if (t.find("DeepCompile") != std::string::npos) return "DeepCompile benchmark (DeepSpeed)";
  return t;
}
bool simulated(const RowResult& row) { return row.status == RowStatus::kSimulated; }

// What the predicted trace of one row shows: where the compute goes, how busy
// the collectives are, and the largest allocations.
struct TraceLook {
  double head_share = 0;       // the head unit's compute (forward, backward, recompute) / step
  double comm_over_compute = 0;
  std::vector<std::pair<std::string, double>> largest;  // allocation name, GiB
};

TraceLook look_at_trace(const planner::ResolvedScenario& resolved) {
  const std::string bytes = sim::run_in_child([&] {
    const traces::Trace trace = sim::simulate(resolved, {}).trace;
    double head_ns = 0;
    std::map<std::string, int64_t> allocations;
    for (const auto& e : trace.events()) {
      const bool compute = e.kind() == traces::COMPUTE_FWD || e.kind() == traces::COMPUTE_BWD || e.kind() == traces::RECOMPUTE;
      if (compute && e.name().rfind("head", 0) == 0) head_ns += static_cast<double>(e.end_ns() - e.start_ns());
      if (e.kind() == traces::ALLOC) {
        // "alloc layers.9 backward workspace" and its siblings are one kind of buffer.
        static const std::regex layer(R"(layers\.\d+)"), micro_batch(R"( mb\d+)"), verb(R"(^alloc )");
        std::string name = std::regex_replace(e.name(), verb, "");
        name = std::regex_replace(std::regex_replace(name, layer, "layers.*"), micro_batch, " (per micro-batch)");
        allocations[name] = std::max(allocations[name], e.bytes());
      }
    }
    std::vector<std::pair<int64_t, std::string>> sorted;
    for (const auto& [name, size] : allocations) sorted.push_back({size, name});
    std::sort(sorted.rbegin(), sorted.rend());
    nlohmann::json out = {{"head_share", head_ns * 1e-9 / trace.summary().step_time_s()},
                          {"comm_over_compute", trace.summary().comm_s() / trace.summary().compute_s()},
                          {"largest", nlohmann::json::array()}};
    for (size_t i = 0; i < std::min<size_t>(3, sorted.size()); ++i) {
      out["largest"].push_back({sorted[i].second, static_cast<double>(sorted[i].first) / kGiB});
    }
    return out.dump();
  });
  const nlohmann::json j = nlohmann::json::parse(bytes);
  TraceLook look{j["head_share"], j["comm_over_compute"], {}};
  for (const auto& a : j["largest"]) look.largest.push_back({a[0].get<std::string>(), a[1].get<double>()});
  return look;
}

// The throughput errors of a set of validation rows.
struct ErrorStats {
  int n = 0;
  double sum_abs = 0, sum = 0, max_abs = 0, lo = 0, hi = 0;
  void add(double error) {
    lo = n == 0 ? error : std::min(lo, error);
    hi = n == 0 ? error : std::max(hi, error);
    ++n;
    sum_abs += std::fabs(error);
    sum += error;
    max_abs = std::max(max_abs, std::fabs(error));
  }
};

// A row the error figures count: a validation row with a published throughput.
std::optional<double> counted_error(const RowResult& row) {
  return row.run.set() == validation::VALIDATION ? validation::throughput_error(row) : std::nullopt;
}

// The errors of the counted rows `keep` accepts.
ErrorStats error_stats(const std::vector<RowResult>& rows, const std::function<bool(const RowResult&)>& keep) {
  ErrorStats stats;
  for (const RowResult& row : rows) {
    if (auto error = counted_error(row); error && keep(row)) stats.add(*error);
  }
  return stats;
}

// Rows, mean |error|, max |error| and mean signed error of the rows a key groups.
void group_table(std::ostringstream& md, const std::string& title, const std::vector<RowResult>& rows,
                 const std::function<std::string(const RowResult&)>& key) {
  std::map<std::string, ErrorStats> groups;
  for (const RowResult& row : rows) {
    if (auto error = counted_error(row)) groups[key(row)].add(*error);
  }
  md << fmt::format("| {} | rows | mean \\|error\\| | max \\|error\\| | mean signed error |\n|---|---:|---:|---:|---:|\n", title);
  for (const auto& [name, s] : groups) {
    md << fmt::format("| {} | {} | {} | {} | {} |\n", name, s.n, abs_pct(s.sum_abs / s.n), abs_pct(s.max_abs), pct(s.sum / s.n));
  }
  md << "\n";
}

// "a, b, c", or "none".
std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out.empty() ? std::string("none") : out;
}

void summary_section(std::ostringstream& md, const std::vector<RowResult>& rows) {
  const validation::SetSummary v = validation::summarize(rows, validation::VALIDATION);
  const validation::SetSummary c = validation::summarize(rows, validation::CALIBRATION);
  auto verdict = [](bool met) { return met ? "met" : "**not met**"; };
  md << "## Summary\n\n";
  md << "| set | rows | simulated | failed | excluded | mean \\|error\\| | max \\|error\\| (row) | OOM agreement | false OOMs "
        "| missed OOMs | memory within 10% |\n|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|\n";
  for (const auto* s : {&v, &c}) {
    md << fmt::format("| {} | {} | {} | {} | {} | {} | {} ({}) | {}/{} | {} | {} | {} |\n", validation::set_name(s->set), s->rows,
                      s->simulated, s->failed, s->excluded, abs_pct(s->mean_abs_error), abs_pct(s->max_abs_error),
                      s->max_error_id, s->oom_agree, s->oom_rows, s->false_ooms, s->missed_ooms,
                      s->memory_rows > 0 ? fmt::format("{}/{}", s->memory_within_tolerance, s->memory_rows) : "no source gives it");
  }
  bool calibration_within = true;
  for (const RowResult& row : rows) {
    auto error = validation::throughput_error(row);
    if (row.run.set() == validation::CALIBRATION && (!error || std::fabs(*error) > kCalibrationBar)) calibration_within = false;
  }
  md << "\nThe bar (issue 9), today:\n\n";
  md << fmt::format("- validation mean |error| of tokens/s per GPU <= 5%: {} ({})\n", abs_pct(v.mean_abs_error),
                    verdict(v.mean_abs_error <= kMeanBar));
  md << fmt::format("- validation max |error| <= 15%: {} ({})\n", abs_pct(v.max_abs_error), verdict(v.max_abs_error <= kMaxBar));
  md << fmt::format("- zero false OOMs (a configuration published as running predicted not to fit): {} ({})\n", v.false_ooms,
                    verdict(v.false_ooms == 0));
  md << fmt::format("- peak memory within 10% where a source gives it: {}\n",
                    v.memory_rows > 0 ? fmt::format("{}/{} ({})", v.memory_within_tolerance, v.memory_rows,
                                                    verdict(v.memory_within_tolerance == v.memory_rows))
                                      : std::string("no validation source publishes memory (only the calibration points do)"));
  md << fmt::format("- calibration points within 5%: {} (max {})\n\n", verdict(calibration_within), abs_pct(c.max_abs_error));
  if (v.throughput_excluded > 0) {
    md << fmt::format("{} simulated validation rows count in the memory and OOM figures but not in the throughput ones "
                      "(their source does not state what the step time depends on; reasons under \"Rows compared on "
                      "memory only\").\n\n", v.throughput_excluded);
  }
  std::vector<std::string> tight;
  for (const RowResult& row : rows) {
    if (!validation::fits_tightly(row)) continue;
    const double error = validation::throughput_error(row).value_or(0);
    tight.push_back(fmt::format("`{}` ({:+.1f}%)", row.run.id(), 100 * error));
  }
  md << fmt::format(
      "Predicted to fit tightly (with less room than the simulator's {:.1f}% peak-memory error on its calibration "
      "runs, where the real run may thrash the caching allocator or run out of memory; `ragged simulate` says "
      "so): {}.\n\n",
      100 * traces::kPeakMemoryPredictionError, join(tight));
}

void coverage_section(std::ostringstream& md, const std::vector<RowResult>& rows) {
  md << "## Coverage of the validation set\n\n";
  // Per value: the rows, and of them those compared on memory and OOM only.
  std::map<std::string, std::map<std::string, std::pair<int, int>>> counts;
  int64_t fewest = 0, most = 0;
  for (const RowResult& row : rows) {
    if (row.run.set() != validation::VALIDATION || !simulated(row)) continue;
    const int memory_only = validation::memory_only(row) ? 1 : 0;
    for (const auto& [by, value] : {std::pair<std::string, std::string>{"source", source_label(row)},
                                    {"GPU", gpu_label(row)},
                                    {"strategy", row.strategy},
                                    {"activation checkpointing", row.checkpointing},
                                    {"GPUs", gpu_range(row)}}) {
      counts[by][value].first++;
      counts[by][value].second += memory_only;
    }
    counts["published"][validation::published_ran(row.run.published()) ? "throughput" : "out of memory"].first++;
    fewest = fewest == 0 ? row.gpus : std::min(fewest, row.gpus);
    most = std::max(most, row.gpus);
  }
  md << "Simulated validation rows, counted by (\"n on memory only\": of them, rows whose throughput is not "
        "compared):\n\n| by | counts |\n|---|---|\n";
  for (const auto& [by, values] : counts) {
    std::string cells;
    for (const auto& [value, n] : values) {
      cells += fmt::format("{}{}: {}{}", cells.empty() ? "" : ", ", value, n.first,
                           n.second > 0 ? fmt::format(" ({} on memory only)", n.second) : "");
    }
    md << fmt::format("| {} | {} |\n", by, cells);
  }
  md << fmt::format("\nGPU counts from {} to {}. The issue asks for >= 30 points from >= 3 independent sources, >= 2 GPU "
                    "generations, FSDP1 / FSDP2 / ZeRO-3, with and without activation checkpointing, 8 to >= 512 GPUs.\n\n",
                    fewest, most);
}

void rows_section(std::ostringstream& md, const std::vector<RowResult>& rows, validation::Set set) {
  md << fmt::format("## {} rows\n\n", set == validation::VALIDATION ? "Validation" : "Calibration");
  md << "| id | model | GPUs | GPU | strategy | AC | published tok/s/GPU | predicted | error | memory published / "
        "predicted GiB | OOM | predicted MFU | comm / compute busy |\n|---|---|---:|---|---|---|---:|---:|---:|---:|---|---:|---:|\n";
  for (const RowResult& row : rows) {
    if (row.run.set() != set || row.status == RowStatus::kExcluded) continue;
    if (row.status == RowStatus::kFailed) {
      md << fmt::format("| {} | {} | {} | {} | {} | {} | - | failed: {} | | | | | |\n", row.run.id(), row.model, row.gpus,
                        gpu_label(row), row.strategy, row.checkpointing, row.failure);
      continue;
    }
    const auto& p = row.run.published();
    const auto published = validation::published_tokens_per_s(p);
    const auto error = validation::throughput_error(row);
    const auto agreement = validation::oom_agreement(row);
    std::string oom = agreement == validation::OomAgreement::kAgree ? (row.predicted.oom ? "agree (OOM)" : "agree")
                                                                     : "**" + validation::oom_agreement_name(agreement) + "**";
    if (validation::fits_tightly(row)) oom += " (fits, tightly)";
    md << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} | {:.1f}% | {:.2f} |\n", row.run.id(), row.model,
                      row.gpus, gpu_label(row), row.strategy, row.checkpointing, published ? format_throughput(*published) : "OOM",
                      format_throughput(row.predicted.tokens_per_s_per_gpu),
                      error ? pct(*error) : (validation::throughput_compared(row) ? "-" : "not compared"),
                      validation::published_memory_text(p), format_gib(validation::predicted_memory_bytes(row), 1), oom,
                      100 * row.predicted.mfu,
                      row.predicted.compute_s > 0 ? row.predicted.comm_s / row.predicted.compute_s : 0.0);
  }
  md << "\n";
}

// The predicted tokens/s per GPU of every row of a previous report's row
// tables ("| id | model | ... | published | predicted | ..."), by id.
std::map<std::string, double> previous_predictions(const std::string& report) {
  std::map<std::string, double> out;
  std::istringstream in(report);
  auto trim = [](std::string v) {
    v.erase(std::remove_if(v.begin(), v.end(), [](char c) { return c == ' ' || c == ','; }), v.end());
    return v;
  };
  // The column of "predicted" in the current table, read off its header row
  // (npos: a table without one, or a line outside a table).
  constexpr size_t kNone = std::string::npos;
  size_t predicted_column = kNone;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("|", 0) != 0) {
      predicted_column = kNone;
      continue;
    }
    if (line.rfind("|-", 0) == 0) continue;  // the header's separator row
    std::vector<std::string> cells;
    std::istringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) cells.push_back(trim(cell));
    if (!cells.empty() && cells[0] == "id") {
      const auto it = std::find(cells.begin(), cells.end(), "predicted");
      predicted_column = it == cells.end() ? kNone : static_cast<size_t>(it - cells.begin());
      continue;
    }
    if (predicted_column >= cells.size()) continue;
    const std::string& predicted = cells[predicted_column];
    char* end = nullptr;
    const double value = std::strtod(predicted.c_str(), &end);
    if (!predicted.empty() && end && *end == '\0' && value > 0) out[cells[0]] = value;
  }
  return out;
}

// The section of a report that starts at `heading`, up to the next "## ".
std::string section_of(const std::string& report, const std::string& heading) {
  const size_t start = report.find(heading);
  if (start == std::string::npos) return "";
  const size_t end = report.find("\n## ", start + heading.size());
  return report.substr(start, end == std::string::npos ? std::string::npos : end + 1 - start);
}

// Every row whose prediction moved by 0.1% or more since the previous report,
// under the text of the model changes that moved it, and the count of rows
// added since. When nothing moved and nothing was added (a report regenerated
// without a change) the previous report's section stays, so the explanation
// of the last change is not lost.
void moved_section(std::ostringstream& md, const std::vector<RowResult>& rows, const std::string& previous_report,
                   const std::string& changes) {
  constexpr std::string_view kHeading = "## What moved since the previous report\n";
  const std::map<std::string, double> before = previous_predictions(previous_report);
  std::ostringstream table;
  int moved = 0, unchanged = 0, added = 0;
  for (const RowResult& row : rows) {
    const auto it = before.find(row.run.id());
    if (!simulated(row)) continue;
    if (it == before.end()) {
      ++added;
      continue;
    }
    const double now = row.predicted.tokens_per_s_per_gpu;
    const double change = now / it->second - 1;
    // The previous value is as printed (rounded): a row moved when its printed
    // prediction changed by 0.1% or more.
    if (format_throughput(now) == format_throughput(it->second) || std::fabs(change) < 0.001) {
      ++unchanged;
      continue;
    }
    ++moved;
    const auto published = validation::published_tokens_per_s(row.run.published());
    table << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", row.run.id(), gpu_label(row), row.checkpointing,
                         format_throughput(it->second), format_throughput(now), pct(change), published ? pct(it->second / *published - 1) : "-",
                         published ? pct(now / *published - 1) : "-");
  }
  const std::string kept = section_of(previous_report, std::string(kHeading));
  if (moved == 0 && added == 0 && !kept.empty()) {
    md << kept;
    return;
  }
  md << kHeading << "\n" << changes << "\n";
  md << "| id | GPU | AC | predicted before | now | change | error before | error now |\n"
        "|---|---|---|---:|---:|---:|---:|---:|\n"
     << table.str();
  md << fmt::format("\n{} simulated rows kept their printed prediction or moved by less than 0.1% (not listed); "
                    "{} rows are new since the previous report.\n\n",
                    unchanged, added);
}

void far_off_section(std::ostringstream& md, const validation::ValidationSet& set, const std::vector<RowResult>& rows) {
  md << "## Far-off rows: what the predicted trace shows\n\n";
  md << fmt::format("Every validation row with |error| > {:.0f}% or an OOM disagreement, worst first, re-simulated with its "
                    "trace: the share of the step the head unit (output GEMM and loss) computes, the collectives' busy time "
                    "over the compute stream's (all of it overlapped unless the exposed time says otherwise), and the "
                    "largest allocations. `ragged simulate validation/scenarios/ID.textproto --chrome-trace t.json` shows "
                    "the timeline.\n\n",
                    100 * kFarOff);
  std::vector<const RowResult*> far;
  for (const RowResult& row : rows) {
    if (row.run.set() != validation::VALIDATION || !simulated(row)) continue;
    auto error = validation::throughput_error(row);
    if ((error && std::fabs(*error) > kFarOff) || validation::oom_agreement(row) != validation::OomAgreement::kAgree) {
      far.push_back(&row);
    }
  }
  std::sort(far.begin(), far.end(), [](const RowResult* a, const RowResult* b) {
    return std::fabs(validation::throughput_error(*a).value_or(9)) > std::fabs(validation::throughput_error(*b).value_or(9));
  });
  // The same model, sequence, GPU and checkpointing on other GPU counts.
  auto siblings = [&](const RowResult& row) {
    std::vector<const RowResult*> out;
    for (const RowResult& other : rows) {
      if (&other == &row || !counted_error(other) || other.model != row.model || other.gpu != row.gpu ||
          other.gpu_memory_gib != row.gpu_memory_gib || other.checkpointing != row.checkpointing ||
          other.sequence != row.sequence || other.gpus == row.gpus) {
        continue;
      }
      out.push_back(&other);
    }
    return out;
  };
  md << "| id | error | OOM | predicted MFU | head share of the step | comm / compute busy | largest allocations (GiB) "
        "| same model on other GPU counts |\n|---|---:|---|---:|---:|---:|---|---|\n";
  std::vector<std::string> contradicted;
  for (const RowResult* row : far) {
    const TraceLook look = look_at_trace(validation::resolve_row(set, set.index_of(row->run.id())));
    std::string largest, others;
    for (const auto& [name, size] : look.largest) largest += fmt::format("{}{} {:.1f}", largest.empty() ? "" : "; ", name, size);
    bool all_close = true;
    const std::vector<const RowResult*> near = siblings(*row);
    for (const RowResult* other : near) {
      const double e = *counted_error(*other);
      others += fmt::format("{}{} GPUs {}", others.empty() ? "" : ", ", other->gpus, pct(e));
      all_close = all_close && std::fabs(e) <= kFarOff;
    }
    if (!near.empty() && all_close) contradicted.push_back(fmt::format("`{}`", row->run.id()));
    const auto error = validation::throughput_error(*row);
    md << fmt::format("| {} | {} | {} | {:.1f}% | {:.1f}% | {:.2f} | {} | {} |\n", row->run.id(),
                      error ? pct(*error) : "-", validation::oom_agreement_name(validation::oom_agreement(*row)),
                      100 * row->predicted.mfu, 100 * look.head_share, look.comm_over_compute, largest,
                      others.empty() ? "-" : others);
  }
  // Figures the hypotheses quote, from this run.
  auto summary_of = [&](const std::function<bool(const RowResult&)>& keep) {
    const ErrorStats e = error_stats(rows, keep);
    if (e.n == 0) return std::string("no rows");
    return fmt::format("{} rows, {} to {}, mean |error| {:.1f}%", e.n, pct(e.lo), pct(e.hi), 100 * e.sum_abs / e.n);
  };
  auto fill = [](const RowResult& r) {
    return static_cast<double>(r.predicted.peak_reserved_bytes) / static_cast<double>(r.predicted.capacity_bytes);
  };
  auto tight = [](const RowResult& r) { return validation::fits_tightly(r); };
  auto triton = [&](const RowResult& r) {
    return r.attention == "triton_flash_attention" && r.sequence >= kLongSequence;
  };
  md << "\n### Hypotheses (labelled; not tested, and nothing was changed to fit these rows)\n\n";
  md << fmt::format(
      "- **Hypothesis: runs at their memory limit are slower than predicted.** Rows predicted to fit tightly: {}; rows "
      "not flagged but predicted at 90% of capacity or more: {}; every other row: {}. Near capacity PyTorch's caching "
      "allocator releases its cache and retries, each release a device synchronisation (fms-fsdp issue #63 names it a "
      "throughput cliff); the simulator predicts a retry only when its coarse pieces (a block's recompute is one) "
      "overflow, so it sees the cliff late (docs/SIMULATOR.md section 8, \"Tight fits\").\n",
      summary_of(tight), summary_of([&](const RowResult& r) { return !tight(r) && fill(r) >= 0.9; }),
      summary_of([&](const RowResult& r) { return !tight(r) && fill(r) < 0.9; }));
  md << fmt::format(
      "- **Hypothesis: flash-attn's Triton FlashAttention is relatively faster on Hopper than the A100 measurement the "
      "simulator takes.** Rows running it at sequences of {} tokens or more: H100 {}; A100 {}. Its rate is "
      "FlashAttention-2's times the shares the FlashAttention-2 paper measured on an A100 (section 4.1), taken to hold "
      "on Hopper; llm-foundry's `attn_impl: triton` ran a pre-MLIR Triton fork (`triton-pre-mlir`, llm-foundry issue "
      "#246) whose Hopper rate no benchmark publishes.\n",
      format_throughput(kLongSequence), summary_of([&](const RowResult& r) { return triton(r) && r.gpu == "h100"; }),
      summary_of([&](const RowResult& r) { return triton(r) && r.gpu.rfind("a100", 0) == 0; }));
  md << fmt::format(
      "- **Hypothesis: far-off rows whose neighbours on other GPU counts agree with the prediction are outliers of "
      "their source's measurement, or of what changes with the GPU count**: {} (every row of the same model, sequence, "
      "GPU and checkpointing on another GPU count is within {:.0f}%, the last column above). What changes is each "
      "GPU's shard: fewer GPUs hold more of the model, closer to the memory limit (the first hypothesis). Nothing is changed "
      "for these rows; they stay in the summary.\n\n",
      contradicted.empty() ? std::string("none") : join(contradicted), 100 * kFarOff);
}

void sources_section(std::ostringstream& md, const std::vector<RowResult>& rows) {
  md << "## Sources\n\n";
  std::map<std::string, std::pair<const validation::Source*, std::set<std::string>>> sources;
  std::map<std::string, int> counts;
  for (const RowResult& row : rows) {
    auto& entry = sources[row.run.source().title()];
    entry.first = &row.run.source();
    entry.second.insert(row.run.source().table());
    counts[row.run.source().title()]++;
  }
  for (const auto& [title, entry] : sources) {
    const validation::Source& s = *entry.first;
    md << fmt::format("- **{}** ({} rows): {}{}\n", title, counts[title], s.url(),
                      s.commit().empty() ? "" : fmt::format(", commit `{}`", s.commit()));
    for (const std::string& table : entry.second) md << fmt::format("  - {}\n", table);
  }
  md << "\nEach row's cells as printed, and what the source states that a scenario cannot (attention kernel, Composer's "
        "mixed-precision mode, interconnect assumptions), are in `validation/runs.textproto` (`row`, `notes`).\n\n";
}

void memory_only_section(std::ostringstream& md, const std::vector<RowResult>& rows) {
  bool any = false;
  for (const RowResult& row : rows) {
    if (!validation::memory_only(row)) continue;
    if (!any) {
      md << "## Rows compared on memory only\n\n| id | set | published | predicted | reason |\n"
            "|---|---|---:|---:|---|\n";
    }
    any = true;
    auto published = validation::published_tokens_per_s(row.run.published());
    md << fmt::format("| {} | {} | {} | {} | {} |\n", row.run.id(), validation::set_name(row.run.set()),
                      published ? format_throughput(*published) : "OOM", format_throughput(row.predicted.tokens_per_s_per_gpu),
                      row.run.throughput_excluded());
  }
  if (any) md << "\n";
}

void excluded_section(std::ostringstream& md, const std::vector<RowResult>& rows) {
  md << "## Excluded rows\n\n| id | set | published | reason |\n|---|---|---:|---|\n";
  for (const RowResult& row : rows) {
    if (row.status != RowStatus::kExcluded) continue;
    auto published = validation::published_tokens_per_s(row.run.published());
    md << fmt::format("| {} | {} | {} | {} |\n", row.run.id(), validation::set_name(row.run.set()),
                      published ? format_throughput(*published) : "OOM", row.run.excluded());
  }
  md << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::string output, dir, previous, changes, left;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--output" && i + 1 < argc) output = argv[++i];
    else if (arg == "--dir" && i + 1 < argc) dir = argv[++i];
    else if (arg == "--previous" && i + 1 < argc) previous = argv[++i];
    else if (arg == "--changes" && i + 1 < argc) changes = argv[++i];
    else if (arg == "--left" && i + 1 < argc) left = argv[++i];
    else {
      std::cerr << "usage: ragged-validation-report [--dir DIR] [--output FILE] [--previous FILE --changes FILE] "
                   "[--left FILE]\n";
      return 2;
    }
  }
  if (previous.empty() != changes.empty()) {
    std::cerr << "ragged-validation-report: --previous and --changes go together (the moved rows and why they moved)\n";
    return 2;
  }
  try {
    // Read before anything is written: --previous may name the output itself.
    const std::string previous_report = previous.empty() ? "" : read_file(previous);
    const std::string changes_text = changes.empty() ? "" : read_file(changes);
    const std::string left_text = left.empty() ? "" : read_file(left);
    const validation::ValidationSet set =
        validation::load_validation_set(dir.empty() ? validation::default_validation_dir() : std::filesystem::path(dir));
    validation::RunOptions run_options;
    run_options.jobs = hardware_threads();
    const std::vector<RowResult> rows = validation::run_validation(set, run_options);

    std::ostringstream md;
    md << "# Validation: predictions against published training runs\n\n";
    md << "Generated by `scripts/bench-validation` (`build/bench/ragged-validation-report --output "
          "docs/results/validation.md`), which runs what `ragged validate` runs: every row of `validation/runs.textproto` "
          "(schema `validation/validation.proto`) simulated from its scenario and set against the figure its source "
          "published. Nothing in the simulator was fitted to a validation row; the calibration points (TorchTitan's "
          "Llama-3-8B on 8 and 128 H100, eager and torch.compile, `docs/results/calibration.md`) are reported apart.\n\n"
          "Definitions: error = predicted / published - 1 of tokens/s per GPU; memory error compares the predicted peak "
          "reserved memory with the published peak (the predicted peak allocated memory where a source publishes "
          "`torch.cuda.max_memory_allocated`, marked `alloc`); a false OOM is a configuration published as running "
          "that the simulator predicts out of memory (a missed OOM the reverse). The sources publish tokens/s per GPU "
          "(llm-foundry's `Throughput (T/s/GPU)`, the blogs' tokens/sec/GPU, torchtitan's WPS) except ATorch, whose "
          "TFLOP/s per GPU are converted to tokens/s with the FLOPs per token of its own convention "
          "(`published.tflops`, stated in each row), rather than our prediction converted to its convention, because "
          "the simulator predicts time and tokens per step are convention-free.\n\n";
    summary_section(md, rows);
    coverage_section(md, rows);
    bench::out_of_sample_section(md, rows);
    md << "## Errors by group (validation rows)\n\n";
    group_table(md, "source", rows, source_label);
    group_table(md, "GPU", rows, gpu_label);
    group_table(md, "strategy", rows, [](const RowResult& r) { return r.strategy; });
    group_table(md, "activation checkpointing", rows, [](const RowResult& r) { return r.checkpointing; });
    group_table(md, "GPUs", rows, gpu_range);
    // Right-aligned so that the table sorts by length.
    group_table(md, "sequence (tokens)", rows,
                [](const RowResult& r) { return fmt::format("{:>6}", format_integer(r.sequence)); });
    // Where the sequence-length trend lies, per GPU generation: attention's
    // share of the step grows with the sequence.
    group_table(md, "GPU, sequence (tokens)", rows, [](const RowResult& r) {
      const char* band = r.sequence <= 4096             ? "short (up to 4,096)"
                         : r.sequence < kLongSequence ? "medium (8,192)"
                                                      : "long (16,384 up)";
      return fmt::format("{}, {}", gpu_label(r), band);
    });
    rows_section(md, rows, validation::VALIDATION);
    rows_section(md, rows, validation::CALIBRATION);
    if (!previous.empty()) moved_section(md, rows, previous_report, changes_text);
    far_off_section(md, set, rows);
    bench::remeasured_section(md, rows, kFarOff);
    bench::memory_section(md, set, rows);
    sources_section(md, rows);
    memory_only_section(md, rows);
    excluded_section(md, rows);
    if (!left_text.empty()) md << "## What is left\n\n" << left_text;
    if (output.empty()) {
      std::cout << md.str();
    } else {
      write_file_atomically(output, md.str());
      std::cerr << "wrote " << output << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "ragged-validation-report: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
