// TensorSpec geometry, dtypes and the names of enums.

#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "models/dtype.hpp"
#include "models/model_spec.hpp"
#include "test_helpers.hpp"

namespace ragged::models {
namespace {

using test_util::input_error_of;

TEST(TensorSpecTest, OneDimensionalTensorIsOneRow) {
  const TensorSpec norm{"norm.weight", {4096}, DType::kBF16, TensorRole::kNorm};
  EXPECT_EQ(norm.numel(), 4096);
  EXPECT_EQ(norm.rows(), 1);
  EXPECT_EQ(norm.row_length(), 4096);
  EXPECT_EQ(norm.matrices(), 1);
  EXPECT_FALSE(norm.is_matrix());
}

TEST(TensorSpecTest, MatrixRowsAreOutputFeatures) {
  const TensorSpec k_proj{"layers.0.self_attn.k_proj.weight", {1024, 4096}, DType::kBF16, TensorRole::kAttention};
  EXPECT_EQ(k_proj.numel(), 1024 * 4096);
  EXPECT_EQ(k_proj.rows(), 1024);
  EXPECT_EQ(k_proj.row_length(), 4096);
  EXPECT_EQ(k_proj.matrices(), 1);
  EXPECT_TRUE(k_proj.is_matrix());
}

TEST(TensorSpecTest, FusedExpertsFlattenOverTheLastDim) {
  const TensorSpec gate_up{"layers.0.mlp.experts.gate_up_proj", {128, 2880, 5760}, DType::kBF16,
                           TensorRole::kExpert};
  EXPECT_EQ(gate_up.numel(), int64_t{128} * 2880 * 5760);
  EXPECT_EQ(gate_up.rows(), int64_t{128} * 2880);
  EXPECT_EQ(gate_up.row_length(), 5760);
  EXPECT_EQ(gate_up.matrices(), 128);
  EXPECT_TRUE(gate_up.is_matrix());
}

TEST(TensorSpecTest, UnitBytesUseTheDtype) {
  UnitSpec unit;
  unit.tensors.push_back(TensorSpec{"a", {10, 4}, DType::kBF16, TensorRole::kMlp});
  unit.tensors.push_back(TensorSpec{"b", {3}, DType::kF32, TensorRole::kNorm});
  EXPECT_EQ(unit.params(), 43);
  EXPECT_EQ(unit.bytes(), 40 * 2 + 3 * 4);
}

TEST(DTypeTest, BytesAndNames) {
  EXPECT_EQ(dtype_bytes(DType::kF32), 4);
  EXPECT_EQ(dtype_bytes(DType::kBF16), 2);
  EXPECT_EQ(dtype_bytes(DType::kF16), 2);
  EXPECT_EQ(dtype_bytes(DType::kFP8), 1);
  EXPECT_EQ(dtype_bytes(DType::kInt8), 1);
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16, DType::kFP8, DType::kInt8}) {
    EXPECT_EQ(parse_dtype(dtype_name(dtype)), dtype) << dtype_name(dtype);
  }
}

TEST(DTypeTest, ParsesPyTorchNamesCaseInsensitively) {
  EXPECT_EQ(parse_dtype("bfloat16"), DType::kBF16);
  EXPECT_EQ(parse_dtype("Float32"), DType::kF32);
  EXPECT_EQ(parse_dtype("float16"), DType::kF16);
  const std::string message = input_error_of([] { parse_dtype("float64"); });
  EXPECT_NE(message.find("float64"), std::string::npos) << message;
  EXPECT_NE(message.find("bf16"), std::string::npos) << message;
}

TEST(EnumNamesTest, RolesAndCheckpointing) {
  EXPECT_EQ(role_name(TensorRole::kSharedExpert), "shared_expert");
  EXPECT_EQ(role_name(TensorRole::kRouter), "router");
  EXPECT_EQ(checkpointing_name(Checkpointing::kSelective), "selective");
  ActivationBytes act;
  act.saved_none = 3;
  act.saved_selective = 2;
  act.saved_full = 1;
  act.working = 5;
  EXPECT_EQ(act.saved(Checkpointing::kNone), 3);
  EXPECT_EQ(act.saved(Checkpointing::kSelective), 2);
  EXPECT_EQ(act.saved(Checkpointing::kFull), 1);
}

}  // namespace
}  // namespace ragged::models
