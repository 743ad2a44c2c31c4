// Google Benchmark micro-benchmarks of the simulator's hot path in full mode:
// building the flows of a collective, finding the nodes whose NVLink must be
// simulated, and running collectives through SimGrid. SimGrid's engine runs
// once per process, so each iteration of the last one runs in a forked child
// and reports the time the child measured (manual time: fork and pipe left
// out).

#include <chrono>
#include <string>

#include <benchmark/benchmark.h>

#include "planner/program_writer.hpp"
#include "sim/child_process.hpp"
#include "sim/collective_flows.hpp"
#include "sim/compute_model.hpp"
#include "sim/program_run.hpp"

namespace {

using namespace ragged;
using planner::Group;
using planner::OpKind;
using planner::Stream;

// H100 nodes of 8 on a 2-level fat tree with leaves of 32 nodes (the scale scenario's).
sim::ClusterSpec h100_nodes(int64_t nodes) {
  sim::ClusterSpec c;
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.nvlink_bytes_per_s = 450e9;
  c.nvlink_latency_s = 1e-6;
  c.nics_per_node = 8;
  c.nic_bytes_per_s = 50e9;
  c.nic_latency_s = 2e-6;
  c.nodes_per_leaf = std::min<int64_t>(32, nodes);
  c.hop_latency_s = 0.5e-6;
  return c;
}

void BM_RingFlowsFullMode(benchmark::State& state) {
  const sim::ClusterSpec c = h100_nodes(state.range(0));
  const std::vector<int64_t> nvlink = {0};
  for (auto _ : state) benchmark::DoNotOptimize(sim::ring_flows({c.gpus(), 1, 1}, 1.0, c, sim::FlowMode::kFull, nvlink));
  state.SetItemsProcessed(state.iterations() * c.nodes);
}
BENCHMARK(BM_RingFlowsFullMode)->Arg(128)->Arg(1280)->Arg(2048)->Unit(benchmark::kMillisecond);

void BM_NvlinkRepresentatives(benchmark::State& state) {
  const sim::ClusterSpec c = h100_nodes(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(sim::nvlink_representatives({{c.gpus(), 1, 1}, {1, c.gpus(), c.gpus()}}, c, {}));
  }
}
BENCHMARK(BM_NvlinkRepresentatives)->Arg(128)->Arg(1280)->Unit(benchmark::kMillisecond);

// A step's communication pattern without its compute: `pairs` all-gathers
// on one stream beside as many reduce-scatters on another, 400 MB each (a
// Llama-3-70B block's bf16 parameters and fp32 gradients are 1.7 and 3.4 GB
// gathered), over every GPU: each collective is one network flow per node.
planner::Program collectives(int64_t gpus, int pairs) {
  planner::Program p;
  p.shard_ranks = gpus;
  p.replicate_ranks = 1;
  planner::ProgramWriter w(&p);
  for (int i = 0; i < pairs; ++i) {
    w.collective(OpKind::kAllGather, Stream::kAllGather, Group::kShard, i, 0, "all-gather", 400'000'000, -1, {});
    w.collective(OpKind::kReduceScatter, Stream::kReduceScatter, Group::kShard, i, 0, "reduce-scatter", 400'000'000, -1, {});
  }
  return p;
}

void BM_FullModeCollectives(benchmark::State& state) {
  const sim::ClusterSpec c = h100_nodes(state.range(0));
  const planner::Program program = collectives(c.gpus(), 40);
  const sim::ComputeModel compute = sim::ComputeModel::defaults("h100", 989.4e12, 3.35e12);
  int64_t flows = 0;
  for (auto _ : state) {
    const std::string answer = sim::run_in_child([&] {
      sim::ProgramRunOptions options;
      options.cluster = c;
      options.mode = sim::SimulationMode::kFull;
      const auto start = std::chrono::steady_clock::now();
      const sim::ProgramRun run = sim::run_program(program, compute, options);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return std::to_string(seconds) + " " + std::to_string(run.flows);
    });
    const size_t space = answer.find(' ');
    state.SetIterationTime(std::stod(answer.substr(0, space)));
    flows = std::stoll(answer.substr(space + 1));
  }
  state.counters["flows"] = static_cast<double>(flows);
  state.counters["flows/s"] = benchmark::Counter(static_cast<double>(flows) * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FullModeCollectives)->Arg(128)->Arg(512)->Arg(1280)->Arg(2048)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
