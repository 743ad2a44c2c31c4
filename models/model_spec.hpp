#pragma once
// A model as FSDP sees it: an ordered list of units (embedding, one per
// transformer block, final norm + head), each with its tensors, the compute it
// does per token forward and backward, and the activation bytes it keeps for
// backward under each checkpointing mode. Pure data: no framework types.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/arch_config.hpp"
#include "models/dtype.hpp"

namespace ragged::models {

enum class TensorRole { kEmbedding, kAttention, kNorm, kMlp, kRouter, kExpert, kSharedExpert, kHead };

std::string_view role_name(TensorRole role);

struct TensorSpec {
  std::string name;            // Hugging Face name without the "model." prefix
  std::vector<int64_t> shape;  // PyTorch order: [out_features, in_features], [experts, ...]
  DType dtype = DType::kBF16;
  TensorRole role = TensorRole::kMlp;

  int64_t numel() const;
  // Rows of the tensor flattened to 2-D over its last dim: a [E, H, F] tensor
  // has E*H rows of F elements. A 1-D tensor is one row.
  int64_t rows() const;
  int64_t row_length() const;
  bool is_matrix() const { return shape.size() >= 2; }
  // Independent matrices stored in the tensor (E for fused experts, else 1).
  int64_t matrices() const;
};

enum class Checkpointing { kNone, kFull, kSelective };

std::string_view checkpointing_name(Checkpointing mode);

// One GEMM of a unit, per token: [M x K] @ [K x N] with M = tokens * token_fraction,
// repeated `count` times (the experts of a layer).
struct GemmShape {
  std::string name;
  int64_t n = 0;                // output features
  int64_t k = 0;                // input features (the reduction dimension)
  double token_fraction = 1.0;  // share of the tokens each copy sees (top_k / experts for routed experts)
  int64_t count = 1;

  double forward_flops_per_token() const;  // 2*N*K*token_fraction*count
};

// Causal self-attention core (softmax(QK^T)V), FlashAttention-style: no S^2 tensor is kept.
struct AttentionShape {
  int64_t heads = 0;
  int64_t qk_head_dim = 0;
  int64_t v_head_dim = 0;
  int64_t window = 0;  // sliding window in tokens; 0 = full causal context

  // Average keys attended per query over a causal sequence of `seq_len`.
  double mean_context(int64_t seq_len) const;
  // Executed forward FLOPs per token: 2*heads*(qk+v)*mean_context.
  double forward_flops_per_token(int64_t seq_len) const;
};

// Memory-bound work (norms, activation functions, rotary, residual adds, loss):
// bytes read plus bytes written per token, forward pass.
struct ElementwiseOp {
  std::string name;
  double bytes_per_token = 0;
};

struct UnitCompute {
  std::vector<GemmShape> gemms;
  std::optional<AttentionShape> attention;
  std::vector<ElementwiseOp> elementwise;

  double gemm_forward_flops_per_token() const;
  double attention_forward_flops_per_token(int64_t seq_len) const;
  // Executed FLOPs: backward GEMMs do dX and dW (2x forward); FlashAttention's
  // backward does 5 matmuls to the forward's 2 (2.5x).
  double forward_flops_per_token(int64_t seq_len) const;
  double backward_flops_per_token(int64_t seq_len) const;
  double elementwise_bytes_per_token() const;
};

// Activation memory of a unit per token, in bytes.
struct ActivationBytes {
  double saved_none = 0;       // kept from forward to backward without checkpointing
  double saved_selective = 0;  // GEMM and attention outputs kept; cheap element-wise results recomputed
  double saved_full = 0;       // only the unit's input is kept; everything else recomputed in backward
  double working = 0;          // transient peak while the unit runs (logits, MLP intermediates), freed after

  double saved(Checkpointing mode) const;
};

enum class UnitKind { kEmbedding, kBlock, kHead };

struct UnitSpec {
  std::string name;  // "embed", "layers.0", ..., "head"
  UnitKind kind = UnitKind::kBlock;
  std::vector<TensorSpec> tensors;
  UnitCompute compute;
  ActivationBytes activations;

  int64_t params() const;
  int64_t bytes() const;  // parameters in their dtype
};

struct ModelSpec {
  std::string name;
  ArchConfig arch;
  std::vector<UnitSpec> units;

  int64_t params() const;
  // Parameters one token passes through (MoE: routed experts counted top_k times out of E).
  double active_params() const;
  // Model FLOPs per token for MFU, the PaLM convention (docs/METRICS.md):
  // 6 * active non-embedding parameters + 12 * layers * heads * qk_head_dim * seq_len.
  double model_flops_per_token(int64_t seq_len) const;
  // Executed FLOPs per token of one training step without recomputation (causal attention halved).
  double executed_flops_per_token(int64_t seq_len) const;
  int64_t tensor_count() const;
};

// Builds the units, tensors, compute and activation bytes from an architecture.
// Throws InputError if the architecture is invalid (see validate_arch).
ModelSpec build_model(const ArchConfig& arch);

}  // namespace ragged::models
