// Attention tensors, GEMMs, element-wise traffic and activation bytes of one
// block: grouped-query attention (q/k/v separate or fused into one projection;
// rotary, ALiBi or learned positions) and DeepSeek's multi-head latent attention.

#include "models/layer_parts.hpp"

namespace ragged::models::detail {
namespace {

constexpr TensorRole kRole = TensorRole::kAttention;

// A projection: its weight (and bias), and its GEMM named after it.
void add_projection(UnitWriter& out, std::string_view name, int64_t n, int64_t k, bool bias, bool conv1d = false) {
  out.add_linear(name, n, k, kRole, bias, conv1d);
}

// Rotary embedding reads and writes the rotated dims of q and k (every dim
// unless rotary_dim is set); ALiBi and learned positions have no such pass.
void add_rotary(const ArchConfig& arch, UnitWriter& out) {
  if (arch.positions != PositionKind::kRotary) return;
  const double b = static_cast<double>(dtype_bytes(arch.dtype));
  const int64_t rotated = arch.rotary_dim > 0 ? arch.rotary_dim : arch.head_dim;
  out.add_elementwise("rotary", 2.0 * static_cast<double>((arch.heads + arch.kv_heads) * rotated) * b);
}

// The output projection runs in the attention's core part (it reads the
// attention's output); everything else of the attention in its input part.
void add_output_projection(UnitWriter& out, std::string_view name, int64_t n, int64_t k, bool bias, bool conv1d) {
  const UnitPart input = out.part;
  if (input == UnitPart::kAttentionInput) out.part = UnitPart::kAttentionCore;
  add_projection(out, name, n, k, bias, conv1d);
  out.part = input;
}

PartActivations add_gqa(const ArchConfig& arch, const CheckpointNames& names, int64_t layer, bool repeated_kv,
                        UnitWriter& out) {
  const int64_t h = arch.hidden;
  const int64_t q = arch.heads * arch.head_dim;
  const int64_t kv = arch.kv_heads * arch.head_dim;
  const double b = static_cast<double>(dtype_bytes(arch.dtype));
  const bool qkv_bias = arch.attention_bias || arch.qkv_bias;

  if (arch.qkv_fused) {
    add_projection(out, names.qkv, q + 2 * kv, h, qkv_bias, names.conv1d);
  } else {
    add_projection(out, names.q, q, h, qkv_bias);
    add_projection(out, names.k, kv, h, qkv_bias);
    add_projection(out, names.v, kv, h, qkv_bias);
  }
  add_output_projection(out, names.o, h, q, arch.attention_bias, names.conv1d);
  if (arch.qk_norm) {
    out.add_tensor("self_attn.q_norm.weight", {arch.head_dim}, kRole);
    out.add_tensor("self_attn.k_norm.weight", {arch.head_dim}, kRole);
    out.add_elementwise("qk_norm", 2.0 * static_cast<double>(q + kv) * b);
  }
  if (arch.attention_sinks) out.add_tensor("self_attn.sinks", {arch.heads}, kRole);
  add_rotary(arch, out);

  // Repeated keys and values: one copy kernel each for k and v (read the kv
  // heads, write every query head's), and in the backward one reduction
  // each summing the copies' gradients back. The kernel then keeps the
  // copies where it would keep the kv heads; the kv heads themselves are
  // freed (the copy saves nothing), and selective checkpointing recomputes
  // the copies like the other element-wise outputs.
  const bool repeated = repeated_kv && kv < q;
  const int64_t kernel_kv = repeated ? q : kv;
  if (repeated) {
    const double copy = 2.0 * static_cast<double>(kv + q) * b;
    out.add_elementwise("repeat_kv", copy, copy);
  }

  const int64_t window = arch.is_sliding_layer(layer) ? arch.sliding_window : 0;
  out.unit.compute.attention = AttentionShape{arch.heads, arch.head_dim, arch.head_dim, window};

  // q, k, v as the kernel reads them and the attention output (heads *
  // head_dim, the o_proj input).
  const double widths = static_cast<double>(q + 2 * kernel_kv + q);
  const double copies = b * 2.0 * static_cast<double>(kernel_kv - kv);
  return PartActivations{b * widths + kSoftmaxStatBytes * static_cast<double>(arch.heads), copies, b * widths};
}

PartActivations add_mla(const ArchConfig& arch, int64_t layer, UnitWriter& out) {
  const int64_t h = arch.hidden;
  const int64_t qk_dim = arch.qk_nope_head_dim + arch.qk_rope_head_dim;
  const int64_t q = arch.heads * qk_dim;
  const int64_t v = arch.heads * arch.v_head_dim;
  const int64_t kv_a = arch.kv_lora_rank + arch.qk_rope_head_dim;
  const double b = static_cast<double>(dtype_bytes(arch.dtype));

  double widths = 0;
  if (arch.q_lora_rank > 0) {
    add_projection(out, "self_attn.q_a_proj", arch.q_lora_rank, h, arch.attention_bias);
    out.add_tensor("self_attn.q_a_layernorm.weight", {arch.q_lora_rank}, kRole);
    out.add_elementwise("q_a_layernorm", 2.0 * static_cast<double>(arch.q_lora_rank) * b);
    add_projection(out, "self_attn.q_b_proj", q, arch.q_lora_rank, false);
    widths += 2.0 * static_cast<double>(arch.q_lora_rank);  // q_a output and its norm
  } else {
    add_projection(out, "self_attn.q_proj", q, h, false);
  }
  add_projection(out, "self_attn.kv_a_proj_with_mqa", kv_a, h, arch.attention_bias);
  out.add_tensor("self_attn.kv_a_layernorm.weight", {arch.kv_lora_rank}, kRole);
  out.add_elementwise("kv_a_layernorm", 2.0 * static_cast<double>(arch.kv_lora_rank) * b);
  add_projection(out, "self_attn.kv_b_proj", arch.heads * (arch.qk_nope_head_dim + arch.v_head_dim),
                 arch.kv_lora_rank, false);
  add_output_projection(out, "self_attn.o_proj", h, v, arch.attention_bias, false);
  // Rotary applies to the rope part of every q head and to the one shared k_pe.
  out.add_elementwise("rotary",
                      2.0 * static_cast<double>(arch.heads * arch.qk_rope_head_dim + arch.qk_rope_head_dim) * b);

  const int64_t window = arch.is_sliding_layer(layer) ? arch.sliding_window : 0;
  out.unit.compute.attention = AttentionShape{arch.heads, qk_dim, arch.v_head_dim, window};

  // q, kv_a output, kv_a norm output, full-width k and v, and the attention output.
  widths += static_cast<double>(q + kv_a + arch.kv_lora_rank + q + v + v);
  return PartActivations{b * widths + kSoftmaxStatBytes * static_cast<double>(arch.heads), 0.0, b * widths};
}

}  // namespace

PartActivations add_attention(const ArchConfig& arch, const CheckpointNames& names, int64_t layer, bool repeated_kv,
                              UnitWriter& out) {
  return arch.attention == AttentionKind::kMla ? add_mla(arch, layer, out)
                                               : add_gqa(arch, names, layer, repeated_kv, out);
}

}  // namespace ragged::models::detail
