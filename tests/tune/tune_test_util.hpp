#pragma once
// The tuner's test scenario (tests/tune/data/tiny-llama-8xsmall.textproto:
// a tiny Llama on 2 x 4 GPUs with 80 MiB of HBM, where candidates are
// pruned, over the budget or fitting) and a temporary cache folder.

#include <unistd.h>

#include <filesystem>
#include <string>

#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"
#include "tune/tuner.hpp"

namespace ragged::tune::testing {

inline std::string small_scenario_path() {
  return std::string(RAGGED_SOURCE_DIR) + "/tests/tune/data/tiny-llama-8xsmall.textproto";
}

inline scenarios::LoadedScenario small_scenario() { return scenarios::load_scenario_file(small_scenario_path()); }

// `tuner`'s search over `gpus` GPUs by a pool of `threads` local workers.
inline SearchResult search_locally(const Tuner& tuner, int64_t gpus, int threads = 2) {
  LocalTaskPool pool([&](const std::string& task) { return tuner.run_task(task); }, threads);
  return tuner.search(pool, gpus);
}

// `options` searched over every GPU of `base` by a pool of `threads` local workers.
inline SearchResult search_locally(const scenarios::LoadedScenario& base, const TuneOptions& options, int threads = 2) {
  return search_locally(Tuner(base, options), scenarios::total_gpus(base.scenario), threads);
}

// A fresh folder under the temporary directory, removed with the object.
class TempDir {
 public:
  explicit TempDir(const std::string& tag)
      : path_(std::filesystem::temp_directory_path() / ("ragged_tune_" + tag + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace ragged::tune::testing
