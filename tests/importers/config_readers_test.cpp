// The three readers: leaves with their lines, interpolation, and input that
// is malformed, too deep or too large refused with one located line.

#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "importers/config_readers.hpp"
#include "import_test_util.hpp"

namespace ragged::importers {
namespace {

std::string error_of(const std::function<void()>& read) {
  try {
    read();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigReaders, TomlLeavesCarryTheirLines) {
  const ConfigDocument doc = read_toml("[training]\nseq_len = 8192\n\n[model]\nconverters = [\"float8\"]\n", "t.toml", "toml");
  EXPECT_EQ(*doc.integer("training.seq_len", 1, 1 << 20), 8192);
  EXPECT_EQ(doc.quoted("training.seq_len"), "training.seq_len = 8192 (line 2)");
  EXPECT_EQ(doc.strings("model.converters"), std::vector<std::string>{"float8"});
  testing::expect_one_line(error_of([] { read_toml("[training]\nseq_len = = 3\n", "bad.toml", "toml"); }),
                           "bad.toml:2:");
  testing::expect_one_line(error_of([] { read_toml("[training]\nseq_len = = 3\n", "bad.toml", "toml"); }),
                           "malformed TOML");
}

TEST(ConfigReaders, AWrongTypeNamesTheFieldAndTheFix) {
  const ConfigDocument doc =
      read_toml("[parallelism]\ntensor_parallel_degree = \"eight\"\n", "t.toml", "toml");
  testing::expect_one_line(error_of([&] { doc.integer("parallelism.tensor_parallel_degree", 1, 1024); }),
                           "t.toml:2:26: parallelism.tensor_parallel_degree: \"eight\" is a string, not a whole "
                           "number; give a whole number from 1 to 1024");
}

TEST(ConfigReaders, YamlResolvesOmegaConfInterpolations) {
  const ConfigDocument doc = read_yaml("variables:\n  seq: 2048\nmax_seq_len: ${variables.seq}\nname: '${x}'\n", "f.yaml", "yaml");
  EXPECT_EQ(*doc.integer("max_seq_len", 1, 1 << 20), 2048);
  EXPECT_EQ(doc.quoted("max_seq_len"), "max_seq_len = 2048 (line 3)");
  EXPECT_EQ(*doc.string("name"), "${x}");  // quoted: a string, not an interpolation
  testing::expect_one_line(error_of([] { read_yaml("a: ${b.c}\n", "f.yaml", "yaml"); }),
                           "f.yaml:1:4: interpolation ${b.c}: names no value of this file");
  testing::expect_one_line(error_of([] { read_yaml("a: ${b}\nb: ${a}\n", "f.yaml", "yaml"); }), "a cycle");
  testing::expect_one_line(error_of([] { read_yaml("a: [1, 2\n", "f.yaml", "yaml"); }), "malformed YAML");
}

TEST(ConfigReaders, DeepOrExplodingInputIsRefusedBeforeItCosts) {
  const std::string brackets = "a: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
  testing::expect_one_line(error_of([&] { read_yaml(brackets, "deep.yaml", "yaml"); }), "deep.yaml:1:36: nested deeper than 32");
  testing::expect_one_line(error_of([&] { read_json("{\"a\": " + std::string(1000, '[') + "}", "deep.json", "json"); }),
                           "nested deeper than 32");
  testing::expect_one_line(error_of([&] { read_toml("a = " + std::string(1000, '[') + "\n", "deep.toml", "toml"); }),
                           "deep.toml:1:");
  // A billion laughs: nine levels of nine aliases would be 9^9 leaves.
  std::string laughs = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    laughs += fmt::format("a{}: &a{} [", i, i);
    for (int j = 0; j < 9; ++j) laughs += fmt::format("{}*a{}", j > 0 ? ", " : "", i - 1);
    laughs += "]\n";
  }
  testing::expect_one_line(error_of([&] { read_yaml(laughs, "laughs.yaml", "yaml"); }), "laughs.yaml: more than");
}

TEST(ConfigReaders, JsonLeavesAndErrorsAreLocated) {
  const ConfigDocument doc = read_json("{\n  \"zero_optimization\": {\n    \"stage\": 3\n  }\n}\n", "ds.json", "json");
  EXPECT_EQ(doc.quoted("zero_optimization.stage"), "zero_optimization.stage = 3 (line 3)");
  testing::expect_one_line(error_of([] { read_json("{\n  \"a\": 1,\n  \"b\": }\n", "ds.json", "json"); }),
                           "ds.json:3:8: malformed JSON");
  // DeepSpeedExamples' templates hold placeholders: the message quotes what was read.
  testing::expect_one_line(error_of([] { read_json("{\n  \"train_batch_size\" : GB_SIZE,\n}\n", "t.json", "json"); }),
                           "t.json:2:24: malformed JSON: syntax error while parsing value - invalid literal; last read: "
                           "'\"train_batch_size\" : G'");
}

TEST(ConfigReaders, AnInputOverSixteenMibIsRefusedUnread) {
  const auto dir = testing::scratch("readers_size");
  const auto path = dir / "huge.toml";
  {
    std::ofstream out(path);
    const std::string line(1023, '#');
    for (int i = 0; i < 17 * 1024; ++i) out << line << '\n';
  }
  testing::expect_one_line(testing::import_error(path, testing::on_gpus(8)), "huge.toml");
  EXPECT_NE(testing::import_error(path, testing::on_gpus(8)).find("16777216"), std::string::npos)
      << testing::import_error(path, testing::on_gpus(8));
}

}  // namespace
}  // namespace ragged::importers
