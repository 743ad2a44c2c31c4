// ragged run: execute the scenario's Program for real, on the host (cpu) or
// the GPUs (cuda, where the CUDA backend is built). One process per rank:
// `mpirun -np N ragged run ...` (N = the scenario's GPUs); one rank needs no
// MPI. Rank 0 prints the summary and writes the measured trace.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "backend/communicator.hpp"
#include "backend/exit_deadline.hpp"
#include "backend/run.hpp"
#include "backend/startup_deadline.hpp"
#include "backend/watchdog.hpp"
#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "cli/run_device.hpp"
#include "cli/scenario_options.hpp"
#include "cli/startup_stop_hook.hpp"
#include "cli/validators.hpp"
#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "common/input_limits.hpp"
#include "common/units.hpp"
#include "traces/chrome_trace.hpp"
#include "traces/metrics.hpp"
#include "traces/trace_io.hpp"
#include "traces/trace_names.hpp"
#include "traces/trace_stats.hpp"

namespace ragged::cli {
namespace {

struct RunCommandOptions {
  ScenarioOptions scenario;
  backend::RunOptions run;
  std::string trace_path;
  std::string chrome_path;
  std::string inject_nan;
  bool json = false;
};

void print(const backend::RunResult& r, const std::string& label, std::ostream& out) {
  const traces::Summary& s = r.trace.summary();
  out << fmt::format("{} (measured, {})\n", label, r.trace.metadata().device());
  const traces::Spread spread = traces::step_time_spread(s);
  out << fmt::format("  step time          {}  (mean of {} measured step{}{})\n", format_seconds(s.step_time_s()),
                     s.per_step_size(), s.per_step_size() == 1 ? "" : "s",
                     s.per_step_size() > 1 ? fmt::format(": min {}, max {}, sd {}", format_seconds(spread.min),
                                                         format_seconds(spread.max), format_seconds(spread.stddev))
                                           : "");
  out << fmt::format("  tokens/s per GPU   {}  ({} tokens per GPU per step)\n",
                     format_rounded(s.tokens_per_s_per_gpu()), format_integer(s.tokens_per_step()));
  out << fmt::format("  MFU                {:.1f}% (of the dense bf16 peak of {})\n", 100 * s.mfu(),
                     r.trace.metadata().device().find("(cuda)") != std::string::npos ? "this GPU"
                                                                                      : "the scenario's GPU");
  out << fmt::format("  exposed comm       {} ({:.1f}% of the step: the compute stream idle)\n",
                     format_seconds(s.exposed_comm_s()),
                     s.step_time_s() > 0 ? 100 * s.exposed_comm_s() / s.step_time_s() : 0.0);
  out << fmt::format("  busy               compute {}, communication {} (means per step; compute + exposed = step)\n",
                     format_seconds(s.compute_s()), format_seconds(s.comm_s()));
  out << fmt::format(
      "  peak memory        {} (rank 0: shards, optimizer states and the Program's parameter and "
      "gradient buffers)\n",
      format_bytes(static_cast<double>(s.peak_state_and_buffers_bytes())));
  if (r.program_peak_bytes > 0) {
    const double held = static_cast<double>(r.arena_held_bytes);
    const double peak = static_cast<double>(r.program_peak_bytes);
    out << fmt::format(
        "  arena              {} held (shards, states, step buffers at planned offsets) for a Program "
        "peak of {} ({:+.2f}%{})\n",
        format_bytes(held), format_bytes(peak), 100.0 * (held / peak - 1.0),
        r.device_used_bytes < 0 ? "; the host workload keeps activations outside the arena" : "");
  }
  if (r.device_used_bytes >= 0) {
    out << fmt::format(
        "  device memory      {} used on the GPU (cudaMemGetInfo: arena, workload buffers, cuBLAS, "
        "NCCL, CUDA context)\n",
        format_bytes(static_cast<double>(r.device_used_bytes)));
  }
  std::string losses;
  for (double l : r.losses) losses += fmt::format("{}{:.6f}", losses.empty() ? "" : " ", l);
  out << fmt::format("  loss per step      {}\n", losses);
  if (r.collective_errors >= 0) {
    out << fmt::format("  collectives        {} wrong elements in the verifiable self-tests\n", r.collective_errors);
  }
  if (!r.non_finite.empty()) out << fmt::format("  not finite         {} (the run stopped there)\n", r.non_finite);
  if (r.reference_error >= 0) {
    const std::string claim =
        r.reference_bitwise ? fmt::format("{} of {} elements differ bitwise (the claim: none)",
                                          format_integer(r.reference_differing), format_integer(r.reference_elements))
                            : fmt::format("max relative error {:.3g} ({}) of a tolerance {:.3g}", r.reference_error,
                                          r.worst_tensor, r.reference_tolerance);
    out << fmt::format("  reference          {}: {}\n", claim, r.reference_ok ? "OK" : "FAILED");
    if (r.reference_non_finite > 0) {
      out << fmt::format("  reference          {} elements NaN or infinite, first {}\n",
                         format_integer(r.reference_non_finite), r.reference_first_non_finite);
    }
    if (r.replicas > 1) {
      out << fmt::format("  replicas           {} of every shard, {} elements differ bitwise from replica 0\n",
                         r.replicas, format_integer(r.replica_differing));
    }
  }
}

// --inject-nan TENSOR@STEP
backend::NanInjection parse_injection(const std::string& text) {
  const size_t at = text.rfind('@');
  backend::NanInjection injection{text.substr(0, at), 1};
  if (at != std::string::npos) {
    const std::string step = text.substr(at + 1);
    char* end = nullptr;
    const long long value = std::strtoll(step.c_str(), &end, 10);
    if (step.empty() || *end != '\0' || value < 1 || value > 1'000'000) {
      throw InputError(
          fmt::format("--inject-nan {}: the step after '@' must be a whole number from 1 to 1,000,000", text));
    }
    injection.step = value;
  }
  if (injection.tensor.empty()) throw InputError("--inject-nan: name a tensor, as TENSOR or TENSOR@STEP");
  return injection;
}

// How long a rank other than the first waits before saying an input error
// every rank should have found (the first says it and ends the job).
constexpr auto kFirstRankSpeaksFirst = std::chrono::seconds(5);

// The reference's tolerance where sums run in another order than the
// reference's (MPI's or NCCL's reductions, cuBLAS's GEMMs): AdamW's first
// steps move each weight by about lr * sign(g), so a gradient within
// rounding of zero lands 2 lr apart, about 2e-4 of a 256 x 256 tensor's norm
// per such element. With ordered reductions, or one rank (no reduction), the
// host reproduces the reference's sums: bitwise.
constexpr double kReorderedSumsTolerance = 1e-3;

}  // namespace

void add_run_command(CLI::App& app, Context& context) {
  auto o = std::make_shared<RunCommandOptions>();
  auto* cmd = app.add_subcommand("run", kRunDescription);
  o->scenario.add_to(cmd, false);
  o->scenario.add_optimizer_to(cmd);
  cmd->add_option("--device", o->run.device, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--steps", o->run.steps, "Measured optimizer steps (default: the scenario's run.steps)")
      ->transform(whole_number(1, limits::kMaxRunSteps));
  cmd->add_option("--warmup", o->run.warmup_steps, "Steps run before measuring (default: run.warmup_steps)")
      ->transform(whole_number(0, limits::kMaxRunSteps));
  cmd->add_option("--seed", o->run.seed, "Seed of the synthetic data and initial weights (default: run.seed)");
  cmd->add_option("--trace", o->trace_path, "Write rank 0's measured trace (.pb, .json or .textproto)");
  cmd->add_option("--chrome-trace", o->chrome_path, "Write rank 0's trace as Chrome trace JSON");
  cmd->add_flag("--verify-collectives", o->run.verify_collectives,
                "Check every collective on exactly predictable inputs");
  cmd->add_flag("--check-reference", o->run.check_reference,
                "Compare the trained parameters with a single-process unsharded run");
  cmd->add_flag("--ordered-reductions", o->run.ordered_reductions,
                "Sum reductions in rank order, as the reference does, so --check-reference holds bitwise (cpu; "
                "default: the collectives a normal run uses)");
  cmd->add_option("--tolerance", o->run.tolerance,
                  "Relative L2 error allowed per tensor against the reference (default: bitwise on cpu with "
                  "--ordered-reductions or one rank, else 1e-3)")
      ->transform(number_between(0, 1));
  cmd->add_option("--inject-nan", o->inject_nan,
                  "Put a NaN into TENSOR's parameters after step STEP (TENSOR@STEP, default step 1): shows that the "
                  "checks catch it");
  cmd->add_option("--collective-timeout", o->run.collective_timeout_s,
                  "Seconds one collective may wait before the job is aborted, naming the ranks that did not arrive "
                  "(0: wait forever)")
      ->transform(number_between(0, 604800))
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->callback([&context, o, cmd] {
    // Under mpirun, the start-up (MPI's exchange, the ranks' agreement) is
    // bounded by the collective timeout too, until the watchdog runs.
    const backend::StartupDeadline startup(backend::launched_by_mpi() ? o->run.collective_timeout_s : 0,
                                           backend::launcher_rank());
    stop_here_if_asked();
    std::vector<planner::ResolvedScenario> resolved;
    try {
      resolved = o->scenario.resolve();
      // The scenario's run { } settings, unless given on the command line.
      const scenarios::Run& defaults = resolved.front().scenario().run();
      if (cmd->count("--steps") == 0) o->run.steps = defaults.steps();
      if (cmd->count("--warmup") == 0) o->run.warmup_steps = defaults.warmup_steps();
      if (cmd->count("--seed") == 0) o->run.seed = defaults.seed();
      if (!o->inject_nan.empty()) o->run.inject_nan = parse_injection(o->inject_nan);
      // Rank 0 writes the traces: a path it cannot write is said before the run.
      if (backend::launcher_rank() <= 0) {
        for (const std::string& path : {o->trace_path, o->chrome_path}) {
          if (!path.empty()) check_output_target(path);
        }
      }
    } catch (const InputError& e) {
      // Every rank of an mpirun reads the same arguments and files, so each
      // finds this alike: the first rank says it, once, and ends the job
      // (the launcher stops the others). A rank still here after a grace
      // period was alone in finding it (ranks given other arguments): it
      // says it itself.
      if (backend::launcher_rank() > 0) {
        std::this_thread::sleep_for(kFirstRankSpeaksFirst);
        context.err << "ragged: error on rank " << backend::launcher_rank() << ": " << one_line(e.what()) << '\n';
        throw QuietExit{kExitBadInput};
      }
      throw;
    }
    std::unique_ptr<backend::Communicator> comm =
        backend::launched_by_mpi() ? backend::make_mpi_communicator() : backend::make_local_communicator();
    if (cmd->count("--tolerance") == 0) {
      const bool same_sums = o->run.device == "cpu" && (o->run.ordered_reductions || comm->size() == 1);
      o->run.tolerance = same_sums ? -1.0 : kReorderedSumsTolerance;
    }
    backend::RunResult result;
    try {
      result = run_on_device(resolved.front(), o->run, *comm);
    } catch (const AgreedInputError&) {
      // Every rank found it: rank 0 says it, once, and its exit ends the job;
      // the others wait for that, silently (had one ended first, the launcher
      // would stop rank 0 as it spoke).
      if (comm->rank() != 0) {
        backend::silence_signal_line();
        std::this_thread::sleep_for(kFirstRankSpeaksFirst);
        throw QuietExit{kExitBadInput};
      }
      if (comm->size() > 1) backend::end_job_at_exit();
      throw;
    } catch (const std::exception& e) {
      // An error on some ranks only would leave the others in a collective:
      // report it and end the whole job. Bad input is mostly found by every
      // rank alike (a check of the plan): rank 0 says it and ends the job;
      // another rank still here after the grace period was alone in finding
      // it and says it itself (each rank said it, interleaved, before).
      if (comm->size() > 1) {
        if (comm->rank() != 0 && dynamic_cast<const InputError*>(&e) != nullptr) {
          backend::silence_signal_line();  // rank 0's error ends the job: its SIGTERM here needs no line
          std::this_thread::sleep_for(kFirstRankSpeaksFirst);
        }
        context.err << "ragged: error on rank " << comm->rank() << ": " << one_line(e.what()) << '\n';
        comm->abort(dynamic_cast<const InputError*>(&e) ? kExitBadInput : kExitInternal);
      }
      throw;
    }
    // The work is done; the ranks' meeting at exit is bounded too (exit_deadline.hpp).
    backend::arm_exit_deadline(o->run.collective_timeout_s);
    stop_here_if_asked("RAGGED_TEST_STOP_RANK_AT_EXIT");
    if (comm->rank() != 0) return;
    if (!o->trace_path.empty()) traces::write_trace(result.trace, o->trace_path);
    if (!o->chrome_path.empty()) traces::write_chrome_trace(result.trace, o->chrome_path);
    if (o->json) {
      const traces::Summary& s = result.trace.summary();
      nlohmann::json j = {{"scenario", resolved.front().scenario().name()},
                          {"strategy", result.trace.metadata().strategy()},
                          {"ranks", comm->size()},
                          {"step_time_s", s.step_time_s()},
                          {"tokens_per_s_per_gpu", s.tokens_per_s_per_gpu()},
                          {"mfu", s.mfu()},
                          {"exposed_comm_s", s.exposed_comm_s()},
                          {"compute_s", s.compute_s()},
                          {"comm_s", s.comm_s()},
                          {"peak_memory_bytes", s.peak_allocated_bytes()},
                          {"peak_state_and_buffers_bytes", s.peak_state_and_buffers_bytes()},
                          {"losses", result.losses},
                          {"non_finite", result.non_finite},
                          {"collective_errors", result.collective_errors},
                          {"reference_checked", result.reference_error >= 0},
                          {"reference_bitwise", result.reference_bitwise},
                          {"reference_tolerance", result.reference_tolerance},
                          {"reference_error", result.reference_error},
                          {"reference_worst_tensor", result.worst_tensor},
                          {"reference_differing", result.reference_differing},
                          {"reference_elements", result.reference_elements},
                          {"reference_non_finite", result.reference_non_finite},
                          {"reference_ok", result.reference_ok},
                          {"replicas", result.replicas},
                          {"replica_differing", result.replica_differing},
                          {"failures", result.failures()},
                          {"passed", result.failures().empty()},
                          {"device", result.trace.metadata().device()},
                          {"arena_held_bytes", result.arena_held_bytes},
                          {"program_peak_bytes", result.program_peak_bytes},
                          {"device_used_bytes", result.device_used_bytes}};
      // Per op kind on this rank's measured step: where the time went
      // (copy-out and casts are FSDP2's copy overhead, measured).
      nlohmann::json per_step = nlohmann::json::array();
      for (const traces::StepFigures& f : s.per_step()) {
        per_step.push_back({{"step_time_s", f.step_time_s()},
                            {"compute_s", f.compute_s()},
                            {"comm_s", f.comm_s()},
                            {"exposed_comm_s", f.exposed_comm_s()}});
      }
      j["per_step"] = std::move(per_step);
      const traces::Spread spread = traces::step_time_spread(s);
      j["step_time_spread"] = {{"min", spread.min}, {"max", spread.max}, {"stddev", spread.stddev}};
      // Per op kind, per step (means over the measured steps): where the time
      // went (copy-out and casts are FSDP2's copy overhead, measured).
      const double steps = std::max(1, s.per_step_size());
      nlohmann::json kinds = nlohmann::json::array();
      for (const traces::KindTotals& k : traces::totals_by_kind(result.trace)) {
        kinds.push_back({{"kind", traces::op_kind_name(k.kind)},
                         {"ops", k.count / static_cast<int64_t>(steps)},
                         {"busy_s", k.busy_s / steps},
                         {"bytes", k.bytes / static_cast<int64_t>(steps)}});
      }
      j["kinds"] = std::move(kinds);
      context.out << j.dump(2) << '\n';
    } else {
      print(result, resolved.front().scenario().name() + ": " + result.trace.metadata().strategy(), context.out);
    }
    const std::vector<std::string> failures = result.failures();
    if (!failures.empty()) {
      std::string text = failures.front();
      for (size_t i = 1; i < failures.size(); ++i) text += "; " + failures[i];
      throw CheckFailure(text);
    }
  });
}

}  // namespace ragged::cli
