// One-rank runs in-process (no MPI): the Program executes for real and
// matches the unsharded reference bitwise; bad requests are input errors.

#include <gtest/gtest.h>

#include "backend/run.hpp"
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
