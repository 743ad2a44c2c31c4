// ragged tune: the fastest configuration that fits (strategy, shard group,
// micro-batch x accumulation, checkpointing, prefetch, resharding,
// granularity) for a scenario's model and cluster; --gpus N1,N2,... the best
// per GPU count; --min-gpus the fewest GPUs that train it at all;
// --rank-by goodput ranks by the throughput left under interruptions
// (the goodput settings `simulate --goodput` takes). Candidates
// run on --jobs threads, each simulation in its own child process; under
// `mpirun -np N` rank 0 hands them out to every rank's threads and prints.

#include <algorithm>
#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "backend/communicator.hpp"
#include "backend/exit_deadline.hpp"
#include "backend/startup_deadline.hpp"
#include "backend/task_farm_mpi.hpp"
#include "cli/commands.hpp"
#include "cli/goodput_options.hpp"
#include "cli/scenario_options.hpp"
#include "cli/startup_stop_hook.hpp"
#include "cli/tune_report.hpp"
#include "cli/validators.hpp"
#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "common/input_limits.hpp"
#include "common/progress_bar.hpp"
#include "scenarios/scenario_rules.hpp"
#include "traces/metrics.hpp"
#include "tune/candidate_scenario.hpp"
#include "tune/gpu_search.hpp"

namespace ragged::cli {
namespace {

struct TuneCommandOptions {
  ScenarioOptions scenario;
  GoodputOptions goodput;
  std::string rank_by;
  std::string gpus;
  bool min_gpus = false;
  std::string global_batch_tokens;
  int64_t sequence_length = 0;
  double headroom_percent = 100 * traces::kPeakMemoryPredictionError;
  bool memory_band = false;
  int64_t max_grad_accum = 64;
  std::vector<std::string> strategies;
  bool strategies_given = false;
  double task_timeout_s = 600;  // a candidate takes seconds; a silent worker for 10 minutes is lost
  std::string shard_groups;
  std::string tps, cps, eps, pps;
  std::vector<std::string> schedules;
  std::string micro_batches;
  std::vector<std::string> checkpointing;
  std::string prefetch;
  std::vector<std::string> reshard;
  std::vector<std::string> experts_checkpointing;
  std::vector<std::string> experts_overlap;
  std::vector<std::string> granularities;
  std::string train_tokens;
  double gpu_hour_price = 0;
  int64_t top = 10;
  bool exhaustive = false;
  std::string write_path;
  bool json = false;
  int64_t jobs = 0;
  std::string cache_dir;
  bool no_cache = false;
};

// A choice of a list option that takes true/yes or false/no.
bool parse_yes_no(const std::string& value, std::string_view option) {
  if (value == "true" || value == "yes") return true;
  if (value == "false" || value == "no") return false;
  throw InputError(fmt::format("{} '{}': use true, false or true,false", option, value));
}

tune::Constraints constraints_of(const TuneCommandOptions& o, std::ostream& notes) {
  tune::Constraints c;
  if (!o.global_batch_tokens.empty()) {
    const double tokens = parse_token_count(o.global_batch_tokens, "--global-batch-tokens");
    // Checked before the conversion: 1e30 tokens used to wrap to a negative count.
    if (tokens > limits::kMaxGlobalBatchTokens) {
      throw InputError(fmt::format("--global-batch-tokens {:g}: too large; a step holds at most {:g} tokens "
                                   "(2^20 GPUs x 2^26 tokens x 4,096 accumulation steps)",
                                   tokens, limits::kMaxGlobalBatchTokens));
    }
    c.global_batch_tokens = static_cast<int64_t>(tokens);
  }
  if (o.sequence_length > 0) c.sequence_length = o.sequence_length;
  c.headroom = o.headroom_percent / 100;
  c.memory_band = o.memory_band;
  c.max_grad_accum = o.max_grad_accum;
  if (o.strategies_given && (o.strategies.empty() || std::count(o.strategies.begin(), o.strategies.end(), ""))) {
    throw InputError(
        "--strategies: allow at least one strategy (ragged, vescale-paper, fsdp1, fsdp2, zero3, megatron or all)");
  }
  for (const std::string& s : o.strategies) {
    if (s == "all") {
      c.strategies = scenarios::all_strategies();
      break;
    }
    c.strategies.push_back(scenarios::parse_strategy(s));
  }
  if (!o.shard_groups.empty()) {
    c.shard_groups = parse_count_list(o.shard_groups, "--shard-groups", "shard group size", 1, INT64_MAX, &notes);
  }
  if (!o.tps.empty()) c.tps = parse_count_list(o.tps, "--tps", "tensor-parallel size", 1, INT64_MAX, &notes);
  if (!o.cps.empty()) c.cps = parse_count_list(o.cps, "--cps", "context-parallel size", 1, INT64_MAX, &notes);
  if (!o.eps.empty()) c.eps = parse_count_list(o.eps, "--eps", "expert-parallel size", 1, INT64_MAX, &notes);
  if (!o.pps.empty()) c.pps = parse_count_list(o.pps, "--pps", "pipeline stage count", 1, INT64_MAX, &notes);
  for (const std::string& s : o.schedules) c.schedules.push_back(scenarios::parse_schedule(s));
  if (!o.micro_batches.empty()) c.micro_batches =
      parse_count_list(o.micro_batches, "--micro-batches", "micro-batch", 1, limits::kMaxMicroBatch, &notes);
  for (const std::string& m : o.checkpointing) c.checkpointing.push_back(scenarios::parse_checkpointing(m));
  if (!o.prefetch.empty()) {
    for (int64_t p : parse_count_list(o.prefetch, "--prefetch", "prefetch depth", 0, limits::kMaxPrefetch, &notes))
      c.prefetch_depths.push_back(static_cast<int>(p));
  }
  for (const std::string& r : o.reshard) c.reshard_after_forward.push_back(parse_yes_no(r, "--reshard"));
  for (const std::string& e : o.experts_overlap) c.expert_overlaps.push_back(parse_yes_no(e, "--experts-overlap"));
  for (const std::string& e : o.experts_checkpointing) {
    if (e == "block")
      c.experts_recompute.push_back(false);
    else if (e == "full")
      c.experts_recompute.push_back(true);
    else
      throw InputError(fmt::format("--experts-checkpointing '{}': use block, full or block,full", e));
  }
  c.granularities = o.granularities;
  return c;
}

// --rank-by, where a goodput setting implies goodput.
tune::RankBy rank_by_of(const TuneCommandOptions& o) {
  if (o.goodput.settings_given() && o.rank_by == "throughput") {
    throw InputError(
        "--rank-by throughput: the goodput settings given (--interruptions-per-gpu-hour, --storage-*, "
        "--restart-minutes, --checkpoint-interval-minutes, --async-checkpoint) rank by goodput; drop them "
        "or --rank-by throughput");
  }
  return o.rank_by == "goodput" || o.goodput.settings_given() ? tune::RankBy::kGoodput : tune::RankBy::kThroughput;
}

// The base scenario on the first --gpus count; without one, on one node for
// --model, or on the scenario's own count. Every count of a list must be
// whole nodes of the base's (--gpus-per-node, else the scenario's, else 8).
scenarios::LoadedScenario base_of(const TuneCommandOptions& o, const std::vector<int64_t>& counts) {
  ScenarioOptions source = o.scenario;
  if (!o.scenario.model.empty()) source.gpus = o.scenario.cluster.model_node_size();
  if (counts.size() > 1) {
    const int64_t per_node = source.load().scenario.cluster().gpus_per_node();
    for (int64_t gpus : counts) check_whole_nodes(gpus, per_node);
  }
  if (!counts.empty()) source.gpus = counts.front();
  scenarios::LoadedScenario base = source.load();
  o.goodput.apply(base);
  return base;
}

// Threads per rank: the hardware's, shared among the ranks of one host.
int jobs_for(const TuneCommandOptions& o) {
  if (o.jobs > 0) return static_cast<int>(o.jobs);
  int local_ranks = 1;
  for (const char* variable : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    if (const char* text = std::getenv(variable)) local_ranks = std::max(1, std::atoi(text));
  }
  return std::max(1, hardware_threads() / local_ranks);
}

// What progress callbacks look like on rank 0: a bar with the count searched.
tune::CountProgress bar_for(const std::shared_ptr<ProgressBar>& bar) {
  if (!ProgressBar::wanted()) return {};
  return [bar](int64_t gpus, size_t done, size_t total) {
    bar->update(static_cast<double>(done) / static_cast<double>(total),
                fmt::format("{}/{} candidates on {} GPUs", done, total, gpus));
  };
}

void run(const TuneCommandOptions& o, Context& context) {
  const std::vector<int64_t> counts =
      o.gpus.empty() ? std::vector<int64_t>{}
                     : parse_count_list(o.gpus, "--gpus", "GPU count", 1, INT64_MAX, &context.err);
  if (o.min_gpus && counts.size() > 1)
    throw InputError("--min-gpus searches up to one --gpus count; give one, or none");
  if (!o.write_path.empty() && counts.size() > 1) {
    throw InputError("--write takes the winner of one GPU count: drop it, or give one --gpus count");
  }
  // Before the search (minutes): rank 0 writes the winner.
  if (!o.write_path.empty() && backend::launcher_rank() <= 0) check_output_target(o.write_path);
  if (o.gpu_hour_price > 0 && o.train_tokens.empty()) throw InputError("--gpu-hour-price needs --train-tokens");
  ReportOptions report;
  report.top = static_cast<size_t>(o.top);
  if (!o.train_tokens.empty()) report.train_tokens = parse_token_count(o.train_tokens, "--train-tokens");
  if (o.gpu_hour_price > 0) report.gpu_hour_price = o.gpu_hour_price;

  const scenarios::LoadedScenario base = base_of(o, counts);
  ScenarioOptions imported = o.scenario;
  if (!counts.empty()) imported.gpus = counts.front();
  imported.warn_about_import(context.err);
  tune::TuneOptions options;
  options.constraints = constraints_of(o, context.err);
  options.rank_by = rank_by_of(o);
  if (!o.exhaustive) options.exact_top = static_cast<size_t>(o.top);
  if (!o.no_cache)
    options.cache_dir = o.cache_dir.empty() ? tune::ResultCache::default_dir() : std::filesystem::path(o.cache_dir);
  const tune::Tuner tuner(base, options);

  // Every rank got here with the same arguments; now the workers serve.
  const auto work = [&tuner](const std::string& task) { return tuner.run_task(task); };
  std::unique_ptr<TaskRunner> runner;
  if (backend::launched_by_mpi()) {
    // MPI's start-up and the farm's first collective wait for every rank:
    // bounded by the same timeout.
    backend::StartupDeadline startup(o.task_timeout_s, backend::launcher_rank(), "--task-timeout");
    stop_here_if_asked();
    auto farm = std::make_unique<backend::MpiTaskFarm>(work, jobs_for(o), o.task_timeout_s);
    startup.disarm();
    // The search's end is bounded too: the ranks meet at exit (exit_deadline.hpp).
    backend::arm_exit_deadline(o.task_timeout_s, "--task-timeout");
    if (!farm->is_root()) {
      farm->serve();
      stop_here_if_asked("RAGGED_TEST_STOP_RANK_AT_EXIT");
      return;
    }
    runner = std::move(farm);
  } else {
    runner = std::make_unique<LocalTaskPool>(work, jobs_for(o));
  }
  report.workers = runner->workers();
  const auto bar = std::make_shared<ProgressBar>("ragged tune");
  const tune::CountProgress progress = bar_for(bar);

  const tune::SearchResult* winner = nullptr;
  std::optional<tune::SearchResult> single;
  std::optional<tune::MinGpusResult> smallest;
  std::vector<tune::GpuCountRow> rows;
  if (o.min_gpus) {
    const int64_t upper = !counts.empty()            ? counts.front()
                          : o.scenario.model.empty() ? scenarios::total_gpus(base.scenario)
                                                     : 16384;
    smallest = tune::find_min_gpus(tuner, *runner, upper, progress);
    if (smallest->result) winner = &*smallest->result;
  } else if (counts.size() > 1) {
    rows = tune::search_gpu_counts(tuner, *runner, counts, progress);
  } else {
    single = tuner.search(*runner, scenarios::total_gpus(base.scenario), [&](size_t done, size_t total) {
      if (progress) progress(scenarios::total_gpus(base.scenario), done, total);
    });
    winner = &*single;
  }
  bar->finish();

  if (o.json) {
    nlohmann::json out = smallest ? min_gpus_to_json(tuner, *smallest, report)
                         : single ? search_to_json(tuner, *single, report)
                                  : gpu_counts_to_json(tuner, rows, report);
    context.out << out.dump(2) << '\n';
  } else if (smallest) {
    print_min_gpus(tuner, *smallest, report, context.out);
  } else if (single) {
    print_search(tuner, *single, report, context.out);
  } else {
    print_gpu_counts(tuner, rows, report, context.out);
  }
  // The report first: with nothing to write, the search's answer still shows.
  if (o.write_path.empty()) return;
  if (winner == nullptr || !winner->any_fits()) {
    throw InputError(fmt::format("--write {}: no configuration fits, nothing to write", o.write_path));
  }
  const tune::Candidate& best = winner->candidates[winner->best()];
  write_file_atomically(o.write_path, tune::scenario_file_text(tuner.scenario_of(winner->gpus, best),
                                                               tune::describe(best, winner->gpus)));
  if (!o.json) {
    context.out << fmt::format("\nwrote {}: `ragged simulate {}` reproduces the winner\n", o.write_path, o.write_path);
  }
}

}  // namespace

void add_tune_command(CLI::App& app, Context& context) {
  auto o = std::make_shared<TuneCommandOptions>();
  auto* cmd = app.add_subcommand("tune", "Find the fastest configuration that fits, and how many GPUs it needs");
  o->scenario.add_source_to(cmd);
  o->scenario.add_optimizer_to(cmd);
  cmd->add_option("--gpus", o->gpus,
                  "GPU count (default: the scenario's), or a list N1,N2,... of whole nodes for the best per count");
  cmd->add_flag("--min-gpus", o->min_gpus,
                "The fewest GPUs (whole nodes; up to --gpus, else the scenario's GPUs, else 16,384 with --model) on "
                "which the model trains, and its best configuration there");
  cmd->add_option(
      "--global-batch-tokens", o->global_batch_tokens,
      "Tokens per optimizer step over all GPUs, e.g. 4M or 16Mi (2^24) (default: the scenario's tokens per GPU x the GPUs)");
  cmd->add_option("--seq-len", o->sequence_length, "Sequence length (default: the scenario's)")
      ->transform(whole_number(1, kMaxCount));
  cmd->add_option("--headroom", o->headroom_percent,
                  "Percent of the allocator's memory (HBM less the CUDA context and NCCL) left free, against "
                  "fragmentation and run-to-run variation (default: the simulator's peak-memory error on its "
                  "calibration runs)")
      ->capture_default_str();
  cmd->add_flag("--memory-band", o->memory_band,
               "Rank only candidates whose memory band fits too: the upper end of the peaks comparable validation "
               "runs reached against their predictions (the band `ragged simulate` prints) within the allocator's "
               "memory, against a pick whose real peak the model under-predicts (docs/SIMULATOR.md section 13)");
  cmd->add_option("--max-grad-accum", o->max_grad_accum, "Most gradient accumulation steps allowed")
      ->capture_default_str()
      ->transform(whole_number(1, kMaxCount));
  auto* strategies =
      cmd->add_option("--strategies", o->strategies,
                      "Strategies to try: ragged, vescale-paper, fsdp1, fsdp2, zero3, megatron or all (default: "
                      "those six); megatron-ddp (Megatron-Core's DDP and distributed optimizer) and ddp when named")
          ->delimiter(',');
  cmd->add_option("--shard-groups", o->shard_groups,
                  "Shard group sizes (FSDP over dp_shard x cp) to try, e.g. 8,64,1024 (default: a node's share times "
                  "powers of two, and every rank of a tp rank)");
  cmd->add_option("--tps", o->tps,
                  "Tensor-parallel sizes to try (training.mesh.tp; default: 1,2,4,8 that divide a node and the model)");
  cmd->add_option("--cps", o->cps,
                  "Context-parallel sizes to try (training.mesh.cp; default: 1, and 2 to 16 from 32,768 tokens)");
  cmd->add_option("--eps", o->eps,
                  "Expert-parallel sizes to try (training.mesh.ep; default: 1, and for a mixture of experts the powers "
                  "of two dividing its experts)");
  cmd->add_option("--pps", o->pps,
                  "Pipeline stage counts to try (training.mesh.pp; default: 1, and with --tps' defaults 2 to 16)");
  cmd->add_option("--schedules", o->schedules,
                  "Pipeline schedules to try with more than one stage: gpipe, 1f1b, interleaved, zb-h1 (default: "
                  "1f1b,interleaved)")
      ->delimiter(',');
  cmd->add_option("--micro-batches", o->micro_batches,
                  "Micro-batch sizes to try, sequences of a data-parallel rank (default: every divisor of its batch)");
  cmd->add_option("--checkpointing", o->checkpointing,
                  "Activation checkpointing to try: none, selective, full (default: all)")
      ->delimiter(',');
  cmd->add_option("--experts-checkpointing", o->experts_checkpointing,
                  "Under expert parallelism, the routed experts' checkpointing to try: block (the block's mode) or "
                  "full (their layer rerun in the backward, training.experts.checkpointing FULL; with a block mode "
                  "short of full) (default: block,full)")
      ->delimiter(',');
  cmd->add_option("--prefetch", o->prefetch, "Prefetch depths to try (default: 1,2)");
  cmd->add_option("--reshard", o->reshard, "Reshard after forward: true, false or true,false (default)")
      ->delimiter(',');
  cmd->add_option("--experts-overlap", o->experts_overlap,
                  "Megatron-Core's overlapped expert all-to-alls (training.experts.overlap_all_to_all) to try where a "
                  "candidate can run them (megatron-ddp, ep > 1, no stages or interleaved 1F1B, no full "
                  "checkpointing): true, false or true,false (default)")
      ->delimiter(',');
  cmd->add_option("--granularities", o->granularities,
                  "Granularities for ragged and vescale-paper, e.g. element,rows:16 (default: the scenario's)")
      ->delimiter(',');
  cmd->add_option("--rank-by", o->rank_by,
                  "Rank by throughput (tokens/s per GPU, the default) or goodput (that times the share of wall time "
                  "that trains under interruptions, checkpoints and restarts: the scenario's goodput block and the "
                  "options below; docs/SIMULATOR.md section 9)")
      ->check(CLI::IsMember({"throughput", "goodput"}));
  o->goodput.add_settings_to(cmd, "--rank-by goodput");
  cmd->add_option(
      "--train-tokens", o->train_tokens,
      "Tokens to train, e.g. 15T: time to train on the winner (at its effective rate with --rank-by goodput)");
  cmd->add_option("--gpu-hour-price", o->gpu_hour_price, "Price of one GPU-hour: the cost of --train-tokens")
      ->transform(number_between(0, 1e9));
  cmd->add_option("--top", o->top,
                  "Rows of the ranking to print: exact; a candidate whose step-time bound keeps it out of them is "
                  "not simulated (reported bounded)")
      ->capture_default_str()
      ->transform(whole_number(1, kMaxCount));
  cmd->add_flag("--exhaustive", o->exhaustive,
                "Simulate every candidate under the memory floor: the whole ranking, Pareto front and count that fit");
  cmd->add_option("--write", o->write_path, "Write the winner as a scenario file that `ragged simulate` reproduces");
  cmd->add_flag("--json", o->json, "Print JSON: every candidate with its verdict and figures, the ranking, the front");
  cmd->add_option("--jobs", o->jobs,
                  "Simulations at once per rank (default: the hardware threads, shared by the ranks of a host)")
      ->transform(whole_number(1, 4096));
  cmd->add_option("--cache-dir", o->cache_dir,
                  "Result cache folder (default: $XDG_CACHE_HOME/ragged/tune, else ~/.cache/ragged/tune)");
  cmd->add_flag("--no-cache", o->no_cache, "Neither read nor write the result cache");
  cmd->add_option("--task-timeout", o->task_timeout_s,
                  "Under mpirun: seconds rank 0 waits on a silent worker that holds candidates before it ends the "
                  "job, naming the rank (0: wait forever)")
      ->transform(number_between(0, 604800))
      ->capture_default_str();
  cmd->callback([&context, o, strategies] {
    o->strategies_given = strategies->count() > 0;
    run(*o, context);
  });
}

}  // namespace ragged::cli
