#pragma once
// Lookups shared by the models test suites.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "models/hf_config.hpp"
#include "models/model_spec.hpp"

namespace ragged::models::test_util {

inline const UnitSpec* find_unit(const ModelSpec& model, std::string_view name) {
  for (const UnitSpec& unit : model.units) {
    if (unit.name == name) return &unit;
  }
  return nullptr;
}

inline const TensorSpec* find_tensor(const UnitSpec& unit, std::string_view name) {
  for (const TensorSpec& tensor : unit.tensors) {
    if (tensor.name == name) return &tensor;
  }
  return nullptr;
}

inline const TensorSpec* find_tensor(const ModelSpec& model, std::string_view name) {
  for (const UnitSpec& unit : model.units) {
    if (const TensorSpec* tensor = find_tensor(unit, name)) return tensor;
  }
  return nullptr;
}

inline const GemmShape* find_gemm(const UnitSpec& unit, std::string_view name) {
  for (const GemmShape& gemm : unit.compute.gemms) {
    if (gemm.name == name) return &gemm;
  }
  return nullptr;
}

inline int64_t count_role(const UnitSpec& unit, TensorRole role) {
  int64_t n = 0;
  for (const TensorSpec& tensor : unit.tensors) n += tensor.role == role ? 1 : 0;
  return n;
}

// Runs `body` and returns the InputError message it throws ("" and a test failure if none).
template <typename Body>
std::string input_error_of(Body&& body) {
  try {
    body();
  } catch (const InputError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected an InputError";
  return "";
}

using Shape = std::vector<int64_t>;

// The shape of tensor `name` ({} and a test failure if the model has none).
inline Shape shape_of(const ModelSpec& model, std::string_view name) {
  const TensorSpec* tensor = find_tensor(model, name);
  EXPECT_NE(tensor, nullptr) << "no tensor " << name;
  return tensor == nullptr ? Shape{} : tensor->shape;
}

// A checked-in Hugging Face config.json: tests/models/data/<folder>/config.json.
inline std::filesystem::path fixture(const std::string& folder) {
  return std::filesystem::path(RAGGED_SOURCE_DIR) / "tests/models/data" / folder / "config.json";
}

inline nlohmann::json fixture_json(const std::string& folder) {
  return nlohmann::json::parse(read_file(fixture(folder)));
}

// The InputError message of importing `config` (origin "bad/config.json").
inline std::string import_error(const nlohmann::json& config) {
  return input_error_of([&] { arch_from_hf_json(config.dump(), "bad/config.json"); });
}

}  // namespace ragged::models::test_util
