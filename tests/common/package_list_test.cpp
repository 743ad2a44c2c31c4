// The README names, by their Debian names, the packages scripts/install-deps
// installs (issue 51: a fresh machine gets everything the default build
// uses): the two lists must name the same packages, so a package added to
// one is added to the other.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;
const fs::path kSourceDir = RAGGED_SOURCE_DIR;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::set<std::string> words(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string word; in >> word;) out.insert(word);
  return out;
}

// The words of install-deps' `packages=( ... )` array.
std::set<std::string> script_packages(const std::string& script) {
  const size_t begin = script.find("packages=(");
  const size_t end = script.find(')', begin);
  if (begin == std::string::npos || end == std::string::npos) return {};
  return words(script.substr(begin + 10, end - begin - 10));
}

// The backquoted list after "by their Debian names".
std::set<std::string> readme_packages(const std::string& readme) {
  const size_t at = readme.find("by their Debian names");
  const size_t open = readme.find('`', at);
  const size_t close = readme.find('`', open + 1);
  if (at == std::string::npos || open == std::string::npos || close == std::string::npos) return {};
  return words(readme.substr(open + 1, close - open - 1));
}

TEST(PackageList, TheReadmeNamesWhatInstallDepsInstalls) {
  const std::set<std::string> script = script_packages(read(kSourceDir / "scripts" / "install-deps"));
  const std::set<std::string> readme = readme_packages(read(kSourceDir / "README.md"));
  ASSERT_GT(script.size(), 20u) << "install-deps' packages=( ... ) not found";
  ASSERT_GT(readme.size(), 20u) << "the README's list of Debian package names not found";
  for (const std::string& p : script) EXPECT_TRUE(readme.contains(p)) << p << ": installed, not in the README's list";
  for (const std::string& p : readme) EXPECT_TRUE(script.contains(p)) << p << ": in the README's list, not installed";
}

TEST(PackageList, ReadsBothListsAsWritten) {
  EXPECT_EQ(script_packages("x\npackages=(\n  a b\n  c\n)\nmore"), (std::set<std::string>{"a", "b", "c"}));
  EXPECT_EQ(readme_packages("by their Debian names: `a\nb c`."), (std::set<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(readme_packages("no list here").empty());
}

}  // namespace
