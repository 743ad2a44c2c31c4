#include "bench/doc_blocks.hpp"

#include <gtest/gtest.h>

#include "common/errors.hpp"

namespace ragged::bench {
namespace {

std::vector<DocBlock> parse(const std::vector<std::string>& lines) { return parse_doc_blocks(lines, "doc.md"); }

std::string error_of(const std::vector<std::string>& lines) {
  try {
    parse(lines);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(DocBlocks, ABlockStartingWithACommandIsSplitIntoCommandsAndTheirOutputs) {
  auto blocks = parse({"text", "```", "$ ragged models", "model  params", "llama  8B", "", "$ ragged plan x | head -1",
                       "plan", "```", "```sh", "make demo", "```"});
  ASSERT_EQ(blocks.size(), 1u);  // the sh block has no "$ " line: not an output block
  const DocBlock& block = blocks[0];
  EXPECT_EQ(block.open_line, 2u);
  EXPECT_EQ(block.close_line, 9u);
  EXPECT_EQ(block.marker, BlockMarker::kRegenerated);
  ASSERT_EQ(block.commands.size(), 2u);
  EXPECT_EQ(block.commands[0].command, "ragged models");
  EXPECT_EQ(block.commands[0].line, 3u);
  EXPECT_EQ(block.commands[0].output, (std::vector<std::string>{"model  params", "llama  8B"}));
  EXPECT_EQ(block.commands[0].trailing_blank_lines, 1u);
  EXPECT_EQ(block.commands[1].command, "ragged plan x | head -1");
  EXPECT_EQ(block.commands[1].output, std::vector<std::string>{"plan"});
  EXPECT_EQ(block.commands[1].trailing_blank_lines, 0u);
}

TEST(DocBlocks, AMarkerRightAboveTheFenceSaysHowTheBlockIsTreated) {
  auto blocks = parse({"<!-- output: not regenerated: needs mpirun -->", "```", "$ mpirun -np 4 ragged run x", "ok",
                       "```", "<!-- output: slow: 40 s of search -->", "```", "$ ragged tune", "best", "```"});
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].marker, BlockMarker::kNotRegenerated);
  EXPECT_EQ(blocks[0].reason, "needs mpirun");
  EXPECT_EQ(blocks[1].marker, BlockMarker::kSlow);
  EXPECT_EQ(blocks[1].reason, "40 s of search");
}

TEST(DocBlocks, AMisplacedUnknownOrEmptyMarkerAndAnUnclosedFenceAreErrorsWithTheirLine) {
  EXPECT_EQ(error_of({"<!-- output: slow: x -->", "", "```", "$ a", "```"}),
            "doc.md:1: an output marker must be on the line right above a block's opening ```");
  EXPECT_EQ(error_of({"<!-- output: flaky: x -->", "```", "$ a", "```"}),
            "doc.md:1: unknown output marker 'flaky: x'; use 'not regenerated: REASON' or 'slow: REASON'");
  EXPECT_EQ(error_of({"x", "<!-- output: slow: -->", "```", "$ a", "```"}),
            "doc.md:2: output marker 'slow:' gives no reason; say why after the colon");
  EXPECT_EQ(error_of({"<!-- output: slow: x -->", "```", "make demo", "```"}),
            "doc.md:1: output marker above a block that does not start with a `$ COMMAND` line; remove the marker or "
            "start the block with the command");
  EXPECT_EQ(error_of({"a", "```", "$ a"}), "doc.md:2: code block never closed; add a ``` line after it");
}

TEST(DocBlocks, WallTimesAndSimulatorMemoryAreNormalisedAndNothingElse) {
  EXPECT_EQ(normalise_volatile("  simulation         full mode, 1 simulated node, 800 flows, rank 0, 0.03 s wall, "
                               "8.34 MiB of memory"),
            "  simulation         full mode, 1 simulated node, 800 flows, rank 0, <time> wall, <bytes> of memory");
  EXPECT_EQ(normalise_volatile("  14.9 s on 2 workers (26.1 s in the simulator), 0 from the cache"),
            "  <time> on <n> workers (<time> in the simulator), 0 from the cache");
  EXPECT_EQ(normalise_volatile("  70.3 ms on 1 worker (0 ns in the simulator), 864 from the cache"),
            "  <time> on <n> workers (<time> in the simulator), 864 from the cache");
  // Predictions stay as printed: a moved step time is a stale block.
  EXPECT_EQ(normalise_volatile("  step time          2.94 s"), "  step time          2.94 s");
  EXPECT_EQ(normalise_volatile("  peak memory        74.97 GiB reserved"), "  peak memory        74.97 GiB reserved");
}

TEST(DocBlocks, ThePlannersWallTimeColumnIsNormalisedUpToTheBlankLine) {
  EXPECT_EQ(normalise_output({"  strategy  padded  peak GiB  plan ms", "  ragged    77.31B     26.87     0.19", "",
                              "  total 0.19"}),
            (std::vector<std::string>{"  strategy  padded  peak GiB  plan ms", "  ragged    77.31B     26.87     <ms>", "",
                                      "  total 0.19"}));
  EXPECT_FALSE(first_difference({"  x  plan ms", "  ragged  26.87     0.19"}, {"  x  plan ms", "  ragged  26.87     0.21"}));
  EXPECT_TRUE(first_difference({"  x  plan ms", "  ragged  26.87     0.19"}, {"  x  plan ms", "  ragged  26.88     0.19"}));
}

TEST(DocBlocks, TheFirstDifferenceIsFoundAfterNormalisingAndPastEitherEnd) {
  EXPECT_FALSE(first_difference({"rank 0, 0.03 s wall", "x"}, {"rank 0, 1.5 s wall", "x"}));
  auto moved = first_difference({"a", "step 2.94 s"}, {"a", "step 2.95 s"});
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->index, 1u);
  EXPECT_EQ(moved->documented, "step 2.94 s");
  EXPECT_EQ(moved->printed, "step 2.95 s");
  auto longer = first_difference({"a"}, {"a", "b"});
  ASSERT_TRUE(longer);
  EXPECT_EQ(longer->index, 1u);
  EXPECT_EQ(longer->documented, "(none)");
}

TEST(DocBlocks, OutputLinesDropTrailingBlankLinesOnly) {
  EXPECT_EQ(output_lines("a\n\nb\n\n\n"), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(output_lines(""), std::vector<std::string>{});
}

TEST(DocBlocks, ABlockIsRenderedWithTheNewOutputsAndTheBlankLinesItHad) {
  auto blocks = parse({"```", "$ a", "old", "", "$ b", "old b", "```"});
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(render_block(blocks[0], {{"new 1", "new 2"}, {}}),
            (std::vector<std::string>{"$ a", "new 1", "new 2", "", "$ b"}));
}

}  // namespace
}  // namespace ragged::bench
