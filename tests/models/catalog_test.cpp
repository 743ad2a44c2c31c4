// The catalog: every model matches its published parameter total, lookups.

#include <cmath>
#include <cstdio>
#include <set>

#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "models/catalog.hpp"
#include "test_helpers.hpp"

namespace ragged::models {
namespace {

using test_util::input_error_of;

TEST(CatalogTest, EveryModelMatchesItsPublishedTotal) {
  for (const CatalogEntry& entry : catalog()) {
    const ModelSpec model = build_model(entry.arch);
    const double built = static_cast<double>(model.params());
    const double error = (built - entry.published_params) / entry.published_params;
    std::printf("%-16s built %16.0f  published %16.0f  %+.3f%%\n", entry.arch.name.c_str(), built,
                entry.published_params, 100 * error);
    EXPECT_LT(std::abs(error), 0.005) << entry.arch.name << ": built " << built << " vs published "
                                      << entry.published_params;
    EXPECT_FALSE(entry.source.empty()) << entry.arch.name;
  }
}

TEST(CatalogTest, HasTheDocumentedModels) {
  std::set<std::string> names;
  for (const CatalogEntry& entry : catalog()) names.insert(entry.arch.name);
  const std::set<std::string> expected = {"llama3-8b",   "llama3-70b",      "llama3.1-405b", "gpt-oss-20b",
                                          "gpt-oss-120b", "deepseek-v3",    "qwen3-235b-a22b", "mixtral-8x7b",
                                          "gpt2-xl",      "gpt-neox-20b",   "opt-30b",         "mpt-30b",
                                          "bloom-176b"};
  EXPECT_EQ(names, expected);
}

TEST(CatalogTest, LookupIsCaseInsensitive) {
  EXPECT_EQ(find_catalog_entry("LLaMA3-8B").arch.name, "llama3-8b");
  EXPECT_EQ(find_catalog_entry("DeepSeek-V3").source, "deepseek-ai/DeepSeek-V3");
  EXPECT_EQ(find_catalog_entry("llama3-8b").source, "meta-llama/Meta-Llama-3-8B");
  const ModelSpec model = catalog_model("Mixtral-8x7B");
  EXPECT_EQ(model.name, "mixtral-8x7b");
  EXPECT_EQ(model.units.size(), 34u);
}

TEST(CatalogTest, UnknownNameListsTheCatalogAndSuggestsTheClosest) {
  const std::string message = input_error_of([] { find_catalog_entry("llama3-7b"); });
  EXPECT_NE(message.find("'llama3-7b'"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'llama3-8b'"), std::string::npos) << message;
  for (const CatalogEntry& entry : catalog()) {
    EXPECT_NE(message.find(entry.arch.name), std::string::npos) << message;
  }
  EXPECT_EQ(message.find('\n'), std::string::npos);
  EXPECT_THROW(catalog_model("gpt-oss-999b"), InputError);
}

TEST(CatalogTest, ActiveParametersOfMixturesOfExperts) {
  // Published active counts: Mixtral 12.9B, Qwen3 22B, DeepSeek-V3 37B.
  EXPECT_NEAR(catalog_model("mixtral-8x7b").active_params() / 1e9, 12.9, 0.1);
  EXPECT_NEAR(catalog_model("qwen3-235b-a22b").active_params() / 1e9, 22.2, 0.3);
  EXPECT_NEAR(catalog_model("deepseek-v3").active_params() / 1e9, 37.5, 0.6);
  const ModelSpec dense = catalog_model("llama3-8b");
  EXPECT_DOUBLE_EQ(dense.active_params(), static_cast<double>(dense.params()));
}

}  // namespace
}  // namespace ragged::models
