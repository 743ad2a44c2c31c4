#pragma once
// Helpers for the importers' tests: the shipped example configs, an import
// that returns the scenario it wrote as a message, the one-line error a bad
// import raises, and a model-config cache of the test's own.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/errors.hpp"
#include "importers/import_config.hpp"
#include "scenarios/scenario_loader.hpp"

namespace ragged::importers::testing {

inline std::filesystem::path data(const std::string& name) {
  return std::filesystem::path(RAGGED_SOURCE_DIR) / "tests" / "importers" / "data" / name;
}

// A fresh folder under the build tree, also the XDG cache of imported model configs.
inline std::filesystem::path scratch(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(RAGGED_BINARY_DIR) / "tests" / "importers" / "scratch" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  setenv("XDG_CACHE_HOME", (dir / "cache").c_str(), 1);
  return dir;
}

inline ImportOptions on_gpus(int64_t gpus) {
  ImportOptions o;
  o.gpus = gpus;
  return o;
}

// The scenario text an import writes, parsed back (defaults applied, validated).
inline scenarios::Scenario written(const ImportedConfig& imported) {
  return scenarios::parse_scenario(imported.scenario_text, scenarios::ScenarioFormat::kText, "imported", ".").written;
}

// The message of the InputError importing `path` raises ("" when it imports).
inline std::string import_error(const std::filesystem::path& path, const ImportOptions& options) {
  try {
    import_config(path, options);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A config written to a scratch file.
inline std::filesystem::path config_file(const std::filesystem::path& dir, const std::string& name,
                                         const std::string& text) {
  const std::filesystem::path path = dir / name;
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path;
}

// An error a user reads on one line: the located field, what is wrong and the fix.
inline void expect_one_line(const std::string& error, const std::string& needle) {
  EXPECT_NE(error, "");
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_NE(error.find(needle), std::string::npos) << error;
}

}  // namespace ragged::importers::testing
