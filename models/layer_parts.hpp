#pragma once
// Internal to models/: the pieces build_model assembles a transformer block
// from. Each add_* function appends one part's tensors, GEMMs and element-wise
// ops to a unit and returns the activation bytes that part contributes.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/arch_config.hpp"
#include "models/model_spec.hpp"

namespace ragged::models::detail {

// Appends to one unit; tensor names are `prefix` + a local name ("layers.3." + "mlp.up_proj.weight").
struct UnitWriter {
  UnitSpec& unit;
  std::string prefix;
  DType dtype = DType::kBF16;

  void add_tensor(std::string_view local_name, std::vector<int64_t> shape, TensorRole role);
  void add_gemm(std::string_view name, int64_t n, int64_t k, double token_fraction = 1.0, int64_t count = 1);
  void add_elementwise(std::string_view name, double bytes_per_token);
};

// Per-token activation bytes of one part of a block (attention or MLP).
struct PartActivations {
  double saved = 0;         // kept for backward without checkpointing
  double recomputable = 0;  // the share of `saved` that selective checkpointing recomputes
  double working = 0;       // transient peak of the part's backward
};

PartActivations add_attention(const ArchConfig& arch, int64_t layer, UnitWriter& out);
PartActivations add_dense_mlp(const ArchConfig& arch, UnitWriter& out);
PartActivations add_moe_mlp(const ArchConfig& arch, UnitWriter& out);

}  // namespace ragged::models::detail
