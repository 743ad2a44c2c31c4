#include "sim/memory_fit.hpp"

#include <algorithm>
#include <functional>
#include <optional>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "planner/memory_breakdown.hpp"
#include "planner/program_builder.hpp"
#include "scenarios/scenario_rules.hpp"
#include "sim/simulation_child.hpp"
#include "traces/metrics.hpp"

namespace ragged::sim {
namespace {

using Edit = std::function<scenarios::LoadedScenario(const scenarios::LoadedScenario&)>;

// A change the planner types, as flags and as an edit of the written scenario.
struct Change {
  std::string flags;
  Edit edit;
};

// The program of the stage with the highest static peak (the only one
// without a pipeline).
planner::Program peak_program(const planner::ResolvedScenario& resolved) {
  std::vector<planner::Program> programs = planner::build_scenario_programs(resolved).programs;
  auto peak = [](const planner::Program& p) { return planner::memory_breakdown(p).peak_total(); };
  return *std::max_element(programs.begin(), programs.end(),
                           [&](const planner::Program& a, const planner::Program& b) { return peak(a) < peak(b); });
}

int64_t floor_bytes(const planner::ResolvedScenario& resolved) {
  int64_t most = 0;
  for (const planner::Program& p : planner::build_scenario_programs(resolved).programs) {
    most = std::max(most, planner::memory_floor(p).total());
  }
  return most;
}

// `base` with `edit` applied to what it was loaded from. The strategy is the
// simulated one: `--strategy` sets it after loading (cli ScenarioOptions).
// Nothing when the scenario rejects the change.
std::optional<planner::ResolvedScenario> changed(const planner::ResolvedScenario& base, const Edit& edit) {
  try {
    scenarios::LoadedScenario loaded = edit(base.loaded);
    loaded.scenario.mutable_training()->set_strategy(base.scenario().training().strategy());
    return planner::resolve_scenario(std::move(loaded));
  } catch (const InputError&) {
    return std::nullopt;
  }
}

Edit set_training(std::function<void(scenarios::Training&)> set) {
  return [set](const scenarios::LoadedScenario& from) {
    scenarios::LoadedScenario loaded = from;
    set(*loaded.written.mutable_training());
    return scenarios::rebuild(std::move(loaded));
  };
}

Edit then(Edit first, Edit second) {
  return [first, second](const scenarios::LoadedScenario& from) { return second(first(from)); };
}

// How much a checkpointing mode saves: none, selective, full (the enum's
// numbers are not in that order).
int strength(scenarios::Checkpointing mode) {
  return mode == scenarios::FULL ? 2 : mode == scenarios::SELECTIVE ? 1 : 0;
}

// Checkpointing stronger than the scenario's, mildest first: where the
// routed experts are a unit of their own (ep), their layer rerun alone
// (Megatron's --recompute-modules moe), then the blocks'.
std::vector<Change> checkpointing_changes(const planner::ResolvedScenario& resolved) {
  const scenarios::Training& t = resolved.scenario().training();
  std::vector<Change> out;
  if (resolved.model.arch.is_moe() && t.mesh().ep() > 1 && t.activation_checkpointing() != scenarios::FULL &&
      t.experts().checkpointing() != scenarios::FULL) {
    out.push_back({"--set training.experts.checkpointing=FULL", set_training([](scenarios::Training& w) {
                     w.mutable_experts()->set_checkpointing(scenarios::FULL);
                   })});
  }
  for (scenarios::Checkpointing mode : {scenarios::SELECTIVE, scenarios::FULL}) {
    if (strength(mode) <= strength(t.activation_checkpointing())) continue;
    out.push_back({"--checkpointing " + scenarios::checkpointing_name(mode),
                   set_training([mode](scenarios::Training& w) { w.set_activation_checkpointing(mode); })});
  }
  return out;
}

// Smaller micro-batches (divisors, each at most half the one before) with
// the accumulation steps raised to keep the tokens per step.
std::vector<Change> micro_batch_changes(const scenarios::Training& t) {
  std::vector<Change> out;
  const int64_t micro = t.micro_batch_size();
  const int64_t accumulation = t.gradient_accumulation_steps();
  int64_t last = micro;
  for (int64_t d = micro / 2; d >= 1; --d) {
    if (micro % d != 0 || 2 * d > last) continue;
    last = d;
    const int64_t steps = accumulation * (micro / d);
    out.push_back({fmt::format("--micro-batch {} --set training.gradient_accumulation_steps={}", d, steps),
                   set_training([d, steps](scenarios::Training& w) {
                     w.set_micro_batch_size(static_cast<int32_t>(d));
                     w.set_gradient_accumulation_steps(static_cast<int32_t>(steps));
                   })});
  }
  return out;
}

// Two, four and eight times the GPUs: the sharded state spreads thinner.
constexpr int kMostGpuDoublings = 3;

std::vector<Change> gpu_changes(const scenarios::Scenario& s, const std::string& prefix, const Edit& before) {
  std::vector<Change> out;
  for (int doubling = 1; doubling <= kMostGpuDoublings; ++doubling) {
    const int64_t gpus = scenarios::total_gpus(s) << doubling;
    Edit more = [gpus](const scenarios::LoadedScenario& from) { return scenarios::with_total_gpus(from, gpus); };
    out.push_back({prefix + fmt::format("--gpus {}", gpus), before ? then(before, more) : more});
  }
  return out;
}

// Full checkpointing and a micro-batch of one at once, the strongest of each.
std::optional<Change> strongest_change(const planner::ResolvedScenario& resolved) {
  const scenarios::Training& t = resolved.scenario().training();
  std::vector<Change> parts;
  std::vector<Change> c = checkpointing_changes(resolved);
  if (!c.empty()) parts.push_back(c.back());
  std::vector<Change> m = micro_batch_changes(t);
  if (!m.empty()) parts.push_back(m.back());
  if (parts.empty()) return std::nullopt;
  Change all = parts.front();
  for (size_t i = 1; i < parts.size(); ++i) all = {all.flags + " " + parts[i].flags, then(all.edit, parts[i].edit)};
  return all;
}

class FixSearch {
 public:
  FixSearch(const planner::ResolvedScenario& base, const SimulationOptions& options)
      : base_(without_whatif(base)), options_(options) {
    options_.progress = nullptr;
    fixes_.capacity_bytes = scenarios::allocator_capacity_bytes(base.scenario());
  }

  // Tries the changes in order until one fits with room; whether one fits.
  bool try_until_fit(const std::vector<Change>& changes) {
    bool fits = false;
    for (const Change& change : changes) {
      const std::optional<MemoryFix> fix = try_one(change);
      if (!fix || !fix->fits()) continue;
      fits = true;
      if (!fix->tight) break;
    }
    return fits;
  }

  MemoryFixes result() && { return std::move(fixes_); }

 private:
  std::optional<MemoryFix> try_one(const Change& change) {
    for (const MemoryFix& known : fixes_.tried) {
      if (known.flags == change.flags) return known;
    }
    const std::optional<planner::ResolvedScenario> resolved = changed(base_, change.edit);
    if (!resolved) return std::nullopt;
    MemoryFix fix;
    fix.flags = change.flags;
    fix.floor_bytes = floor_bytes(*resolved);
    if (fix.floor_bytes <= fixes_.capacity_bytes) {
      const SimulationSummary simulated = simulate_summary_in_child(*resolved, options_);
      fix.simulated = true;
      fix.oom = simulated.summary.oom();
      fix.peak_reserved_bytes = simulated.summary.peak_reserved_bytes();
      fix.tokens_per_s_per_gpu = simulated.summary.tokens_per_s_per_gpu();
      // Releasing the allocator's cache to fit means it reached capacity: no room either.
      fix.tight = traces::fits_tightly(simulated.summary) || simulated.summary.alloc_retries() > 0;
    }
    fixes_.tried.push_back(fix);
    return fix;
  }

  planner::ResolvedScenario base_;
  SimulationOptions options_;
  MemoryFixes fixes_;
};

}  // namespace

std::vector<MemoryPart> memory_parts_at_peak(const planner::ResolvedScenario& resolved) {
  const planner::MemoryBreakdown m = planner::memory_breakdown(peak_program(resolved));
  std::vector<MemoryPart> parts = {
      {"activations", m.activations},
      {"gathered parameters", m.unsharded_params},
      {"gradients in flight", m.gradients_in_flight},
      {"workspace", m.workspace},
      {"gradient shards", m.grad_shards},
      {"model outputs", m.model_outputs},
      {"optimizer states", m.persistent.optimizer_states},
      {"master weights", m.persistent.master_params},
      {"gradient accumulator", m.persistent.gradients},
      {"compute-precision shard", m.persistent.compute_params},
      {"small parameters", m.persistent.gathered_small_params},
      {"pipeline receive buffers", m.persistent.pipeline_receive_buffers},
  };
  std::erase_if(parts, [](const MemoryPart& p) { return p.bytes <= 0; });
  std::stable_sort(parts.begin(), parts.end(), [](const MemoryPart& a, const MemoryPart& b) { return a.bytes > b.bytes; });
  return parts;
}

std::vector<MemoryFix> MemoryFixes::fitting() const {
  std::vector<MemoryFix> out;
  std::copy_if(tried.begin(), tried.end(), std::back_inserter(out), [](const MemoryFix& f) { return f.fits(); });
  return out;
}

MemoryFixes find_memory_fixes(const planner::ResolvedScenario& resolved, const SimulationOptions& options) {
  const scenarios::Training& t = resolved.scenario().training();
  FixSearch search(resolved, options);
  bool any = search.try_until_fit(checkpointing_changes(resolved));
  any = search.try_until_fit(micro_batch_changes(t)) || any;
  any = search.try_until_fit(gpu_changes(resolved.scenario(), "", nullptr)) || any;
  if (!any) {
    // No one change is enough: the strongest together, then with more GPUs.
    if (const std::optional<Change> strongest = strongest_change(resolved)) {
      if (!search.try_until_fit({*strongest})) {
        search.try_until_fit(gpu_changes(resolved.scenario(), strongest->flags + " ", strongest->edit));
      }
    }
  }
  return std::move(search).result();
}

}  // namespace ragged::sim
