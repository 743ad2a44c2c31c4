#pragma once
// The analytic side of the simulator's model tests (sim_model_test.cpp,
// whatif_model_test.cpp): the documented constants, written as literals with
// their source (docs/SIMULATOR.md), never read from the models under test,
// and a harness that runs a hand-built Program in a child process (SimGrid's
// engine is one per process) and prints each simulated value beside its
// expectation.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "planner/program_writer.hpp"
#include "sim/child_process.hpp"
#include "sim/cluster_health.hpp"
#include "sim/host_model.hpp"
#include "sim/program_run.hpp"

namespace ragged::sim::model_test {

using planner::Group;
using planner::OpKind;
using planner::Stream;

// Relative tolerance where the expectation is exact (floating-point rounding only).
constexpr double kExact = 1e-9;

// --- documented constants (docs/SIMULATOR.md) --------------------------------

// Section 2: link rates are line rate times NCCL's achieved share for large
// messages: 0.80 of H100 NVLink (450 GB/s per GPU per direction), 0.94 of a
// 400 Gb/s NIC (50 GB/s); 8 NICs per node.
constexpr double kNvlink = 450e9 * 0.80;
constexpr double kNodeNetwork = 8 * 50e9 * 0.94;

// Section 5: NCCL's tuner (src/graph/tuning.cc) for rings on Hopper: base
// latency, per NVLink step, per network step (plus the 1 us network overhead,
// x3 for Simple), and the share of Simple's bandwidth the protocol reaches.
struct NcclProtocol {
  const char* name;
  double base_us, nvlink_step_us, network_step_us, bandwidth_share;
};
constexpr NcclProtocol kNcclProtocols[] = {
    {"Simple", 8.4, 3.4, 14.0 + 3 * 1.0, 1.0},
    {"LL128", 14.0, 1.9, 4.0 + 1.0, 0.92},
    {"LL", 6.6, 0.6, 2.7 + 1.0, 0.5},
};

// Section 6, default tables, H100: GEMM rates measured at square shapes
// (TFLOP/s of torch.mm bf16, source [1]), their running maximum (10240^3's
// measured 719.72 becomes 8192^3's 797.51), clamped beyond 10240^3; 4 us
// launch per kernel (assumption [6]).
// Hopper's calibrated sustained clock (docs/SIMULATOR.md section 7) scales
// every tensor-core rate of the table.
constexpr double kH100SustainedClock = 0.89;
constexpr double kH100Gemm1024 = 176.62e12 * kH100SustainedClock;
constexpr double kH100Gemm4096 = 788.72e12 * kH100SustainedClock;
constexpr double kH100Gemm8192 = 797.51e12 * kH100SustainedClock;
constexpr double kH100Gemm10240 = 797.51e12 * kH100SustainedClock;
constexpr double kLaunch = 4e-6;
// Streaming kernels reach 0.75 of the H100's 3.35 TB/s (source [5]).
constexpr double kHbm = 3.35e12 * 0.75;
// The A100 80GB's 2.039 TB/s at the same share (section 6, an assumption).
constexpr double kA100Hbm = 2.039e12 * 0.75;

// Section 6b: the H100 has 132 SMs; NCCL runs a ring with 24 CTAs inside a
// node and 16 across nodes, one SM each. A ring moves HBM traffic of 2x
// (all-gather) or 3x (reduce-scatter) the bytes a GPU sends.
constexpr double kH100Sms = 132;
constexpr double kCtasIntraNode = 24;
constexpr double kCtasInterNode = 16;
// The A100 has 108 SMs and also runs a ring with 24 CTAs inside a node.
constexpr double kA100Sms = 108;
constexpr double kAllGatherHbmPerByte = 2;
constexpr double kReduceScatterHbmPerByte = 3;

// "The CPU issue path": one eager torch op costs the host 2 x 1024^3 FLOPs
// at the measured 1024^3 GEMM rate (12.16 us; a host cost, not scaled by the GPU's clock).
constexpr double kFrameworkOp = 2.0 * 1024 * 1024 * 1024 / 176.62e12;

// Section 8, allocator pressure: each driver call of a release of the cache
// (cudaFree of a cached segment, cudaMalloc of the new one), an assumption.
constexpr double kDriverCall = 50e-6;

struct Expected {
  double seconds;
  const char* protocol;
};

// A ring collective whose flows take `bandwidth_s` at Simple's rates, over
// `steps` ring steps of which `network_steps` cross nodes, under the protocol
// NCCL picks: the one with the smallest latency + bandwidth time.
inline Expected nccl_ring(double bandwidth_s, int64_t steps, int64_t network_steps) {
  Expected best{INFINITY, ""};
  for (const NcclProtocol& p : kNcclProtocols) {
    const double latency =
        (p.base_us + static_cast<double>(steps - network_steps) * p.nvlink_step_us +
         static_cast<double>(network_steps) * p.network_step_us) * 1e-6;
    const double t = latency + bandwidth_s / p.bandwidth_share;
    if (t < best.seconds) best = {t, p.name};
  }
  return best;
}

// A compute-bound GEMM at a table point (or beyond the table's last point).
inline double gemm_seconds(double m, double n, double k, double rate) { return 2 * m * n * k / rate + kLaunch; }
// The share of a K loop past its pipeline fill (256 elements of k, docs/SIMULATOR.md section 6).
inline double k_loop(double k) { return k / (k + 256.0); }

// --- harness -----------------------------------------------------------------

// One n x n x n GEMM as a compute op's work.
inline planner::ComputeWork cube_gemm(int64_t n) {
  planner::ComputeWork work;
  work.gemms.push_back({n, n, n, 1});
  return work;
}

inline ClusterSpec h100_cluster(int64_t nodes, int64_t per_leaf = 4, double oversubscription = 1) {
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

inline ComputeModel h100() { return ComputeModel::defaults("h100", 989.4e12, 3.35e12); }
inline ComputeModel a100() { return ComputeModel::defaults("a100-80g", 312e12, 2.039e12); }

// Section 6, A100: the H100 curve scaled so that its best square (8192^3,
// 797.51 TFLOP/s) becomes the A100's best measured square (264.53), at the
// A100's HPL sustained clock (section 7: 1305 of 1410 MHz); beyond 8192^3 the
// running maximum holds 8192^3's rate.
constexpr double kA100Gemm10240 = 797.51e12 * (264.53 / 797.51) * (1305.0 / 1410.0);

// Runs `program` in a child and returns each op's duration, start and end,
// and the step time. `host`: the CPU issue path's costs (none by default).
inline nlohmann::json run(const planner::Program& program, const ClusterSpec& cluster, SimulationMode mode,
                          HostCosts host = HostCosts::none(), const std::vector<SimulatedRank>& ranks = {SimulatedRank{}},
                          const ClusterHealth& health = {}, bool share_gpu = true,
                          const ComputeModel& compute = h100()) {
  std::string out = run_in_child([&] {
    ProgramRunOptions options;
    options.cluster = cluster;
    options.mode = mode;
    options.host = host;
    options.ranks = ranks;
    options.health = health;
    options.share_gpu = share_gpu;
    ProgramRun r = run_program(program, compute, options);
    nlohmann::json j;
    j["step"] = r.step_seconds;
    j["exposed"] = r.exposed_seconds;
    j["nodes"] = r.simulated_nodes;
    for (const RankRun& rank : r.ranks) j["rank_steps"].push_back(rank.step_seconds);
    j["waited"] = analyse_stragglers(r.ranks, r.collectives, health).ranks.front().waited_seconds;
    for (const CollectiveRecord& c : r.collectives) {
      j["collectives"].push_back({{"start", c.start}, {"end", c.end}, {"bottleneck_node", c.bottleneck.node},
                                  {"bottleneck_local", c.bottleneck.local}});
    }
    for (const auto& t : r.timings) {
      j["ops"].push_back(t.end - t.start);
      j["starts"].push_back(t.start);
      j["ends"].push_back(t.end);
    }
    return j.dump();
  });
  return nlohmann::json::parse(out);
}

inline planner::Program collective_program(OpKind kind, Group group, int64_t bytes, int64_t shard, int64_t replicas) {
  planner::Program p;
  p.shard_ranks = shard;
  p.replicate_ranks = replicas;
  planner::ProgramWriter w(&p);
  Stream stream = kind == OpKind::kAllReduce ? Stream::kAllReduce : Stream::kAllGather;
  w.collective(kind, stream, group, 0, 0, "collective", bytes, -1, {});
  return p;
}

inline double relative(double value, double reference) { return (value - reference) / reference; }

// One line per comparison: both values to ten significant digits and the
// relative difference of `simulated` from `expected`.
inline void report(const std::string& what, const char* expected_as, double expected, const char* simulated_as,
            double simulated) {
  std::printf("%-50s %-9s %12.9f ms  %-9s %12.9f ms  (%+.1e)\n", what.c_str(), expected_as, expected * 1e3,
              simulated_as, simulated * 1e3, relative(simulated, expected));
  std::fflush(stdout);
}
inline void report(const std::string& what, double analytic, double simulated) {
  report(what, "analytic", analytic, "simulated", simulated);
}

inline void expect_relative(double value, double reference, double tolerance) {
  EXPECT_NEAR(value, reference, tolerance * std::abs(reference)) << "relative difference " << relative(value, reference);
}

}  // namespace ragged::sim::model_test
