// build_model: the embedding unit, one unit per transformer block, the head unit.

#include <algorithm>
#include <string>

#include "models/layer_parts.hpp"

namespace ragged::models {
namespace detail {

void UnitWriter::add_tensor(std::string_view local_name, std::vector<int64_t> shape, TensorRole role) {
  std::string name;
  name.reserve(prefix.size() + local_name.size());
  name.append(prefix).append(local_name);
  unit.tensors.push_back(TensorSpec{std::move(name), std::move(shape), dtype, role});
}

void UnitWriter::add_gemm(std::string_view name, int64_t n, int64_t k, double token_fraction, int64_t count) {
  unit.compute.gemms.push_back(GemmShape{std::string(name), n, k, token_fraction, count});
}

void UnitWriter::add_elementwise(std::string_view name, double bytes_per_token) {
  unit.compute.elementwise.push_back(ElementwiseOp{std::string(name), bytes_per_token});
}

}  // namespace detail

namespace {

using detail::PartActivations;
using detail::UnitWriter;

// Float-valued dtype size, for per-token byte formulas.
double bytes_of(const ArchConfig& arch) { return static_cast<double>(dtype_bytes(arch.dtype)); }

UnitSpec build_embedding(const ArchConfig& arch) {
  UnitSpec unit{"embed", UnitKind::kEmbedding, {}, {}, {}};
  UnitWriter out{unit, "", arch.dtype};
  out.add_tensor("embed_tokens.weight", {arch.vocab, arch.hidden}, TensorRole::kEmbedding);
  // The lookup reads one table row and writes it as the first hidden state.
  out.add_elementwise("embedding_lookup", 2.0 * static_cast<double>(arch.hidden) * bytes_of(arch));
  return unit;  // no activations: the lookup has nothing to differentiate through
}

size_t expected_block_tensors(const ArchConfig& arch, int64_t layer) {
  const size_t fixed = 24;  // norms, attention projections with biases, router, shared experts
  if (!arch.is_moe_layer(layer) || arch.expert_storage == ExpertStorage::kFused) return fixed;
  return fixed + static_cast<size_t>(arch.experts) * (arch.expert_bias ? 6 : 3);
}

UnitSpec build_block(const ArchConfig& arch, int64_t layer) {
  const std::string name = "layers." + std::to_string(layer);
  UnitSpec unit{name, UnitKind::kBlock, {}, {}, {}};
  unit.tensors.reserve(expected_block_tensors(arch, layer));
  UnitWriter out{unit, name + ".", arch.dtype};
  const double b = bytes_of(arch);
  const double h = static_cast<double>(arch.hidden);

  // Each RMSNorm reads and writes the hidden state; each residual add reads two, writes one.
  out.add_tensor("input_layernorm.weight", {arch.hidden}, TensorRole::kNorm);
  out.add_elementwise("input_layernorm", 2.0 * h * b);
  const PartActivations attention = detail::add_attention(arch, layer, out);
  out.add_elementwise("attention_residual", 3.0 * h * b);
  out.add_tensor("post_attention_layernorm.weight", {arch.hidden}, TensorRole::kNorm);
  out.add_elementwise("post_attention_layernorm", 2.0 * h * b);
  const PartActivations mlp =
      arch.is_moe_layer(layer) ? detail::add_moe_mlp(arch, out) : detail::add_dense_mlp(arch, out);
  out.add_elementwise("mlp_residual", 3.0 * h * b);

  // Both norms keep their input and output; selective checkpointing recomputes the outputs.
  ActivationBytes& act = unit.activations;
  act.saved_none = 4.0 * h * b + attention.saved + mlp.saved;
  act.saved_selective = act.saved_none - 2.0 * h * b - attention.recomputable - mlp.recomputable;
  act.saved_full = h * b;
  act.working = std::max(attention.working, mlp.working);
  return unit;
}

UnitSpec build_head(const ArchConfig& arch) {
  UnitSpec unit{"head", UnitKind::kHead, {}, {}, {}};
  UnitWriter out{unit, "", arch.dtype};
  const double b = bytes_of(arch);
  const double h = static_cast<double>(arch.hidden);
  const double vocab = static_cast<double>(arch.vocab);

  out.add_tensor("norm.weight", {arch.hidden}, TensorRole::kNorm);
  if (!arch.tie_embeddings) out.add_tensor("lm_head.weight", {arch.vocab, arch.hidden}, TensorRole::kHead);
  out.add_elementwise("final_norm", 2.0 * h * b);
  out.add_gemm("lm_head", arch.vocab, arch.hidden);
  // Cross-entropy reads the logits and writes and re-reads their fp32 softmax.
  out.add_elementwise("cross_entropy", vocab * (b + 4.0 + 4.0));

  // The final norm's input and output, and the fp32 softmax the loss backward needs.
  const double saved = 2.0 * h * b + 4.0 * vocab;
  unit.activations = ActivationBytes{saved, saved, saved, vocab * (4.0 + b)};
  return unit;
}

}  // namespace

ModelSpec build_model(const ArchConfig& arch) {
  validate_arch(arch, "");
  ModelSpec spec{arch.name, arch, {}};
  spec.units.reserve(static_cast<size_t>(arch.layers) + 2);
  spec.units.push_back(build_embedding(arch));
  for (int64_t layer = 0; layer < arch.layers; ++layer) spec.units.push_back(build_block(arch, layer));
  spec.units.push_back(build_head(arch));
  return spec;
}

}  // namespace ragged::models
