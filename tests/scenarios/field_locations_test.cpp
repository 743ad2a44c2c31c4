#include "scenarios/field_locations.hpp"

#include <gtest/gtest.h>

#include <string>

#include "common/errors.hpp"

namespace ragged::scenarios {
namespace {

void expect_at(const FieldLocations& locations, const std::string& path, int line, int column) {
  auto where = locations.find(path);
  ASSERT_TRUE(where.has_value()) << path;
  EXPECT_EQ(where->line, line) << path;
  EXPECT_EQ(where->column, column) << path;
}

TEST(FieldLocations, TextprotoNestedAndRepeated) {
  const char* text =
      "# comment with { braces }\n"
      "cluster {\n"
      "  nodes: 2  # trailing\n"
      "  topology: { fat_tree < levels: 3 > }\n"
      "}\n"
      "training { granularity {\n"
      "  overrides { pattern: \"a{\" }\n"
      "  overrides { pattern: 'b' }\n"
      "} }\n";
  FieldLocations locations = locate_textproto_fields(text);
  expect_at(locations, "cluster", 2, 1);
  expect_at(locations, "cluster.nodes", 3, 3);
  expect_at(locations, "cluster.topology.fat_tree.levels", 4, 26);
  expect_at(locations, "training.granularity.overrides[0].pattern", 7, 15);
  expect_at(locations, "training.granularity.overrides.pattern", 7, 15);
  expect_at(locations, "training.granularity.overrides[1].pattern", 8, 15);
  // An unwritten field resolves to its nearest written ancestor.
  expect_at(locations, "cluster.topology.fat_tree.oversubscription", 4, 15);
  EXPECT_FALSE(locations.find("run.steps").has_value());
}

TEST(FieldLocations, TextprotoListOfMessages) {
  FieldLocations locations = locate_textproto_fields("a {\n  b: [ { c: 1 }, { c: 2 } ]\n}\n");
  expect_at(locations, "a.b[1].c", 2, 20);
}

TEST(FieldLocations, JsonKeysArraysAndCamelCase) {
  const char* text =
      "{\n"
      "  \"cluster\": {\"gpusPerNode\": 8, \"name\": \"x,y}\"},\n"
      "  \"training\": {\"granularity\": {\"overrides\": [\n"
      "     {\"pattern\": \"a\"},\n"
      "     {\"pattern\": \"b\"}]}}\n"
      "}\n";
  FieldLocations locations = locate_json_fields(text);
  expect_at(locations, "cluster.gpus_per_node", 2, 15);
  expect_at(locations, "cluster.name", 2, 33);
  expect_at(locations, "training.granularity.overrides[1].pattern", 5, 7);
}

TEST(FieldLocations, PathAtFindsEnclosingField) {
  FieldLocations locations = locate_textproto_fields("cluster {\n  nodes: 2\n  bogus: 3\n}\n");
  auto path = locations.path_at(FieldLocation{2, 10});
  ASSERT_TRUE(path.has_value());
  EXPECT_EQ(*path, "cluster.nodes");
}

TEST(FieldLocations, SnakeCase) {
  EXPECT_EQ(to_snake_case("gpusPerNode"), "gpus_per_node");
  EXPECT_EQ(to_snake_case("hbm_capacity_gib"), "hbm_capacity_gib");
  EXPECT_EQ(to_snake_case("adam8bit"), "adam8bit");
}

// Nested blocks: one path per field occurrence, so the work grows with the
// text, not with 2^depth (the locator once kept every path twice per level).
TEST(FieldLocations, NestedBlocksRecordOnePathPerField) {
  auto nested = [](int depth) {
    std::string text;
    for (int i = 0; i < depth; ++i) text += "x { ";
    for (int i = 0; i < depth; ++i) text += "} ";
    return text;
  };
  const FieldLocations locations = locate_textproto_fields(nested(kMaxNesting));
  EXPECT_EQ(locations.size(), static_cast<size_t>(kMaxNesting));
  std::string deepest = "x";
  for (int i = 1; i < kMaxNesting; ++i) deepest += ".x";
  EXPECT_TRUE(locations.find(deepest).has_value());
  EXPECT_TRUE(locations.find("x[0].x").has_value());  // [0] is the field's first occurrence
}

TEST(FieldLocations, NestingDeeperThanTheLimitIsRefusedWhereItStarts) {
  std::string text = "a {\n";
  for (int i = 0; i < kMaxNesting; ++i) text += "b { ";
  try {
    locate_textproto_fields(text, "deep.textproto");
    FAIL() << "accepted " << kMaxNesting + 1 << " levels";
  } catch (const InputError& e) {
    const std::string expected = "deep.textproto:2:" + std::to_string(4 * (kMaxNesting - 1) + 3) +
                                 ": blocks nested deeper than " + std::to_string(kMaxNesting) + " levels";
    EXPECT_EQ(std::string(e.what()).rfind(expected, 0), 0u) << e.what();
  }
  std::string json = "{\"a\": ";
  for (int i = 0; i < kMaxNesting; ++i) json += "[";
  EXPECT_THROW(locate_json_fields(json, "deep.json"), InputError);
  json.pop_back();  // exactly the limit: fine
  EXPECT_NO_THROW(locate_json_fields(json, "deep.json"));
}

}  // namespace
}  // namespace ragged::scenarios
