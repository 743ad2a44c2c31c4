// Inputs the importers' fuzz targets found (tests/fuzz/corpus/import_*/finding-*,
// docs/results/fuzz.md): each ends in one located line, or imports to a
// scenario that loads.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "common/errors.hpp"
#include "importers/config_readers.hpp"
#include "import_test_util.hpp"

namespace ragged::importers {
namespace {

std::string json_error(const std::string& text) {
  try {
    read_json(text, "ds.json", "json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string shipped(const std::string& name) {
  std::ifstream in(testing::data(name));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// nlohmann refuses 1e400 with out_of_range, not parse_error: it escaped as an
// internal error (exit 1).
TEST(ImportFuzzFindings, AJsonNumberBeyondADoubleNamesItsField) {
  testing::expect_one_line(json_error("{\n  \"train_batch_size\": 1e400\n}\n"),
                           "ds.json:2:23: train_batch_size: the number 1e400 is beyond a double's range (about "
                           "1.8e308): write a smaller number");
  testing::expect_one_line(json_error("{\"1e999\": {\"betas\": [0.9, -1e999]}}"),
                           "ds.json:1:27: betas: the number -1e999 is beyond a double's range");
}

// A line break in a value or a key read from the input ended its comment in
// the written scenario, and the rest of the line was parsed as scenario text
// (the written scenario was refused, or took a field from the config's text).
TEST(ImportFuzzFindings, ALineBreakInAValueOrAKeyStaysInItsComment) {
  const auto dir = testing::scratch("fuzz_line_break");
  std::string toml = shipped("torchtitan_llama3_8b.toml");
  const std::string description = "description = \"Llama 3 8B training\"";
  ASSERT_NE(toml.find(description), std::string::npos);
  toml.replace(toml.find(description), description.size(), "description = \"x\\nname: \\\"y\\\"\\r\\u0000z\"");
  toml += "\n[job.extra]\n\"a\\nsteps: 5\" = 1\n";
  const ImportedConfig imported = import_config(testing::config_file(dir, "broken.toml", toml), testing::on_gpus(8));
  const scenarios::Scenario s = testing::written(imported);
  EXPECT_EQ(s.name(), "broken");
  EXPECT_EQ(s.description(), "x\nname: \"y\"  z");  // a carriage return and a NUL would steer a terminal
  EXPECT_NE(imported.scenario_text.find("#   description: \"x name: \"y\"  z\"  <- job.description"), std::string::npos)
      << imported.scenario_text;
}

// yaml-cpp takes any bytes: a model block's "n_layers: 0\xAD" reached the MPT
// config.json, whose dump threw nlohmann's type_error.316 (internal error, exit 1).
TEST(ImportFuzzFindings, AYamlConfigThatIsNotUtf8IsRefusedAtItsByte) {
  const auto dir = testing::scratch("fuzz_utf8");
  const auto path = testing::config_file(dir, "bad.yaml", "model:\n  name: mpt_causal_lm\n  n_layers: 0\xad\n");
  testing::expect_one_line(testing::import_error(path, testing::on_gpus(8)),
                           "bad.yaml:3:14: byte 0xAD is not UTF-8: a YAML config is UTF-8 text; save the file as UTF-8");
  std::string error;
  try {
    read_yaml("\xff: 1\n", "f.yaml", "yaml");
  } catch (const InputError& e) {
    error = e.what();
  }
  testing::expect_one_line(error, "f.yaml:1:1: byte 0xFF is not UTF-8");
}

}  // namespace
}  // namespace ragged::importers
