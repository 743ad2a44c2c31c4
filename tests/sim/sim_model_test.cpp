// Model tests: the simulated result beside the analytic expectation, for the
// cases where one exists (SimGrid examples' style). Each simulation runs in a
// child process: SimGrid's engine is one per process.

#include <cstdio>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "planner/program_writer.hpp"
#include "sim/child_process.hpp"
#include "sim/nccl_latency.hpp"
#include "sim/program_run.hpp"

namespace ragged::sim {
namespace {

using planner::Group;
using planner::OpKind;
using planner::Stream;

ClusterSpec h100_cluster(int64_t nodes, int64_t per_leaf = 4, double oversubscription = 1) {
  ClusterSpec c;
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.nvlink_bytes_per_s = 450e9;
  c.nvlink_latency_s = 0;
  c.nics_per_node = 8;
  c.nic_bytes_per_s = 50e9;
  c.nic_latency_s = 0;
  c.nodes_per_leaf = std::min(per_leaf, nodes);
  c.oversubscription = oversubscription;
  c.hop_latency_s = 0;
  return c;
}

ComputeModel h100() { return ComputeModel::defaults("h100", 989.4e12, 3.35e12); }

// Runs `program` in a child and returns each op's duration and the step time.
nlohmann::json run(const planner::Program& program, const ClusterSpec& cluster, SimulationMode mode) {
  std::string out = run_in_child([&] {
    ProgramRunOptions options;
    options.cluster = cluster;
    options.mode = mode;
    ProgramRun r = run_program(program, h100(), options);
    nlohmann::json j;
    j["step"] = r.step_seconds;
    j["exposed"] = r.exposed_seconds;
    for (const auto& t : r.timings) j["ops"].push_back(t.end - t.start);
    return j.dump();
  });
  return nlohmann::json::parse(out);
}

planner::Program collective_program(OpKind kind, Group group, int64_t bytes, int64_t shard, int64_t replicas) {
  planner::Program p;
  p.shard_ranks = shard;
  p.replicate_ranks = replicas;
  planner::ProgramWriter w(&p);
  Stream stream = kind == OpKind::kAllReduce ? Stream::kAllReduce : Stream::kAllGather;
  w.collective(kind, stream, group, 0, 0, "collective", bytes, -1, {});
  return p;
}

void report(const char* what, double analytic, double simulated) {
  std::printf("%-48s analytic %9.4f ms   simulated %9.4f ms   (%+.2f%%)\n", what, analytic * 1e3, simulated * 1e3,
              100 * (simulated - analytic) / analytic);
}

TEST(SimModel, AllGatherOnOneNode) {
  const double S = 1e9;
  ClusterSpec c = h100_cluster(1);
  double simulated = run(collective_program(OpKind::kAllGather, Group::kShard, static_cast<int64_t>(S), 8, 1), c,
                         SimulationMode::kFull)["step"];
  double analytic = (7.0 / 8.0) * S / (450e9 * 0.80) + ring_latency_seconds(Protocol::kSimple, {8, 1, false});
  report("all-gather 1 GB, 8 GPUs, one node", analytic, simulated);
  EXPECT_NEAR(simulated, analytic, 0.005 * analytic);
}

TEST(SimModel, AllGatherAcrossNodesIsNicBound) {
  const double S = 1e9;
  ClusterSpec c = h100_cluster(4);
  double simulated = run(collective_program(OpKind::kAllGather, Group::kShard, static_cast<int64_t>(S), 32, 1), c,
                         SimulationMode::kFull)["step"];
  const double per_hop = S * 31.0 / 32.0;
  const double nvlink = per_hop * 7.0 / 8.0 / (450e9 * 0.80), network = per_hop / (8 * 50e9 * 0.94);
  double analytic = std::max(nvlink, network) + ring_latency_seconds(Protocol::kSimple, {32, 4, false});
  report("all-gather 1 GB, 32 GPUs on 4 nodes", analytic, simulated);
  EXPECT_NEAR(simulated, analytic, 0.005 * analytic);
}

TEST(SimModel, OversubscribedUplinksSlowCrossLeafAllReduce) {
  // 8 nodes in leaves of 4, shard groups of 32 GPUs (one leaf), 2 replicas:
  // every HSDP all-reduce hop crosses leaves. Halving the uplinks halves the
  // rate of those flows.
  const double S = 256e6;
  double non_blocking = run(collective_program(OpKind::kAllReduce, Group::kReplicate, static_cast<int64_t>(S), 32, 2),
                            h100_cluster(8, 4, 1), SimulationMode::kFull)["step"];
  double oversubscribed = run(collective_program(OpKind::kAllReduce, Group::kReplicate, static_cast<int64_t>(S), 32, 2),
                              h100_cluster(8, 4, 2), SimulationMode::kFull)["step"];
  // 8 rings per node, each hop 2 (n-1)/n S = S bytes.
  const double node_bytes = 8 * S;
  const double latency = ring_latency_seconds(Protocol::kSimple, {2, 2, true});
  const double analytic_nb = node_bytes / (8 * 50e9 * 0.94) + latency;
  const double analytic_os = node_bytes / (8 * 50e9 * 0.94 / 2) + latency;
  report("HSDP all-reduce across leaves, non-blocking", analytic_nb, non_blocking);
  report("HSDP all-reduce across leaves, 2:1 oversubscribed", analytic_os, oversubscribed);
  EXPECT_NEAR(non_blocking, analytic_nb, 0.01 * analytic_nb);
  EXPECT_NEAR(oversubscribed, analytic_os, 0.01 * analytic_os);
}

TEST(SimModel, ComputeOnlyStepIsTheSumOfItsOps) {
  planner::Program p;
  planner::ProgramWriter w(&p);
  planner::ComputeWork work;
  work.gemms.push_back({8192, 8192, 8192, 1});
  uint32_t a = w.compute(OpKind::kComputeFwd, 0, 0, "a", work, {});
  w.compute(OpKind::kComputeBwd, 0, 0, "b", work, {a});
  double simulated = run(p, h100_cluster(1), SimulationMode::kFull)["step"];
  const ComputeModel model = h100();
  double analytic = model.seconds(p.ops[0]) + model.seconds(p.ops[1]);
  report("compute only: two 8192^3 GEMMs", analytic, simulated);
  EXPECT_NEAR(simulated, analytic, 1e-9);
}

TEST(SimModel, PerfectlyOverlappedStepTakesTheLonger) {
  planner::Program p;
  p.shard_ranks = 8;
  planner::ProgramWriter w(&p);
  planner::ComputeWork work;
  work.gemms.push_back({16384, 16384, 8192, 1});
  w.compute(OpKind::kComputeFwd, 0, 0, "compute", work, {});
  w.collective(OpKind::kAllGather, Stream::kAllGather, Group::kShard, 1, 0, "all-gather", 500'000'000, -1, {});
  nlohmann::json r = run(p, h100_cluster(1), SimulationMode::kFull);
  const double compute = r["ops"][0], comm = r["ops"][1];
  report("overlap: max(compute, all-gather)", std::max(compute, comm), r["step"]);
  EXPECT_NEAR(r["step"].get<double>(), std::max(compute, comm), 1e-9);
  EXPECT_DOUBLE_EQ(r["exposed"].get<double>(), 0.0);
}

TEST(SimModel, DependencyExposesCommunication) {
  planner::Program p;
  p.shard_ranks = 8;
  planner::ProgramWriter w(&p);
  uint32_t ag = w.collective(OpKind::kAllGather, Stream::kAllGather, Group::kShard, 0, 0, "all-gather", 500'000'000, -1, {});
  planner::ComputeWork work;
  work.gemms.push_back({4096, 4096, 4096, 1});
  w.compute(OpKind::kComputeFwd, 0, 0, "compute", work, {ag});
  nlohmann::json r = run(p, h100_cluster(1), SimulationMode::kFull);
  EXPECT_NEAR(r["exposed"].get<double>(), r["ops"][0].get<double>(), 1e-9);
  EXPECT_NEAR(r["step"].get<double>(), r["ops"][0].get<double>() + r["ops"][1].get<double>(), 1e-9);
}

TEST(SimModel, SymmetricModeAgreesWithFullMode) {
  // 16 nodes in leaves of 4: symmetric simulates 8.
  for (auto [shard, replicas] : {std::pair<int64_t, int64_t>{128, 1}, {32, 4}}) {
    auto p = collective_program(OpKind::kAllGather, Group::kShard, 1'000'000'000, shard, replicas);
    double full = run(p, h100_cluster(16), SimulationMode::kFull)["step"];
    double symmetric = run(p, h100_cluster(16), SimulationMode::kSymmetric)["step"];
    report(shard == 128 ? "all-gather over 128 GPUs: symmetric vs full" : "all-gather, 4 groups of 32: symmetric vs full",
           full, symmetric);
    EXPECT_NEAR(symmetric, full, 0.02 * full);
  }
}

TEST(SimModel, CollapsedRingAgreesWithStepLevelRing) {
  auto p = collective_program(OpKind::kAllGather, Group::kShard, 1'000'000'000, 16, 1);
  double collapsed = run(p, h100_cluster(2), SimulationMode::kFull)["step"];
  double steps = run(p, h100_cluster(2), SimulationMode::kSteps)["step"];
  report("all-gather over 16 GPUs: collapsed vs every ring step", steps, collapsed);
  EXPECT_NEAR(collapsed, steps, 0.02 * steps);
}

}  // namespace
}  // namespace ragged::sim
