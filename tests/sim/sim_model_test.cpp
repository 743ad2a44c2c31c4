// Model tests: the simulated result beside the analytic expectation, for the
// cases where one exists (SimGrid examples' style). Each simulation runs in a
// child process: SimGrid's engine is one per process.
//
// The expectations are computed here from the documented constants, written
// as literals with their source (docs/SIMULATOR.md), never by calling the
// models under test: a wrong constant or formula in sim/ fails these tests.
// Where the math is exact the tolerance is 1e-9 relative; every line printed
// carries both values to ten significant digits and their relative difference
// (`build/tests/sim/test_sim --gtest_filter='SimModel.*'`).

#include "sim_model_harness.hpp"

namespace ragged::sim {
namespace {

using namespace model_test;

// --- against the analytic expectation ---------------------------------------

TEST(SimModel, AllGatherOnOneNode) {
  // A ring of 8 GPUs over NVLink: each sends 7/8 of the buffer; 7 NVLink steps.
  const double S = 1e9;
  double simulated = run(collective_program(OpKind::kAllGather, Group::kShard, static_cast<int64_t>(S), 8, 1),
                         h100_cluster(1), SimulationMode::kFull)["step"];
  const Expected analytic = nccl_ring((7.0 / 8.0) * S / kNvlink, 7, 0);
  report(std::string("all-gather 1 GB, 8 GPUs, one node (") + analytic.protocol + ")", analytic.seconds, simulated);
  EXPECT_STREQ(analytic.protocol, "Simple");
  expect_relative(simulated, analytic.seconds, kExact);
}

TEST(SimModel, AllGatherAcrossNodesIsNicBound) {
  // 32 GPUs on 4 nodes: every hop moves 31/32 of the buffer, each node's
  // GPUs pass 7/8 of it over NVLink and the node sends it once over its NICs.
  const double S = 1e9;
  double simulated = run(collective_program(OpKind::kAllGather, Group::kShard, static_cast<int64_t>(S), 32, 1),
                         h100_cluster(4), SimulationMode::kFull)["step"];
  const double per_hop = S * 31.0 / 32.0;
  const double nvlink = per_hop * 7.0 / 8.0 / kNvlink, network = per_hop / kNodeNetwork;
  ASSERT_GT(network, nvlink);
  const Expected analytic = nccl_ring(network, 31, 3);
  report(std::string("all-gather 1 GB, 32 GPUs on 4 nodes (") + analytic.protocol + ")", analytic.seconds, simulated);
  EXPECT_STREQ(analytic.protocol, "Simple");
  expect_relative(simulated, analytic.seconds, kExact);
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
  // 8 rings of 2 members per node, each hop 2 (n-1)/n S = S bytes; all-reduce: 2 steps, both across nodes.
  const double node_bytes = 8 * S;
  const Expected analytic_nb = nccl_ring(node_bytes / kNodeNetwork, 2, 2);
  const Expected analytic_os = nccl_ring(node_bytes / (kNodeNetwork / 2), 2, 2);
  report("HSDP all-reduce across leaves, non-blocking", analytic_nb.seconds, non_blocking);
  report("HSDP all-reduce across leaves, 2:1 oversubscribed", analytic_os.seconds, oversubscribed);
  EXPECT_STREQ(analytic_nb.protocol, "Simple");
  EXPECT_STREQ(analytic_os.protocol, "Simple");
  expect_relative(non_blocking, analytic_nb.seconds, kExact);
  expect_relative(oversubscribed, analytic_os.seconds, kExact);
}

TEST(SimModel, LatencyBoundAllGatherTakesLL) {
  // 64 KB over 8 GPUs: the latency terms dominate and NCCL's tuner picks LL
  // (half the bandwidth, 0.6 us NVLink steps).
  const double S = 65536;
  double simulated = run(collective_program(OpKind::kAllGather, Group::kShard, static_cast<int64_t>(S), 8, 1),
                         h100_cluster(1), SimulationMode::kFull)["step"];
  const Expected analytic = nccl_ring((7.0 / 8.0) * S / kNvlink, 7, 0);
  report(std::string("all-gather 64 KB, 8 GPUs, one node (") + analytic.protocol + ")", analytic.seconds, simulated);
  EXPECT_STREQ(analytic.protocol, "LL");
  expect_relative(simulated, analytic.seconds, kExact);
}

TEST(SimModel, ComputeOnlyStepIsTheSumOfItsOps) {
  planner::Program p;
  planner::ProgramWriter w(&p);
  planner::ComputeWork work;
  work.gemms.push_back({8192, 8192, 8192, 1});
  uint32_t a = w.compute(OpKind::kComputeFwd, 0, 0, "a", work, {});
  w.compute(OpKind::kComputeBwd, 0, 0, "b", work, {a});
  double simulated = run(p, h100_cluster(1), SimulationMode::kFull)["step"];
  // 8192^3 is a table point, compute-bound (1.1e12 FLOPs at 797.51 TFLOP/s
  // against 403 MB at 0.75 of 3.35 TB/s).
  double analytic = 2 * gemm_seconds(8192, 8192, 8192, kH100Gemm8192);
  report("compute only: two 8192^3 GEMMs", analytic, simulated);
  expect_relative(simulated, analytic, kExact);
}

// One GEMM of 16384 x 16384 x 8192 on the compute stream and a 500 MB
// all-gather on its own stream, both issued at the start.
planner::Program gemm_beside_all_gather(int64_t shard_ranks) {
  planner::Program p;
  p.shard_ranks = shard_ranks;
  planner::ProgramWriter w(&p);
  planner::ComputeWork work;
  work.gemms.push_back({16384, 16384, 8192, 1});
  w.compute(OpKind::kComputeFwd, 0, 0, "compute", work, {});
  w.collective(OpKind::kAllGather, Stream::kAllGather, Group::kShard, 1, 0, "all-gather", 500'000'000, -1, {});
  return p;
}

TEST(SimModel, PersistentGemmBesideACollectiveRunsInTwoWaves) {
  // Hopper: the GEMM launches one CTA per SM (132), each with 1/132 of its
  // work. The all-gather took 24 SMs at t = 0, so after its launch the GEMM
  // starts 108 CTAs; the other 24 start when the all-gather ends and run a
  // whole CTA's work (the GEMM's time alone) from there. The all-gather
  // takes nothing else from the GEMM.
  nlohmann::json r = run(gemm_beside_all_gather(8), h100_cluster(1), SimulationMode::kFull);
  // Beyond the table's last point (10240^3): its rate, taken from 10240 to 8192 deep.
  const double alone = gemm_seconds(16384, 16384, 8192, kH100Gemm10240 * k_loop(8192) / k_loop(10240)) - kLaunch;
  const Expected comm = nccl_ring((7.0 / 8.0) * 500e6 / kNvlink, 7, 0);
  const double second_wave = std::min(comm.seconds, kLaunch + alone);  // 24 SMs free up
  const double compute = second_wave + alone;
  report("persistent: the all-gather, 500 MB on 8 GPUs", comm.seconds, r["ops"][1].get<double>());
  report("persistent: the GEMM beside it (24 CTAs late)", compute, r["ops"][0].get<double>());
  report("persistent: step = the GEMM", compute, r["step"].get<double>());
  std::printf("%-50s %.3f x its time alone\n", "persistent: the GEMM", (compute - kLaunch) / alone);
  expect_relative(r["ops"][1].get<double>(), comm.seconds, kExact);
  expect_relative(r["ops"][0].get<double>(), compute, kExact);
  expect_relative(r["step"].get<double>(), compute, kExact);
  EXPECT_DOUBLE_EQ(r["exposed"].get<double>(), 0.0);
}

TEST(SimModel, PersistentGemmBesideALongCollectiveTakesTwiceItsTime) {
  // A GEMM shorter than the all-gather beside it: its late 24 CTAs start
  // when its first 108 finish, so it takes twice its time alone.
  planner::Program p;
  p.shard_ranks = 8;
  planner::ProgramWriter w(&p);
  w.compute(OpKind::kComputeFwd, 0, 0, "compute", cube_gemm(4096), {});
  w.collective(OpKind::kAllGather, Stream::kAllGather, Group::kShard, 1, 0, "all-gather", 2'000'000'000, -1, {});
  nlohmann::json r = run(p, h100_cluster(1), SimulationMode::kFull);
  const double alone = gemm_seconds(4096, 4096, 4096, kH100Gemm4096) - kLaunch;
  const Expected comm = nccl_ring((7.0 / 8.0) * 2e9 / kNvlink, 7, 0);
  ASSERT_GT(comm.seconds, kLaunch + 2 * alone);  // the all-gather outlasts both waves
  report("persistent: a 4096^3 GEMM beside a 2 GB all-gather", kLaunch + 2 * alone, r["ops"][0].get<double>());
  report("persistent: the all-gather", comm.seconds, r["ops"][1].get<double>());
  expect_relative(r["ops"][0].get<double>(), kLaunch + 2 * alone, kExact);
  expect_relative(r["ops"][1].get<double>(), comm.seconds, kExact);
}

// The compute stream runs `gemms` GEMMs of 16384 x 16384 x 8192 in a row;
// the all-gather stream a 100 MB cast, then a 500 MB all-gather.
planner::Program all_gather_after_a_cast_beside_gemms(int gemms) {
  planner::Program p;
  p.shard_ranks = 8;
  planner::ProgramWriter w(&p);
  planner::ComputeWork work;
  work.gemms.push_back({16384, 16384, 8192, 1});
  for (int g = 0; g < gemms; ++g) w.compute(OpKind::kComputeFwd, 0, 0, "compute", work, {});
  w.traffic(OpKind::kCast, Stream::kAllGather, 1, 0, "cast", 100'000'000, {});
  w.collective(OpKind::kAllGather, Stream::kAllGather, Group::kShard, 1, 0, "all-gather", 500'000'000, -1, {});
  return p;
}

TEST(SimModel, CollectiveIssuedDuringAPersistentGemmWaitsForItsSms) {
  // The GEMM holds every SM from its launch; an all-gather issued after a
  // 100 MB cast on its own stream finds no SM (NCCL's CTAs never share
  // one) and starts when the GEMM ends; the GEMM runs at its rate alone.
  nlohmann::json r = run(all_gather_after_a_cast_beside_gemms(1), h100_cluster(1), SimulationMode::kFull);
  const double gemm = gemm_seconds(16384, 16384, 8192, kH100Gemm10240 * k_loop(8192) / k_loop(10240));
  const double cast = kLaunch + 1e8 / kHbm;
  const Expected comm = nccl_ring((7.0 / 8.0) * 500e6 / kNvlink, 7, 0);
  ASSERT_LT(cast, gemm);
  report("persistent: the GEMM, alone on its SMs", gemm, r["ops"][0].get<double>());
  report("persistent: the all-gather starts at the GEMM's end", gemm, r["starts"][2].get<double>() +
                                                                          r["ops"][2].get<double>() - comm.seconds);
  report("persistent: step = GEMM + all-gather", gemm + comm.seconds, r["step"].get<double>());
  expect_relative(r["ops"][0].get<double>(), gemm, kExact);
  expect_relative(r["step"].get<double>(), gemm + comm.seconds, kExact);
}

TEST(SimModel, OverlappedGemmLosesNcclsSmsOnAnA100) {
  // The A100's GEMMs launch a CTA per tile, in many waves: after its launch
  // the GEMM runs on 108 - 24 SMs while the all-gather runs (84/108 of its
  // rate), then on all of them.
  nlohmann::json r =
      run(gemm_beside_all_gather(8), h100_cluster(1), SimulationMode::kFull, HostCosts::none(), {SimulatedRank{}}, {},
          true, a100());
  const double alone = gemm_seconds(16384, 16384, 8192, kA100Gemm10240 * k_loop(8192) / k_loop(10240)) - kLaunch;
  const Expected comm = nccl_ring((7.0 / 8.0) * 500e6 / kNvlink, 7, 0);
  const double shared = (kA100Sms - kCtasIntraNode) / kA100Sms;
  const double overlapped = comm.seconds - kLaunch;  // the GEMM's work beside the all-gather
  const double compute = kLaunch + overlapped + (alone - overlapped * shared);
  report("SMs (A100): the GEMM beside the all-gather (84 of 108)", compute, r["ops"][0].get<double>());
  expect_relative(r["ops"][0].get<double>(), compute, kExact);
}

TEST(SimModel, CollectiveIssuedDuringAWaveKernelWaitsForItsDispatchOnAnA100) {
  // The block scheduler dispatches CTAs in the order kernels became ready:
  // the all-gather, issued after the cast while the GEMM (many waves of
  // CTAs) is still dispatching, starts when the GEMM ends; the GEMM runs at
  // its rate alone.
  nlohmann::json r = run(all_gather_after_a_cast_beside_gemms(1), h100_cluster(1), SimulationMode::kFull,
                         HostCosts::none(), {SimulatedRank{}}, {}, true, a100());
  const double gemm = gemm_seconds(16384, 16384, 8192, kA100Gemm10240 * k_loop(8192) / k_loop(10240));
  const double cast = kLaunch + 1e8 / kA100Hbm;
  const Expected comm = nccl_ring((7.0 / 8.0) * 500e6 / kNvlink, 7, 0);
  ASSERT_LT(cast, gemm);
  report("dispatch order (A100): the GEMM, alone on its SMs", gemm, r["ops"][0].get<double>());
  report("dispatch order (A100): the all-gather starts at the GEMM's end", gemm,
         r["starts"][2].get<double>() + r["ops"][2].get<double>() - comm.seconds);
  report("dispatch order (A100): step = GEMM + all-gather", gemm + comm.seconds, r["step"].get<double>());
  expect_relative(r["ops"][0].get<double>(), gemm, kExact);
  expect_relative(r["step"].get<double>(), gemm + comm.seconds, kExact);
}

TEST(SimModel, AWaitingCollectiveGoesBeforeTheNextKernelOnAnA100) {
  // The same with a second GEMM after the first: the all-gather waits for
  // the first only, then holds 24 SMs while the second runs on 84 of 108.
  nlohmann::json r = run(all_gather_after_a_cast_beside_gemms(2), h100_cluster(1), SimulationMode::kFull,
                         HostCosts::none(), {SimulatedRank{}}, {}, true, a100());
  const double gemm = gemm_seconds(16384, 16384, 8192, kA100Gemm10240 * k_loop(8192) / k_loop(10240));
  const double alone = gemm - kLaunch;
  const Expected comm = nccl_ring((7.0 / 8.0) * 500e6 / kNvlink, 7, 0);
  const double shared = (kA100Sms - kCtasIntraNode) / kA100Sms;
  const double overlapped = comm.seconds - kLaunch;  // the second GEMM's time beside the all-gather
  const double second = kLaunch + overlapped + (alone - overlapped * shared);
  report("dispatch order (A100): the all-gather starts at the first GEMM's end", gemm,
         r["starts"][3].get<double>() + r["ops"][3].get<double>() - comm.seconds);
  report("dispatch order (A100): the second GEMM beside it (84 of 108 SMs)", second, r["ops"][1].get<double>());
  expect_relative(r["starts"][3].get<double>() + r["ops"][3].get<double>() - comm.seconds, gemm, kExact);
  expect_relative(r["ops"][1].get<double>(), second, kExact);
}

TEST(SimModel, OverlappedGemmLosesFewerSmsToAnInterNodeRingOnAnA100) {
  // The same across 4 nodes: the ring runs 16 CTAs.
  nlohmann::json r =
      run(gemm_beside_all_gather(32), h100_cluster(4), SimulationMode::kFull, HostCosts::none(), {SimulatedRank{}}, {},
          true, a100());
  const double alone = gemm_seconds(16384, 16384, 8192, kA100Gemm10240 * k_loop(8192) / k_loop(10240)) - kLaunch;
  const Expected comm = nccl_ring(500e6 * 31.0 / 32.0 / kNodeNetwork, 31, 3);
  const double shared = (kA100Sms - kCtasInterNode) / kA100Sms;
  const double overlapped = comm.seconds - kLaunch;
  const double compute = kLaunch + overlapped + (alone - overlapped * shared);
  report("SMs (A100): the all-gather, 500 MB on 32 GPUs", comm.seconds, r["ops"][1].get<double>());
  report("SMs (A100): the GEMM beside it (92 of 108 SMs)", compute, r["ops"][0].get<double>());
  expect_relative(r["ops"][1].get<double>(), comm.seconds, kExact);
  expect_relative(r["ops"][0].get<double>(), compute, kExact);
}

TEST(SimModel, MemoryBoundKernelAndCollectiveShareHbm) {
  // A 5 GB copy beside a 500 MB all-gather (then reduce-scatter) on 8 GPUs.
  // The copy demands the whole achievable HBM bandwidth B; the collective k
  // x its 360 GB/s on NVLink while its bytes move (k = 2 for an all-gather,
  // 3 for a reduce-scatter). Together they demand more than B, so both run
  // at s = B / (B + k x 360 GB/s) of their rates: the copy streams at s B,
  // the ring's links carry s x 360 GB/s. Once the ring's bytes have moved
  // (its latency follows, with no traffic) the copy runs alone.
  struct Case {
    const char* what;
    OpKind kind;
    Stream stream;
    double hbm_per_byte;
  };
  for (const Case& c : {Case{"all-gather", OpKind::kAllGather, Stream::kAllGather, kAllGatherHbmPerByte},
                        Case{"reduce-scatter", OpKind::kReduceScatter, Stream::kReduceScatter, kReduceScatterHbmPerByte}}) {
    planner::Program p;
    p.shard_ranks = 8;
    planner::ProgramWriter w(&p);
    const double copy_bytes = 5e9;
    w.traffic(OpKind::kCopyIn, Stream::kCompute, 0, 0, "copy", static_cast<int64_t>(copy_bytes), {});
    w.collective(c.kind, c.stream, Group::kShard, 1, 0, c.what, 500'000'000, -1, {});
    nlohmann::json r = run(p, h100_cluster(1), SimulationMode::kFull);
    const double per_hop = (7.0 / 8.0) * 500e6;
    const double s = kHbm / (kHbm + c.hbm_per_byte * kNvlink);
    // The ring's bytes: alone during the copy's launch, then at s.
    const double moved = kLaunch * kNvlink;
    const double bandwidth = kLaunch + (per_hop - moved) / (s * kNvlink);
    const Expected comm = nccl_ring(bandwidth, 7, 0);  // the protocol's latency on the measured bandwidth time
    // The copy: at s until the ring's bytes have moved, then alone.
    const double copy_alone = copy_bytes / kHbm;
    const double copied = s * (bandwidth - kLaunch);
    const double copy = kLaunch + (bandwidth - kLaunch) + (copy_alone - copied);
    std::printf("%-50s s = %.9f (the copy alone: %.9f ms)\n",
                (std::string("HBM: B / (B + ") + (c.hbm_per_byte == 2 ? "2" : "3") + " x 360 GB/s)").c_str(), s,
                (copy_alone + kLaunch) * 1e3);
    report(std::string("HBM: the ") + c.what + " beside a 5 GB copy", comm.seconds, r["ops"][1].get<double>());
    report(std::string("HBM: the copy beside the ") + c.what, copy, r["ops"][0].get<double>());
    EXPECT_STREQ(comm.protocol, "Simple");
    expect_relative(r["ops"][1].get<double>(), comm.seconds, kExact);
    expect_relative(r["ops"][0].get<double>(), copy, kExact);
  }
}

TEST(SimModel, MemoryBoundKernelsShareHbmEvenly) {
  // Two copies on two streams at once each get half of HBM.
  planner::Program p;
  planner::ProgramWriter w(&p);
  w.traffic(OpKind::kCopyIn, Stream::kCompute, 0, 0, "copy a", 2'000'000'000, {});
  w.traffic(OpKind::kCast, Stream::kAllGather, 0, 0, "copy b", 1'000'000'000, {});
  nlohmann::json r = run(p, h100_cluster(1), SimulationMode::kFull);
  const double b = kLaunch + 2 * 1e9 / kHbm;           // both at half until b is done
  const double a = b + (2e9 - 1e9) / kHbm;             // then a alone
  report("HBM: two copies, the shorter", b, r["ends"][1].get<double>());
  report("HBM: two copies, the longer", a, r["ends"][0].get<double>());
  expect_relative(r["ends"][1].get<double>(), b, kExact);
  expect_relative(r["ends"][0].get<double>(), a, kExact);
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
  const Expected comm = nccl_ring((7.0 / 8.0) * 500e6 / kNvlink, 7, 0);
  const double compute = gemm_seconds(4096, 4096, 4096, kH100Gemm4096);
  report("dependency: exposed = the all-gather", comm.seconds, r["exposed"].get<double>());
  report("dependency: step = all-gather + compute", comm.seconds + compute, r["step"].get<double>());
  expect_relative(r["exposed"].get<double>(), comm.seconds, kExact);
  expect_relative(r["step"].get<double>(), comm.seconds + compute, kExact);
}

// 80 GiB of device memory. The compute stream frees a 40 GiB buffer (it
// stays cached), the all-gather stream allocates 10 GiB and gathers 500 MB
// into it; then the compute stream asks for 50 GiB: no cached block fits
// and 40 + 10 + 50 > 80, so the allocator releases the cached 40 GiB
// segment and retries. cudaFree waits for every kernel on the device: the
// allocation ends when the all-gather (issued before it) has, plus one
// cudaFree (40 GiB) and one cudaMalloc (50 GiB); the GEMM after it starts there.
constexpr int64_t kReleaseGiB = int64_t{1} << 30;

nlohmann::json run_release(const DriverCallCosts& calls) {
  planner::Program p;
  p.shard_ranks = 8;
  planner::ProgramWriter w(&p);
  const int a = w.buffer("a", planner::BufferKind::kActivations, 0, 40 * kReleaseGiB);
  const int b = w.buffer("b", planner::BufferKind::kUnshardedParams, 0, 10 * kReleaseGiB);
  const int c = w.buffer("c", planner::BufferKind::kActivations, 0, 50 * kReleaseGiB);
  w.free(a, Stream::kCompute, {w.alloc(a, Stream::kCompute, {})});
  const uint32_t gathered = w.alloc(b, Stream::kAllGather, {});
  w.collective(OpKind::kAllGather, Stream::kAllGather, Group::kShard, 0, 0, "all-gather", 500'000'000, b, {gathered});
  const uint32_t retried = w.alloc(c, Stream::kCompute, {});
  planner::ComputeWork work;
  work.gemms.push_back({8192, 8192, 8192, 1});
  w.compute(OpKind::kComputeFwd, 0, 0, "gemm", work, {retried});
  return nlohmann::json::parse(run_in_child([&] {
    ProgramRunOptions options;
    options.cluster = h100_cluster(1);
    options.capacity = 80 * kReleaseGiB;
    options.free_policy.driver_calls = calls;
    ProgramRun run = run_program(p, h100(), options);
    nlohmann::json j;
    j["step"] = run.step_seconds;
    j["flushes"] = run.allocator_flushes;
    j["flush_s"] = run.allocator_flush_seconds;
    j["oom"] = run.out_of_memory;
    j["reserved"] = run.peak_reserved;
    return j.dump();
  }));
}

void expect_release(const nlohmann::json& r, double driver, const std::string& what) {
  const Expected gather = nccl_ring((7.0 / 8.0) * 500e6 / kNvlink, 7, 0);
  const double flush = gather.seconds + driver;
  report("allocator release: device sync + cudaFree + cudaMalloc" + what, flush, r["flush_s"].get<double>());
  report("allocator release: step = release + GEMM" + what, flush + gemm_seconds(8192, 8192, 8192, kH100Gemm8192),
         r["step"].get<double>());
  EXPECT_EQ(r["flushes"].get<int64_t>(), 1);
  EXPECT_FALSE(r["oom"].get<bool>());
  EXPECT_EQ(r["reserved"].get<int64_t>(), 60 * kReleaseGiB);  // never above capacity: a slowdown, not an OOM
  expect_relative(r["flush_s"].get<double>(), flush, kExact);
  expect_relative(r["step"].get<double>(), flush + gemm_seconds(8192, 8192, 8192, kH100Gemm8192), kExact);
}

TEST(SimModel, AllocatorReleaseWaitsForTheDeviceAndTheDriver) {
  expect_release(run_release(DriverCallCosts{}), 2 * kDriverCall, "");
}

// A calibration file's measured calls (ragged-gpu-validate section (f)) cost
// by size: cudaFree of the 40 GiB segment at 30 us + 400 us a GiB, cudaMalloc
// of the 50 GiB one at 80 us + 200 us a GiB.
TEST(SimModel, AllocatorReleaseCostsTheCalibratedCallsBySize) {
  const DriverCallCosts calls{80e-6, 200e-6, 30e-6, 400e-6};
  expect_release(run_release(calls), (30e-6 + 40 * 400e-6) + (80e-6 + 50 * 200e-6), " (calibrated by size)");
}

// --- the CPU issue path -------------------------------------------------------

TEST(SimModel, CpuBoundStepIsTheHostPath) {
  // Ten small GEMMs, each issued as 10 framework ops (121.6 us of host time)
  // and running 16 us on the GPU: the GPU waits for the CPU. An op starts
  // with its first kernel's issue and ends no sooner than its last kernel's
  // issue plus one kernel's GPU time (a tenth of the op's), so the step is
  // ten host times plus a tenth of the last GEMM.
  planner::Program p;
  planner::ProgramWriter w(&p);
  planner::ComputeWork work;
  work.gemms.push_back({1024, 1024, 1024, 1});
  uint32_t last = 0;
  for (int i = 0; i < 10; ++i) {
    last = w.compute(OpKind::kComputeFwd, 0, 0, "small", work, i == 0 ? std::vector<uint32_t>{} : std::vector<uint32_t>{last});
    p.ops[last].host.framework_ops = 10;
  }
  nlohmann::json r = run(p, h100_cluster(1), SimulationMode::kFull, HostCosts::pytorch_eager());
  const double host = 10 * kFrameworkOp;
  const double gpu = gemm_seconds(1024, 1024, 1024, kH100Gemm1024);
  report("CPU-bound: the first op starts (first kernel)", kFrameworkOp, r["starts"][0].get<double>());
  report("CPU-bound: the first op ends (last kernel)", host + gpu / 10, r["ends"][0].get<double>());
  report("CPU-bound: step = 10 x host + a tenth of a GEMM", 10 * host + gpu / 10, r["step"].get<double>());
  expect_relative(r["starts"][0].get<double>(), kFrameworkOp, kExact);
  expect_relative(r["ends"][0].get<double>(), host + gpu / 10, kExact);
  expect_relative(r["step"].get<double>(), 10 * host + gpu / 10, kExact);
}

TEST(SimModel, GpuBoundStepHidesTheHostPath) {
  // The same ops with a GPU time longer than their host time: only the
  // first kernel's issue shows.
  planner::Program p;
  planner::ProgramWriter w(&p);
  planner::ComputeWork work;
  work.gemms.push_back({8192, 8192, 8192, 1});
  uint32_t last = 0;
  for (int i = 0; i < 10; ++i) {
    last = w.compute(OpKind::kComputeFwd, 0, 0, "large", work, i == 0 ? std::vector<uint32_t>{} : std::vector<uint32_t>{last});
    p.ops[last].host.framework_ops = 10;
  }
  nlohmann::json r = run(p, h100_cluster(1), SimulationMode::kFull, HostCosts::pytorch_eager());
  const double expected = kFrameworkOp + 10 * gemm_seconds(8192, 8192, 8192, kH100Gemm8192);
  report("GPU-bound: step = one launch + 10 GEMMs", expected, r["step"].get<double>());
  expect_relative(r["step"].get<double>(), expected, kExact);
}

TEST(SimModel, HostWaitBlocksTheCpuThread) {
  // A GEMM, then an all-gather whose issue waits on the CPU for the GEMM to
  // end (as FSDP1's rate limiter does), then a small GEMM issued after it:
  // the all-gather starts one host op after the GEMM ends, and the small
  // GEMM one more host op later.
  planner::Program p;
  p.shard_ranks = 8;
  planner::ProgramWriter w(&p);
  planner::ComputeWork large, small;
  large.gemms.push_back({8192, 8192, 8192, 1});
  small.gemms.push_back({1024, 1024, 1024, 1});
  const uint32_t gemm = w.compute(OpKind::kComputeFwd, 0, 0, "gemm", large, {});
  const uint32_t ag = w.collective(OpKind::kAllGather, Stream::kAllGather, Group::kShard, 1, 0, "all-gather", 500'000'000, -1, {});
  p.ops[ag].host.waits = {gemm};
  const uint32_t after = w.compute(OpKind::kComputeFwd, 0, 0, "after", small, {});
  nlohmann::json r = run(p, h100_cluster(1), SimulationMode::kFull, HostCosts::pytorch_eager());
  const double gemm_end = kFrameworkOp + gemm_seconds(8192, 8192, 8192, kH100Gemm8192);
  const double ag_start = gemm_end + kFrameworkOp;
  const double after_start = ag_start + kFrameworkOp;
  report("host wait: the all-gather starts", ag_start, r["starts"][ag].get<double>());
  report("host wait: the next op starts", after_start, r["starts"][after].get<double>());
  expect_relative(r["starts"][ag].get<double>(), ag_start, kExact);
  expect_relative(r["starts"][after].get<double>(), after_start, kExact);
}

// --- simulation modes against each other ------------------------------------

TEST(SimModel, SymmetricModeAgreesWithFullMode) {
  // 16 nodes in leaves of 4: symmetric simulates 8.
  struct Case {
    const char* what;
    OpKind kind;
    Group group;
    int64_t shard, replicas;
  };
  for (const Case& c : {Case{"all-gather over 128 GPUs", OpKind::kAllGather, Group::kShard, 128, 1},
                        Case{"all-gather, 4 groups of 32", OpKind::kAllGather, Group::kShard, 32, 4},
                        Case{"all-gather, 16 groups of 8", OpKind::kAllGather, Group::kShard, 8, 16},
                        Case{"HSDP all-reduce, 4 replicas of 32", OpKind::kAllReduce, Group::kReplicate, 32, 4},
                        Case{"all-to-all, 4 groups of 32", OpKind::kAllToAll, Group::kShard, 32, 4}}) {
    auto p = collective_program(c.kind, c.group, 1'000'000'000, c.shard, c.replicas);
    nlohmann::json full_run = run(p, h100_cluster(16), SimulationMode::kFull);
    nlohmann::json symmetric_run = run(p, h100_cluster(16), SimulationMode::kSymmetric);
    EXPECT_EQ(full_run["nodes"].get<int64_t>(), 16);
    EXPECT_EQ(symmetric_run["nodes"].get<int64_t>(), 8);
    const double full = full_run["step"], symmetric = symmetric_run["step"];
    report(std::string(c.what) + ", symmetric", "full", full, "symmetric", symmetric);
    expect_relative(symmetric, full, kExact);
  }
}

TEST(SimModel, CollapsedRingAgreesWithStepLevelRing) {
  // The step-level mode runs Simple's latency, spread over the steps: compare
  // where NCCL picks Simple (bandwidth-bound rings).
  struct Case {
    const char* what;
    OpKind kind;
    Group group;
    int64_t nodes, shard, replicas, bytes;
  };
  for (const Case& c : {Case{"all-gather over 8 GPUs", OpKind::kAllGather, Group::kShard, 1, 8, 1, 1'000'000'000},
                        Case{"all-gather over 16 GPUs", OpKind::kAllGather, Group::kShard, 2, 16, 1, 1'000'000'000},
                        Case{"reduce-scatter over 32 GPUs", OpKind::kReduceScatter, Group::kShard, 4, 32, 1, 1'000'000'000},
                        Case{"all-gather, 4 groups of 8", OpKind::kAllGather, Group::kShard, 4, 8, 4, 1'000'000'000},
                        Case{"HSDP all-reduce, 16 rings of 2", OpKind::kAllReduce, Group::kReplicate, 4, 16, 2, 1'000'000'000},
                        // Groups of 12 straddle nodes: the full mode runs the NVLink of
                        // nodes 0 and 1 (two patterns), the step-level ring every node's.
                        // 12 x 88 MB: every step's flows carry whole bytes.
                        Case{"all-gather, 2 groups of 12 on 3 nodes", OpKind::kAllGather, Group::kShard, 3, 12, 2,
                             1'056'000'000}}) {
    auto p = collective_program(c.kind, c.group, c.bytes, c.shard, c.replicas);
    double collapsed = run(p, h100_cluster(c.nodes), SimulationMode::kFull)["step"];
    double steps = run(p, h100_cluster(c.nodes), SimulationMode::kSteps)["step"];
    report(std::string(c.what) + ", collapsed", "steps", steps, "collapsed", collapsed);
    expect_relative(collapsed, steps, kExact);
  }
}

TEST(SimModel, StepLevelRingPaysLinkLatencyOnEveryStep) {
  // Where they differ: a link's own latency (here 1 us per NVLink direction,
  // 2 us GPU to GPU) is paid once by the collapsed ring's single flow per
  // hop, and once per step (7 of them) by the step-level ring.
  const double S = 1e9, path_latency = 2 * 1e-6;
  ClusterSpec c = h100_cluster(1);
  c.nvlink_latency_s = 1e-6;
  auto p = collective_program(OpKind::kAllGather, Group::kShard, static_cast<int64_t>(S), 8, 1);
  double collapsed = run(p, c, SimulationMode::kFull)["step"];
  double steps = run(p, c, SimulationMode::kSteps)["step"];
  const Expected bandwidth_and_nccl = nccl_ring((7.0 / 8.0) * S / kNvlink, 7, 0);
  report("all-gather, 1 us NVLink latency, collapsed", bandwidth_and_nccl.seconds + path_latency, collapsed);
  report("all-gather, 1 us NVLink latency, every step", bandwidth_and_nccl.seconds + 7 * path_latency, steps);
  expect_relative(collapsed, bandwidth_and_nccl.seconds + path_latency, kExact);
  expect_relative(steps, bandwidth_and_nccl.seconds + 7 * path_latency, kExact);
}

}  // namespace
}  // namespace ragged::sim
