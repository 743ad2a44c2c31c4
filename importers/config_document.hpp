#pragma once
// A training config read from TOML, YAML or JSON, flattened to its leaves:
// each scalar (or list of scalars) under its dotted path
// ("parallelism.tensor_parallel_degree", "optimizer.betas"), with the line
// and column where it is written. The format importers read the leaves
// they map; whatever none of them read is listed in the scenario written
// out as not mapped, so every field of the input is accounted for.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ragged::importers {

struct ConfigValue {
  enum class Kind { kNull, kBool, kInt, kFloat, kString, kList, kEmptyTable };
  Kind kind = Kind::kNull;
  std::string text;       // strings: the value; other scalars: as written; lists: "[a, b]"
  bool boolean = false;
  int64_t integer = 0;
  double number = 0;      // kInt and kFloat
  std::vector<ConfigValue> items;  // kList: the scalars in order
  int line = 0;           // 1-based; 0 when unknown
  int column = 0;
};

struct ConfigLeaf {
  std::string path;
  ConfigValue value;
};

// The most leaves a config may have (a training config has a few hundred);
// more is refused before any mapping, so that YAML aliases expanded over
// and over cannot make an import slow.
inline constexpr size_t kMaxConfigLeaves = 20000;

class ConfigDocument {
 public:
  ConfigDocument(std::string origin, std::string format) : origin_(std::move(origin)), format_(std::move(format)) {}

  const std::string& origin() const { return origin_; }
  const std::string& format() const { return format_; }  // "torchtitan job config", ...

  // Readers add leaves in document order; a second leaf of the same path replaces the first.
  void add(std::string path, ConfigValue value);
  const std::vector<ConfigLeaf>& leaves() const { return leaves_; }

  // The leaf at `path`, marked read; nullptr when absent (or null).
  const ConfigValue* find(std::string_view path) const;
  bool has(std::string_view path) const { return find(path) != nullptr; }
  // Whether any leaf lies under `prefix` ("quantize.linear.float8").
  bool has_section(std::string_view prefix) const;
  // Marks a leaf read without using it (the importer commented it itself).
  void mark_read(std::string_view path) const;
  bool was_read(const ConfigLeaf& leaf) const;

  // Typed reads: absent gives nullopt; a value of another type or out of
  // [min, max] is a located InputError naming the field and the fix.
  std::optional<int64_t> integer(std::string_view path, int64_t min, int64_t max) const;
  std::optional<double> number(std::string_view path, double min, double max) const;
  std::optional<bool> boolean(std::string_view path) const;
  std::optional<std::string> string(std::string_view path) const;
  // A list of strings, or one string as a list of one.
  std::vector<std::string> strings(std::string_view path) const;
  // Whether the field holds the string "auto" (Hugging Face's DeepSpeed integration).
  bool is_auto(std::string_view path) const;

  // "origin:line:col: path: message" (no line when the field is not written).
  std::string located(std::string_view path, const std::string& message) const;
  [[noreturn]] void fail(std::string_view path, const std::string& message) const;
  // "path = value (line N)" for comments.
  std::string quoted(std::string_view path) const;

 private:
  const ConfigLeaf* leaf(std::string_view path) const;

  std::string origin_;
  std::string format_;
  std::vector<ConfigLeaf> leaves_;
  std::unordered_map<std::string, size_t> index_;  // path -> leaves_ index
  mutable std::vector<bool> read_;
};

// A value as a comment shows it: strings quoted, at most 60 characters.
std::string value_text(const ConfigValue& value);

}  // namespace ragged::importers
