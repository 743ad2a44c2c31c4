// One-rank runs in-process (no MPI): the Program executes for real and
// matches the unsharded reference bitwise; bad requests are input errors.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>

#include "backend/run.hpp"
#include "backend/run_support.hpp"
#include "common/errors.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::backend {
namespace {

planner::ResolvedScenario one_rank(const std::string& name, const std::string& strategy_text = "") {
  auto loaded = scenarios::with_total_gpus(scenarios::load_scenario(name), 1);
  if (!strategy_text.empty()) {
    loaded.written.mutable_training()->set_strategy(scenarios::parse_strategy(strategy_text));
    loaded = scenarios::rebuild(std::move(loaded));
  }
  return planner::resolve_scenario(loaded);
}

TEST(BackendRun, OneRankMatchesTheReferenceBitwise) {
  for (const char* strategy : {"ragged", "fsdp2", "fsdp1", "zero3", "megatron"}) {
    auto comm = make_local_communicator();
    RunOptions options;
    options.steps = 2;
    options.check_reference = true;
    RunResult r = run(one_rank("tiny-moe-4xcpu", strategy), options, *comm);
    EXPECT_TRUE(r.reference_ok) << strategy;
    EXPECT_EQ(r.reference_differing, 0) << strategy;
    EXPECT_EQ(r.losses.size(), 3u);
    EXPECT_GT(r.trace.events_size(), 0);
    EXPECT_EQ(r.trace.metadata().source(), traces::MEASURED);
    EXPECT_GT(r.trace.summary().step_time_s(), 0);
  }
}

TEST(BackendRun, EveryProgramOpIsTimed) {
  auto comm = make_local_communicator();
  RunOptions options;
  options.steps = 1;
  RunResult r = run(one_rank("tiny-llama-4xcpu"), options, *comm);
  for (const auto& e : r.trace.events()) EXPECT_GE(e.end_ns(), e.start_ns()) << e.name();
  EXPECT_EQ(r.trace.summary().tokens_per_step(), 2 * 128);
  // The memory curve counts state and buffers, the quantity the summary's peak
  // and the prediction's curve count.
  ASSERT_GT(r.trace.memory_size(), 0);
  int64_t peak = 0;
  for (const auto& m : r.trace.memory()) {
    EXPECT_EQ(m.state_and_buffers_bytes(), m.allocated_bytes());
    peak = std::max(peak, m.state_and_buffers_bytes());
  }
  EXPECT_EQ(peak, r.trace.summary().peak_state_and_buffers_bytes());
}

// Shampoo with blocks that cut tiny-moe's 128-wide matrices (48 + 48 + 32)
// and roots every second step: the update runs its own rule, not AdamW's,
// and equals the reference bit for bit.
TEST(BackendRun, ShampooBlocksAndStaleRootsMatchTheReferenceBitwise) {
  auto loaded = scenarios::with_total_gpus(scenarios::load_scenario("tiny-moe-4xcpu"), 1);
  scenarios::Shampoo* shampoo = loaded.written.mutable_training()->mutable_optimizer()->mutable_shampoo();
  shampoo->set_block_size(48);
  shampoo->set_precondition_frequency(2);
  const planner::ResolvedScenario resolved = planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
  auto comm = make_local_communicator();
  RunOptions options;
  options.steps = 3;
  options.check_reference = true;
  RunResult r = run(resolved, options, *comm);
  EXPECT_TRUE(r.reference_ok);
  EXPECT_EQ(r.reference_differing, 0);
  ASSERT_EQ(r.losses.size(), 4u);
  for (double loss : r.losses) EXPECT_TRUE(std::isfinite(loss)) << loss;
  // AdamW with the settings Shampoo gives the other tensors trains differently.
  auto adamw = scenarios::with_total_gpus(scenarios::load_scenario("tiny-moe-4xcpu"), 1);
  adamw.written.mutable_training()->mutable_optimizer()->mutable_adamw()->Clear();
  RunResult a = run(planner::resolve_scenario(scenarios::rebuild(std::move(adamw))), options, *comm);
  EXPECT_EQ(a.losses[0], r.losses[0]);
  for (size_t s = 1; s < r.losses.size(); ++s) EXPECT_NE(a.losses[s], r.losses[s]) << "step " << s + 1;
}

// SGD with momentum and weight decay: the sharded update runs torch's rule
// (the first step's buffer is the gradient) and equals the reference bit for
// bit; without momentum it keeps no state and trains differently.
TEST(BackendRun, SgdWithAndWithoutMomentumMatchesTheReferenceBitwise) {
  auto comm = make_local_communicator();
  RunOptions options;
  options.steps = 3;
  options.check_reference = true;
  std::vector<std::vector<double>> losses;
  std::vector<int64_t> states;
  for (double momentum : {0.9, 0.0}) {
    auto loaded = scenarios::with_total_gpus(scenarios::load_scenario("tiny-llama-4xcpu"), 1);
    scenarios::Sgd* sgd = loaded.written.mutable_training()->mutable_optimizer()->mutable_sgd();
    sgd->set_lr(0.05);
    sgd->set_momentum(momentum);
    sgd->set_weight_decay(0.01);
    RunResult r = run(planner::resolve_scenario(scenarios::rebuild(std::move(loaded))), options, *comm);
    EXPECT_TRUE(r.reference_ok) << momentum;
    EXPECT_EQ(r.reference_differing, 0) << momentum;
    ASSERT_EQ(r.losses.size(), 4u);
    for (double loss : r.losses) EXPECT_TRUE(std::isfinite(loss)) << loss;
    losses.push_back(r.losses);
  }
  EXPECT_EQ(losses[0][0], losses[1][0]);
  EXPECT_EQ(losses[0][1], losses[1][1]);  // step 1's buffer is the gradient: the same update
  EXPECT_NE(losses[0][3], losses[1][3]);
}

TEST(BackendRun, ShampooRefusesFusedExperts) {
  auto loaded = scenarios::with_total_gpus(scenarios::load_scenario("tiny-moe-4xcpu"), 1);
  loaded.written.mutable_training()->mutable_optimizer()->mutable_shampoo();
  loaded.written.mutable_model()->mutable_inline_spec()->set_experts_fused(true);
  const planner::ResolvedScenario resolved = planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
  auto comm = make_local_communicator();
  try {
    run(resolved, RunOptions{}, *comm);
    ADD_FAILURE() << "a fused-expert tensor must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("Shampoo on the host needs one matrix per tensor"), std::string::npos)
        << e.what();
  }
}

// `ragged run` refuses what only the simulator models, naming it: the
// InputError of plan_for_run holds every one of `needles`.
void expect_run_refuses(scenarios::LoadedScenario loaded, std::initializer_list<const char*> needles) {
  const planner::ResolvedScenario resolved = planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
  try {
    plan_for_run(resolved, models::DType::kF32);
    ADD_FAILURE() << "must be refused: " << *needles.begin();
  } catch (const InputError& e) {
    for (const char* needle : needles) EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// The overlapped tensor parallelism is the simulator's model of two
// runtimes; the executors run each collective whole and say so.
TEST(BackendRun, RefusesTheSimulatedOnlyTensorParallelOverlap) {
  auto loaded = scenarios::load_scenario("tiny-llama-4xcpu");
  loaded.written.mutable_training()->mutable_mesh()->set_tp(2);
  loaded.written.mutable_training()->mutable_mesh()->set_tp_overlap(scenarios::ASYNC_TP);
  expect_run_refuses(std::move(loaded), {"training.mesh.tp_overlap: ASYNC_TP is simulated only (`ragged simulate`)"});
}

// Whole experts under tp are the simulator's; the executors split every
// routed expert over the tp ranks and say so.
TEST(BackendRun, RefusesTheSimulatedOnlyWholeExperts) {
  auto loaded = scenarios::load_scenario("tiny-moe-4xcpu");
  scenarios::Mesh* mesh = loaded.written.mutable_training()->mutable_mesh();
  mesh->set_tp(2);
  mesh->set_ep(2);
  mesh->set_expert_tp(1);
  expect_run_refuses(std::move(loaded), {"training.mesh.expert_tp: 1 (whole experts under tp) is simulated only"});
}

// Keys and values copied to every query head are another stack's cost; the
// executors' attention reads the kv heads and says so.
TEST(BackendRun, RefusesTheSimulatedOnlyRepeatedKeysAndValues) {
  auto loaded = scenarios::load_scenario("tiny-llama-4xcpu");
  loaded.written.mutable_training()->set_kv_heads(scenarios::REPEATED_KV);
  expect_run_refuses(std::move(loaded), {"training.kv_heads: REPEATED_KV", "set NATIVE_KV"});
}

// The fused q/k/v and gate/up layout of Megatron-Core and nanotron is the
// simulator's: the executors load the checkpoint's projections by name.
TEST(BackendRun, RefusesTheSimulatedOnlyFusedProjections) {
  auto loaded = scenarios::load_scenario("tiny-llama-4xcpu");
  loaded.written.mutable_training()->set_projections(scenarios::FUSED_PROJECTIONS);
  expect_run_refuses(std::move(loaded), {"training.projections: FUSED_PROJECTIONS", "set CHECKPOINT_PROJECTIONS"});
}

TEST(BackendRun, RefusesTheSimulatedOnlyExpertEpilogue) {
  auto loaded = scenarios::load_scenario("tiny-moe-4xcpu");
  loaded.written.mutable_training()->mutable_experts()->set_epilogue(scenarios::EAGER_EPILOGUE);
  expect_run_refuses(std::move(loaded), {"training.experts", "EAGER_EPILOGUE", "remove the experts block"});
}

// The executors checkpoint whole blocks; the experts' own mode is the simulator's.
TEST(BackendRun, RefusesTheExpertsOwnCheckpointing) {
  auto loaded = scenarios::load_scenario("tiny-moe-4xcpu");
  loaded.written.mutable_training()->mutable_mesh()->set_ep(2);
  loaded.written.mutable_training()->mutable_experts()->set_checkpointing(scenarios::FULL);
  expect_run_refuses(std::move(loaded),
                     {"training.experts", "the experts' own checkpointing", "remove the experts block"});
}

TEST(BackendRun, BadRequestsAreInputErrors) {
  auto comm = make_local_communicator();
  RunOptions options;
  // The scenario's 4 GPUs do not match one process.
  EXPECT_THROW(run(planner::resolve_scenario(scenarios::load_scenario("tiny-llama-4xcpu")), options, *comm), InputError);
  // bf16 on the host.
  EXPECT_THROW(run(planner::resolve_scenario(scenarios::with_total_gpus(scenarios::load_scenario("llama3-8b-8xh100"), 1)),
                   options, *comm),
               InputError);
  options.device = "cuda";
  EXPECT_THROW(run(one_rank("tiny-llama-4xcpu"), options, *comm), InputError);
}

}  // namespace
}  // namespace ragged::backend
