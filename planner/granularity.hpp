#pragma once
// How finely each tensor may be cut between ranks: its non-shardable granule
// in elements. Vectors (norms, biases) are always element-wise; matrices
// follow the policy: element-wise, every k rows, R x C quantization tiles kept
// whole, or the whole matrix on one rank (Muon/Shampoo ownership). Per-tensor
// overrides match tensor names with globs ("*.experts.*").

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/model_spec.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::planner {

enum class GranuleKind { kElement, kRows, kBlock, kMatrix };

struct GranularitySpec {
  GranuleKind kind = GranuleKind::kElement;
  int64_t rows = 1;        // kRows
  int64_t block_rows = 0;  // kBlock
  int64_t block_cols = 0;  // kBlock

  // "element", "rows:16", "block:128x128", "matrix": the --granularity syntax.
  std::string describe() const;
  // Parses that syntax; throws InputError naming the accepted forms.
  static GranularitySpec parse(std::string_view text);
  static GranularitySpec from_proto(const scenarios::GranularitySpec& spec);
};

// A scenario's training.granularity set to `spec` for every tensor (no
// overrides), edge tiles allowed: what a command-line granularity means, as
// it applies to any model.
void set_uniform_granularity(const GranularitySpec& spec, scenarios::Granularity* granularity);

struct GranularityOverride {
  std::string pattern;
  GranularitySpec spec;
};

struct GranularityPolicy {
  GranularitySpec default_spec;
  std::vector<GranularityOverride> overrides;  // first match wins
  bool partial_blocks = false;  // allow edge tiles where a block does not divide a tensor

  static GranularityPolicy from_proto(const scenarios::Granularity& granularity);

  // The granule of `tensor` in elements. Throws FieldError (path of the rule
  // that applies) when a block does not divide the tensor and partial blocks
  // are not allowed.
  int64_t granule_elements(const models::TensorSpec& tensor) const;

  // Checks every tensor of the model; throws the first FieldError.
  void check(const models::ModelSpec& model) const;

 private:
  // The rule for a tensor name, and the scenario field path it comes from.
  const GranularitySpec& rule_for(std::string_view tensor_name, std::string* field_path) const;
};

// Glob match over a whole name: '*' matches any text (dots included), '?' one character.
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace ragged::planner
