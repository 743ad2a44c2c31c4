// An NVLink full mesh without NVSwitch (NVIDIA HGX 4-GPU boards, nvidia-smi
// topo's NV6): each pair of GPUs is joined by its own links, a third of a
// GPU's NVLink on a board of four. The simulated collective beside the
// analytic expectation (docs/SIMULATOR.md section 2, "NVLink full mesh").

#include "sim_model_harness.hpp"

namespace ragged::sim {
namespace {

using namespace model_test;

constexpr double kBytes = 1e9;
// A pair's share of a GPU's NVLink on a board of four: 6 of its 18 links.
constexpr double kPair = kNvlink / 3.0;

ClusterSpec four_gpu_board(int64_t gpus_used) {
  ClusterSpec c = h100_cluster(1);
  c.gpus_per_node = gpus_used;
  c.full_mesh_gpus = 4;
  return c;
}

// Simulates a 1 GB all-gather over `groups` groups of `members` on `cluster`
// and checks it against `analytic`.
void expect_all_gather(const std::string& what, int64_t members, int64_t groups, const ClusterSpec& cluster,
                       const Expected& analytic) {
  const double simulated =
      run(collective_program(OpKind::kAllGather, Group::kShard, static_cast<int64_t>(kBytes), members, groups), cluster,
          SimulationMode::kFull)["step"];
  report(what, analytic.seconds, simulated);
  expect_relative(simulated, analytic.seconds, kExact);
}

TEST(FullMeshSim, TwoGpusOfAFourGpuBoardShareOnlyTheirPairsLinks) {
  // Each of the two sends half the buffer over the 6 NVLinks to its peer.
  expect_all_gather("all-gather 1 GB, 2 of a 4-GPU full mesh", 2, 1, four_gpu_board(2),
                    nccl_ring(0.5 * kBytes / kPair, 1, 0));
  // Through an NVSwitch the pair would have the GPU's whole NVLink.
  ClusterSpec switched = four_gpu_board(2);
  switched.full_mesh_gpus = 0;
  expect_all_gather("all-gather 1 GB, 2 GPUs through an NVSwitch", 2, 1, switched,
                    nccl_ring(0.5 * kBytes / kNvlink, 1, 0));
}

TEST(FullMeshSim, TheWholeBoardUsesEveryPairAsAnNvswitchWould) {
  // Four GPUs: each sends 3/4 of the buffer, a quarter to each peer over its
  // own pair's links, all three at once: the NVSwitch's time.
  const Expected analytic = nccl_ring(0.25 * kBytes / kPair, 3, 0);
  expect_relative(analytic.seconds, nccl_ring(0.75 * kBytes / kNvlink, 3, 0).seconds, kExact);
  expect_all_gather("all-gather 1 GB, a whole 4-GPU full mesh", 4, 1, four_gpu_board(4), analytic);
}

TEST(FullMeshSim, PairsOnDifferentLinksDoNotShareThem) {
  // HSDP over the board: shard pairs {0,1} and {2,3} gather together, each
  // on its own pair's links, so the two take one pair's time, not twice it.
  expect_all_gather("two pairs' all-gathers of 1 GB on a 4-GPU full mesh", 2, 2, four_gpu_board(4),
                    nccl_ring(0.5 * kBytes / kPair, 1, 0));
}

}  // namespace
}  // namespace ragged::sim
