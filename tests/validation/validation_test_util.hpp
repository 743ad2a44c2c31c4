#pragma once
// A scratch validation folder per test: runs.textproto and scenario files
// written into a fresh temporary directory, removed afterwards.

#include <unistd.h>

#include <filesystem>
#include <string>

#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "tests/common/expect_contains.hpp"
#include "validation/validation_set.hpp"

namespace ragged::validation::testing {

class ScratchFolder {
 public:
  explicit ScratchFolder(const std::string& name)
      : path_(std::filesystem::temp_directory_path() / ("ragged_validation_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_ / "scenarios");
  }
  ~ScratchFolder() { std::filesystem::remove_all(path_); }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;

  const std::filesystem::path& path() const { return path_; }
  void write(const std::string& relative, const std::string& text) const { write_file_atomically(path_ / relative, text); }

 private:
  std::filesystem::path path_;
};

// A scenario that resolves and simulates in a fraction of a second.
inline std::string small_scenario(const std::string& model = "llama3-8b") {
  return "model { catalog: \"" + model + "\" layers: 2 }\n"
         "cluster {\n  gpu { preset: \"h100\" }\n  gpus_per_node: 8\n  nodes: 1\n}\n"
         "training { strategy: FSDP2 micro_batch_size: 1 sequence_length: 2048 }\n";
}

// One complete run entry; `published` and `extra` replace the defaults.
inline std::string run_entry(const std::string& id, const std::string& scenario_line = "scenario: \"scenarios/s.textproto\"",
                             const std::string& published = "published { tokens_per_s_per_gpu: 1000 }",
                             const std::string& extra = "") {
  return "runs {\n"
         "  id: \"" + id + "\"\n"
         "  " + scenario_line + "\n"
         "  set: VALIDATION\n"
         "  source { title: \"T\" url: \"https://example.org\" table: \"Table 1\" row: \"row 1\" }\n"
         "  " + published + "\n" + extra +
         "}\n";
}

// The InputError message of reading `manifest` in `folder`, or "" when it reads.
inline std::string read_error(const ScratchFolder& folder, const std::string& manifest) {
  folder.write(kManifestName, manifest);
  try {
    load_validation_set(folder.path());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace ragged::validation::testing
