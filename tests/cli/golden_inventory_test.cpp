// `ragged inspect MODEL --tensors` for every catalog model against a golden
// file. Regenerate after an intended change with RAGGED_UPDATE_GOLDEN=1.

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "cli_test_util.hpp"
#include "common/file_io.hpp"
#include "models/catalog.hpp"

namespace ragged::cli {
namespace {

namespace fs = std::filesystem;

class GoldenInventory : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenInventory, InspectMatchesGoldenFile) {
  const std::string& model = GetParam();
  testing::CliResult result = testing::run_cli({"inspect", model, "--tensors"});
  ASSERT_EQ(result.code, 0) << result.err;
  fs::path golden = fs::path(RAGGED_SOURCE_DIR) / "tests/cli/golden" / ("inspect-" + model + ".txt");
  const char* update = std::getenv("RAGGED_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    write_file_atomically(golden, result.out);
    GTEST_SKIP() << "rewrote " << golden;
  }
  ASSERT_TRUE(fs::exists(golden)) << golden << " is missing: run with RAGGED_UPDATE_GOLDEN=1 to create it";
  EXPECT_EQ(result.out, read_file(golden)) << "inspect output of " << model << " changed; if intended, "
                                           << "regenerate with RAGGED_UPDATE_GOLDEN=1";
}

std::vector<std::string> catalog_names() {
  std::vector<std::string> names;
  for (const auto& entry : models::catalog()) names.push_back(entry.arch.name);
  return names;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name;
  for (char c : info.param) name.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Catalog, GoldenInventory, ::testing::ValuesIn(catalog_names()), test_name);

}  // namespace
}  // namespace ragged::cli
