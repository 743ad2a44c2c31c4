#include "models/model_spec.hpp"

#include "common/checked_math.hpp"
#include "common/errors.hpp"

namespace ragged::models {

std::string_view role_name(TensorRole role) {
  switch (role) {
    case TensorRole::kEmbedding: return "embedding";
    case TensorRole::kAttention: return "attention";
    case TensorRole::kNorm: return "norm";
    case TensorRole::kMlp: return "mlp";
    case TensorRole::kRouter: return "router";
    case TensorRole::kExpert: return "expert";
    case TensorRole::kSharedExpert: return "shared_expert";
    case TensorRole::kHead: return "head";
  }
  RAGGED_ASSERT(false, "unknown TensorRole");
}

std::string_view checkpointing_name(Checkpointing mode) {
  switch (mode) {
    case Checkpointing::kNone: return "none";
    case Checkpointing::kFull: return "full";
    case Checkpointing::kSelective: return "selective";
  }
  RAGGED_ASSERT(false, "unknown Checkpointing");
}

std::string_view attention_kernel_name(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::kFlash2: return "flash-attention-2";
    case AttentionKernel::kFlash3: return "flash-attention-3";
    case AttentionKernel::kMath: return "math";
    case AttentionKernel::kTritonFlash: return "triton-flash-attention";
    case AttentionKernel::kMemoryEfficient: return "memory-efficient";
    case AttentionKernel::kCudnn: return "cudnn-attention";
  }
  RAGGED_ASSERT(false, "unknown AttentionKernel");
}

LossKernel effective_loss(const KernelChoices& kernels) {
  const bool eager_ops = kernels.loss == LossKernel::kFp32Logits || kernels.loss == LossKernel::kShiftedFp32Logits ||
                         kernels.loss == LossKernel::kLogSoftmax;
  return kernels.compiled_loss && eager_ops ? LossKernel::kFused : kernels.loss;
}

std::string_view loss_kernel_name(LossKernel kernel) {
  switch (kernel) {
    case LossKernel::kFp32Logits: return "fp32-logits";
    case LossKernel::kFused: return "fused";
    case LossKernel::kChunked: return "chunked";
    case LossKernel::kShiftedFp32Logits: return "shifted-fp32-logits";
    case LossKernel::kLogSoftmax: return "log-softmax";
    case LossKernel::kLossParallel: return "loss-parallel";
  }
  RAGGED_ASSERT(false, "unknown LossKernel");
}

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (int64_t dim : shape) n = checked_mul(n, dim, "model");
  return n;
}

int64_t TensorSpec::rows() const {
  if (shape.size() <= 1) return 1;
  return numel() / shape.back();
}

int64_t TensorSpec::row_length() const { return shape.empty() ? 1 : shape.back(); }

int64_t TensorSpec::matrices() const {
  if (shape.size() < 3) return 1;
  int64_t n = 1;
  for (size_t i = 0; i + 2 < shape.size(); ++i) n *= shape[i];
  return n;
}

double GemmShape::forward_flops_per_token() const {
  return 2.0 * static_cast<double>(n) * static_cast<double>(k) * token_fraction * static_cast<double>(count);
}

double AttentionShape::mean_context(int64_t seq_len) const {
  const double s = static_cast<double>(seq_len);
  if (seq_len <= 0) return 0;
  if (window <= 0 || window >= seq_len) return (s + 1) / 2;
  // Positions 1..W see p keys, the remaining S-W positions see W keys each.
  const double w = static_cast<double>(window);
  return (w * (w + 1) / 2 + (s - w) * w) / s;
}

double AttentionShape::flops_per_key() const {
  return 2.0 * static_cast<double>(heads) * static_cast<double>(qk_head_dim + v_head_dim);
}

double AttentionShape::forward_flops_per_token(int64_t seq_len) const { return flops_per_key() * mean_context(seq_len); }

double UnitCompute::gemm_forward_flops_per_token() const {
  double total = 0;
  for (const GemmShape& gemm : gemms) total += gemm.forward_flops_per_token();
  return total;
}

double UnitCompute::attention_forward_flops_per_token(int64_t seq_len) const {
  return attention ? attention->forward_flops_per_token(seq_len) : 0.0;
}

double UnitCompute::forward_flops_per_token(int64_t seq_len) const {
  return gemm_forward_flops_per_token() + attention_forward_flops_per_token(seq_len);
}

double UnitCompute::backward_flops_per_token(int64_t seq_len) const {
  return 2.0 * gemm_forward_flops_per_token() + 2.5 * attention_forward_flops_per_token(seq_len);
}

double UnitCompute::elementwise_bytes_per_token() const {
  double total = 0;
  for (const ElementwiseOp& op : elementwise) total += op.bytes_per_token;
  return total;
}

double ActivationBytes::saved(Checkpointing mode) const {
  switch (mode) {
    case Checkpointing::kNone: return saved_none;
    case Checkpointing::kFull: return saved_full;
    case Checkpointing::kSelective: return saved_selective;
  }
  RAGGED_ASSERT(false, "unknown Checkpointing");
}

double ActivationBytes::kept(Checkpointing mode, int64_t seq_len) const {
  const double probabilities = mode == Checkpointing::kNone ? scores_per_key * static_cast<double>(seq_len) : 0.0;
  return saved(mode) + probabilities;
}

int64_t UnitSpec::params() const {
  int64_t total = 0;
  for (const TensorSpec& tensor : tensors) total += tensor.numel();
  return total;
}

int64_t UnitSpec::bytes() const {
  int64_t total = 0;
  for (const TensorSpec& tensor : tensors) total += tensor.numel() * dtype_bytes(tensor.dtype);
  return total;
}

const TensorSpec* UnitSpec::weight_of(const GemmShape& gemm) const {
  const std::string suffix = "." + gemm.name + ".weight";
  for (const TensorSpec& t : tensors) {
    if (t.name.size() >= suffix.size() && t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return &t;
    }
  }
  return nullptr;
}

int64_t ModelSpec::params() const {
  int64_t total = 0;
  for (const UnitSpec& unit : units) total += unit.params();
  return total;
}

double ModelSpec::active_params() const {
  const double routed_share =
      arch.is_moe() ? static_cast<double>(arch.experts_per_token) / static_cast<double>(arch.experts) : 1.0;
  double total = 0;
  for (const UnitSpec& unit : units) {
    for (const TensorSpec& tensor : unit.tensors) {
      const double n = static_cast<double>(tensor.numel());
      total += tensor.role == TensorRole::kExpert ? n * routed_share : n;
    }
  }
  return total;
}

double ModelSpec::model_flops_per_token(int64_t seq_len) const {
  double embedding = 0;
  for (const UnitSpec& unit : units) {
    for (const TensorSpec& tensor : unit.tensors) {
      if (tensor.role == TensorRole::kEmbedding) embedding += static_cast<double>(tensor.numel());
    }
  }
  // A tied head has no tensor of its own but still does the vocab x width GEMM.
  const double tied_head =
      arch.tie_embeddings ? static_cast<double>(arch.vocab) * static_cast<double>(arch.embedding_width()) : 0.0;
  const int64_t qk_head_dim = arch.attention == AttentionKind::kMla
                                  ? arch.qk_nope_head_dim + arch.qk_rope_head_dim
                                  : arch.head_dim;
  return 6.0 * (active_params() - embedding + tied_head) +
         12.0 * static_cast<double>(arch.layers) * static_cast<double>(arch.heads) *
             static_cast<double>(qk_head_dim) * static_cast<double>(seq_len);
}

double ModelSpec::executed_flops_per_token(int64_t seq_len) const {
  double total = 0;
  for (const UnitSpec& unit : units) {
    total += unit.compute.forward_flops_per_token(seq_len) + unit.compute.backward_flops_per_token(seq_len);
  }
  return total;
}

int64_t ModelSpec::tensor_count() const {
  int64_t total = 0;
  for (const UnitSpec& unit : units) total += static_cast<int64_t>(unit.tensors.size());
  return total;
}

}  // namespace ragged::models
