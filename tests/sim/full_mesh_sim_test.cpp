// An NVLink full mesh without NVSwitch (NVIDIA HGX 4-GPU boards, nvidia-smi
// topo's NV6): each pair of GPUs is joined by its own links, a third of a
// GPU's NVLink on a board of four. The simulated collective beside the
// analytic expectation (docs/SIMULATOR.md section 2, "NVLink full mesh").

#include "sim_model_harness.hpp"

namespace ragged::sim {
namespace {

using namespace model_test;

ClusterSpec four_gpu_board(int64_t gpus_used) {
  ClusterSpec c = h100_cluster(1);
  c.gpus_per_node = gpus_used;
  c.full_mesh_gpus = 4;
  return c;
}

double all_gather_seconds(int64_t members, const ClusterSpec& cluster) {
  const double S = 1e9;
  return run(collective_program(OpKind::kAllGather, Group::kShard, static_cast<int64_t>(S), members, 1), cluster,
             SimulationMode::kFull)["step"];
}

TEST(FullMeshSim, TwoGpusOfAFourGpuBoardShareOnlyTheirPairsLinks) {
  // Each of the two sends half the buffer over the 6 NVLinks to its peer: a
  // third of the GPU's 18, at NCCL's share of line rate.
  const double S = 1e9;
  const double simulated = all_gather_seconds(2, four_gpu_board(2));
  const Expected analytic = nccl_ring(0.5 * S / (kNvlink / 3.0), 1, 0);
  report("all-gather 1 GB, 2 of a 4-GPU full mesh", analytic.seconds, simulated);
  expect_relative(simulated, analytic.seconds, kExact);
  // Through an NVSwitch the pair would have the GPU's whole NVLink.
  ClusterSpec switched = four_gpu_board(2);
  switched.full_mesh_gpus = 0;
  const Expected through_switch = nccl_ring(0.5 * S / kNvlink, 1, 0);
  expect_relative(all_gather_seconds(2, switched), through_switch.seconds, kExact);
}

TEST(FullMeshSim, TheWholeBoardUsesEveryPairAsAnNvswitchWould) {
  // Four GPUs: each sends 3/4 of the buffer, a quarter to each peer over its
  // own pair's links, all three at once: the NVSwitch's time.
  const double S = 1e9;
  const double simulated = all_gather_seconds(4, four_gpu_board(4));
  const Expected analytic = nccl_ring(0.25 * S / (kNvlink / 3.0), 3, 0);
  report("all-gather 1 GB, a whole 4-GPU full mesh", analytic.seconds, simulated);
  expect_relative(simulated, analytic.seconds, kExact);
  expect_relative(analytic.seconds, nccl_ring(0.75 * S / kNvlink, 3, 0).seconds, kExact);
}

TEST(FullMeshSim, PairsOnDifferentLinksDoNotShareThem) {
  // HSDP over the board: shard pairs {0,1} and {2,3} gather together, each
  // on its own pair's links, so the two take one pair's time, not twice it.
  const double S = 1e9;
  planner::Program p = collective_program(OpKind::kAllGather, Group::kShard, static_cast<int64_t>(S), 2, 2);
  const double simulated = run(p, four_gpu_board(4), SimulationMode::kFull)["step"];
  const Expected analytic = nccl_ring(0.5 * S / (kNvlink / 3.0), 1, 0);
  report("two pairs' all-gathers of 1 GB on a 4-GPU full mesh", analytic.seconds, simulated);
  expect_relative(simulated, analytic.seconds, kExact);
}

}  // namespace
}  // namespace ragged::sim
