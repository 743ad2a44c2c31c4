#include "cli/simulate_report.hpp"

#include <google/protobuf/text_format.h>

#include <algorithm>

#include <fmt/format.h>

#include "cli/band_report.hpp"
#include "cli/table.hpp"
#include "cli/whatif_report.hpp"
#include "common/errors.hpp"
#include "common/units.hpp"
#include "scenarios/scenario_rules.hpp"
#include "traces/metrics.hpp"
#include "traces/trace_stats.hpp"
#include "traces/unit_breakdown.hpp"

namespace ragged::cli {
namespace {

const traces::Summary& summary(const SimulationReport& r) { return r.result.trace.summary(); }

std::string ms(double seconds) { return fmt::format("{:.1f}", seconds * 1e3); }

using traces::memory_verdict;

// The verdict with the caching allocator's releases of its cache, when it
// needed any: what a peak near capacity costs instead of an OOM.
std::string memory_verdict_detail(const traces::Summary& s) {
  if (s.alloc_retries() == 0) return memory_verdict(s);
  return fmt::format("{} ({} release{} of the allocator's cache and retr{}, {})", memory_verdict(s), s.alloc_retries(),
                     s.alloc_retries() == 1 ? "" : "s", s.alloc_retries() == 1 ? "y" : "ies",
                     format_seconds(s.alloc_retry_s()));
}

// A pipeline's stages: each one's compute, its wait for the others (its
// share of the bubble), when it ends (the last sets the step) and its peaks.
void print_stages(const traces::Summary& s, std::ostream& out) {
  if (s.stages_size() < 2) return;
  out << "  per stage          stage   rank   compute    pipeline wait      ends   peak GiB reserved, allocated\n";
  for (const traces::StageFigures& stage : s.stages()) {
    const double share = s.step_time_s() > 0 ? 100 * stage.pipeline_wait_s() / s.step_time_s() : 0.0;
    out << fmt::format("                     {:>5} {:>6} {:>9} {:>9} ({:>4.1f}%) {:>9} {:>10} {:>10}\n", stage.stage(),
                       stage.rank(), format_seconds(stage.compute_s()), format_seconds(stage.pipeline_wait_s()), share,
                       format_seconds(stage.end_s()), format_gib(stage.peak_reserved_bytes()),
                       format_gib(stage.peak_allocated_bytes()));
  }
}

}  // namespace

void print_simulation(const SimulationReport& r, std::ostream& out) {
  const traces::Summary& s = summary(r);
  const auto& stats = r.result.stats;
  if (s.oom()) {
    print_out_of_memory(r, out);
    out << fmt::format("\n{} (predicted as if it fit: what the step would take with the memory)\n", r.label);
  } else {
    out << fmt::format("{} (predicted)\n", r.label);
  }
  out << fmt::format("  step time          {}\n", format_seconds(s.step_time_s()));
  out << fmt::format("  tokens/s per GPU   {}  ({} tokens per GPU per step)\n",
                     format_rounded(s.tokens_per_s_per_gpu()), format_integer(s.tokens_per_step()));
  out << fmt::format("  MFU                {:.1f}%\n", 100 * s.mfu());
  out << fmt::format("  exposed comm       {} ({:.1f}% of the step)\n", format_seconds(s.exposed_comm_s()),
                     s.step_time_s() > 0 ? 100 * s.exposed_comm_s() / s.step_time_s() : 0.0);
  if (s.pipeline_wait_s() > 0) {
    out << fmt::format("  pipeline wait      {} ({:.1f}% of the step: the bubble and the transfers between stages)\n",
                       format_seconds(s.pipeline_wait_s()),
                       s.step_time_s() > 0 ? 100 * s.pipeline_wait_s() / s.step_time_s() : 0.0);
  }
  out << fmt::format("  busy               compute {}, communication {}\n", format_seconds(s.compute_s()),
                     format_seconds(s.comm_s()));
  print_stages(s, out);
  const int64_t allocator_capacity = traces::allocator_capacity_of(s);
  out << fmt::format(
      "  peak memory        {} GiB reserved, {} GiB allocated, of {} GiB ({} less {} for the CUDA context and "
      "NCCL): {}\n",
      format_gib(s.peak_reserved_bytes()), format_gib(s.peak_allocated_bytes()), format_gib(allocator_capacity),
      format_gib(s.hbm_capacity_bytes()), format_gib(s.hbm_capacity_bytes() - allocator_capacity),
      memory_verdict_detail(s));
  if (r.band) print_band(*r.band, sim::regime_of(r.scenario, s), out);
  if (traces::oom_marginally(s)) {
    const int64_t over = s.peak_reserved_bytes() - allocator_capacity;
    out << fmt::format(
        "  memory margin      {} GiB over ({:.1f}%), within this simulator's peak-memory error on its calibration runs "
        "({:.1f}%): the real run may fit; leave room (checkpointing, a smaller micro-batch, more GPUs) or measure\n",
        format_gib(over), 100.0 * static_cast<double>(over) / static_cast<double>(allocator_capacity),
        100 * traces::kPeakMemoryPredictionError);
  }
  if (traces::fits_tightly(s)) {
    const int64_t free = allocator_capacity - s.peak_reserved_bytes();
    out << fmt::format(
        "  memory margin      {} GiB free ({:.1f}%), less than this simulator's peak-memory error on its calibration "
        "runs ({:.1f}%): the real run may thrash the caching allocator or run out of memory; leave more room\n",
        format_gib(free), 100.0 * static_cast<double>(free) / static_cast<double>(allocator_capacity),
        100 * traces::kPeakMemoryPredictionError);
  }
  const int stages = std::max(1, r.scenario.training().mesh().pp());
  const std::string reported = stages > 1
                                   ? fmt::format("stage {} of {} (rank {}: the stage with the highest memory peak)",
                                                 stats.reported_stage, stages, stats.representative_rank)
                                   : fmt::format("rank {}", stats.representative_rank);
  out << fmt::format("  simulation         {} mode, {} simulated node{}, {} flows, {}, {:.2f} s wall, {} of memory\n",
                     sim::mode_name(stats.mode), stats.simulated_nodes, stats.simulated_nodes == 1 ? "" : "s",
                     format_integer(stats.flows), reported, stats.wall_seconds,
                     format_bytes(static_cast<double>(r.sim_memory_bytes)));
  if (stats.forced_full) {
    out << fmt::format("  note               {}: full mode instead of the symmetric mode asked for\n",
                       stages > 1 ? "the pipeline's stages span more than two leaves and do not start on a leaf"
                                  : "the what-if makes nodes differ");
  }
  if (sim::has_whatif(r.scenario)) print_whatif(r.scenario, r.result, out);
  if (!r.sensitivity.empty()) print_sensitivity(r.sensitivity, out);

  out << '\n';
  // Per unit (ms per micro-batch summed over the step); identical blocks averaged.
  // The mesh's column only where tp, cp or ep ran collectives.
  const std::vector<traces::UnitTimes> rows =
      traces::with_blocks_averaged(traces::unit_times(r.result.trace, traces::first_traced_rank(r.result.trace)));
  const bool mesh =
      std::any_of(rows.begin(), rows.end(), [](const traces::UnitTimes& t) { return !t.mesh_kinds.empty(); });
  const int phases = mesh ? traces::kUnitPhases : static_cast<int>(traces::UnitPhase::kMesh);
  Table table;
  table.column("unit", Table::Align::kLeft);
  for (int p = 0; p < phases; ++p)
    table.column(std::string(traces::unit_phase_name(static_cast<traces::UnitPhase>(p))));
  for (const traces::UnitTimes& t : rows) {
    std::vector<std::string> cells = {t.name};
    for (int p = 0; p < phases; ++p) cells.push_back(ms(t.seconds[static_cast<size_t>(p)]));
    table.row(cells);
  }
  out << (stages > 1 ? fmt::format("  time per unit and step (ms), stage {}'s units:\n", stats.reported_stage)
                     : std::string("  time per unit and step (ms):\n"));
  table.print(out, "  ");
}

void print_simulation_comparison(const std::vector<SimulationReport>& reports, std::ostream& out) {
  Table table;
  table.column("strategy", Table::Align::kLeft).column("step time").column("tokens/s/GPU").column("MFU");
  table.column("exposed comm").column("peak GiB").column("memory", Table::Align::kLeft).column("wall s");
  for (const auto& r : reports) {
    const traces::Summary& s = summary(r);
    table.row({r.result.trace.metadata().strategy(), format_seconds(s.step_time_s()),
               format_rounded(s.tokens_per_s_per_gpu()), fmt::format("{:.1f}%", 100 * s.mfu()),
               format_seconds(s.exposed_comm_s()), format_gib(s.peak_reserved_bytes()), memory_verdict(s),
               fmt::format("{:.2f}", r.result.stats.wall_seconds)});
  }
  const auto& meta = reports.front().result.trace.metadata();
  out << fmt::format("{} on {} GPUs (predicted, strategies side by side)\n", meta.scenario_name(),
                     format_integer(meta.world_size()));
  table.print(out, "  ");
}

void print_sweep(const std::vector<SimulationReport>& reports, std::ostream& out) {
  Table table;
  table.column("GPUs").column("strategy", Table::Align::kLeft).column("global batch").column("step time");
  table.column("tokens/s/GPU").column("MFU");
  table.column("exposed comm")
      .column("peak GiB")
      .column("memory", Table::Align::kLeft)
      .column("mode", Table::Align::kLeft);
  table.column("wall s").column("sim memory");
  for (const auto& r : reports) {
    const traces::Summary& s = summary(r);
    // Tokens a step: every GPU's share of the step's tokens.
    const double step_tokens =
        s.tokens_per_s_per_gpu() * s.step_time_s() * static_cast<double>(r.result.trace.metadata().world_size());
    table.row({format_integer(r.result.trace.metadata().world_size()), r.result.trace.metadata().strategy(),
               format_count(step_tokens), format_seconds(s.step_time_s()), format_rounded(s.tokens_per_s_per_gpu()),
               fmt::format("{:.1f}%", 100 * s.mfu()), format_seconds(s.exposed_comm_s()),
               format_gib(s.peak_reserved_bytes()), memory_verdict(s), sim::mode_name(r.result.stats.mode),
               fmt::format("{:.2f}", r.result.stats.wall_seconds),
               format_bytes(static_cast<double>(r.sim_memory_bytes))});
  }
  out << reports.front().result.trace.metadata().scenario_name()
      << " (predicted, scaling; global batch: tokens a step, which grows with the GPUs unless "
         "--sweep-global-batch keeps it)\n";
  table.print(out, "  ");
}

namespace {

nlohmann::json stages_json(const traces::Summary& s) {
  nlohmann::json out = nlohmann::json::array();
  for (const traces::StageFigures& stage : s.stages()) {
    out.push_back({{"stage", stage.stage()},
                   {"rank", stage.rank()},
                   {"compute_s", stage.compute_s()},
                   {"pipeline_wait_s", stage.pipeline_wait_s()},
                   {"end_s", stage.end_s()},
                   {"peak_memory_bytes", stage.peak_reserved_bytes()},
                   {"peak_allocated_bytes", stage.peak_allocated_bytes()}});
  }
  return out;
}

}  // namespace

nlohmann::json simulation_to_json(const SimulationReport& r) {
  const traces::Summary& s = summary(r);
  const auto& meta = r.result.trace.metadata();
  nlohmann::json units = nlohmann::json::array();
  for (const auto& [unit, by_kind] :
       traces::kind_seconds_by_unit(r.result.trace, traces::first_traced_rank(r.result.trace))) {
    nlohmann::json kinds = nlohmann::json::object();
    for (const auto& [k, v] : by_kind) kinds[traces::OpKind_Name(k)] = v;
    units.push_back({{"unit", unit}, {"seconds_by_kind", kinds}});
  }
  nlohmann::json out = {
      {"scenario", meta.scenario_name()},
      {"strategy", meta.strategy()},
      {"gpus", meta.world_size()},
      {"device", meta.device()},
      {"micro_batch_size", r.scenario.training().micro_batch_size()},
      {"sequence_length", r.scenario.training().sequence_length()},
      {"gradient_accumulation_steps", r.scenario.training().gradient_accumulation_steps()},
      {"activation_checkpointing", scenarios::checkpointing_name(r.scenario.training().activation_checkpointing())},
      {"step_time_s", s.step_time_s()},
      {"tokens_per_s_per_gpu", s.tokens_per_s_per_gpu()},
      {"tokens_per_step_per_gpu", s.tokens_per_step()},
      {"mfu", s.mfu()},
      {"exposed_comm_s", s.exposed_comm_s()},
      {"compute_s", s.compute_s()},
      {"comm_s", s.comm_s()},
      {"pipeline_wait_s", s.pipeline_wait_s()},
      {"stages", stages_json(s)},
      {"peak_memory_bytes", s.peak_reserved_bytes()},
      {"peak_allocated_bytes", s.peak_allocated_bytes()},
      {"hbm_capacity_bytes", s.hbm_capacity_bytes()},
      {"oom", s.oom()},
      {"fits_tightly", traces::fits_tightly(s)},
      {"oom_marginally", traces::oom_marginally(s)},
      {"allocator_capacity_bytes", traces::allocator_capacity_of(s)},
      {"alloc_retries", s.alloc_retries()},
      {"alloc_retry_s", s.alloc_retry_s()},
      {"mode", sim::mode_name(r.result.stats.mode)},
      {"simulated_nodes", r.result.stats.simulated_nodes},
      {"flows", r.result.stats.flows},
      {"wall_seconds", r.result.stats.wall_seconds},
      {"max_rss_bytes", r.max_rss_bytes},
      {"sim_memory_bytes", r.sim_memory_bytes},
      {"units", std::move(units)},
      {"forced_full", r.result.stats.forced_full},
      {"whatif",
       r.result.stats.whatif.ranks.empty() ? nlohmann::json(nullptr) : sim::straggler_to_json(r.result.stats.whatif)},
  };
  if (r.band) add_band_json(*r.band, sim::regime_of(r.scenario, s), out);
  if (!r.sensitivity.empty()) out["sensitivity"] = sensitivity_to_json(r.sensitivity);
  return out;
}

namespace {

double total_seconds(const sim::ComputeParts& p) { return p.gemm + p.attention + p.other + p.memory + p.launches; }

std::string tflops(double flops, double seconds) {
  return seconds > 0 && flops > 0 ? fmt::format("{:.0f}", flops / seconds / 1e12) : "-";
}

}  // namespace

void print_compute_breakdown(const std::vector<sim::UnitComputeParts>& rows, std::ostream& out) {
  Table table;
  table.column("unit", Table::Align::kLeft).column("pass", Table::Align::kLeft);
  table.column("GEMMs").column("TFLOP/s").column("attention").column("TFLOP/s").column("element-wise").column("GB");
  table.column("other").column("launches").column("kernels").column("total");
  for (const sim::UnitComputeParts& row : rows) {
    const sim::ComputeParts& p = row.parts;
    table.row({row.unit, row.pass, ms(p.gemm), tflops(p.gemm_flops, p.gemm), ms(p.attention),
               tflops(p.attention_flops, p.attention), ms(p.memory), fmt::format("{:.1f}", p.memory_bytes / 1e9),
               ms(p.other), ms(p.launches), format_integer(p.kernels), ms(total_seconds(p))});
  }
  out << "\n  compute per unit and step, by what runs it (ms; rates are executed FLOPs over the time; alone on the "
         "GPU, before collectives share it, at the clock of the cluster's slowest GPU):\n";
  table.print(out, "  ");
}

nlohmann::json compute_breakdown_to_json(const std::vector<sim::UnitComputeParts>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const sim::UnitComputeParts& row : rows) {
    const sim::ComputeParts& p = row.parts;
    out.push_back({{"unit", row.unit},
                   {"pass", row.pass},
                   {"units", row.units},
                   {"gemm_s", p.gemm},
                   {"gemm_flops", p.gemm_flops},
                   {"attention_s", p.attention},
                   {"attention_flops", p.attention_flops},
                   {"elementwise_s", p.memory},
                   {"elementwise_bytes", p.memory_bytes},
                   {"other_s", p.other},
                   {"launch_s", p.launches},
                   {"kernels", p.kernels},
                   {"total_s", total_seconds(p)}});
  }
  return out;
}

}  // namespace ragged::cli
