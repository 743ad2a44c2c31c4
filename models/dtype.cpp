#include "models/dtype.hpp"

#include <array>
#include <string>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "common/text_case.hpp"

namespace ragged::models {
namespace {

struct DTypeAlias {
  std::string_view text;
  DType dtype;
};

// Accepted spellings: our short names first, then PyTorch's.
constexpr std::array<DTypeAlias, 12> kAliases = {{
    {"fp32", DType::kF32},
    {"float32", DType::kF32},
    {"f32", DType::kF32},
    {"bf16", DType::kBF16},
    {"bfloat16", DType::kBF16},
    {"fp16", DType::kF16},
    {"float16", DType::kF16},
    {"f16", DType::kF16},
    {"half", DType::kF16},
    {"fp8", DType::kFP8},
    {"float8_e4m3fn", DType::kFP8},
    {"int8", DType::kInt8},
}};

}  // namespace

int64_t dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kBF16: return 2;
    case DType::kF16: return 2;
    case DType::kFP8: return 1;
    case DType::kInt8: return 1;
  }
  RAGGED_ASSERT(false, "unknown DType");
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "fp32";
    case DType::kBF16: return "bf16";
    case DType::kF16: return "fp16";
    case DType::kFP8: return "fp8";
    case DType::kInt8: return "int8";
  }
  RAGGED_ASSERT(false, "unknown DType");
}

DType parse_dtype(std::string_view text) {
  const std::string lower = lower_case(text);
  for (const DTypeAlias& alias : kAliases) {
    if (alias.text == lower) return alias.dtype;
  }
  throw InputError(fmt::format(
      "unknown dtype '{}': expected fp32 (float32), bf16 (bfloat16), fp16 (float16), fp8 or int8", text));
}

}  // namespace ragged::models
