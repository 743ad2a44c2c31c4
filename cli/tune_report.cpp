#include "cli/tune_report.hpp"

#include <fmt/format.h>

#include "cli/band_report.hpp"
#include "cli/goodput_report.hpp"
#include "cli/table.hpp"
#include "common/units.hpp"
#include "scenarios/scenario_rules.hpp"
#include "tune/bounded_search.hpp"
#include "tune/candidate_scenario.hpp"

namespace ragged::cli {
namespace {

// With a tenth: neighbours on the Pareto front can differ by less than one.
std::string precise_rate(double tokens_per_s) {
  const int64_t tenths = static_cast<int64_t>(tokens_per_s * 10 + 0.5);
  return fmt::format("{}.{}", format_integer(tenths / 10), tenths % 10);
}
std::string percent(size_t part, size_t whole) {
  return whole == 0 ? "0%" : fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

// The simulator's own wall time summed over what this run simulated (the
// rest of a search's time is planning, forking and waiting).
double simulator_seconds(const tune::SearchResult& r) {
  double total = 0;
  for (const auto& e : r.evaluations) {
    if (e.outcome == tune::Outcome::kSimulated && !e.cached) total += e.simulation_wall_s;
  }
  return total;
}

// Hours or days where seconds would be unreadable.
std::string long_duration(double seconds) {
  if (seconds >= 100 * 86400) return format_rounded(seconds / 86400) + " days";
  if (seconds >= 2 * 86400) return fmt::format("{:.1f} days", seconds / 86400);
  if (seconds >= 3600) return fmt::format("{:.1f} hours", seconds / 3600);
  return format_seconds(seconds);
}

// The model as the scenario names it.
std::string model_text(const scenarios::ModelSource& m) {
  const std::string name = m.has_inline_spec() ? m.inline_spec().name()
                           : m.has_hf_config() ? m.hf_config()
                                               : m.catalog();
  return (name.empty() ? std::string("inline model") : name) +
         (m.layers() > 0 ? fmt::format(" ({} blocks)", m.layers()) : "");
}

std::string group_text(const tune::Candidate& c, int64_t gpus) {
  const int64_t replicas = gpus / (c.shard_group * c.tp * c.pp);
  return replicas > 1 ? fmt::format("{} x {}", c.shard_group, replicas) : std::to_string(c.shard_group);
}

// A GPU's share of the batch: whole sequences, or tokens where the tp and
// cp ranks share them.
std::string per_gpu_text(const tune::BatchShape& b) {
  if (b.global_sequences % b.gpus == 0) return format_integer(b.global_sequences / b.gpus);
  return format_rounded(b.tokens_per_gpu()) + " tokens";
}

bool any_mesh(const tune::SearchResult& r) {
  for (const auto& c : r.candidates) {
    if (!tune::mesh_text(c).empty()) return true;
  }
  return false;
}

bool any_granularity(const tune::SearchResult& r) {
  for (const auto& c : r.candidates) {
    if (!c.granularity.empty()) return true;
  }
  return false;
}

std::string training_text(const tune::SearchResult& r, const ReportOptions& options) {
  const tune::TrainingTime t =
      tune::training_time(*options.train_tokens, r.ranked_rate(r.best()), r.gpus, options.gpu_hour_price);
  return fmt::format(
      "{} tokens in {} on {} GPUs, {} GPU-hours{}", format_count(*options.train_tokens), long_duration(t.seconds),
      format_integer(r.gpus), format_rounded(t.gpu_hours),
      t.cost ? fmt::format(", {} at {:g} per GPU-hour", format_rounded(*t.cost), *options.gpu_hour_price) : "");
}

// Candidate i's goodput as `ragged simulate --goodput` reports it.
GoodputReport goodput_report_of(const tune::Tuner& tuner, const tune::SearchResult& r, size_t i,
                                const std::string& label) {
  GoodputReport g;
  g.label = label;
  g.gpus = r.gpus;
  g.tokens_per_s_per_gpu = r.evaluations[i].tokens_per_s_per_gpu;
  g.settings = planner::goodput_settings(tuner.base().scenario.goodput());
  g.estimate = *r.goodput[i];
  return g;
}

// Two decimals: on a few GPUs goodput is within a tenth of 100%.
std::string goodput_percent(const tune::SearchResult& r, size_t i) {
  return fmt::format("{:.2f}%", 100 * r.goodput[i]->goodput);
}

void print_counts(const tune::SearchResult& r, const ReportOptions& options, std::ostream& out) {
  const tune::OutcomeCounts& n = r.counts;
  const size_t all = r.candidates.size();
  out << fmt::format(
      "  {} candidates: {} pruned before simulation ({}: {} sharded state alone over the budget, {} with "
      "the activation floor), {} simulated, {} fit",
      all, n.pruned(), percent(n.pruned(), all), n.pruned_state, n.pruned_activations, n.simulated, n.fitting);
  if (n.bounded > 0) {
    out << fmt::format(
        ", {} bounded (their step-time bound keeps them out of the top {}: not simulated, "
        "--exhaustive simulates them)",
        n.bounded, *r.exact_top);
  }
  if (n.invalid > 0) out << fmt::format(", {} invalid", n.invalid);
  if (n.failed > 0) out << fmt::format(", {} failed", n.failed);
  out << '\n';
  for (size_t i = 0; i < all; ++i) {
    const tune::Evaluation& e = r.evaluations[i];
    if (e.outcome == tune::Outcome::kFailed || e.outcome == tune::Outcome::kInvalid) {
      out << fmt::format("  first {}: {}: {}\n", tune::outcome_name(e.outcome), tune::describe(r.candidates[i], r.gpus),
                         e.message);
      break;
    }
  }
  out << fmt::format("  {} on {} workers ({} in the simulator), {} from the cache\n", format_seconds(r.wall_seconds),
                     options.workers, format_seconds(simulator_seconds(r)), n.cached);
}

// The block's mode, and the experts' own recompute where it is chosen.
std::string checkpointing_text(const tune::Candidate& c) {
  return scenarios::checkpointing_name(c.checkpointing) + (c.experts_recompute ? " + experts" : "");
}

void print_ranking(const tune::SearchResult& r, const ReportOptions& options, std::ostream& out) {
  const bool granularity = any_granularity(r);
  const bool mesh = any_mesh(r);
  Table table;
  table.column("#").column("strategy", Table::Align::kLeft);
  if (mesh) table.column("mesh", Table::Align::kLeft);
  table.column("shard group").column("micro-batch");
  table.column("checkpointing", Table::Align::kLeft).column("prefetch").column("reshard", Table::Align::kLeft);
  if (granularity) table.column("granularity", Table::Align::kLeft);
  table.column("tokens/s/GPU").column("80% band");
  if (r.by_goodput()) table.column("goodput").column("effective");
  table.column("step time").column("MFU").column("peak GiB").column("free GiB").column("exposed comm");
  const size_t shown = std::min(options.top, r.ranking.ranked.size());
  for (size_t k = 0; k < shown; ++k) {
    const size_t i = r.ranking.ranked[k];
    const tune::Candidate& c = r.candidates[i];
    const tune::Evaluation& e = r.evaluations[i];
    std::vector<std::string> row = {std::to_string(k + 1), scenarios::strategy_name(c.strategy)};
    if (mesh) row.push_back(tune::mesh_text(c).empty() ? "-" : tune::mesh_text(c));
    row.insert(row.end(), {group_text(c, r.gpus), fmt::format("{} x {}", c.micro_batch, c.grad_accum),
                           checkpointing_text(c), std::to_string(c.prefetch), c.reshard ? "yes" : "no"});
    if (granularity) row.push_back(c.granularity.empty() ? "-" : c.granularity);
    row.push_back(format_rounded(e.tokens_per_s_per_gpu));
    row.push_back(tokens_range_text(e.band_rows, e.band_tokens_low, e.band_tokens_high));
    if (r.by_goodput()) row.insert(row.end(), {goodput_percent(r, i), format_rounded(r.ranked_rate(i))});
    for (std::string cell :
         {format_seconds(e.step_time_s), fmt::format("{:.1f}%", 100 * e.mfu), format_gib(e.peak_reserved_bytes),
          format_gib(e.capacity_bytes - e.peak_reserved_bytes), format_seconds(e.exposed_comm_s)}) {
      row.push_back(std::move(cell));
    }
    table.row(std::move(row));
  }
  out << fmt::format(
      "\n  ranking (predicted{}; micro-batch is sequences x accumulation steps; 80% band: where the published "
      "tokens/s/GPU of comparable validation rows lay, the regime's alone, `ragged simulate` widens it "
      "for inputs left to the defaults{}):\n",
      r.by_goodput() ? ", by effective = tokens/s/GPU x goodput" : "",
      shown < r.ranking.ranked.size()
          ? fmt::format("; {} of {} {}that fit, --top N for more", shown, r.ranking.ranked.size(),
                        r.counts.bounded > 0 ? "simulated candidates " : "")
          : "");
  table.print(out, "  ");
}

// With bounded candidates the front is the simulated ones': exact down to
// the k-th best rate (a bounded candidate is slower than that, so it cannot
// take the place of a front point that fast), unsearched below it.
std::string front_scope(const tune::SearchResult& r) {
  if (r.counts.bounded == 0) return "";
  return fmt::format(
      "; over the simulated candidates: exact down to the {} best's {}, --exhaustive for the whole front",
      tune::ordinal(*r.exact_top), precise_rate(*r.kth_best_rate));
}

void print_pareto(const tune::SearchResult& r, std::ostream& out) {
  Table table;
  table.column("peak GiB")
      .column(r.by_goodput() ? "effective tokens/s/GPU" : "tokens/s/GPU")
      .column("configuration", Table::Align::kLeft);
  for (size_t i : r.ranking.pareto) {
    table.row({format_gib(r.evaluations[i].peak_reserved_bytes), precise_rate(r.ranked_rate(i)),
               tune::describe(r.candidates[i], r.gpus)});
  }
  out << fmt::format(
      "\n  {}throughput-memory Pareto front (no other fitting candidate is both faster and smaller{}):\n",
      r.by_goodput() ? "effective " : "", front_scope(r));
  table.print(out, "  ");
}

// The simulated candidate with the smallest peak, for a search where nothing fits.
std::optional<size_t> smallest_peak(const tune::SearchResult& r) {
  std::optional<size_t> best;
  for (size_t i = 0; i < r.evaluations.size(); ++i) {
    if (r.evaluations[i].outcome != tune::Outcome::kSimulated) continue;
    if (!best || r.evaluations[i].peak_reserved_bytes < r.evaluations[*best].peak_reserved_bytes) best = i;
  }
  return best;
}

nlohmann::json candidate_to_json(const tune::Candidate& c) {
  return {{"strategy", scenarios::strategy_name(c.strategy)},
          {"tp", c.tp},
          {"cp", c.cp},
          {"ep", c.ep},
          {"pp", c.pp},
          {"schedule", c.pp > 1 ? nlohmann::json(scenarios::schedule_name(c.schedule)) : nlohmann::json(nullptr)},
          {"virtual_stages", c.virtual_stages},
          {"expert_tp", c.whole_experts ? 1 : c.tp},
          {"shard_group", c.shard_group},
          {"micro_batch", c.micro_batch},
          {"grad_accum", c.grad_accum},
          {"checkpointing", scenarios::checkpointing_name(c.checkpointing)},
          {"experts_checkpointing", c.experts_recompute ? nlohmann::json(scenarios::checkpointing_name(scenarios::FULL))
                                                        : nlohmann::json(nullptr)},
          {"expert_all_to_all_overlap", c.expert_overlap},
          {"prefetch_depth", c.prefetch},
          {"reshard_after_forward", c.reshard},
          {"granularity", c.granularity}};
}

}  // namespace

void print_search(const tune::Tuner& tuner, const tune::SearchResult& r, const ReportOptions& options,
                  std::ostream& out) {
  const scenarios::Scenario& s = tuner.base_at(r.gpus).scenario;
  const int64_t capacity = scenarios::allocator_capacity_bytes(s);
  out << fmt::format(
      "{}: {} on {} x {}, global batch {} x {} tokens ({} per GPU), memory budget {} GiB ({:g}% of the allocator's "
      "{} GiB){}\n",
      s.name(), model_text(s.model()), format_integer(r.gpus), s.cluster().gpu().preset(),
      format_integer(r.batch.global_sequences), format_integer(r.batch.sequence_length), per_gpu_text(r.batch),
      format_gib(r.budget_bytes), 100 * (1 - tuner.options().constraints.headroom), format_gib(capacity),
      tuner.options().constraints.memory_band ? " and each candidate's memory band within the allocator's (--memory-band)"
                                               : "");
  print_counts(r, options, out);
  if (r.widened_to_tensor_parallelism) {
    out << "  nothing fitted with FSDP alone: tensor parallelism of 2, 4 and 8 (those a node holds) and pipelines of 2 "
           "to 16 stages searched too (--tps and --pps to choose)\n";
  }
  if (!r.any_fits()) {
    const auto closest = smallest_peak(r);
    out << fmt::format("\n  nothing fits in {} GiB on {} GPUs{}; `ragged tune --min-gpus` finds how many it needs\n",
                       format_gib(r.budget_bytes), format_integer(r.gpus),
                       closest ? fmt::format(" (smallest simulated peak {} GiB: {})",
                                             format_gib(r.evaluations[*closest].peak_reserved_bytes),
                                             tune::describe(r.candidates[*closest], r.gpus))
                               : "");
    return;
  }
  print_ranking(r, options, out);
  print_pareto(r, out);
  const tune::Evaluation& best = r.evaluations[r.best()];
  out << fmt::format("\nbest: {}\n  {} tokens/s per GPU{}, step {}, MFU {:.1f}%, peak {} of {} GiB\n",
                     tune::describe(r.candidates[r.best()], r.gpus), format_rounded(best.tokens_per_s_per_gpu),
                     r.by_goodput() ? fmt::format(" ({} effective at {} goodput)",
                                                  format_rounded(r.ranked_rate(r.best())), goodput_percent(r, r.best()))
                                    : "",
                     format_seconds(best.step_time_s), 100 * best.mfu, format_gib(best.peak_reserved_bytes),
                     format_gib(best.capacity_bytes));
  if (best.band_over_capacity()) {
    out << fmt::format(
        "  memory band: runs like it peaked at up to {} GiB against a prediction like this one's, over the allocator's "
        "{} GiB; --memory-band ranks only candidates whose band fits\n",
        format_gib(best.band_peak_bytes), format_gib(best.capacity_bytes));
  }
  if (options.train_tokens) out << "  time to train: " << training_text(r, options) << '\n';
  if (r.by_goodput()) {
    print_goodput(goodput_report_of(tuner, r, r.best(), fmt::format("best on {} GPUs", format_integer(r.gpus))),
                  out << '\n');
  }
}

void print_gpu_counts(const tune::Tuner& tuner, const std::vector<tune::GpuCountRow>& rows,
                      const ReportOptions& options, std::ostream& out) {
  Table table;
  const bool by_goodput = tuner.options().rank_by == tune::RankBy::kGoodput;
  table.column("GPUs").column("candidates").column("pruned").column("fit").column("tokens/s/GPU");
  if (by_goodput) table.column("goodput").column("effective");
  table.column("step time").column("MFU").column("peak GiB");
  if (options.train_tokens) table.column("time to train").column("GPU-hours");
  if (options.gpu_hour_price) table.column("cost");
  table.column("best configuration", Table::Align::kLeft);
  for (const auto& row : rows) {
    std::vector<std::string> cells = {format_integer(row.gpus)};
    // The cells of a row with no figures: from "candidates" or "tokens/s/GPU" to "peak GiB".
    auto dashes = [&](size_t n) { cells.insert(cells.end(), n + (by_goodput ? 2 : 0), std::string("-")); };
    if (!row.result) {
      dashes(7);
      if (options.train_tokens) cells.insert(cells.end(), {"-", "-"});
      if (options.gpu_hour_price) cells.push_back("-");
      cells.push_back("skipped: " + row.skipped);
      table.row(std::move(cells));
      continue;
    }
    const tune::SearchResult& r = *row.result;
    cells.insert(cells.end(), {std::to_string(r.candidates.size()), std::to_string(r.counts.pruned()),
                               std::to_string(r.counts.fitting)});
    if (!r.any_fits()) {
      dashes(4);
      if (options.train_tokens) cells.insert(cells.end(), {"-", "-"});
      if (options.gpu_hour_price) cells.push_back("-");
      cells.push_back("nothing fits");
      table.row(std::move(cells));
      continue;
    }
    const tune::Evaluation& e = r.evaluations[r.best()];
    cells.push_back(format_rounded(e.tokens_per_s_per_gpu));
    if (by_goodput) cells.insert(cells.end(), {goodput_percent(r, r.best()), format_rounded(r.ranked_rate(r.best()))});
    cells.insert(cells.end(), {format_seconds(e.step_time_s), fmt::format("{:.1f}%", 100 * e.mfu),
                               format_gib(e.peak_reserved_bytes)});
    if (options.train_tokens) {
      const auto t =
          tune::training_time(*options.train_tokens, r.ranked_rate(r.best()), r.gpus, options.gpu_hour_price);
      cells.insert(cells.end(), {long_duration(t.seconds), format_rounded(t.gpu_hours)});
      if (t.cost) cells.push_back(format_rounded(*t.cost));
    }
    cells.push_back(tune::describe(r.candidates[r.best()], r.gpus));
    table.row(std::move(cells));
  }
  out << fmt::format(
      "{}: the best configuration per GPU count (predicted{}{})\n", tuner.base().scenario.name(),
      tuner.options().constraints.global_batch_tokens ? ", fixed global batch" : ", the scenario's batch per GPU",
      by_goodput ? fmt::format("; by effective tokens/s/GPU under {:.3g} interruptions per GPU-hour",
                               planner::goodput_settings(tuner.base().scenario.goodput()).interruptions_per_gpu_hour)
                 : "");
  table.print(out, "  ");
  size_t bounded = 0;
  for (const auto& row : rows) bounded += row.result ? row.result->counts.bounded : 0;
  if (bounded > 0) {
    out << fmt::format(
        "  fit: of the simulated candidates; {} more were bounded (their step-time bound keeps them out "
        "of the top {}: not simulated, --exhaustive simulates them)\n",
        bounded, options.top);
  }
}

void print_min_gpus(const tune::Tuner& tuner, const tune::MinGpusResult& result, const ReportOptions& options,
                    std::ostream& out) {
  std::string probes;
  for (const auto& [gpus, fits] : result.probes)
    probes += fmt::format("{}{} {}", probes.empty() ? "" : ", ", gpus, fits ? "fits" : "no");
  const int64_t per_node = tuner.base().scenario.cluster().gpus_per_node();
  if (!result.result) {
    out << fmt::format("{}: nothing fits on up to {} GPUs (tried {}); give --gpus N to search further\n",
                       tuner.base().scenario.name(), format_integer(result.upper),
                       probes.empty() ? "no count" : probes);
    return;
  }
  const int64_t gpus = result.result->gpus;
  out << fmt::format("fewest GPUs: {} ({} node{} of {}), searched up to {} (tried {})\n\n", format_integer(gpus),
                     gpus / per_node, gpus / per_node == 1 ? "" : "s", per_node, format_integer(result.upper), probes);
  print_search(tuner, *result.result, options, out);
}

nlohmann::json search_to_json(const tune::Tuner& tuner, const tune::SearchResult& r, const ReportOptions& options) {
  nlohmann::json candidates = nlohmann::json::array();
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    nlohmann::json evaluation = tune::to_json(r.evaluations[i]);
    evaluation["fits"] = r.evaluations[i].fits(r.budget_bytes);
    // This run's, not the answer (the totals are under "run").
    evaluation.erase("simulation_wall_s");
    evaluation.erase("cached");
    // The band under the names `ragged simulate --json` gives it.
    for (const char* raw : {"band_tokens_low", "band_tokens_high", "band_memory_low_bytes"}) evaluation.erase(raw);
    const tune::Evaluation& e = r.evaluations[i];
    if (e.outcome == tune::Outcome::kSimulated) {
      evaluation["tokens_per_s_per_gpu_range"] = {e.band_tokens_low, e.band_tokens_high};
      evaluation["peak_memory_bytes_range"] = {e.band_memory_low_bytes, e.band_peak_bytes};
    } else {
      evaluation.erase("band_rows");
    }
    candidates.push_back(
        {{"configuration", candidate_to_json(r.candidates[i])}, {"evaluation", std::move(evaluation)}});
    if (r.by_goodput() && r.goodput[i]) {
      candidates.back()["goodput"] = goodput_to_json(goodput_report_of(tuner, r, i, ""));
    }
  }
  const tune::OutcomeCounts& n = r.counts;
  nlohmann::json out = {
      {"scenario", tuner.base().scenario.name()},
      {"gpus", r.gpus},
      {"sequence_length", r.batch.sequence_length},
      {"global_batch_sequences", r.batch.global_sequences},
      {"tokens_per_gpu", r.batch.tokens_per_gpu()},
      {"headroom", tuner.options().constraints.headroom},
      {"memory_band", tuner.options().constraints.memory_band},
      {"budget_bytes", r.budget_bytes},
      {"rank_by", r.by_goodput() ? "goodput" : "throughput"},
      {"widened_to_tensor_parallelism", r.widened_to_tensor_parallelism},
      {"counts",
       {{"candidates", r.candidates.size()},
        {"pruned_state", n.pruned_state},
        {"pruned_activations", n.pruned_activations},
        {"simulated", n.simulated},
        {"fit", n.fitting},
        {"invalid", n.invalid},
        {"failed", n.failed},
        {"bounded", n.bounded}}},
      // Exhaustive (null), or the k whose ranking is exact and the k-th best
      // rate the bounds were held against (null when fewer fit): then the
      // rest of the ranking, the front and "fit" are the simulated candidates'.
      {"bounding", r.exact_top ? nlohmann::json{{"exact_top", *r.exact_top},
                                                {"kth_best_rate", r.kth_best_rate ? nlohmann::json(*r.kth_best_rate)
                                                                                  : nlohmann::json(nullptr)}}
                               : nlohmann::json(nullptr)},
      {"candidates", std::move(candidates)},
      {"ranking", r.ranking.ranked},
      {"pareto", r.ranking.pareto},
      {"best", nullptr},
      {"run",
       {{"wall_seconds", r.wall_seconds},
        {"workers", options.workers},
        {"cached", n.cached},
        {"simulator_seconds", simulator_seconds(r)}}},
  };
  if (r.any_fits()) {
    out["best"] = {{"index", r.best()},
                   {"configuration", candidate_to_json(r.candidates[r.best()])},
                   {"description", tune::describe(r.candidates[r.best()], r.gpus)}};
    if (options.train_tokens) {
      const auto t =
          tune::training_time(*options.train_tokens, r.ranked_rate(r.best()), r.gpus, options.gpu_hour_price);
      out["training"] = {{"tokens", *options.train_tokens},
                         {"seconds", t.seconds},
                         {"gpu_hours", t.gpu_hours},
                         {"cost", t.cost ? nlohmann::json(*t.cost) : nlohmann::json(nullptr)}};
    }
  }
  return out;
}

nlohmann::json gpu_counts_to_json(const tune::Tuner& tuner, const std::vector<tune::GpuCountRow>& rows,
                                  const ReportOptions& options) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& row : rows) {
    out.push_back({{"gpus", row.gpus},
                   {"skipped", row.skipped},
                   {"search", row.result ? search_to_json(tuner, *row.result, options) : nlohmann::json(nullptr)}});
  }
  return {{"scenario", tuner.base().scenario.name()}, {"gpu_counts", std::move(out)}};
}

nlohmann::json min_gpus_to_json(const tune::Tuner& tuner, const tune::MinGpusResult& result,
                                const ReportOptions& options) {
  nlohmann::json probes = nlohmann::json::array();
  for (const auto& [gpus, fits] : result.probes) probes.push_back({{"gpus", gpus}, {"fits", fits}});
  return {{"scenario", tuner.base().scenario.name()},
          {"upper", result.upper},
          {"min_gpus", result.result ? nlohmann::json(result.result->gpus) : nlohmann::json(nullptr)},
          {"probes", std::move(probes)},
          {"search", result.result ? search_to_json(tuner, *result.result, options) : nlohmann::json(nullptr)}};
}

}  // namespace ragged::cli
