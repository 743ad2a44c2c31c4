#pragma once

// The collector of problems the scenario checks share (scenario_validate.cpp
// and scenario_validate_parallelism.cpp); internal to the scenarios library.

#include <string>
#include <vector>

#include <fmt/format.h>

#include "scenarios/scenario_rules.hpp"

namespace ragged::scenarios::validation {

class Checker {
 public:
  void fail(std::string path, std::string message) { issues_.push_back({std::move(path), std::move(message)}); }

  void at_least(const std::string& path, double value, double minimum, const std::string& what = "") {
    if (!(value >= minimum)) {
      fail(path, fmt::format("{} is {}; it must be at least {}{}", leaf(path), value, minimum,
                             what.empty() ? "" : " (" + what + ")"));
    }
  }

  // An enum field holding a number its message does not name.
  void unknown_value(const std::string& path, int value, const std::string& choices, const std::string& unset) {
    fail(path, fmt::format("{} is {}; use {} (or leave it unset for {})", leaf(path), value, choices, unset));
  }

  std::vector<FieldIssue> take() { return std::move(issues_); }

 private:
  static std::string leaf(const std::string& path) {
    size_t dot = path.find_last_of('.');
    return dot == std::string::npos ? path : path.substr(dot + 1);
  }
  std::vector<FieldIssue> issues_;
};

// The pipeline block against the mesh and the batch (scenario_validate_parallelism.cpp).
void check_pipeline(const Training& t, Checker& c);
// training.experts.overlap_all_to_all against the strategy, mesh, schedule and checkpointing.
void check_expert_overlap(const Training& t, Checker& c);
// The mesh against the GPUs and the FSDP groups it sets, then the pipeline.
void check_mesh(const Training& t, int64_t gpus, Checker& c);

}  // namespace ragged::scenarios::validation
