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

// FlashAttention keeps one fp32 log-sum-exp per head and token for backward.
inline constexpr double kSoftmaxStatBytes = 4;

// Appends to one unit; tensor names are `prefix` + a local name ("layers.3." + "mlp.up_proj.weight").
struct UnitWriter {
  UnitSpec& unit;
  std::string prefix;
  DType dtype = DType::kBF16;
  UnitPart part = UnitPart::kWhole;  // tags what add_gemm and add_elementwise append

  void add_tensor(std::string_view local_name, std::vector<int64_t> shape, TensorRole role);
  void add_gemm(std::string_view name, int64_t n, int64_t k, double token_fraction = 1.0, int64_t count = 1);
  // One projection of `count` routed experts, each seeing `token_fraction` of the tokens.
  void add_expert_gemm(std::string_view name, int64_t n, int64_t k, double token_fraction, int64_t count);
  // backward_bytes_per_token < 0: twice the forward's.
  void add_elementwise(std::string_view name, double bytes_per_token, double backward_bytes_per_token = -1);
  // The same for a loss whose backward runs ahead of the head's GEMMs (ElementwiseOp::loss).
  void add_loss(std::string_view name, double bytes_per_token, double backward_bytes_per_token);
  // A linear layer from k to n features: its weight ([n, k], or [k, n] when
  // `conv1d` as GPT-2's Conv1D stores it), its bias, and its GEMM named after it.
  void add_linear(std::string_view name, int64_t n, int64_t k, TensorRole role, bool bias, bool conv1d = false);
  // A norm over `width` features: its weight, its bias (LayerNorm with norm_bias)
  // and the element-wise op `op` reading and writing the hidden state.
  void add_norm(const ArchConfig& arch, std::string_view name, std::string_view op, int64_t width);
};

// A family's checkpoint names, local to the unit; the defaults are Llama's.
// Blocks prefix theirs with layer_prefix + the layer index + ".".
struct CheckpointNames {
  std::string_view layer_prefix = "layers.";
  std::string_view embed = "embed_tokens";
  std::string_view positions;    // learned position table
  std::string_view embed_norm;   // LayerNorm after the token embedding
  std::string_view project_in;   // token table width -> hidden
  std::string_view attention_norm = "input_layernorm";
  std::string_view mlp_norm = "post_attention_layernorm";  // empty: one norm shared by a parallel block
  std::string_view qkv = "self_attn.qkv_proj";  // fused q/k/v projection (Llama's names when a stack fuses them)
  std::string_view q = "self_attn.q_proj";
  std::string_view k = "self_attn.k_proj";
  std::string_view v = "self_attn.v_proj";
  std::string_view o = "self_attn.o_proj";
  std::string_view gate = "mlp.gate_proj";
  std::string_view up = "mlp.up_proj";
  std::string_view gate_up = "mlp.gate_up_proj";  // fused gate and up projection
  std::string_view down = "mlp.down_proj";
  std::string_view final_norm = "norm";
  std::string_view project_out;  // hidden -> token table width
  std::string_view head = "lm_head";
  bool conv1d = false;           // weights stored [in, out] (GPT-2)
};

CheckpointNames checkpoint_names(const ArchConfig& arch);

// Per-token activation bytes of one part of a block (attention or MLP).
struct PartActivations {
  double saved = 0;         // kept for backward without checkpointing
  double recomputable = 0;  // the element-wise share of `saved` (what element-wise-only selective recomputes)
  double working = 0;       // transient peak of the part's backward
};

// repeated_kv: a grouped-query attention's keys and values are copied to
// every query head before the kernel (KernelChoices::repeated_kv).
PartActivations add_attention(const ArchConfig& arch, const CheckpointNames& names, int64_t layer, bool repeated_kv,
                              UnitWriter& out);
PartActivations add_dense_mlp(const ArchConfig& arch, const CheckpointNames& names, UnitWriter& out);
// A block's routed experts: the `local` of them one rank holds (all of them
// without expert parallelism), written to `out` when they are a unit of
// their own (UnitKind::kExperts), then with what they keep in `activations`.
struct RoutedExperts {
  int64_t local = 0;
  UnitWriter* out = nullptr;  // nullptr: the block's own unit
  PartActivations activations;
  // The busiest rank's routed work over a balanced rank's (routed_work_factor):
  // scales the experts' GEMM rows, element-wise traffic and saved bytes.
  double work = 1.0;
  // Eager autograd: a gated expert keeps its SiLU's output too (KernelChoices::eager_blocks).
  bool eager = false;
  // Megatron-Core's eager epilogue (KernelChoices::expert_epilogue): the
  // clamp of a clamped GLU and the down projection's bias as passes of their own.
  bool eager_epilogue = false;
};

PartActivations add_moe_mlp(const ArchConfig& arch, UnitWriter& out, RoutedExperts& routed);

// Where build_block put a dense block's ops (indices into the unit's
// elementwise and gemms; npos: the block has none) and what its parts keep.
struct BlockParts {
  static constexpr size_t npos = static_cast<size_t>(-1);
  int64_t layer = 0;
  PartActivations attention;
  PartActivations mlp;
  size_t norm1 = npos;
  size_t residual = npos;    // the attention's residual add
  size_t norm2 = npos;       // the MLP's norm (npos: one norm shared by a parallel block)
  size_t activation = npos;  // SwiGLU, or the plain MLP's activation
  size_t mlp_gemms = 0;      // the first MLP GEMM; the ones before it are the attention's
};

// Named checkpointing (KernelChoices::saved_names): sets the unit's
// saved_selective and named_recompute from the names (named_checkpointing.cpp).
// Throws InputError for a mixture-of-experts block.
void keep_named(const ArchConfig& arch, const BlockParts& parts, const SavedNames& names, UnitSpec& unit);

}  // namespace ragged::models::detail
