// Extreme numbers in a scenario, a config.json or on the command line end in
// exit 2 and one line naming the field, within a second: never a crash
// (SIGFPE, bad_alloc, an assertion, a SimGrid backtrace), a hang, or a
// wrapped number accepted with exit 0. They run the real executable, so a
// crash fails the test instead of ending it. docs/RELIABILITY.md, "Input limits".

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli_test_util.hpp"
#include "common/file_io.hpp"

namespace ragged::cli {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::run_binary;

// A tiny model on 2 x 2 H100s, every number written out so a case can replace it.
const char* kBase =
    "model { inline_spec { name: \"t\" family: \"llama\" hidden_size: 256 num_layers: 4 vocab_size: 1024\n"
    "  intermediate_size: 704 num_attention_heads: 8 num_key_value_heads: 4 head_dim: 32 } }\n"
    "cluster { gpu { preset: \"h100\" hbm_capacity_gib: 80 tdp_watts: 700 } gpus_per_node: 2 nodes: 2\n"
    "  intra_node { bandwidth_gbytes_per_s: 450 latency_us: 1 }\n"
    "  nics { bandwidth_gbits_per_s: 400 latency_us: 2 } topology { hop_latency_us: 0.5 } }\n"
    "training { micro_batch_size: 2 sequence_length: 128 gradient_accumulation_steps: 1\n"
    "  optimizer { adamw { lr: 0.001 beta1: 0.9 } } }\n"
    "run { steps: 3 model_scale: 1 }\n";

// A guard against blow-ups (a config.json's 4e10 layers took 72 s before its
// refusal), not a speed bar: generous enough for a loaded 2-core machine and
// a sanitized build (make sanitize runs the binary 2 to 5 times slower).
#if defined(__SANITIZE_ADDRESS__)
constexpr double kMaxSeconds = 30.0;
#else
constexpr double kMaxSeconds = 10.0;
#endif

struct Case {
  std::string edits;  // "field: value; field: value": each replaces the field's value in kBase
  std::string field;  // the field path the one line must name
};

class CliLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ragged_cli_limits_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string scenario_with(const std::string& edits) {
    std::string text = kBase;
    std::regex pair(R"(\s*(\w+): ([^;]+))");
    for (auto it = std::sregex_iterator(edits.begin(), edits.end(), pair); it != std::sregex_iterator(); ++it) {
      const std::string key = (*it)[1].str();
      const std::regex field("\\b" + key + ": [^ \\n}]+");
      EXPECT_TRUE(std::regex_search(text, field)) << key;
      text = std::regex_replace(text, field, key + ": " + (*it)[2].str(), std::regex_constants::format_first_only);
    }
    const fs::path path = dir_ / "s.textproto";
    write_file_atomically(path, text);
    return path.string();
  }

  // Exit 2, "ragged: error: ..." naming `needle` (a few more problems each a
  // line of their own), nothing on stdout, within a second; at most 220
  // characters a line besides the temporary folder's path.
  void expect_refused(const std::string& args, const std::string& needle) const {
    const auto start = std::chrono::steady_clock::now();
    const CliResult result = run_binary(args);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(result.code, 2) << args << "\n" << result.err;
    EXPECT_TRUE(result.out.empty()) << args << "\n" << result.out;
    EXPECT_EQ(result.err.rfind("ragged: error: ", 0), 0u) << args << "\n" << result.err;
    EXPECT_NE(result.err.find(needle), std::string::npos) << args << "\n" << result.err;
    // One line per problem: the first, then each of a few more listed ("  and ...").
    std::string text = result.err;
    for (size_t at = text.find(dir_.string()); at != std::string::npos; at = text.find(dir_.string())) {
      text.erase(at, dir_.string().size());
    }
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text.back(), '\n') << result.err;
    size_t begin = 0;
    for (size_t end = text.find('\n'); end != std::string::npos; begin = end + 1, end = text.find('\n', begin)) {
      const std::string line = text.substr(begin, end - begin);
      if (begin > 0) {
        EXPECT_EQ(line.rfind("  and ", 0), 0u) << result.err;
      }
      EXPECT_LE(line.size(), 220u) << result.err;
    }
    EXPECT_LT(seconds, kMaxSeconds) << args;
  }

  fs::path dir_;
};

TEST_F(CliLimits, BaseScenarioIsValid) {
  const CliResult result = run_binary("scenario validate " + scenario_with(""));
  EXPECT_EQ(result.code, 0) << result.err;
}

TEST_F(CliLimits, ExtremeScenarioNumbersNameTheField) {
  const std::vector<Case> cases = {
      // Crashes before the limits: SIGFPE, bad_alloc, an assertion, a SimGrid backtrace.
      {"head_dim: 4611686018427387904", "model.inline_spec.head_dim: head_dim is 4611686018427387904"},
      {"num_layers: 2000000000", "model.inline_spec.num_layers: num_layers is 2000000000"},
      {"hidden_size: -9223372036854775808; num_attention_heads: -1", "model.inline_spec.hidden_size"},
      {"nodes: 2147483647", "cluster.nodes: nodes is 2147483647"},
      {"gpus_per_node: 1024; nodes: 2048", "cluster.nodes: gpus_per_node 1024 x nodes 2048 is 2,097,152 GPUs"},
      {"gradient_accumulation_steps: 1000000000", "training.gradient_accumulation_steps"},
      {"hbm_capacity_gib: 1e308", "cluster.gpu.hbm_capacity_gib: hbm_capacity_gib is 1e+308"},
      {"micro_batch_size: 2147483647; sequence_length: 1048576", "training.micro_batch_size"},
      {"micro_batch_size: 65536; sequence_length: 65536", "training.micro_batch_size: micro_batch_size 65536 x sequence_length 65536"},
      {"tdp_watts: 65536", "cluster.gpu.power_limit_watts"},
      {"bandwidth_gbytes_per_s: 1e308", "cluster.intra_node.bandwidth_gbytes_per_s"},
      // NaN and infinity, accepted with exit 0 before.
      {"lr: nan", "training.optimizer.adamw.lr: lr is nan"},
      {"lr: -inf", "training.optimizer.adamw.lr"},
      {"beta1: 1", "training.optimizer.adamw.beta1: beta1 is 1"},
      {"latency_us: nan", "cluster.intra_node.latency_us"},
      {"hop_latency_us: inf", "cluster.topology.hop_latency_us"},
      {"model_scale: inf", "run.model_scale"},
      {"steps: 2147483647", "run.steps"},
      // A NIC that moves nothing, refused by `scenario validate` (SimGrid failed on it).
      {"bandwidth_gbits_per_s: 0", "cluster.nics.bandwidth_gbits_per_s: bandwidth_gbits_per_s is 0"},
      // A bandwidth so small that SimGrid's clock overflowed (found by trying every field).
      {"bandwidth_gbytes_per_s: 1e-300", "cluster.intra_node.bandwidth_gbytes_per_s: bandwidth_gbytes_per_s is 1e-300; "
                                         "it must be a number from 0.001 to 1,000,000"},
  };
  for (const Case& c : cases) {
    const std::string path = scenario_with(c.edits);
    expect_refused("scenario validate " + path, c.field);
    expect_refused("simulate " + path, c.field);
  }
}

// Limits that only the built model shows: its size, its Program's length and
// the bytes of a step.
TEST_F(CliLimits, DerivedSizesNameTheField) {
  const std::vector<Case> cases = {
      {"hidden_size: 1048576; num_attention_heads: 64; head_dim: 16384; num_layers: 4096",
       "model.inline_spec.num_layers: num_layers must be smaller: about"},
      {"hidden_size: 65536; num_attention_heads: 64; head_dim: 1024; num_layers: 1024; micro_batch_size: 1024; "
       "sequence_length: 65536",
       "training.micro_batch_size: a micro-batch of 1024 x 65536 tokens"},
      {"num_layers: 4096; gradient_accumulation_steps: 4096", "training.gradient_accumulation_steps: gradient_accumulation_steps 4096 x 4098 units"},
  };
  for (const Case& c : cases) expect_refused("scenario validate " + scenario_with(c.edits), c.field);
  const std::string experts = scenario_with("num_layers: 4096");
  std::string text = read_file(experts);
  text.replace(text.find("head_dim: 32"), 12, "head_dim: 32 num_experts: 4096 experts_per_token: 1 moe_intermediate_size: 1");
  write_file_atomically(experts, text);
  expect_refused("scenario validate " + experts, "model.inline_spec.num_experts: num_experts must be smaller: 4096 MoE layers x 4096 experts");
}

// 8-bit Adam's tile check divided by a zero tile (SIGFPE inside `scenario validate`).
TEST_F(CliLimits, ZeroOptimizerTileIsRefusedNotDividedBy) {
  std::string text = read_file(scenario_with(""));
  text.replace(text.find("adamw { lr: 0.001 beta1: 0.9 }"), 30, "adam8bit { block_rows: 0 }");
  write_file_atomically(dir_ / "tile.textproto", text);
  expect_refused("scenario validate " + (dir_ / "tile.textproto").string(),
                 "training.optimizer.adam8bit.block_rows: block_rows is 0; it must be a whole number from 1 to 65,536");
}

// Found by fuzzing: a name too long for the file system and a JSON number
// beyond a double were internal errors (exit 1).
TEST_F(CliLimits, FuzzFindingsEndInOneLine) {
  expect_refused("plan " + std::string(5000, 'x'), "no scenario file or shipped scenario 'xxx");
  expect_refused("inspect " + std::string(5000, 'x') + "/config.json", "File name too long");
  const fs::path config = dir_ / "config.json";
  write_file_atomically(config, R"({"model_type": "llama", "hidden_size": 1e400})");
  expect_refused("inspect " + config.string(), "malformed JSON: number overflow parsing '1e400'");
}

TEST_F(CliLimits, CommandLineNumbersGoThroughTheScenarioChecks) {
  expect_refused("plan tiny-llama-4xcpu --granularity block:99999999999x1",
                 "bad granularity 'block:99999999999x1': 99999999999 is out of range");
  expect_refused("plan tiny-llama-4xcpu --granularity rows:2147483648", "2147483648 is out of range");
  expect_refused("simulate tiny-llama-4xcpu --gpus 2147483647", "cluster.nodes");
  expect_refused("plan tiny-llama-4xcpu --layers 100000", "model.layers");
  std::string adam8bit = read_file(scenario_with(""));
  adam8bit.replace(adam8bit.find("adamw { lr: 0.001 beta1: 0.9 }"), 30, "adam8bit {}");
  write_file_atomically(dir_ / "adam8bit.textproto", adam8bit);
  expect_refused("plan " + (dir_ / "adam8bit.textproto").string() + " --granularity element",
                 "training.granularity.default_spec: 8-bit Adam quantizes");
}

TEST_F(CliLimits, ExtremeConfigJsonNumbersNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"model_type": "llama", "hidden_size": 4611686018427387904, "num_hidden_layers": 2, "vocab_size": 64,
           "num_attention_heads": 1, "intermediate_size": 64})", "field 'hidden_size' is too large"},
      {R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2000000000, "vocab_size": 64,
           "num_attention_heads": 1, "intermediate_size": 64})", "num_layers must be at most 4096 (got 2000000000)"},
      {R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 64,
           "num_attention_heads": 4, "head_dim": 4611686018427387, "intermediate_size": 64})", "head_dim must be at most 65536"},
      {R"({"model_type": "mixtral", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 64,
           "num_attention_heads": 4, "intermediate_size": 64, "num_local_experts": 1000000,
           "num_experts_per_tok": 2})", "num_experts must be at most 4096 (got 1000000)"},
      {R"({"model_type": "mpt", "d_model": 64, "n_layers": 2, "n_heads": 4, "vocab_size": 64,
           "expansion_ratio": 1e300})", "field 'expansion_ratio' must be a finite number of at most 2^53"},
      {R"({"model_type": "gpt2", "n_embd": 1048576, "n_layer": 4096, "n_head": 16, "vocab_size": 64,
           "n_positions": 1024})", "num_layers must be smaller: about"},
  };
  for (const auto& [json, needle] : cases) {
    const fs::path path = dir_ / "config.json";
    write_file_atomically(path, json);
    expect_refused("inspect " + path.string(), needle);
  }
}

// 300,000 bad entries of one list, 1.2 MB: each is a problem, counted in
// one line; the de-duplication of problems by field once cost their square
// (over 120 s for 400,000).
TEST_F(CliLimits, AListOfManyBadEntriesIsOneLineWithTheirCount) {
  std::string entries = "-1";
  for (int i = 1; i < 300000; ++i) entries += ", -1";
  const fs::path path = dir_ / "many.textproto";
  write_file_atomically(path, "name: \"many\"\nmodel { catalog: \"llama3-8b\" }\n"
                              "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n"
                              "training { mesh { pp: 2 } pipeline { layers_per_stage: [" + entries + "] } }\n");
  expect_refused("scenario validate " + path.string(), "layers_per_stage[0]: layers_per_stage is -1");
  expect_refused("scenario validate " + path.string(), "(300000 more problems)");
}

}  // namespace
}  // namespace ragged::cli
