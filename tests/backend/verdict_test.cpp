// The verdicts of `ragged run` cannot pass on garbage: a NaN equal to itself
// bit for bit is still a difference, a tolerance is applied only where the
// run claims one, and a NaN in a sharded state is found and named.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backend/communicator.hpp"
#include "backend/finite_check.hpp"
#include "backend/reference.hpp"
#include "backend/run.hpp"
#include "common/errors.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::backend {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

planner::ResolvedScenario one_rank_llama() {
  return planner::resolve_scenario(scenarios::with_total_gpus(scenarios::load_scenario("tiny-llama-4xcpu"), 1));
}

ModelParams copy_of(const ModelParams& p) { return p; }

TEST(CompareParams, IdenticalParametersAgreeExactly) {
  const auto resolved = one_rank_llama();
  const ModelParams params = initial_params(resolved.model, 7);
  const ParamError e = compare_params(resolved.model, params, copy_of(params));
  EXPECT_EQ(e.differing_elements, 0);
  EXPECT_EQ(e.non_finite_elements, 0);
  EXPECT_EQ(e.max_relative, 0.0);
  int64_t elements = 0;
  for (const auto& t : params) elements += static_cast<int64_t>(t.size());
  EXPECT_EQ(e.elements, elements);
}

TEST(CompareParams, TheSameNaNOnBothSidesIsAFailure) {
  // The Shampoo run: trained and reference both NaN, bit for bit equal.
  const auto resolved = one_rank_llama();
  ModelParams trained = initial_params(resolved.model, 7);
  trained[3][5] = kNaN;
  ModelParams reference = copy_of(trained);
  const ParamError e = compare_params(resolved.model, trained, reference);
  EXPECT_EQ(e.non_finite_elements, 1);
  EXPECT_EQ(e.differing_elements, 1);
  EXPECT_TRUE(std::isinf(e.max_relative));
  const std::string name = resolved.model.units[1].tensors[2].name;  // flat index 3: unit 1's third tensor
  EXPECT_EQ(e.worst_tensor, name);
  EXPECT_EQ(e.first_non_finite.rfind(name + " [5]: trained nan", 0), 0u) << e.first_non_finite;
}

TEST(CompareParams, AnInfinityInTheReferenceIsAFailure) {
  const auto resolved = one_rank_llama();
  ModelParams trained = initial_params(resolved.model, 7);
  ModelParams reference = copy_of(trained);
  reference[0][0] = -kInf;
  const ParamError e = compare_params(resolved.model, trained, reference);
  EXPECT_EQ(e.non_finite_elements, 1);
  EXPECT_NE(e.first_non_finite.find("reference -inf"), std::string::npos) << e.first_non_finite;
}

TEST(CompareParams, OneUlpIsOneDifferingElementAndTheExactRelativeError) {
  const auto resolved = one_rank_llama();
  ModelParams trained = initial_params(resolved.model, 7);
  ModelParams reference = copy_of(trained);
  float& x = trained[2][0];
  const float before = x;
  x = std::nextafter(x, 2 * x + 1);
  const ParamError e = compare_params(resolved.model, trained, reference);
  EXPECT_EQ(e.differing_elements, 1);
  EXPECT_EQ(e.non_finite_elements, 0);
  // Independent expectation: |dx| / ||reference tensor 2||.
  double norm = 0;
  for (float v : reference[2]) norm += static_cast<double>(v) * v;
  const double expected = std::abs(static_cast<double>(x) - before) / std::sqrt(norm);
  EXPECT_NEAR(e.max_relative, expected, 1e-12 * expected);
}

TEST(FiniteCheck, NamesTheTensorAndElementOfAShardView) {
  const auto resolved = one_rank_llama();
  auto comm = make_local_communicator();
  RunOptions options;
  options.steps = 1;
  options.warmup_steps = 0;
  options.inject_nan = NanInjection{"layers.1.mlp.down_proj.weight", 1};
  const RunResult r = run(resolved, options, *comm);
  int64_t numel = 0;
  for (const auto& unit : resolved.model.units) {
    for (const auto& t : unit.tensors) {
      if (t.name == "layers.1.mlp.down_proj.weight") numel = t.numel();
    }
  }
  ASSERT_GT(numel, 0);
  EXPECT_EQ(r.non_finite,
            "step 1, rank 0: the parameter of layers.1.mlp.down_proj.weight [" + std::to_string(numel / 2) + "] is nan");
  ASSERT_EQ(r.failures().size(), 1u);
  EXPECT_EQ(r.failures().front().rfind("not finite: step 1", 0), 0u);
}

TEST(FiniteCheck, TheRunStopsAtTheStepOfTheNaN) {
  auto comm = make_local_communicator();
  RunOptions options;
  options.steps = 3;
  options.warmup_steps = 0;
  options.check_reference = true;
  options.inject_nan = NanInjection{"embed_tokens.weight", 2};
  const RunResult r = run(one_rank_llama(), options, *comm);
  EXPECT_EQ(r.losses.size(), 2u);  // steps 1 and 2 ran, step 3 did not
  EXPECT_EQ(r.non_finite.rfind("step 2, rank 0: the parameter of embed_tokens.weight", 0), 0u) << r.non_finite;
  EXPECT_LT(r.reference_error, 0) << "no reference verdict on a run that stopped";
}

TEST(FiniteCheck, AnUnknownTensorIsAnInputError) {
  auto comm = make_local_communicator();
  RunOptions options;
  options.inject_nan = NanInjection{"no.such.tensor", 1};
  EXPECT_THROW(run(one_rank_llama(), options, *comm), ragged::InputError);
}

TEST(FiniteCheck, AgreementOnOneRankKeepsTheFindingAndStampsTheStep) {
  auto comm = make_local_communicator();
  EXPECT_FALSE(agree_non_finite(std::nullopt, 4, *comm));
  const NonFinite mine{Quantity::kGradient, (int64_t{1} << 40) + 3, (int64_t{1} << 35) + 9, -kInf, 0, 0};
  const auto agreed = agree_non_finite(mine, 4, *comm);
  ASSERT_TRUE(agreed);
  EXPECT_EQ(agreed->tensor_id, mine.tensor_id);
  EXPECT_EQ(agreed->element, mine.element);
  EXPECT_EQ(agreed->quantity, Quantity::kGradient);
  EXPECT_EQ(agreed->step, 4);
  EXPECT_TRUE(std::isinf(agreed->value) && agreed->value < 0);
}

TEST(Verdict, BitwiseClaimFailsOnOneDifferingElementWhateverTheError) {
  RunResult r;
  r.reference_error = 1e-12;
  r.reference_bitwise = true;
  r.reference_differing = 1;
  r.reference_elements = 100;
  r.reference_ok = false;
  ASSERT_EQ(r.failures().size(), 1u);
  EXPECT_NE(r.failures().front().find("1 of 100 elements differ bitwise"), std::string::npos);
}

TEST(BackendRun, AToleranceIsAppliedOnlyWhenClaimed) {
  auto comm = make_local_communicator();
  RunOptions options;
  options.steps = 1;
  options.check_reference = true;
  RunResult bitwise = run(one_rank_llama(), options, *comm);
  EXPECT_TRUE(bitwise.reference_bitwise);
  EXPECT_TRUE(bitwise.reference_ok);
  EXPECT_TRUE(bitwise.failures().empty());
  options.tolerance = 1e-6;
  RunResult tolerant = run(one_rank_llama(), options, *comm);
  EXPECT_FALSE(tolerant.reference_bitwise);
  EXPECT_EQ(tolerant.reference_tolerance, 1e-6);
  EXPECT_TRUE(tolerant.reference_ok);
}

}  // namespace
}  // namespace ragged::backend
