// Google Benchmark micro-benchmarks of the planner's hot paths.

#include <benchmark/benchmark.h>

#include "models/catalog.hpp"
#include "planner/lower_bound.hpp"
#include "planner/placement.hpp"
#include "planner/plan.hpp"

namespace {

using namespace ragged;

planner::GranularityPolicy rows(int64_t k) {
  planner::GranularityPolicy policy;
  policy.default_spec.kind = planner::GranuleKind::kRows;
  policy.default_spec.rows = k;
  return policy;
}

void BM_PlanDeepSeekV3(benchmark::State& state) {
  const models::ModelSpec model = models::catalog_model("deepseek-v3");
  auto strategy = planner::make_ragged_strategy();
  for (auto _ : state) {
    benchmark::DoNotOptimize(planner::plan_model(model, rows(state.range(1)), state.range(0), *strategy));
  }
}
BENCHMARK(BM_PlanDeepSeekV3)->Args({16384, 128})->Args({1024, 16})->Args({256, 1})->Unit(benchmark::kMillisecond);

void BM_PlanPaperDeepSeekV3(benchmark::State& state) {
  const models::ModelSpec model = models::catalog_model("deepseek-v3");
  auto strategy = planner::make_vescale_paper_strategy();
  for (auto _ : state) {
    benchmark::DoNotOptimize(planner::plan_model(model, rows(state.range(1)), state.range(0), *strategy));
  }
}
BENCHMARK(BM_PlanPaperDeepSeekV3)->Args({16384, 128})->Args({1024, 16})->Unit(benchmark::kMillisecond);

// The exact greedy on one MoE layer (782 tensors) at its lower bound.
void BM_GreedyPlacementMoeLayer(benchmark::State& state) {
  const models::ModelSpec model = models::catalog_model("deepseek-v3");
  planner::UnitProblem problem = planner::unit_problem(model.units[10], rows(16), state.range(0), {});
  const int64_t S = planner::lower_bound_shard_size(problem);
  std::vector<int> order(problem.tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  for (auto _ : state) benchmark::DoNotOptimize(planner::place_in_order(problem, order, S, nullptr));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(problem.tensors.size()));
}
BENCHMARK(BM_GreedyPlacementMoeLayer)->Arg(1024)->Arg(16384);

void BM_LowerBoundMoeLayer(benchmark::State& state) {
  const models::ModelSpec model = models::catalog_model("deepseek-v3");
  planner::UnitProblem problem = planner::unit_problem(model.units[10], rows(128), state.range(0), {});
  for (auto _ : state) benchmark::DoNotOptimize(planner::lower_bound_shard_size(problem));
}
BENCHMARK(BM_LowerBoundMoeLayer)->Arg(1024)->Arg(16384);

}  // namespace

BENCHMARK_MAIN();
