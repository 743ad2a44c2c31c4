#include "planner/granularity.hpp"

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged::planner {
namespace {

// A whole number from 1 to 2,147,483,647 (the scenario's int32 fields).
int64_t parse_positive(std::string_view text, std::string_view whole) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  const auto shortened = [](std::string_view t) { return t.size() <= 24 ? std::string(t) : std::string(t.substr(0, 20)) + "..."; };
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error == std::errc::result_out_of_range || (error == std::errc() && end == text.data() + text.size() && value > kMax)) {
    throw InputError(fmt::format("bad granularity '{}': {} is out of range: give a whole number from 1 to 2,147,483,647",
                                 shortened(whole), shortened(text)));
  }
  if (error != std::errc() || end != text.data() + text.size() || value < 1) {
    throw InputError(fmt::format("bad granularity '{}': '{}' is not a positive integer "
                                 "(use element, rows:K, block:RxC or matrix)", shortened(whole), shortened(text)));
  }
  return value;
}

std::string shape_text(const models::TensorSpec& tensor) {
  std::string text = "[";
  for (size_t i = 0; i < tensor.shape.size(); ++i) text += (i ? ", " : "") + std::to_string(tensor.shape[i]);
  return text + "]";
}

}  // namespace

std::string GranularitySpec::describe() const {
  switch (kind) {
    case GranuleKind::kElement: return "element";
    case GranuleKind::kRows: return fmt::format("rows:{}", rows);
    case GranuleKind::kBlock: return fmt::format("block:{}x{}", block_rows, block_cols);
    case GranuleKind::kMatrix: return "matrix";
  }
  return "?";
}

GranularitySpec GranularitySpec::parse(std::string_view text) {
  GranularitySpec spec;
  if (text == "element") return spec;
  if (text == "matrix") {
    spec.kind = GranuleKind::kMatrix;
    return spec;
  }
  if (text.starts_with("rows:")) {
    spec.kind = GranuleKind::kRows;
    spec.rows = parse_positive(text.substr(5), text);
    return spec;
  }
  if (text.starts_with("block:")) {
    std::string_view dims = text.substr(6);
    size_t x = dims.find('x');
    if (x == std::string_view::npos) throw InputError(fmt::format("bad granularity '{}': write block:RxC, e.g. block:128x128", text));
    spec.kind = GranuleKind::kBlock;
    spec.block_rows = parse_positive(dims.substr(0, x), text);
    spec.block_cols = parse_positive(dims.substr(x + 1), text);
    return spec;
  }
  throw InputError(fmt::format("bad granularity '{}': use element, rows:K, block:RxC or matrix", text));
}

GranularitySpec GranularitySpec::from_proto(const scenarios::GranularitySpec& proto) {
  GranularitySpec spec;
  switch (proto.kind()) {
    case scenarios::ROWS: spec.kind = GranuleKind::kRows; spec.rows = proto.rows(); break;
    case scenarios::BLOCK:
      spec.kind = GranuleKind::kBlock;
      spec.block_rows = proto.block_rows();
      spec.block_cols = proto.block_cols();
      break;
    case scenarios::MATRIX: spec.kind = GranuleKind::kMatrix; break;
    default: break;
  }
  return spec;
}

void set_uniform_granularity(const GranularitySpec& spec, scenarios::Granularity* granularity) {
  granularity->clear_overrides();
  auto* out = granularity->mutable_default_spec();
  out->set_kind(spec.kind == GranuleKind::kRows    ? scenarios::ROWS
                : spec.kind == GranuleKind::kBlock ? scenarios::BLOCK
                : spec.kind == GranuleKind::kMatrix ? scenarios::MATRIX
                                                    : scenarios::ELEMENT);
  out->set_rows(static_cast<int32_t>(spec.rows));
  out->set_block_rows(static_cast<int32_t>(spec.block_rows));
  out->set_block_cols(static_cast<int32_t>(spec.block_cols));
  granularity->set_partial_blocks(true);
}

GranularityPolicy GranularityPolicy::from_proto(const scenarios::Granularity& granularity) {
  GranularityPolicy policy;
  policy.default_spec = GranularitySpec::from_proto(granularity.default_spec());
  for (const auto& o : granularity.overrides()) {
    policy.overrides.push_back({o.pattern(), GranularitySpec::from_proto(o.granularity())});
  }
  policy.partial_blocks = granularity.partial_blocks();
  return policy;
}

const GranularitySpec& GranularityPolicy::rule_for(std::string_view tensor_name, std::string* field_path) const {
  for (size_t i = 0; i < overrides.size(); ++i) {
    if (glob_match(overrides[i].pattern, tensor_name)) {
      if (field_path) *field_path = fmt::format("training.granularity.overrides[{}].granularity", i);
      return overrides[i].spec;
    }
  }
  if (field_path) *field_path = "training.granularity.default_spec";
  return default_spec;
}

int64_t GranularityPolicy::granule_elements(const models::TensorSpec& tensor) const {
  if (!tensor.is_matrix()) return 1;
  std::string path;
  const GranularitySpec& spec = rule_for(tensor.name, &path);
  const int64_t row_length = tensor.row_length();
  const int64_t matrix_rows = tensor.rows() / tensor.matrices();
  switch (spec.kind) {
    case GranuleKind::kElement: return 1;
    case GranuleKind::kRows: return spec.rows * row_length;
    case GranuleKind::kMatrix: return matrix_rows * row_length;
    case GranuleKind::kBlock: {
      bool rows_divide = matrix_rows % spec.block_rows == 0;
      bool cols_divide = row_length % spec.block_cols == 0;
      if (!(rows_divide && cols_divide) && !partial_blocks) {
        throw FieldError(path, fmt::format(
            "block {}x{} does not divide tensor {} {}: {} is not a multiple of {}; set "
            "training.granularity.partial_blocks: true to allow edge tiles, or add an override for this tensor",
            spec.block_rows, spec.block_cols, tensor.name, shape_text(tensor),
            rows_divide ? fmt::format("its row length {}", row_length) : fmt::format("its {} rows", matrix_rows),
            rows_divide ? spec.block_cols : spec.block_rows));
      }
      // Tiles restart at every matrix of a fused tensor: when they do not
      // divide it, only whole matrices are safe cut points.
      if (!rows_divide && tensor.matrices() > 1) return matrix_rows * row_length;
      return spec.block_rows * row_length;
    }
  }
  return 1;
}

void GranularityPolicy::check(const models::ModelSpec& model) const {
  for (const auto& unit : model.units) {
    for (const auto& tensor : unit.tensors) granule_elements(tensor);
  }
}

bool glob_match(std::string_view pattern, std::string_view text) {
  // Iterative wildcard matching with backtracking to the last '*'.
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace ragged::planner
