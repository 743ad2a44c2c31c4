// Text from an input echoed in a message reaches the terminal escaped: an
// ESC in a scenario, a config.json, a trace or an argument does not colour,
// retitle or clear the reader's terminal, and a byte that is not UTF-8 is
// shown as such (issue 52: "text from input files printed raw"). Before, every
// case here printed its bytes as they came.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "cli_test_util.hpp"
#include "common/file_io.hpp"
#include "common/utf8.hpp"

namespace ragged::cli {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::run_cli;

class CliEcho : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ragged_cli_echo_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    write_file_atomically(path, text);
    return path.string();
  }

  fs::path dir_;
};

// Every line printable: valid UTF-8, no control byte but the line ends.
void expect_printable(const std::string& text) {
  EXPECT_EQ(invalid_utf8_at(text), std::nullopt) << text;
  for (char c : text) EXPECT_TRUE(static_cast<unsigned char>(c) >= 0x20 || c == '\n') << text;
}

void expect_escaped_error(const CliResult& result, const std::string& needle) {
  EXPECT_EQ(result.code, 2) << result.err;
  EXPECT_EQ(result.err.rfind("ragged: error: ", 0), 0u) << result.err;
  EXPECT_NE(result.err.find(needle), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << result.err;
  expect_printable(result.err);
}

TEST_F(CliEcho, ControlBytesFromEveryInputAreEscaped) {
  const std::string json_key = write("key.json", "{\"name\": \"a\", \"bogus\\u001b[31m\": 1}");
  const std::string config = write("config.json", "{\"model_type\": \"\\u001b]0;pwned\\u0007\", \"hidden_size\": 768}");
  const std::string named = write("named.textproto", "name: \"red\\x1b[31m\"\nmodel { catalog: \"llama3-8b\" }\n"
                                                     "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"inspect", "llama\x1b[31mX"}, "unknown model 'llama\\x1b[31mX'"},
      {{"scenario", "show", "foo\x1b]0;title\x07"}, "shipped scenario 'foo\\x1b]0;title\\x07'"},
      {{"scenario", "show", (dir_ / "bad\xff\xfe.textproto").string()}, "bad\\xff\\xfe.textproto"},
      {{"scenario", "validate", json_key}, "bogus\\x1b[31m: Cannot find field"},
      {{"inspect", config}, "unsupported model_type '\\x1b]0;pwned\\x07'"},
      {{"scenario", "validate", named}, "name: name holds the control character \\x1b (byte 4 of 8)"},
  };
  for (const auto& [args, needle] : cases) expect_escaped_error(run_cli(args), needle);
}

// A long word of escapes or of multi-byte characters is shortened between
// characters: no escape cut in two, no UTF-8 sequence split.
TEST_F(CliEcho, AShortenedWordKeepsItsCharactersWhole) {
  const CliResult escapes = run_cli({"inspect", std::string(200, '\x1b')});
  expect_escaped_error(escapes, "(802 characters)");
  const std::string word = escapes.err.substr(escapes.err.find('\''), escapes.err.find("...(") - escapes.err.find('\''));
  EXPECT_TRUE(std::regex_match(word, std::regex(R"('(\\x1b)+)"))) << word;

  std::string accents;
  for (int i = 0; i < 100; ++i) accents += "\xc3\xa9";  // é
  const CliResult wide = run_cli({"inspect", accents});
  expect_escaped_error(wide, "(202 characters)");
}

// A config.json's model name (its _name_or_path, or its folder's name: any
// bytes) is printed escaped in reports and JSON: a folder named "cfg\xff"
// ended `inspect --json` in nlohmann's type_error (internal error, exit 1).
TEST_F(CliEcho, AConfigsModelNameIsPrintedEscaped) {
  const std::string fields = R"("model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "vocab_size": 1024,
      "num_attention_heads": 4, "intermediate_size": 512)";
  fs::create_directories(dir_ / "cfg\xff");
  const std::string folder_named = write("cfg\xff/config.json", "{" + fields + "}");
  const CliResult json = run_cli({"inspect", folder_named, "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_NE(json.out.find("\"cfg\\\\xff\""), std::string::npos) << json.out;  // "cfg\\xff" in JSON
  const std::string self_named =
      write("config.json", "{\"_name_or_path\": \"a\\u001b[31mb\", " + fields + "}");
  const CliResult report = run_cli({"inspect", self_named});
  ASSERT_EQ(report.code, 0) << report.err;
  EXPECT_EQ(report.out.rfind("a\\x1b[31mb  (llama, bf16)", 0), 0u) << report.out;
  expect_printable(report.out);
}

// A warning quotes a trace's fields as an error does.
TEST_F(CliEcho, TheWarningOfCompareForceIsEscaped) {
  const std::string predicted = (dir_ / "p.json").string();
  ASSERT_EQ(run_cli({"simulate", "tiny-llama-4xcpu", "--gpus", "1", "--trace", predicted}).code, 0);
  nlohmann::json trace = nlohmann::json::parse(read_file(predicted));
  trace["metadata"]["source"] = "MEASURED";
  trace["metadata"]["strategy"] = "ragged\x1b[31m";
  const std::string measured = write("m.json", trace.dump());
  const CliResult result = run_cli({"compare", predicted, measured, "--force"});
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_NE(result.err.find("ragged: warning: the traces are of different runs: strategy ragged vs ragged\\x1b[31m"),
            std::string::npos)
      << result.err;
  expect_printable(result.err);
}

}  // namespace
}  // namespace ragged::cli
