// What the GPU executor holds against the Program's peak: its persistent
// units (masters, optimizer states, the gradients it keeps for the run) plus
// the step arena of device_step_memory. scripts/gpu-validate checks the same
// on a GPU; this checks the sizes on the host.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/cuda/device_units.hpp"
#include "backend/run_support.hpp"
#include "planner/memory_breakdown.hpp"
#include "planner/program_builder.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::backend::gpu {
namespace {

struct HeldAndPeak {
  int64_t held = 0, peak = 0;
  int64_t arena = 0, arena_peak_live = 0;  // the step arena and the most it holds at once
  int64_t kept = 0;                         // held with every gradient shard kept for the run
  bool grads_in_arena = false;
};

HeldAndPeak held_and_peak(const std::string& scenario, scenarios::Strategy strategy) {
  auto loaded = scenarios::with_total_gpus(scenarios::load_scenario(scenario), 1);
  loaded.written.mutable_training()->set_strategy(strategy);
  const planner::ResolvedScenario r = planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
  const planner::Plan plan = plan_for_run(r, models::DType::kF32);
  const planner::Program program = planner::build_program(planner::program_inputs(r, plan), 0);
  const std::vector<UnitShard> shards = make_shards(r.model, plan, 0, 1234, nullptr, 0);
  const scenarios::Optimizer& optimizer = r.scenario().training().optimizer();
  const StepMemory step = device_step_memory(program, shards, optimizer);
  const std::vector<bool>& in_arena = step.grads_in_arena;
  const planner::ArenaPlan& arena = step.arena;
  HeldAndPeak out;
  out.held = device_units_bytes(shards, optimizer, in_arena) + arena.bytes;
  // Every gradient shard with its unit, as the executor held them on the H200.
  out.kept = device_units_bytes(shards, optimizer) + planner::plan_arena(program, 256, planner::bytes_beside_unit_state).bytes;
  out.arena = arena.bytes;
  out.arena_peak_live = arena.peak_live;
  out.peak = planner::memory_breakdown(program).peak_total();
  for (bool b : in_arena) out.grads_in_arena = out.grads_in_arena || b;
  return out;
}

// Ragged keeps its gradients for the run, as the Program does: within 1%.
// FSDP2's per-step gradient shards carved from the arena: within 5% (the
// arena's packing around them; 4.0% for the tiny Llama), where keeping them
// with the units held 18.9% more on the H200; never more than that.
TEST(GpuArenaParity, TheExecutorHoldsTheProgramsPeak) {
  for (const char* scenario : {"tiny-llama-4xcpu", "tiny-moe-4xcpu"}) {
    for (scenarios::Strategy strategy : {scenarios::RAGGED, scenarios::FSDP2}) {
      const HeldAndPeak h = held_and_peak(scenario, strategy);
      const std::string what = std::string(scenario) + " " + scenarios::Strategy_Name(strategy);
      const double over = static_cast<double>(h.held) / static_cast<double>(h.peak) - 1;
      EXPECT_LE(std::abs(over), strategy == scenarios::RAGGED ? 0.01 : 0.05)
          << what << ": held " << h.held << " for a peak of " << h.peak << " (arena " << h.arena << ", at most "
          << h.arena_peak_live << " live at once)";
      EXPECT_LE(h.held, h.kept) << what;
      EXPECT_EQ(h.grads_in_arena, strategy == scenarios::FSDP2) << what;
    }
  }
}

// SGD keeps one fp32 buffer a unit with momentum and none without, where
// AdamW keeps two: each step down frees the same bytes. And the executor
// still holds the Program's peak, whose optimizer states say the same
// (planner/optimizer_program.cpp).
TEST(GpuArenaParity, SgdHoldsItsMomentumBufferOrNothing) {
  auto loaded = scenarios::with_total_gpus(scenarios::load_scenario("tiny-llama-4xcpu"), 1);
  const planner::ResolvedScenario r = planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
  const planner::Plan plan = plan_for_run(r, models::DType::kF32);
  const std::vector<UnitShard> shards = make_shards(r.model, plan, 0, 1234, nullptr, 0);
  scenarios::Optimizer adamw, sgd, sgd_momentum;
  adamw.mutable_adamw();
  sgd.mutable_sgd();
  sgd_momentum.mutable_sgd()->set_momentum(0.9);
  const int64_t a = device_units_bytes(shards, adamw), m = device_units_bytes(shards, sgd_momentum),
                n = device_units_bytes(shards, sgd);
  EXPECT_LT(n, m);
  EXPECT_LT(m, a);
  EXPECT_EQ(a - m, m - n);
  int64_t shard_bytes = 0;
  for (const UnitShard& s : shards) shard_bytes += s.shard_size() * static_cast<int64_t>(sizeof(float));
  EXPECT_GE(m - n, shard_bytes);  // a whole fp32 shard a unit, aligned
}

}  // namespace
}  // namespace ragged::backend::gpu
