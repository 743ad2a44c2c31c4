// The optimizer's part of the Program: owners of whole matrices balanced
// longest-processing-time first, Muon's gather / Newton-Schulz / scatter per
// unit with every matrix orthogonalised exactly once over the shard group,
// and the optimizer state bytes of AdamW, 8-bit Adam, Muon and Shampoo
// (whose blocks count at their real size).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "planner/optimizer_program.hpp"
#include "tests/planner/program_test_util.hpp"

namespace ragged::planner {
namespace {

using program_test::depends_on;
using program_test::graph_problems;
using program_test::joined;
using program_test::ops_of;
using program_test::ProgramSetup;
using program_test::strategy_field;

std::vector<double> loads_of(const std::vector<double>& costs, const std::vector<int>& owners, int ranks) {
  std::vector<double> loads(static_cast<size_t>(ranks), 0.0);
  for (size_t i = 0; i < costs.size(); ++i) loads[static_cast<size_t>(owners[i])] += costs[i];
  return loads;
}

// The optimal makespan by trying every assignment (first item fixed on rank 0).
double optimal_makespan(const std::vector<double>& costs, int ranks) {
  const size_t n = costs.size();
  std::vector<int> owner(n, 0);
  double best = std::accumulate(costs.begin(), costs.end(), 0.0);
  while (true) {
    std::vector<double> loads = loads_of(costs, owner, ranks);
    best = std::min(best, *std::max_element(loads.begin(), loads.end()));
    size_t i = 1;
    while (i < n && ++owner[i] == ranks) owner[i++] = 0;
    if (i >= n) break;
  }
  return best;
}

// Newton-Schulz on an a x b matrix (a <= b), per iteration: X X^T, A^2, (bA + cA^2) X.
double newton_schulz_flops(int64_t rows, int64_t cols, int steps) {
  const double a = static_cast<double>(std::min(rows, cols)), b = static_cast<double>(std::max(rows, cols));
  return steps * (2 * a * a * b + 2 * a * a * a + 2 * a * a * b);
}

// ---------------------------------------------------------------- owners ----

TEST(OptimizerOwners, LongestFirstOntoTheLeastLoadedLowestRank) {
  // 5 -> r0 (load 5), 4 -> r1 (4), 3 -> r1 (7), 3 -> r0 (8), 3 -> r1 (10).
  const std::vector<double> costs = {5, 4, 3, 3, 3};
  const std::vector<int> owners = assign_owners(costs, 2);
  EXPECT_EQ(owners, (std::vector<int>{0, 1, 1, 0, 1}));
  EXPECT_EQ(loads_of(costs, owners, 2), (std::vector<double>{8, 10}));  // the optimum is 9 / 9: LPT is not exact
  EXPECT_EQ(optimal_makespan(costs, 2), 9.0);

  // Equal costs go round-robin; input order breaks ties between equal costs.
  EXPECT_EQ(assign_owners({1, 1, 1, 1}, 3), (std::vector<int>{0, 1, 2, 0}));
  // The largest cost is placed first wherever it sits in the input.
  EXPECT_EQ(assign_owners({2, 7}, 4), (std::vector<int>{1, 0}));
  EXPECT_TRUE(assign_owners({}, 4).empty());
  EXPECT_EQ(assign_owners({3, 2, 1}, 1), (std::vector<int>{0, 0, 0}));
}

TEST(OptimizerOwners, MakespanWithinFourThirdsOfOptimalOnRandomCosts) {
  std::mt19937 rng(20240611);
  for (int trial = 0; trial < 300; ++trial) {
    const int ranks = std::uniform_int_distribution<int>(2, 4)(rng);
    const int n = std::uniform_int_distribution<int>(1, ranks == 4 ? 7 : 8)(rng);
    std::vector<double> costs(static_cast<size_t>(n));
    for (double& c : costs) c = std::uniform_int_distribution<int>(1, 40)(rng);
    const std::vector<int> owners = assign_owners(costs, ranks);
    ASSERT_EQ(owners.size(), costs.size());
    for (int o : owners) ASSERT_TRUE(o >= 0 && o < ranks);
    std::vector<double> loads = loads_of(costs, owners, ranks);
    const double makespan = *std::max_element(loads.begin(), loads.end());
    const double optimal = optimal_makespan(costs, ranks);
    // Graham's bound for LPT: (4/3 - 1/(3m)) * OPT.
    EXPECT_LE(makespan, (4.0 / 3.0 - 1.0 / (3.0 * ranks)) * optimal + 1e-9) << "trial " << trial;
  }
}

// ------------------------------------------------------------------ Adam ----

TEST(OptimizerProgram, AdamWUpdatesEachShardOnceWithTwoMasterStates) {
  for (const char* master : {"FP32", "BF16"}) {
    ProgramSetup setup(std::string("optimizer { adamw {} } precision { master: ") + master + " }");
    const Program program = setup.build();
    const int64_t o = std::string(master) == "FP32" ? 4 : 2;
    EXPECT_EQ(program.persistent.optimizer_states, 2 * o * setup.shard_total()) << master;
    EXPECT_EQ(optimizer_state_bytes(setup.optimizer_context()), 2 * o * setup.shard_total()) << master;
    EXPECT_EQ(program.count(OpKind::kAllToAll), 0u);
    EXPECT_TRUE(owned_matrices(setup.optimizer_context()).empty());
    std::vector<const Op*> updates = ops_of(program, OpKind::kOptimizer);
    ASSERT_EQ(updates.size(), static_cast<size_t>(setup.units()));
    std::vector<int> seen(static_cast<size_t>(setup.units()), 0);
    for (const Op* update : updates) {
      ++seen[static_cast<size_t>(update->unit)];
      EXPECT_EQ(update->stream, Stream::kCompute);
      EXPECT_EQ(update->flops, 0.0);  // memory-bound
      EXPECT_GT(update->bytes, 0);
    }
    EXPECT_EQ(seen, std::vector<int>(static_cast<size_t>(setup.units()), 1));
  }
}

// The update's traffic and ops follow the stack's AdamW kernels, counted from
// their source (planner/optimizer_program.cpp): torch's foreach ops, 20 fp32
// words per element in nine ops over the tensor list; one fused kernel, 7 words
// (read p, g, m, v; write p, m, v) in two ops; Composer's per-parameter loop,
// 22 words in nine ops per tensor. FSDP1 hands the optimizer one flat
// parameter per unit; ragged the unit's parameters.
TEST(OptimizerProgram, AdamWImplementationSetsTheUpdatesTrafficAndOps) {
  struct Case {
    const char* implementation;
    int64_t words;
    int64_t ops;
    bool per_tensor;
  };
  for (const Case& k : {Case{"FOREACH", 20, 9, false}, Case{"FUSED_KERNEL", 7, 2, false},
                        Case{"PER_PARAMETER", 22, 9, true}}) {
    for (scenarios::Strategy strategy : {scenarios::RAGGED, scenarios::FSDP1}) {
      ProgramSetup setup(strategy_field(strategy) + "optimizer { adamw { implementation: " + k.implementation + " } }");
      const Program program = setup.build();
      std::vector<const Op*> updates = ops_of(program, OpKind::kOptimizer);
      ASSERT_EQ(updates.size(), static_cast<size_t>(setup.units()));
      for (const Op* update : updates) {
        const int64_t tensors =
            strategy == scenarios::FSDP1 ? 1 : static_cast<int64_t>(setup.plan().units[update->unit].layout.slots.size());
        const std::string where = std::string(k.implementation) + " " + scenarios::Strategy_Name(strategy) + " unit " +
                                  std::to_string(update->unit);
        EXPECT_EQ(update->bytes, k.words * 4 * setup.shard(update->unit)) << where;
        EXPECT_EQ(update->host.framework_ops, k.per_tensor ? k.ops * tensors : k.ops) << where;
        EXPECT_EQ(update->host.list_tensors, k.per_tensor ? 0 : k.ops * tensors) << where;
      }
    }
  }
}

// Megatron-LM's --log-num-zeros-in-grad (step_statistics.gradient_zeros):
// once every gradient is ready, one op counts the zeros of the rank's
// gradient shards a parameter at a time, three torch ops and kernels a
// parameter reading each shard once; the CPU reads the count before it
// issues the first update, and every update follows it.
TEST(OptimizerProgram, GradientZerosAreCountedAParameterAtATimeBeforeTheUpdate) {
  ProgramSetup plain("optimizer { adamw {} }");
  EXPECT_EQ(plain.build().count(OpKind::kOptimizer), static_cast<size_t>(plain.units()));
  ProgramSetup setup("optimizer { adamw {} } step_statistics { gradient_zeros: true }");
  const Program program = setup.build();
  std::vector<const Op*> ops = ops_of(program, OpKind::kOptimizer);
  ASSERT_EQ(ops.size(), static_cast<size_t>(setup.units()) + 1);
  const Op& zeros = *ops.front();
  ASSERT_EQ(zeros.name, "gradient zeros");
  int64_t tensors = 0, elements = 0;
  for (int u = 0; u < setup.units(); ++u) {
    tensors += static_cast<int64_t>(setup.plan().units[static_cast<size_t>(u)].layout.slots.size());
    elements += setup.shard(u);
  }
  std::printf("%lld parameter tensors on the rank: %lld ops (3 a parameter), %lld bytes read\n",
              static_cast<long long>(tensors), static_cast<long long>(zeros.host.framework_ops),
              static_cast<long long>(zeros.bytes));
  EXPECT_EQ(zeros.host.framework_ops, 3 * tensors);
  EXPECT_EQ(zeros.work.elementwise_kernels, 3 * tensors);
  EXPECT_EQ(zeros.bytes, 4 * elements);  // the fp32 main gradients
  for (const Op& op : program.ops) {
    if (op.kind != OpKind::kComputeBwd) continue;
    EXPECT_TRUE(depends_on(program, zeros.id, op.id)) << op.name;
  }
  for (size_t i = 1; i < ops.size(); ++i) EXPECT_TRUE(depends_on(program, ops[i]->id, zeros.id)) << ops[i]->name;
  EXPECT_EQ(ops[1]->host.waits, std::vector<uint32_t>{zeros.id});  // the count's .item()
}

TEST(OptimizerProgram, EightBitAdamKeepsAboutAQuarterOfAdamWsState) {
  ProgramSetup setup("optimizer { adam8bit {} }");
  const Program program = setup.build();
  // The tiles are whole on their rank: the default granularity is the tile.
  EXPECT_EQ(setup.training().granularity().default_spec().kind(), scenarios::BLOCK);
  const int64_t S = setup.shard_total();
  EXPECT_EQ(program.persistent.optimizer_states, 2 * S + 2 * 4 * ((S + 1023) / 1024));
  OptimizerContext adamw = setup.optimizer_context();
  adamw.optimizer.mutable_adamw();
  const double ratio =
      static_cast<double>(program.persistent.optimizer_states) / static_cast<double>(optimizer_state_bytes(adamw));
  EXPECT_GE(ratio, 0.25);
  EXPECT_LE(ratio, 0.26);
  EXPECT_EQ(program.count(OpKind::kOptimizer), static_cast<size_t>(setup.units()));
  EXPECT_EQ(program.count(OpKind::kAllToAll), 0u);
}

// torch.optim.SGD's foreach path, counted from torch/optim/sgd.py: the
// parameters' _foreach_add_ alone (3 words, one op) and no state; weight decay
// adds a new gradient list (3 words, one op); momentum its buffer, one master
// word of state per element, and two ops over it (5 words).
TEST(OptimizerProgram, SgdKeepsAMomentumBufferOnlyWithMomentumAndMovesWhatTorchsForeachMoves) {
  struct Case {
    const char* sgd;
    int64_t words;
    int64_t ops;
    int64_t state_words;
  };
  for (const Case& k : {Case{"", 3, 1, 0}, Case{"weight_decay: 0.01", 6, 2, 0}, Case{"momentum: 0.9", 8, 3, 1},
                        Case{"momentum: 0.9 weight_decay: 0.01", 11, 4, 1}}) {
    for (const char* master : {"FP32", "BF16"}) {
      ProgramSetup setup(std::string("optimizer { sgd { ") + k.sgd + " } } precision { master: " + master + " }");
      const Program program = setup.build();
      const int64_t m = std::string(master) == "FP32" ? 4 : 2;
      const std::string where = std::string("sgd { ") + k.sgd + " } master " + master;
      EXPECT_EQ(program.persistent.optimizer_states, k.state_words * m * setup.shard_total()) << where;
      EXPECT_EQ(program.count(OpKind::kAllToAll), 0u) << where;
      std::vector<const Op*> updates = ops_of(program, OpKind::kOptimizer);
      ASSERT_EQ(updates.size(), static_cast<size_t>(setup.units())) << where;
      for (const Op* update : updates) {
        EXPECT_EQ(update->bytes, k.words * m * setup.shard(update->unit)) << where;
        EXPECT_EQ(update->host.framework_ops, k.ops) << where;
      }
    }
  }
}

// ------------------------------------------------------------------ Muon ----

TEST(OptimizerProgram, MuonOwnsEveryHiddenMatrixAndNothingElse) {
  ProgramSetup setup("optimizer { muon { ns_steps: 3 } }");
  std::vector<OwnedMatrix> matrices = owned_matrices(setup.optimizer_context());
  ASSERT_EQ(matrices.size(), 4u * 7u);  // q, k, v, o, gate, up, down in each of four blocks
  std::vector<double> per_rank(8, 0.0);
  for (const OwnedMatrix& m : matrices) {
    const models::UnitSpec& unit = setup.model().units[static_cast<size_t>(m.unit)];
    const models::TensorSpec& t = unit.tensors[static_cast<size_t>(m.tensor)];
    EXPECT_EQ(unit.kind, models::UnitKind::kBlock) << t.name;
    EXPECT_TRUE(t.is_matrix()) << t.name;
    EXPECT_NE(t.role, models::TensorRole::kEmbedding) << t.name;
    EXPECT_NE(t.role, models::TensorRole::kHead) << t.name;
    EXPECT_EQ(m.rows * m.cols, t.numel()) << t.name;
    EXPECT_DOUBLE_EQ(m.flops, newton_schulz_flops(m.rows, m.cols, 3)) << t.name;
    ASSERT_TRUE(m.owner >= 0 && m.owner < 8) << t.name;
    per_rank[static_cast<size_t>(m.owner)] += m.flops;
  }
  // Balanced: no rank above the average by more than the largest matrix.
  const double largest = std::max_element(matrices.begin(), matrices.end(), [](const auto& a, const auto& b) {
                           return a.flops < b.flops;
                         })->flops;
  const double average = std::accumulate(per_rank.begin(), per_rank.end(), 0.0) / 8;
  EXPECT_LE(*std::max_element(per_rank.begin(), per_rank.end()), average + largest);
}

// The GEMMs of one Newton-Schulz op, grouped by matrix: (a, b) -> iterations.
std::map<std::pair<int64_t, int64_t>, int> newton_schulz_runs(const Op& op, int steps) {
  std::map<std::pair<int64_t, int64_t>, int> runs;
  EXPECT_EQ(op.work.gemms.size() % 3, 0u) << op.name;
  for (size_t i = 0; i + 2 < op.work.gemms.size(); i += 3) {
    const Gemm& xxt = op.work.gemms[i];
    const Gemm& a2 = op.work.gemms[i + 1];
    const Gemm& ax = op.work.gemms[i + 2];
    const int64_t a = xxt.m, b = xxt.k;
    EXPECT_LE(a, b) << op.name;
    EXPECT_TRUE(xxt.n == a && a2.m == a && a2.n == a && a2.k == a && ax.m == a && ax.n == b && ax.k == a) << op.name;
    ++runs[{a, b}];
  }
  for (auto& [dims, iterations] : runs) {
    EXPECT_EQ(iterations % steps, 0) << op.name;
    iterations /= steps;
  }
  return runs;
}

TEST(OptimizerProgram, MuonGathersOrthogonalisesAndScattersEveryMatrixExactlyOnce) {
  constexpr int kSteps = 3;
  ProgramSetup setup("optimizer { muon { ns_steps: 3 } }");
  std::vector<OwnedMatrix> matrices = owned_matrices(setup.optimizer_context());
  // (unit, (a, b)) -> matrices expected, and what the ranks' programs run.
  std::map<std::pair<int, std::pair<int64_t, int64_t>>, int> expected, ran;
  std::map<int, int64_t> unit_matrix_elements;
  for (const OwnedMatrix& m : matrices) {
    ++expected[{m.unit, {std::min(m.rows, m.cols), std::max(m.rows, m.cols)}}];
    unit_matrix_elements[m.unit] += m.rows * m.cols;
  }
  double total_flops = 0;
  for (int rank = 0; rank < 8; ++rank) {
    const Program program = setup.build(rank);
    ASSERT_TRUE(graph_problems(program).empty()) << joined(graph_problems(program));
    for (int u = 0; u < setup.units(); ++u) {
      const int model_unit = setup.plan().units[static_cast<size_t>(u)].unit_index;
      std::vector<const Op*> a2a;
      for (const Op* op : ops_of(program, OpKind::kAllToAll)) {
        if (op->unit == u) a2a.push_back(op);
      }
      if (!unit_matrix_elements.count(model_unit)) {
        EXPECT_TRUE(a2a.empty()) << setup.spec(u).name;  // embed, head: AdamW only
        continue;
      }
      ASSERT_EQ(a2a.size(), 2u) << setup.spec(u).name;
      const Op& gather = *a2a[0];
      const Op& scatter = *a2a[1];
      for (const Op* op : a2a) {
        EXPECT_EQ(op->bytes, unit_matrix_elements[model_unit] * 2) << op->name;  // the unit's matrices in bf16
        EXPECT_EQ(op->group, Group::kShard) << op->name;
      }
      // The Newton-Schulz op sits between the two all-to-alls.
      const Op* ns = nullptr;
      for (const Op* op : ops_of(program, OpKind::kOptimizer)) {
        if (op->unit == u && std::find(op->deps.begin(), op->deps.end(), gather.id) != op->deps.end()) ns = op;
      }
      ASSERT_NE(ns, nullptr) << setup.spec(u).name;
      EXPECT_EQ(ns->stream, Stream::kCompute);
      EXPECT_TRUE(depends_on(program, scatter.id, ns->id)) << setup.spec(u).name;
      int owned = 0;
      for (const OwnedMatrix& m : matrices) owned += m.unit == model_unit && m.owner == rank;
      EXPECT_EQ(ns->work.gemms.size(), static_cast<size_t>(3 * kSteps * owned))
          << setup.spec(u).name << " rank " << rank;
      for (const auto& [dims, count] : newton_schulz_runs(*ns, kSteps)) ran[{model_unit, dims}] += count;
      total_flops += ns->flops;
      // The shard's update waits for the scattered result.
      int updates = 0;
      for (const Op* op : ops_of(program, OpKind::kOptimizer)) {
        if (op->unit != u || op == ns || op->id < scatter.id) continue;
        ++updates;
        EXPECT_TRUE(depends_on(program, op->id, scatter.id)) << op->name;
      }
      EXPECT_EQ(updates, 1) << setup.spec(u).name;
    }
  }
  EXPECT_EQ(ran, expected);
  double expected_flops = 0;
  for (const OwnedMatrix& m : matrices) expected_flops += m.flops;
  EXPECT_NEAR(total_flops / expected_flops, 1.0, 1e-12);
}

// Elements of the hidden matrices (what Muon and Shampoo take whole: not the
// embedding or the head) and of every tensor, counted here from the roles.
std::pair<int64_t, int64_t> hidden_matrix_elements(const models::ModelSpec& model) {
  int64_t matrix = 0, all = 0;
  for (const models::UnitSpec& unit : model.units) {
    for (const models::TensorSpec& t : unit.tensors) {
      all += t.numel();
      if (t.is_matrix() && t.role != models::TensorRole::kEmbedding && t.role != models::TensorRole::kHead) {
        matrix += t.numel();
      }
    }
  }
  return {matrix, all};
}

TEST(OptimizerProgram, MuonKeepsOneMomentumForMatricesAndAdamWStatesForTheRest) {
  ProgramSetup setup("optimizer { muon {} }");
  const auto [matrix, all] = hidden_matrix_elements(setup.model());
  const double share = static_cast<double>(matrix) / static_cast<double>(all);
  const double S = static_cast<double>(setup.shard_total());
  const double expected = share * S * 4 + (1 - share) * S * 8;
  // Each of the two terms is truncated to whole elements: under 4 + 8 bytes off.
  EXPECT_NEAR(static_cast<double>(setup.build().persistent.optimizer_states), expected, 12.0);
}

TEST(OptimizerProgram, ShampooRunsEachMatrixsPreconditionerOnItsOwner) {
  ProgramSetup setup("optimizer { shampoo { block_size: 128 precondition_frequency: 10 } }");
  std::vector<OwnedMatrix> matrices = owned_matrices(setup.optimizer_context());
  ASSERT_EQ(matrices.size(), 28u);
  double expected = 0, ran = 0;
  for (const OwnedMatrix& m : matrices) expected += m.flops;
  for (int rank = 0; rank < 8; ++rank) {
    const Program program = setup.build(rank);
    double owned = 0;
    for (const OwnedMatrix& m : matrices) owned += m.owner == rank ? m.flops : 0.0;
    double here = 0;
    for (const Op* op : ops_of(program, OpKind::kOptimizer)) here += op->work.other_flops;
    EXPECT_NEAR(here, owned, 1e-6 * expected) << "rank " << rank;
    ran += here;
  }
  EXPECT_NEAR(ran / expected, 1.0, 1e-12);
}

TEST(OptimizerProgram, ShampooCountsEdgeBlocksAtTheirSize) {
  // One 704 x 256 block under the default 1024: statistics and update
  // 4 r c (r + c), two roots of ~10 n^3 every step.
  EXPECT_DOUBLE_EQ(shampoo_flops(704, 256, 1024, 1), 4.0 * 704 * 256 * (704 + 256) + 10.0 * (704.0 * 704 * 704 + 256.0 * 256 * 256));
  // 300 x 200 in blocks of 128: rows 128, 128, 44; columns 128, 72; roots every 4 steps.
  double flops = 0;
  int64_t bytes = 0;
  for (double r : {128.0, 128.0, 44.0}) {
    for (double c : {128.0, 72.0}) {
      flops += 4 * r * c * (r + c) + 10 * (r * r * r + c * c * c) / 4;
      bytes += static_cast<int64_t>(2 * (r * r + c * c) * 8);  // L, R and their roots, float64
    }
  }
  EXPECT_DOUBLE_EQ(shampoo_flops(300, 200, 128, 4), flops);
  EXPECT_EQ(shampoo_state_bytes(300, 200, 128), bytes);
}

TEST(OptimizerProgram, ShampooKeepsFactorsOnOwnersAndAdamWStatesForTheRest) {
  ProgramSetup setup("optimizer { shampoo { block_size: 128 } }");
  const auto [matrix, all] = hidden_matrix_elements(setup.model());
  const double S = static_cast<double>(setup.shard_total());
  const auto adamw = static_cast<int64_t>((1 - static_cast<double>(matrix) / static_cast<double>(all)) * S) * 8;
  const std::vector<OwnedMatrix> matrices = owned_matrices(setup.optimizer_context());
  int64_t factors_everywhere = 0;
  for (int rank = 0; rank < 8; ++rank) {
    int64_t factors = 0;
    for (const OwnedMatrix& m : matrices) {
      if (m.owner == rank) factors += shampoo_state_bytes(m.rows, m.cols, 128);
    }
    factors_everywhere += factors;
    EXPECT_EQ(setup.build(rank).persistent.optimizer_states, adamw + factors) << "rank " << rank;
  }
  // Every matrix's factors on exactly one rank: the 4 blocks (256 x 256 in
  // blocks of 128) of q and o, 2 of k and v (128 x 256), 12 of the MLP's
  // 704 x 256 / 256 x 704 (704 = 5 x 128 + 64), per layer.
  const int64_t square = 2 * (128 * 128 + 128 * 128) * 8, edge = 2 * (64 * 64 + 128 * 128) * 8;
  const int64_t per_layer = 2 * 4 * square + 2 * 2 * square + 3 * (10 * square + 2 * edge);
  EXPECT_EQ(factors_everywhere, 4 * per_layer);
}

}  // namespace
}  // namespace ragged::planner
