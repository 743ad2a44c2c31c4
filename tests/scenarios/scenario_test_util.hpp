#pragma once
// Helpers for scenario tests: parse text and capture the one-line error.

#include <string>

#include "common/errors.hpp"
#include "scenarios/scenario_loader.hpp"
#include "tests/common/expect_contains.hpp"

namespace ragged::scenarios::testing {

// The message of the InputError that parsing `text` raises, or "" if it parses.
inline std::string parse_error(const std::string& text, ScenarioFormat format = ScenarioFormat::kText) {
  try {
    parse_scenario(text, format, "test.textproto", ".");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A valid scenario in text format that tests modify one field at a time.
inline std::string minimal_scenario() {
  return "model { catalog: \"llama3-8b\" }\n"
         "cluster {\n"
         "  gpu { preset: \"h100\" }\n"
         "  gpus_per_node: 8\n"
         "  nodes: 2\n"
         "}\n"
         "training {\n"
         "  strategy: FSDP2\n"
         "}\n";
}

// The minimal scenario, loaded.
inline LoadedScenario loaded_minimal_scenario() {
  return parse_scenario(minimal_scenario(), ScenarioFormat::kText, "t.textproto", ".");
}

// The minimal scenario with its training block's strategy line replaced by `fields`.
inline std::string minimal_scenario_training(const std::string& fields) {
  std::string text = minimal_scenario();
  const std::string anchor = "  strategy: FSDP2\n";
  return text.replace(text.find(anchor), anchor.size(), fields + "\n");
}

// The defaulted training block of the minimal scenario with `fields` as its training.
inline Training training_with(const std::string& fields) {
  return parse_scenario(minimal_scenario_training(fields), ScenarioFormat::kText, "test.textproto", ".")
      .scenario.training();
}

}  // namespace ragged::scenarios::testing
