// The whatif block: its defaults, ranges and rules, each error naming the
// file, line and column, and the field path.

#include <gtest/gtest.h>

#include "scenario_test_util.hpp"

namespace ragged::scenarios {
namespace {

using testing::minimal_scenario;
using testing::parse_error;

std::string with_whatif(const std::string& block) { return minimal_scenario() + "whatif {\n" + block + "}\n"; }

TEST(WhatIfScenario, DefaultsOnlyInWrittenBlocks) {
  const LoadedScenario none = parse_scenario(minimal_scenario(), ScenarioFormat::kText, "test.textproto", ".");
  EXPECT_FALSE(none.scenario.has_whatif());
  const LoadedScenario some =
      parse_scenario(with_whatif("  slow_gpus { count: 2 }\n  jitter { relative_stddev: 0.1 }\n"),
                     ScenarioFormat::kText, "test.textproto", ".");
  EXPECT_EQ(some.scenario.whatif().slow_gpus().fraction(), 0.5);
  EXPECT_EQ(some.scenario.whatif().slow_gpus().seed(), 1u);
  EXPECT_EQ(some.scenario.whatif().jitter().distribution(), NORMAL);
  EXPECT_FALSE(some.scenario.whatif().has_slow_links());
  EXPECT_FALSE(some.scenario.whatif().has_spine_oversubscription());
}

TEST(WhatIfScenario, RangesAreChecked) {
  EXPECT_CONTAINS(
      parse_error(with_whatif("  slow_gpus { count: 1 fraction: 1.5 }\n")),
      "test.textproto:11:24: whatif.slow_gpus.fraction: fraction is 1.5; it must be a number from 0.001 to 1");
  EXPECT_CONTAINS(parse_error(with_whatif("  slow_links { count: 1 fraction: 0 }\n")), "whatif.slow_links.fraction:");
  EXPECT_CONTAINS(parse_error(with_whatif("  jitter { relative_stddev: -0.1 }\n")), "whatif.jitter.relative_stddev:");
  EXPECT_CONTAINS(parse_error(with_whatif("  spine_oversubscription: 0.5\n")),
                  "whatif.spine_oversubscription: spine_oversubscription is 0.5; it must be a number from 1 to 1,024");
}

TEST(WhatIfScenario, CountOrListWithinTheCluster) {
  EXPECT_CONTAINS(parse_error(with_whatif("  slow_gpus { count: 17 }\n")),
                  "whatif.slow_gpus.count: count is 17; the cluster has 16 GPUs");
  EXPECT_CONTAINS(parse_error(with_whatif("  slow_gpus { ranks: 3 ranks: 16 }\n")),
                  ":11:24: whatif.slow_gpus.ranks[1]: ranks is 16; the cluster's GPUs are numbered 0 to 15");
  EXPECT_CONTAINS(parse_error(with_whatif("  slow_gpus { ranks: 3 ranks: 3 }\n")),
                  "whatif.slow_gpus.ranks[0]: rank 3 is listed twice");
  EXPECT_CONTAINS(parse_error(with_whatif("  slow_links { count: 1 nodes: 0 }\n")),
                  "whatif.slow_links.count: count and nodes are both set");
  EXPECT_CONTAINS(parse_error(with_whatif("  slow_links { fraction: 0.5 }\n")), "whatif.slow_links: no nodes named");
  EXPECT_CONTAINS(parse_error(with_whatif("  slow_links { nodes: 2 }\n")), "the cluster's nodes are numbered 0 to 1");
  EXPECT_EQ(parse_error(with_whatif("  slow_gpus { ranks: 15 fraction: 0.25 }\n  slow_links { nodes: 1 }\n")), "");
}

}  // namespace
}  // namespace ragged::scenarios
