// --set FIELD=VALUE: a dotted path into the scenario, a value in text-format
// syntax; applied before defaults and validation, so a derived default
// follows it and a bad value is the usual one-line error naming the override.

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "common/errors.hpp"
#include "scenario_test_util.hpp"
#include "scenarios/gpu_presets.hpp"
#include "scenarios/scenario_override.hpp"

namespace ragged::scenarios {
namespace {

using testing::loaded_minimal_scenario;

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ScenarioOverride, ParsesPathAndValueAndRejectsOtherForms) {
  const FieldOverride o = parse_override("training.prefetch_depth=0");
  EXPECT_EQ(o.path, "training.prefetch_depth");
  EXPECT_EQ(o.value, "0");
  EXPECT_EQ(parse_override("model.catalog=\"a=b\"").value, "\"a=b\"");  // the first '=' splits
  for (const char* bad : {"training.prefetch_depth", "=0", "training.prefetch_depth="}) {
    EXPECT_NE(error_of([&] { parse_override(bad); }).find("expected FIELD=VALUE"), std::string::npos) << bad;
  }
}

TEST(ScenarioOverride, SetsScalarsEnumsAndMessagesAndTheLastWins) {
  const LoadedScenario loaded = loaded_minimal_scenario();
  const LoadedScenario changed = with_overrides(
      loaded, {parse_override("training.prefetch_depth=0"), parse_override("training.activation_checkpointing=FULL"),
               parse_override("cluster.gpu={ preset: \"a100-80g\" }"), parse_override("cluster.nodes=4"),
               parse_override("cluster.nodes=3")});
  EXPECT_EQ(changed.scenario.training().prefetch_depth(), 0);
  EXPECT_EQ(changed.scenario.training().activation_checkpointing(), FULL);
  EXPECT_EQ(changed.scenario.cluster().gpu().preset(), "a100-80g");
  EXPECT_EQ(changed.scenario.cluster().nodes(), 3);
  // Defaults are applied after the override: the A100 preset's peak, not the H100's.
  EXPECT_DOUBLE_EQ(changed.scenario.cluster().gpu().peak_bf16_tflops(), find_gpu_preset("a100-80g").peak_bf16_tflops);
  EXPECT_DOUBLE_EQ(loaded.scenario.cluster().gpu().peak_bf16_tflops(), find_gpu_preset("h100").peak_bf16_tflops);
  EXPECT_NE(changed.origin.find("--set cluster.nodes=3"), std::string::npos);
  // The original is untouched.
  EXPECT_EQ(loaded.scenario.cluster().nodes(), 2);
}

// Enum values in any case, as --checkpointing full takes them (issue 51).
TEST(ScenarioOverride, EnumValuesAreReadInAnyCase) {
  for (const char* value : {"full", "Full", "FULL"}) {
    const LoadedScenario changed = with_overrides(
        loaded_minimal_scenario(), {parse_override(std::string("training.activation_checkpointing=") + value)});
    EXPECT_EQ(changed.scenario.training().activation_checkpointing(), FULL) << value;
  }
  EXPECT_EQ(with_overrides(loaded_minimal_scenario(), {parse_override("training.strategy=fsdp1")})
                .scenario.training()
                .strategy(),
            FSDP1);
  EXPECT_NE(
      error_of([] { check_overrides({parse_override("training.activation_checkpointing=fulll")}); }).find("one of"),
      std::string::npos);
}

TEST(ScenarioOverride, NoOverridesIsTheSameScenario) {
  const LoadedScenario loaded = loaded_minimal_scenario();
  EXPECT_EQ(with_overrides(loaded, {}).scenario.DebugString(), loaded.scenario.DebugString());
}

TEST(ScenarioOverride, BadPathsAndValuesNameTheOverrideAndTheFix) {
  EXPECT_EQ(error_of([] { check_overrides({parse_override("training.prefech=0")}); }),
            "--set training.prefech: 'prefech' is not a field of Training; did you mean 'prefetch_depth'?");
  EXPECT_NE(error_of([] { check_overrides({parse_override("training.prefetch_depth=x")}); }).find("type int32"),
            std::string::npos);
  const std::string enum_error =
      error_of([] { check_overrides({parse_override("training.activation_checkpointing=ON")}); });
  EXPECT_NE(enum_error.find("one of"), std::string::npos) << enum_error;
  EXPECT_NE(enum_error.find("SELECTIVE"), std::string::npos) << enum_error;
  EXPECT_NE(error_of([] { check_overrides({parse_override("cluster.nodes.count=1")}); }).find("has no field 'count'"),
            std::string::npos);
  EXPECT_NE(error_of([] { check_overrides({parse_override("model.layers_to_drop=1")}); }).find("not a field of"),
            std::string::npos);
  EXPECT_NE(error_of([] { check_overrides({parse_override("whatif.slow_gpus.ranks=3")}); }).find("is a list"),
            std::string::npos);
}

TEST(ScenarioOverride, AnOutOfRangeValueIsTheScenarioRuleErrorNamingTheOverride) {
  const std::string error =
      error_of([] { with_overrides(loaded_minimal_scenario(), {parse_override("training.prefetch_depth=-3")}); });
  EXPECT_NE(error.find("--set training.prefetch_depth=-3"), std::string::npos) << error;
  EXPECT_NE(error.find("training.prefetch_depth: prefetch_depth is -3"), std::string::npos) << error;
}

}  // namespace
}  // namespace ragged::scenarios
