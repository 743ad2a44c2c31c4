#pragma once
// Element types of parameters, gradients and optimizer states.

#include <cstdint>
#include <string_view>

namespace ragged::models {

enum class DType { kF32, kBF16, kF16, kFP8, kInt8 };

int64_t dtype_bytes(DType dtype);
std::string_view dtype_name(DType dtype);  // "fp32", "bf16", "fp16", "fp8", "int8"
// Parses "fp32"/"float32", "bf16"/"bfloat16", ...; throws InputError otherwise.
DType parse_dtype(std::string_view text);

}  // namespace ragged::models
