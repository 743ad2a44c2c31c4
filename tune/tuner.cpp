#include "tune/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "scenarios/scenario_rules.hpp"
#include "tune/bounded_search.hpp"
#include "tune/candidate_goodput.hpp"
#include "tune/candidate_scenario.hpp"
#include "tune/evaluate.hpp"

namespace ragged::tune {
namespace {

nlohmann::json candidate_json(const Candidate& c) {
  return {{"strategy", static_cast<int>(c.strategy)},
          {"tp", c.tp},
          {"cp", c.cp},
          {"ep", c.ep},
          {"pp", c.pp},
          {"schedule", static_cast<int>(c.schedule)},
          {"virtual_stages", c.virtual_stages},
          {"whole_experts", c.whole_experts},
          {"experts_recompute", c.experts_recompute},
          {"expert_overlap", c.expert_overlap},
          {"shard_group", c.shard_group},
          {"micro_batch", c.micro_batch},
          {"grad_accum", c.grad_accum},
          {"checkpointing", static_cast<int>(c.checkpointing)},
          {"prefetch", c.prefetch},
          {"reshard", c.reshard},
          {"granularity", c.granularity}};
}

Candidate candidate_from_json(const nlohmann::json& j) {
  Candidate c;
  const int strategy = j.at("strategy"), checkpointing = j.at("checkpointing");
  RAGGED_ASSERT(scenarios::Strategy_IsValid(strategy) && scenarios::Checkpointing_IsValid(checkpointing),
                "a task names a known strategy and checkpointing mode");
  c.strategy = static_cast<scenarios::Strategy>(strategy);
  c.checkpointing = static_cast<scenarios::Checkpointing>(checkpointing);
  c.tp = j.at("tp");
  c.cp = j.at("cp");
  c.ep = j.at("ep");
  c.pp = j.at("pp");
  const int schedule = j.at("schedule");
  RAGGED_ASSERT(scenarios::PipelineSchedule_IsValid(schedule), "a task names a known schedule");
  c.schedule = static_cast<scenarios::PipelineSchedule>(schedule);
  c.virtual_stages = j.at("virtual_stages");
  c.whole_experts = j.at("whole_experts");
  c.experts_recompute = j.at("experts_recompute");
  c.expert_overlap = j.at("expert_overlap");
  c.shard_group = j.at("shard_group");
  c.micro_batch = j.at("micro_batch");
  c.grad_accum = j.at("grad_accum");
  c.prefetch = j.at("prefetch");
  c.reshard = j.at("reshard");
  c.granularity = j.at("granularity");
  return c;
}

// Likeliest to fit first: more checkpointing (the experts' own recompute
// next to the block's mode it relieves), smaller micro-batches, more tensor,
// context and pipeline parallelism, larger shard groups, resharding,
// shallower prefetch, the all-to-alls not overlapped (the combined pass holds
// one more pass of activations).
std::vector<Candidate> likeliest_to_fit_first(std::vector<Candidate> candidates) {
  auto checkpointing_rank = [](const Candidate& c) {
    const int block = c.checkpointing == scenarios::FULL ? 0 : c.checkpointing == scenarios::SELECTIVE ? 2 : 4;
    return block - (c.experts_recompute ? 1 : 0);
  };
  std::stable_sort(candidates.begin(), candidates.end(), [&](const Candidate& a, const Candidate& b) {
    return std::make_tuple(checkpointing_rank(a), a.micro_batch, -a.tp * a.cp * a.pp, -a.shard_group, !a.reshard,
                           a.prefetch, a.expert_overlap) < std::make_tuple(checkpointing_rank(b), b.micro_batch,
                                                                           -b.tp * b.cp * b.pp, -b.shard_group,
                                                                           !b.reshard, b.prefetch, b.expert_overlap);
  });
  return candidates;
}

}  // namespace

double SearchResult::ranked_rate(size_t i) const {
  return by_goodput() && goodput[i] ? goodput[i]->effective_tokens_per_s_per_gpu : evaluations[i].tokens_per_s_per_gpu;
}

Tuner::Tuner(scenarios::LoadedScenario base, TuneOptions options)
    : base_(std::move(base)), options_(std::move(options)) {
  check_constraints(options_.constraints);
  if (options_.cache_dir) cache_.emplace(*options_.cache_dir);
}

int64_t Tuner::sequence_length() const {
  return options_.constraints.sequence_length.value_or(base_.scenario.training().sequence_length());
}

scenarios::LoadedScenario Tuner::base_at(int64_t gpus) const {
  if (gpus == scenarios::total_gpus(base_.scenario)) return base_;
  scenarios::LoadedScenario at = scenarios::with_total_gpus(base_, gpus);
  // A scenario made for --model is named "<model>-<GPUs>x<preset>": keep the count in it true.
  const std::string& preset = base_.scenario.cluster().gpu().preset();
  const std::string suffix = fmt::format("-{}x{}", scenarios::total_gpus(base_.scenario), preset);
  const std::string& name = base_.scenario.name();
  if (base_.origin == "--model" && name.ends_with(suffix)) {
    at.written.set_name(fmt::format("{}-{}x{}", name.substr(0, name.size() - suffix.size()), gpus, preset));
    at = scenarios::rebuild(std::move(at));
  }
  return at;
}

int64_t Tuner::budget_of(const scenarios::Scenario& base) const {
  return memory_budget(scenarios::allocator_capacity_bytes(base), options_.constraints.headroom);
}

scenarios::LoadedScenario Tuner::scenario_of(int64_t gpus, const Candidate& candidate) const {
  return candidate_scenario(base_at(gpus), candidate, sequence_length());
}

std::string Tuner::task_of(int64_t gpus, const Candidate& candidate, size_t index, bool simulate) const {
  return nlohmann::json{
      {"gpus", gpus}, {"candidate", candidate_json(candidate)}, {"index", index}, {"simulate", simulate}}
      .dump();
}

std::string Tuner::run_task(const std::string& task) const {
  const nlohmann::json j = nlohmann::json::parse(task);
  const int64_t gpus = j.at("gpus");
  const EvaluateOptions options{options_.constraints.headroom, options_.constraints.memory_band,
                                cache_ ? &*cache_ : nullptr, j.value("simulate", true)};
  std::optional<scenarios::LoadedScenario> scenario;
  Evaluation e;
  try {
    scenario = scenario_of(gpus, candidate_from_json(j.at("candidate")));
  } catch (const InputError& error) {
    e.outcome = Outcome::kInvalid;  // the scenario's own checks rejected the combination
    e.message = error.what();
  }
  if (scenario) e = evaluate(*scenario, options);
  nlohmann::json result = to_json(e);
  result["index"] = j.value("index", size_t{0});  // whose result it is (bounded_search.hpp)
  return result.dump();
}

std::vector<Evaluation> Tuner::evaluate_all(TaskRunner& runner, int64_t gpus, const std::vector<Candidate>& candidates,
                                            const MapOptions& map_options) const {
  std::vector<std::string> tasks;
  tasks.reserve(candidates.size());
  for (const Candidate& c : candidates) tasks.push_back(task_of(gpus, c));
  std::vector<Evaluation> out;
  for (const auto& result : runner.map(tasks, map_options)) {
    Evaluation e;
    if (result) {
      e = evaluation_from_json(nlohmann::json::parse(*result));
    } else {
      e.message = "not evaluated (the search stopped early)";
    }
    out.push_back(std::move(e));
  }
  return out;
}

SearchResult Tuner::search(TaskRunner& runner, int64_t gpus, const SearchProgress& progress) const {
  SearchResult out = search_with(runner, gpus, options_.constraints, progress);
  if (out.any_fits() || !options_.constraints.tps.empty()) return out;
  const Constraints wider = with_tensor_parallel_defaults(options_.constraints);
  if (enumerate_candidates(base_at(gpus), wider) == out.candidates) return out;  // the batch already needed them
  const double fsdp_alone_seconds = out.wall_seconds;
  out = search_with(runner, gpus, wider, progress);
  out.widened_to_tensor_parallelism = true;
  out.wall_seconds += fsdp_alone_seconds;
  return out;
}

SearchResult Tuner::search_with(TaskRunner& runner, int64_t gpus, const Constraints& constraints,
                                const SearchProgress& progress) const {
  const auto start = std::chrono::steady_clock::now();
  const scenarios::LoadedScenario base = base_at(gpus);
  SearchResult out;
  out.gpus = gpus;
  out.batch = batch_shape(base.scenario, constraints);
  out.candidates = enumerate_candidates(base, constraints);
  out.budget_bytes = budget_of(base.scenario);
  out.exact_top = options_.exact_top;
  if (options_.exact_top) {
    evaluate_bounded(runner, out, progress);
  } else {
    MapOptions map_options;
    map_options.progress = progress;
    out.evaluations = evaluate_all(runner, gpus, out.candidates, map_options);
  }
  if (options_.rank_by == RankBy::kGoodput) {
    out.goodput.resize(out.candidates.size());
    for (size_t i = 0; i < out.candidates.size(); ++i) {
      if (out.evaluations[i].fits(out.budget_bytes)) {
        out.goodput[i] = candidate_goodput(scenario_of(gpus, out.candidates[i]).scenario, out.evaluations[i]);
      }
    }
  }
  std::vector<double> rates;
  for (size_t i = 0; i < out.candidates.size(); ++i) rates.push_back(out.ranked_rate(i));
  out.ranking = rank(out.evaluations, out.budget_bytes, rates);
  for (const Evaluation& e : out.evaluations) {
    OutcomeCounts& n = out.counts;
    n.cached += e.cached ? 1 : 0;
    switch (e.outcome) {
      case Outcome::kSimulated:
        ++n.simulated;
        break;
      case Outcome::kInvalid:
        ++n.invalid;
        break;
      case Outcome::kFailed:
        ++n.failed;
        break;
      case Outcome::kPruned:
        ++(e.prune_reason == PruneReason::kPersistentState ? n.pruned_state : n.pruned_activations);
        break;
      case Outcome::kBounded:
        ++n.bounded;
        break;
    }
  }
  out.counts.fitting = out.ranking.ranked.size();
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

void Tuner::evaluate_bounded(TaskRunner& runner, SearchResult& out, const SearchProgress& progress) const {
  const bool by_goodput = options_.rank_by == RankBy::kGoodput;
  BoundedSearch search;
  search.candidates = out.candidates.size();
  search.top = *options_.exact_top;
  search.budget_bytes = out.budget_bytes;
  search.task = [&](size_t i, bool simulate) { return task_of(out.gpus, out.candidates[i], i, simulate); };
  // Goodput never exceeds 1: a bound on tokens/s bounds the effective rate too.
  search.rate = [&](size_t i, const Evaluation& e) {
    return by_goodput
               ? candidate_goodput(scenario_of(out.gpus, out.candidates[i]).scenario, e).effective_tokens_per_s_per_gpu
               : e.tokens_per_s_per_gpu;
  };
  search.effective_rate = by_goodput;
  search.progress = progress;
  BoundedEvaluations bounded = tune::evaluate_bounded(runner, search);
  out.evaluations = std::move(bounded.evaluations);
  out.kth_best_rate = bounded.kth_best;
}

bool Tuner::fits_at(TaskRunner& runner, int64_t gpus, const SearchProgress& progress) const {
  std::vector<Candidate> candidates;
  int64_t budget = 0;
  try {
    const scenarios::LoadedScenario base = base_at(gpus);
    // Meshes too where none were asked for: the question is whether anything fits.
    candidates = likeliest_to_fit_first(enumerate_candidates(base, with_tensor_parallel_defaults(options_.constraints)));
    budget = budget_of(base.scenario);
  } catch (const InputError&) {
    return false;  // nothing can be formed on this many GPUs
  }
  MapOptions map_options;
  map_options.progress = progress;
  map_options.stop = [budget](const std::string& result) {
    return evaluation_from_json(nlohmann::json::parse(result)).fits(budget);
  };
  const auto evaluations = evaluate_all(runner, gpus, candidates, map_options);
  return std::any_of(evaluations.begin(), evaluations.end(), [&](const Evaluation& e) { return e.fits(budget); });
}

}  // namespace ragged::tune
