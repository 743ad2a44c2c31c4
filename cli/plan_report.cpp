#include "cli/plan_report.hpp"

#include <fmt/format.h>

#include "cli/table.hpp"
#include "common/units.hpp"
#include "planner/mesh.hpp"
#include "planner/program_builder.hpp"
#include "planner/scenario_plan.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::cli {
namespace {

using planner::OpKind;

bool is_mesh_group(planner::Group group) {
  return group == planner::Group::kTensor || group == planner::Group::kContext || group == planner::Group::kExpert;
}

StepBytes step_bytes(const planner::Program& program) {
  StepBytes b;
  for (const planner::Op& op : program.ops) {
    if (is_mesh_group(op.group)) {
      // An all-to-all's bytes are its whole group's; a rank sends its share.
      const int64_t members = planner::group_span(program.mesh, op.group).members;
      b.mesh += op.kind == OpKind::kAllToAll ? op.bytes / std::max<int64_t>(1, members) : op.bytes;
      continue;
    }
    switch (op.kind) {
      case OpKind::kAllGather:
        b.all_gather += op.bytes;
        break;
      case OpKind::kReduceScatter:
        b.reduce_scatter += op.bytes;
        break;
      case OpKind::kAllReduce:
        b.all_reduce += op.bytes;
        break;
      case OpKind::kAllToAll:
        b.all_to_all += op.bytes;
        break;
      case OpKind::kCopyIn:
      case OpKind::kCopyOut:
      case OpKind::kCast:
        b.copies += op.bytes;
        break;
      case OpKind::kSend:
      case OpKind::kRecv:
        b.pipeline += op.bytes;
        break;
      default:
        break;
    }
  }
  return b;
}

std::string percent(double ratio) { return fmt::format("{:.2f}%", 100.0 * ratio); }

double ratio(int64_t padded, int64_t params) {
  return params ? static_cast<double>(padded - params) / static_cast<double>(params) : 0.0;
}

std::string granularity_text(const planner::ResolvedScenario& r) {
  std::string text = r.granularity.default_spec.describe();
  if (!r.granularity.overrides.empty()) text += fmt::format(" + {} override(s)", r.granularity.overrides.size());
  return text;
}

int64_t hbm_bytes(const planner::ResolvedScenario& r) {
  return scenarios::hbm_capacity_bytes(r.scenario().cluster().gpu());
}

bool is_experts(const PlanReport& r, size_t unit) {
  return r.resolved.model.units[r.plan.units[unit].unit_index].kind == models::UnitKind::kExperts;
}

// Runs of units with the same layout, each a row: consecutive ones, the
// routed experts' units (which alternate with their blocks under expert
// parallelism) counted apart from the blocks, each run of them after the
// run of blocks it starts in. Each run is its units' indices.
std::vector<std::vector<size_t>> layout_runs(const PlanReport& r) {
  std::vector<std::vector<size_t>> runs;
  std::vector<size_t> open = {SIZE_MAX, SIZE_MAX};  // the run each kind (units, experts) extends
  for (size_t i = 0; i < r.plan.units.size(); ++i) {
    const size_t kind = is_experts(r, i) ? 1 : 0;
    size_t& run = open[kind];
    const bool same = run != SIZE_MAX && problem_signature(r.plan.units[runs[run].front()].problem) ==
                                             problem_signature(r.plan.units[i].problem);
    if (same) {
      runs[run].push_back(i);
      continue;
    }
    runs.push_back({i});
    run = runs.size() - 1;
    if (kind == 0) open[1] = SIZE_MAX;  // a new run of blocks ends the experts' run beside the last
  }
  // Each experts' run after the block run holding the unit before its first.
  std::stable_sort(runs.begin(), runs.end(), [&](const auto& a, const auto& b) {
    auto key = [&](const std::vector<size_t>& run) {
      return is_experts(r, run.front()) ? run.front() - 1 : run.front();
    };
    return key(a) < key(b);
  });
  return runs;
}

std::string run_label(const PlanReport& r, const std::vector<size_t>& run) {
  const auto& units = r.resolved.model.units;
  const std::string& a = units[r.plan.units[run.front()].unit_index].name;
  if (run.size() == 1) return a;
  const std::string& b = units[r.plan.units[run.back()].unit_index].name;
  constexpr std::string_view kExperts = ".experts";
  if (is_experts(r, run.front())) {
    const std::string first = a.substr(0, a.size() - kExperts.size());
    const std::string last = b.substr(0, b.size() - kExperts.size());
    return first + "-" + last.substr(last.rfind('.') + 1) + std::string(kExperts);
  }
  return a + "-" + b.substr(b.rfind('.') + 1);
}

}  // namespace

PlanReport make_plan_report(planner::ResolvedScenario resolved) {
  PlanReport report{std::move(resolved), {}, {}, {}, {}, {}, 0, ""};
  if (report.resolved.scenario().training().mesh().pp() > 1) {
    const planner::PipelinePlan pipeline = planner::plan_pipeline(report.resolved);
    std::vector<planner::Program> programs = planner::build_stage_programs(report.resolved, pipeline);
    report.schedule = std::string(planner::pipeline_schedule_name(pipeline.schedule));
    const std::vector<int64_t> blocks = pipeline.stages.blocks_per_chunk(report.resolved.model);
    for (size_t s = 0; s < programs.size(); ++s) {
      StagePlan stage{pipeline.plans[s], std::move(programs[s]), {}, {}, {}};
      stage.memory = planner::memory_breakdown(stage.program);
      stage.bytes = step_bytes(stage.program);
      for (int chunk : pipeline.stages.chunks_of(static_cast<int64_t>(s)))
        stage.blocks.push_back(blocks[static_cast<size_t>(chunk)]);
      if (!report.stages.empty() &&
          stage.memory.peak_total() > report.stages[report.reported_stage].memory.peak_total()) {
        report.reported_stage = report.stages.size();
      }
      report.stages.push_back(std::move(stage));
    }
    const StagePlan& worst = report.stages[report.reported_stage];
    report.plan = worst.plan;
    report.program = worst.program;
    report.memory = worst.memory;
    report.bytes = worst.bytes;
    return report;
  }
  report.plan = planner::plan_scenario(report.resolved);
  report.program = planner::build_program(planner::program_inputs(report.resolved, report.plan));
  report.memory = planner::memory_breakdown(report.program);
  report.bytes = step_bytes(report.program);
  return report;
}

// The pipeline's stages side by side: what each runs, what it holds at its
// peak, and what it sends and receives.
void print_stages(const PlanReport& r, std::ostream& out) {
  const scenarios::Training& t = r.resolved.scenario().training();
  out << fmt::format("  pipeline: {} stages, {} schedule, {} micro-batches per step{}\n", r.stages.size(), r.schedule,
                     t.gradient_accumulation_steps(),
                     t.pipeline().virtual_stages() > 1
                         ? fmt::format(", {} model chunks per stage", t.pipeline().virtual_stages())
                         : "");
  Table table;
  table.column("stage").column("units", Table::Align::kLeft).column("blocks", Table::Align::kLeft).column("params");
  table.column("activations GiB").column("peak GiB").column("sent+received/step");
  for (size_t s = 0; s < r.stages.size(); ++s) {
    const StagePlan& stage = r.stages[s];
    const auto& units = r.resolved.model.units;
    const std::string span = units[static_cast<size_t>(stage.plan.units.front().unit_index)].name + " .. " +
                             units[static_cast<size_t>(stage.plan.units.back().unit_index)].name;
    table.row({std::to_string(s) + (s == r.reported_stage ? " *" : ""), span,
               fmt::format("{}", fmt::join(stage.blocks, "+")), format_count(static_cast<double>(stage.plan.params())),
               format_gib(stage.memory.activations), format_gib(stage.memory.peak_total()),
               format_bytes(static_cast<double>(stage.bytes.pipeline))});
  }
  table.print(out, "  ");
  out << fmt::format("  * the stage with the highest memory peak: the tables below are its rank's\n\n");
}

// When even the lower bound pads a lot, the granules are too coarse for the
// shard group: say so, and name smaller groups (HSDP) whose bound is low.
void print_padding_hint(const PlanReport& r, std::ostream& out) {
  const double bound = r.plan.lower_bound_padding_ratio();
  if (bound <= 0.05) return;
  int64_t largest_granule = 0;
  for (const auto& u : r.plan.units) {
    for (const auto& t : u.problem.tensors) largest_granule = std::max(largest_granule, t.granule);
  }
  out << fmt::format(
      "  note: the lower bound itself pads {}: with granules up to {} elements, tensors that span several "
      "shards force S to a multiple of their granules. This padding is unavoidable at {} ranks with "
      "this granularity.\n",
      percent(bound), format_count(static_cast<double>(largest_granule)), r.plan.ranks);
  const planner::PlanOptions options = planner::plan_options_for(r.resolved.scenario().training());
  std::string suggestions;
  for (int64_t group = r.plan.ranks / 2; group >= 1 && r.plan.ranks % group == 0; group /= 2) {
    double at = planner::lower_bound_padding_ratio(r.resolved.model, r.resolved.granularity, group, options);
    if (at <= 0.05) {
      suggestions += fmt::format("{}shard group {} ({} replicas): {}", suggestions.empty() ? "" : "; ", group,
                                 r.plan.ranks / group, percent(at));
      if (suggestions.size() > 120 || group % 2 != 0) break;
    }
    if (group % 2 != 0) break;
  }
  if (!suggestions.empty()) {
    out << "  smaller shard groups (HSDP, training.shard_group_size) bound the padding at: " << suggestions << "\n";
  }
}

void print_plan(const PlanReport& r, std::ostream& out) {
  const auto& s = r.resolved.scenario();
  const std::string mesh = planner::mesh_text(planner::mesh_of(s.training()));
  out << fmt::format("{} on {} GPUs ({}shard group {} x {} replica{}), strategy {}, granularity {}\n",
                     r.resolved.model.name, scenarios::total_gpus(s), mesh.empty() ? "" : "mesh " + mesh + ", ",
                     r.plan.ranks, s.training().replicate_group_size(),
                     s.training().replicate_group_size() > 1 ? "s" : "", r.plan.strategy, granularity_text(r.resolved));
  if (r.resolved.whole_model) {
    out << fmt::format("  one rank holds {} of the model's {} parameters before FSDP shards them (tp {}, ep {})\n",
                       format_count(static_cast<double>(r.resolved.model.params())),
                       format_count(static_cast<double>(r.resolved.whole().params())), r.resolved.model.split.tp,
                       r.resolved.model.split.ep);
  }
  out << fmt::format("  planned {} units ({} distinct) in {:.2f} ms\n\n", r.plan.units.size(), r.plan.distinct_units,
                     r.plan.plan_seconds * 1e3);
  if (!r.stages.empty()) print_stages(r, out);
  Table table;
  table.column("unit", Table::Align::kLeft)
      .column("count")
      .column("params/unit")
      .column("shard S")
      .column("padded/unit");
  table.column("padding")
      .column("lower bound")
      .column("gathered/unit")
      .column("copies/collective")
      .column("granules", Table::Align::kLeft);
  for (const std::vector<size_t>& run : layout_runs(r)) {
    const auto& u = r.plan.units[run.front()];
    const auto& c = u.layout.copies;
    int64_t copies = c.all_gather_in + c.all_gather_out + c.reduce_scatter_in + c.reduce_scatter_out;
    table.row({run_label(r, run), std::to_string(run.size()), format_count(static_cast<double>(u.params())),
               format_count(static_cast<double>(u.layout.shard_size)), format_count(static_cast<double>(u.padded())),
               percent(ratio(u.padded(), u.params())), percent(ratio(u.lower_bound_padded(), u.params())),
               format_count(static_cast<double>(u.padded())), format_count(static_cast<double>(copies)),
               u.layout.honours_granularity ? "whole" : "split"});
  }
  table.rule().row({"total", std::to_string(r.plan.units.size()), format_count(static_cast<double>(r.plan.params())),
                    "", format_count(static_cast<double>(r.plan.padded_params())), percent(r.plan.padding_ratio()),
                    percent(r.plan.lower_bound_padding_ratio()), "", "", ""});
  table.print(out, "  ");
  out << fmt::format("\n  gap to the lower bound: {:.3f} percentage points\n",
                     100.0 * (r.plan.padding_ratio() - r.plan.lower_bound_padding_ratio()));
  const StepBytes& b = r.bytes;
  out << fmt::format(
      "  per step per rank: all-gather {}, reduce-scatter {}, all-reduce {}, all-to-all {}, copies {}{}{}\n",
      format_bytes(static_cast<double>(b.all_gather)), format_bytes(static_cast<double>(b.reduce_scatter)),
      format_bytes(static_cast<double>(b.all_reduce)), format_bytes(static_cast<double>(b.all_to_all)),
      format_bytes(static_cast<double>(b.copies)),
      b.mesh > 0 ? fmt::format("; the mesh's tp/cp/ep collectives {}", format_bytes(static_cast<double>(b.mesh))) : "",
      b.pipeline > 0 ? fmt::format("; pipeline sends and receives {}", format_bytes(static_cast<double>(b.pipeline)))
                     : "");
  const auto& m = r.memory;
  // The data-parallel strategies keep the whole compute-dtype copy, not a shard.
  const scenarios::Strategy strategy = r.resolved.scenario().training().strategy();
  const bool replicated = strategy == scenarios::DDP || strategy == scenarios::MEGATRON_DDP;
  const std::string receive_buffers =
      m.persistent.pipeline_receive_buffers > 0
          ? fmt::format(" + pipeline receive buffers {}", format_gib(m.persistent.pipeline_receive_buffers))
          : "";
  out << fmt::format(
      "  memory per rank (GiB): master {} + compute {} {} + gradients {} + optimizer {} + small params {}{}"
      " | in flight: unsharded params {} + gradients {} + gradient shards {} + activations {}"
      " + workspace {} + model outputs {} = {} of the allocator's {}\n",
      format_gib(m.persistent.master_params), replicated ? "params" : "shard", format_gib(m.persistent.compute_params),
      format_gib(m.persistent.gradients), format_gib(m.persistent.optimizer_states),
      format_gib(m.persistent.gathered_small_params), receive_buffers, format_gib(m.unsharded_params),
      format_gib(m.gradients_in_flight),
      format_gib(m.grad_shards), format_gib(m.activations), format_gib(m.workspace), format_gib(m.model_outputs),
      format_gib(m.peak_total()), format_gib(scenarios::allocator_capacity_bytes(r.resolved.scenario())));
  print_padding_hint(r, out);
  if (!r.plan.honours_granularity()) {
    out << "  note: this strategy cuts through granules (quantization blocks or matrices straddle ranks)\n";
  }
}

void print_plan_comparison(const std::vector<PlanReport>& reports, std::ostream& out) {
  const auto& first = reports.front();
  out << fmt::format("{} on {} GPUs (shard group {}), granularity {}\n\n", first.resolved.model.name,
                     scenarios::total_gpus(first.resolved.scenario()), first.plan.ranks,
                     granularity_text(first.resolved));
  Table table;
  table.column("strategy", Table::Align::kLeft)
      .column("padded")
      .column("padding")
      .column("lower bound")
      .column("gap pp");
  table.column("max shard S").column("granules", Table::Align::kLeft).column("collectives/step").column("copies/step");
  table.column("peak GiB").column("plan ms");
  for (const PlanReport& r : reports) {
    const StepBytes& b = r.bytes;
    table.row({r.plan.strategy, format_count(static_cast<double>(r.plan.padded_params())),
               percent(r.plan.padding_ratio()), percent(r.plan.lower_bound_padding_ratio()),
               // The bound holds for contiguous layouts that keep granules whole; the others have no gap to it.
               r.plan.honours_granularity() && r.plan.units.front().layout.placement == planner::Placement::kContiguous
                   ? fmt::format("{:.3f}", 100.0 * (r.plan.padding_ratio() - r.plan.lower_bound_padding_ratio()))
                   : "-",
               format_count(static_cast<double>(r.plan.max_shard_size())),
               r.plan.honours_granularity() ? "whole" : "split",
               format_bytes(static_cast<double>(b.all_gather + b.reduce_scatter + b.all_reduce + b.all_to_all)),
               format_bytes(static_cast<double>(b.copies)), format_gib(r.memory.peak_total()),
               fmt::format("{:.2f}", r.plan.plan_seconds * 1e3)});
  }
  table.print(out, "  ");
}

namespace {

// null without pipeline stages; the units and the tables above are then the
// reported stage's.
nlohmann::json pipeline_json(const PlanReport& r) {
  if (r.stages.empty()) return nullptr;
  nlohmann::json stages = nlohmann::json::array();
  for (const StagePlan& stage : r.stages) {
    nlohmann::json units = nlohmann::json::array();
    for (const auto& u : stage.plan.units) units.push_back(r.resolved.model.units[u.unit_index].name);
    stages.push_back({{"units", std::move(units)},
                      {"blocks_per_chunk", stage.blocks},
                      {"params", stage.plan.params()},
                      {"activations_bytes", stage.memory.activations},
                      {"peak_bytes", stage.memory.peak_total()},
                      {"pipeline_bytes_per_step", stage.bytes.pipeline}});
  }
  return {{"schedule", r.schedule}, {"reported_stage", r.reported_stage}, {"stages", std::move(stages)}};
}

}  // namespace

nlohmann::json plan_to_json(const PlanReport& r) {
  nlohmann::json units = nlohmann::json::array();
  for (const auto& u : r.plan.units) {
    const auto& c = u.layout.copies;
    units.push_back({{"name", r.resolved.model.units[u.unit_index].name},
                     {"params", u.params()},
                     {"shard_size", u.layout.shard_size},
                     {"padded", u.padded()},
                     {"lower_bound_shard_size", u.layout.lower_bound_shard_size},
                     {"padding_ratio", ratio(u.padded(), u.params())},
                     {"lower_bound_padding_ratio", ratio(u.lower_bound_padded(), u.params())},
                     {"honours_granularity", u.layout.honours_granularity},
                     {"placement", u.layout.placement == planner::Placement::kContiguous ? "contiguous" : "rank_major"},
                     {"copy_elements",
                      {{"all_gather_in", c.all_gather_in},
                       {"all_gather_out", c.all_gather_out},
                       {"reduce_scatter_in", c.reduce_scatter_in},
                       {"reduce_scatter_out", c.reduce_scatter_out}}}});
  }
  const auto& m = r.memory;
  const StepBytes& b = r.bytes;
  return {
      {"scenario", r.resolved.scenario().name()},
      {"model", r.resolved.model.name},
      {"strategy", r.plan.strategy},
      {"gpus", scenarios::total_gpus(r.resolved.scenario())},
      {"shard_group_size", r.plan.ranks},
      {"granularity", granularity_text(r.resolved)},
      {"params", r.plan.params()},
      {"padded_params", r.plan.padded_params()},
      {"padding_ratio", r.plan.padding_ratio()},
      {"lower_bound_padding_ratio", r.plan.lower_bound_padding_ratio()},
      {"honours_granularity", r.plan.honours_granularity()},
      {"plan_seconds", r.plan.plan_seconds},
      {"distinct_units", r.plan.distinct_units},
      {"bytes_per_step",
       {{"all_gather", b.all_gather},
        {"reduce_scatter", b.reduce_scatter},
        {"all_reduce", b.all_reduce},
        {"all_to_all", b.all_to_all},
        {"copies", b.copies},
        {"mesh", b.mesh},
        {"pipeline", b.pipeline}}},
      {"memory_bytes",
       {{"master_params", m.persistent.master_params},
        {"compute_params", m.persistent.compute_params},
        {"gradients", m.persistent.gradients},
        {"optimizer_states", m.persistent.optimizer_states},
        {"gathered_small_params", m.persistent.gathered_small_params},
        {"pipeline_receive_buffers", m.persistent.pipeline_receive_buffers},
        {"unsharded_params", m.unsharded_params},
        {"gradients_in_flight", m.gradients_in_flight},
        {"grad_shards", m.grad_shards},
        {"activations", m.activations},
        {"workspace", m.workspace},
        {"model_outputs", m.model_outputs},
        {"peak", m.peak_total()},
        {"hbm_capacity", hbm_bytes(r.resolved)},
        {"allocator_capacity", scenarios::allocator_capacity_bytes(r.resolved.scenario())}}},
      {"units", std::move(units)},
      {"pipeline", pipeline_json(r)},
  };
}

}  // namespace ragged::cli
