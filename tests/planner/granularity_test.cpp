#include "planner/granularity.hpp"

#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "models/catalog.hpp"

namespace ragged::planner {
namespace {

models::TensorSpec tensor(std::string name, std::vector<int64_t> shape) {
  models::TensorSpec t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  return t;
}

GranularityPolicy policy(const std::string& text) {
  GranularityPolicy p;
  p.default_spec = GranularitySpec::parse(text);
  return p;
}

TEST(Granularity, ParseAndDescribeRoundTrip) {
  for (const char* text : {"element", "rows:16", "block:128x128", "block:32x64", "matrix"}) {
    EXPECT_EQ(GranularitySpec::parse(text).describe(), text);
  }
  for (const char* bad : {"rows", "rows:0", "rows:-3", "block:128", "block:0x4", "blocks:1x1", "rows:1x", ""}) {
    EXPECT_THROW(GranularitySpec::parse(bad), InputError) << bad;
  }
}

TEST(Granularity, VectorsAreAlwaysElementWise) {
  auto norm = tensor("layers.0.input_layernorm.weight", {4096});
  for (const char* text : {"rows:16", "block:128x128", "matrix"}) EXPECT_EQ(policy(text).granule_elements(norm), 1);
}

TEST(Granularity, RowsBlocksAndMatrices) {
  auto q = tensor("layers.0.self_attn.q_proj.weight", {4096, 2048});
  EXPECT_EQ(policy("element").granule_elements(q), 1);
  EXPECT_EQ(policy("rows:16").granule_elements(q), 16 * 2048);
  EXPECT_EQ(policy("block:32x32").granule_elements(q), 32 * 2048);
  EXPECT_EQ(policy("matrix").granule_elements(q), 4096 * 2048);
  // A fused [E, H, F] tensor: a matrix is one expert.
  auto fused = tensor("layers.0.mlp.experts.down_proj", {8, 2880, 2880});
  EXPECT_EQ(policy("matrix").granule_elements(fused), 2880 * 2880);
  EXPECT_EQ(policy("rows:1").granule_elements(fused), 2880);
}

TEST(Granularity, BlockThatDoesNotDivideIsAFieldError) {
  auto q = tensor("layers.0.self_attn.q_proj.weight", {4096, 2880});
  try {
    policy("block:128x128").granule_elements(q);
    FAIL() << "expected FieldError";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.path(), "training.granularity.default_spec");
    std::string message = e.what();
    EXPECT_NE(message.find("layers.0.self_attn.q_proj.weight [4096, 2880]"), std::string::npos) << message;
    EXPECT_NE(message.find("row length 2880"), std::string::npos) << message;
    EXPECT_NE(message.find("partial_blocks"), std::string::npos) << message;
  }
}

TEST(Granularity, PartialBlocksAllowEdgeTiles) {
  GranularityPolicy p = policy("block:128x128");
  p.partial_blocks = true;
  EXPECT_EQ(p.granule_elements(tensor("a", {576, 7168})), 128 * 7168);
  // In a fused tensor whose matrices the tile height does not divide, only
  // whole matrices are cut points.
  EXPECT_EQ(p.granule_elements(tensor("b", {4, 2880, 256})), 2880 * 256);
}

TEST(Granularity, FirstMatchingOverrideWins) {
  GranularityPolicy p = policy("element");
  p.overrides.push_back({"*.experts.*", GranularitySpec::parse("rows:128")});
  p.overrides.push_back({"*.experts.1.*", GranularitySpec::parse("matrix")});
  EXPECT_EQ(p.granule_elements(tensor("layers.3.mlp.experts.1.up_proj.weight", {2048, 7168})), 128 * 7168);
  EXPECT_EQ(p.granule_elements(tensor("layers.3.mlp.gate.weight", {256, 7168})), 1);
}

TEST(Granularity, OverrideErrorsNameTheOverride) {
  GranularityPolicy p = policy("element");
  p.overrides.push_back({"*.q_proj.*", GranularitySpec::parse("block:7x7")});
  try {
    p.granule_elements(tensor("layers.0.self_attn.q_proj.weight", {4096, 4096}));
    FAIL();
  } catch (const FieldError& e) {
    EXPECT_EQ(e.path(), "training.granularity.overrides[0].granularity");
  }
}

TEST(Granularity, GlobMatch) {
  EXPECT_TRUE(glob_match("*.experts.*", "layers.3.mlp.experts.17.gate_proj.weight"));
  EXPECT_TRUE(glob_match("layers.?.mlp.*", "layers.3.mlp.x"));
  EXPECT_FALSE(glob_match("layers.?.mlp.*", "layers.13.mlp.x"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("a*b*c", "aXbYbc"));
  EXPECT_FALSE(glob_match("a*b*c", "aXbYbd"));
  EXPECT_FALSE(glob_match("embed", "embed_tokens.weight"));
}

TEST(Granularity, CatalogModelsAcceptRowGranularity) {
  for (const auto& entry : models::catalog()) {
    EXPECT_NO_THROW(policy("rows:16").check(models::build_model(entry.arch))) << entry.arch.name;
  }
}

}  // namespace
}  // namespace ragged::planner
