#pragma once
// Lookups shared by the models test suites.

#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "common/errors.hpp"
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

}  // namespace ragged::models::test_util
