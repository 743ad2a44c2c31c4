// build_model: the embedding unit, one unit per transformer block, the head unit.

#include <algorithm>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "common/errors.hpp"

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
  unit.compute.gemms.back().part = part;
}

void UnitWriter::add_expert_gemm(std::string_view name, int64_t n, int64_t k, double token_fraction, int64_t count) {
  add_gemm(name, n, k, token_fraction, count);
  unit.compute.gemms.back().routed_experts = true;
}

void UnitWriter::add_elementwise(std::string_view name, double bytes_per_token, double backward_bytes_per_token) {
  unit.compute.elementwise.push_back(ElementwiseOp{std::string(name), bytes_per_token, backward_bytes_per_token});
  unit.compute.elementwise.back().part = part;
}

void UnitWriter::add_loss(std::string_view name, double bytes_per_token, double backward_bytes_per_token) {
  unit.compute.elementwise.push_back(ElementwiseOp{std::string(name), bytes_per_token, backward_bytes_per_token, true});
  unit.compute.elementwise.back().part = part;
}

void UnitWriter::add_linear(std::string_view name, int64_t n, int64_t k, TensorRole role, bool bias, bool conv1d) {
  const std::string base(name);
  add_tensor(base + ".weight", conv1d ? std::vector<int64_t>{k, n} : std::vector<int64_t>{n, k}, role);
  if (bias) add_tensor(base + ".bias", {n}, role);
  add_gemm(base, n, k);
}

void UnitWriter::add_norm(const ArchConfig& arch, std::string_view name, std::string_view op, int64_t width) {
  const std::string base(name);
  add_tensor(base + ".weight", {width}, TensorRole::kNorm);
  if (arch.norm_bias) add_tensor(base + ".bias", {width}, TensorRole::kNorm);
  // A norm reads and writes the hidden state.
  add_elementwise(op, 2.0 * static_cast<double>(width) * static_cast<double>(dtype_bytes(arch.dtype)));
}

}  // namespace detail

namespace {

using detail::CheckpointNames;
using detail::PartActivations;
using detail::UnitWriter;

// Float-valued dtype size, for per-token byte formulas.
double bytes_of(const ArchConfig& arch) { return static_cast<double>(dtype_bytes(arch.dtype)); }

// Element-wise op names say which kernel runs: an RMSNorm (several eager
// kernels) keeps the Llama names, a LayerNorm (one kernel) ends in layer_norm.
std::string_view norm_op(const ArchConfig& arch, std::string_view rms_norm, std::string_view layer_norm) {
  return arch.norm == NormKind::kLayerNorm ? layer_norm : rms_norm;
}

UnitSpec build_embedding(const ArchConfig& arch, const CheckpointNames& names) {
  UnitSpec unit{"embed", UnitKind::kEmbedding, {}, {}, {}};
  UnitWriter out{unit, "", arch.dtype};
  const double b = bytes_of(arch);
  const int64_t width = arch.embedding_width();
  out.add_tensor(std::string(names.embed) + ".weight", {arch.vocab, width}, TensorRole::kEmbedding);
  // The lookup reads one table row and writes it as the first hidden state.
  out.add_elementwise("embedding_lookup", 2.0 * static_cast<double>(width) * b);
  // Without a norm or projection the lookup has nothing to differentiate through.
  double saved = 0;
  if (arch.embed_dim > 0) {
    out.add_linear(names.project_in, arch.hidden, width, TensorRole::kHead, false);
    saved += static_cast<double>(width) * b;  // project_in's input, for its weight gradient
  }
  if (arch.positions == PositionKind::kLearned) {
    out.add_tensor(std::string(names.positions) + ".weight", {arch.max_positions + arch.position_offset, arch.hidden},
                   TensorRole::kEmbedding);
    // The position row is read and added to the token's: two hidden vectors read, one written.
    out.add_elementwise("position_embedding", 3.0 * static_cast<double>(arch.hidden) * b);
  }
  if (arch.embedding_norm) {
    out.add_norm(arch, names.embed_norm, "embedding_layer_norm", arch.hidden);
    saved += static_cast<double>(arch.hidden) * b;  // the norm's input
  }
  unit.activations.saved_none = unit.activations.saved_selective = unit.activations.saved_full = saved;
  return unit;
}

size_t expected_block_tensors(const ArchConfig& arch, int64_t layer) {
  const size_t fixed = 24;  // norms, attention projections with biases, router, shared experts
  if (!arch.is_moe_layer(layer) || arch.expert_storage == ExpertStorage::kFused) return fixed;
  return fixed + static_cast<size_t>(arch.experts) * (arch.expert_bias ? 6 : 3);
}

// TorchTitan's op-level policy saves the 1st, 3rd, ... mm of a block (the
// GEMMs in the order the forward calls them) and recomputes the others.
bool selective_saves_gemm(size_t index) { return index % 2 == 0; }

// A GEMM's output, per token, in bytes of `b` an element.
double gemm_output_bytes(const GemmShape& gemm, double b) {
  return static_cast<double>(gemm.n) * gemm.token_fraction * static_cast<double>(gemm.count) * b;
}

// What TorchTitan's op-level selective checkpointing keeps of a block, per
// token (torchtitan/models/llama3/infra/parallelize.py, _apply_ac_to_transformer_block:
// the outputs of ops in its _save_list, mm and the attention kernels, except
// every second mm, and the checkpointed region's input); everything else is
// recomputed in the backward. The unit's GEMMs are in the order the forward
// calls them, so the 1st, 3rd, ... are kept (recompute_work recomputes the
// 2nd, 4th, ...); the attention kernel keeps its output and its softmax
// statistics. Eager, the policy's cache holds every output it must save.
// Compiled, Inductor's partitioner honours the policy but stores only what
// the backward reads, and nothing reads an output projection's output (o,
// down: the residual add's backward needs neither input), so a saved one is
// not kept (`compiled`).
double selective_saved(const UnitSpec& unit, const ArchConfig& arch, const CheckpointNames& names, bool compiled) {
  const double b = bytes_of(arch);
  double saved = static_cast<double>(arch.hidden) * b;  // the block's input
  const std::vector<GemmShape>& gemms = unit.compute.gemms;
  for (size_t i = 0; i < gemms.size(); ++i) {
    if (!selective_saves_gemm(i)) continue;
    if (compiled && (gemms[i].name == names.o || gemms[i].name == names.down)) continue;
    saved += gemm_output_bytes(gemms[i], b);
  }
  if (unit.compute.attention) {
    const AttentionShape& a = *unit.compute.attention;
    saved += static_cast<double>(a.heads) * (static_cast<double>(a.v_head_dim) * b + detail::kSoftmaxStatBytes);
  }
  return saved;
}

// The keys and values one token adds to a layer's cache, as Hugging Face
// returns them: GQA's kv heads before repeat_kv; MLA's per-head keys (nope
// and rope parts) and values.
double returned_kv_bytes(const ArchConfig& arch) {
  const double per_token = arch.attention == AttentionKind::kMla
                               ? static_cast<double>(arch.heads * (arch.qk_nope_head_dim + arch.qk_rope_head_dim +
                                                                   arch.v_head_dim))
                               : static_cast<double>(2 * arch.kv_heads * arch.head_dim);
  return per_token * bytes_of(arch);
}

// The routed experts as a unit of their own: what they keep, all of it
// recomputed under full checkpointing (their block's input is kept), their
// element-wise results under selective (as a mixture-of-experts block's).
void finish_experts_unit(const PartActivations& part, UnitSpec& unit) {
  ActivationBytes& act = unit.activations;
  act.saved_none = part.saved;
  act.selective_recomputes_gemms = false;
  act.saved_selective = part.saved - part.recomputable;
  act.saved_full = 0;
  act.working = part.working;
}

// What eager autograd keeps of a norm beyond its 16-bit input and output
// (KernelChoices::eager_blocks). An RMSNorm written in torch ops (Hugging
// Face's LlamaRMSNorm, litgpt's, torch's F.rms_norm decomposition: x.float(),
// pow, mean, rsqrt, mul, .to, mul by the weight) keeps its fp32 upcast input
// (pow and mul save it) and its 16-bit normalised value before the weight
// (the weight's mul saves it), and frees its 16-bit input (the upcast saves
// nothing): 4 B an element more. A fused kernel (NormKernel::kFused) or a
// LayerNorm (native_layer_norm, one kernel) keeps its input and statistics.
double eager_norm_extra(const ArchConfig& arch, const KernelChoices& kernels, double width) {
  if (!kernels.eager_blocks || kernels.norm != NormKernel::kEager || arch.norm != NormKind::kRmsNorm) return 0;
  return dtype_bytes(arch.dtype) < 4 ? 4.0 * width : 0.0;
}

// Appends layer `layer`'s unit to `units`, and under expert parallelism its
// routed experts' unit after it (`local_experts` of them).
void build_block(const ArchConfig& arch, const CheckpointNames& names, int64_t layer, const KernelChoices& kernels,
                 int64_t local_experts, bool experts_unit, std::vector<UnitSpec>& units) {
  const std::string index = std::to_string(layer);
  units.push_back(UnitSpec{"layers." + index, UnitKind::kBlock, {}, {}, {}});
  const bool separate = experts_unit && arch.is_moe_layer(layer);
  if (separate) units.push_back(UnitSpec{"layers." + index + ".experts", UnitKind::kExperts, {}, {}, {}});
  UnitSpec& unit = units[units.size() - (separate ? 2 : 1)];
  unit.tensors.reserve(expected_block_tensors(arch, layer));
  UnitWriter out{unit, std::string(names.layer_prefix) + index + ".", arch.dtype};
  std::optional<UnitWriter> experts;
  if (separate) experts.emplace(UnitWriter{units.back(), out.prefix, arch.dtype});
  detail::RoutedExperts routed{local_experts,
                               experts ? &*experts : nullptr,
                               {},
                               routed_work_factor(arch, local_experts, kernels),
                               kernels.eager_blocks && arch.mlp == MlpKind::kGated,
                               kernels.expert_epilogue == ExpertEpilogue::kEager};
  const double b = bytes_of(arch);
  const double h = static_cast<double>(arch.hidden);

  // Each residual add reads two hidden states and writes one. A parallel block
  // (GPT-NeoX, Falcon) feeds the attention's norm and the MLP's the same input;
  // with a shared norm (Falcon-7B) both read its one output.
  const std::vector<ElementwiseOp>& elementwise = unit.compute.elementwise;
  detail::BlockParts parts;
  parts.layer = layer;
  out.part = UnitPart::kAttentionInput;
  parts.norm1 = elementwise.size();
  out.add_norm(arch, names.attention_norm, norm_op(arch, "input_layernorm", "attention_layer_norm"), arch.hidden);
  const PartActivations attention = detail::add_attention(arch, names, layer, kernels.repeated_kv, out);
  out.part = UnitPart::kAttentionCore;
  parts.residual = elementwise.size();
  out.add_elementwise("attention_residual", 3.0 * h * b);
  out.part = UnitPart::kMlp;
  if (!arch.shared_block_norm) {
    parts.norm2 = elementwise.size();
    out.add_norm(arch, names.mlp_norm, norm_op(arch, "post_attention_layernorm", "mlp_layer_norm"), arch.hidden);
  }
  parts.mlp_gemms = unit.compute.gemms.size();
  parts.activation = elementwise.size();  // a dense MLP's one element-wise op
  const PartActivations mlp =
      arch.is_moe_layer(layer) ? detail::add_moe_mlp(arch, out, routed) : detail::add_dense_mlp(arch, names, out);
  out.add_elementwise("mlp_residual", 3.0 * h * b);

  // Each norm keeps its input and output (a parallel block's norms share their
  // input); selective checkpointing recomputes the outputs.
  const int64_t norm_outputs = arch.shared_block_norm ? 1 : 2;
  const int64_t norm_inputs = arch.parallel_block ? 1 : 2;
  ActivationBytes& act = unit.activations;
  act.saved_none = static_cast<double>(norm_inputs + norm_outputs) * h * b + attention.saved + mlp.saved;
  // Mixture-of-experts blocks: the routed experts run grouped GEMMs whose
  // place in TorchTitan's mm count is not modelled; their selective
  // checkpointing recomputes the element-wise results only (the norms' and
  // the experts' products), as the GPU workload does.
  const bool moe = arch.is_moe_layer(layer);
  act.selective_recomputes_gemms = !moe;
  act.saved_selective = moe ? act.saved_none - static_cast<double>(norm_outputs) * h * b - attention.recomputable -
                                  mlp.recomputable
                            : selective_saved(unit, arch, names, !kernels.eager_blocks);
  // Eagerly, each RMSNorm's upcast (the q and k heads' too) and a dense
  // SwiGLU's SiLU output (act(gate) * up keeps both factors); selective
  // checkpointing recomputes them with the rest of the element-wise work.
  act.saved_none += eager_norm_extra(arch, kernels, static_cast<double>(norm_outputs) * h);
  if (arch.qk_norm) {
    act.saved_none += eager_norm_extra(arch, kernels, static_cast<double>((arch.heads + arch.kv_heads) * arch.head_dim));
  }
  if (kernels.eager_blocks && !moe && arch.mlp == MlpKind::kGated) act.saved_none += static_cast<double>(arch.intermediate) * b;
  act.saved_full = h * b;
  act.working = std::max(attention.working, mlp.working);
  // The math backend materialises one score per head, query and key in the
  // compute dtype (PyTorch's _scaled_dot_product_attention_math: matmul,
  // in-place mask add, softmax, matmul); FlashAttention keeps none.
  if (kernels.attention == AttentionKernel::kMath) act.scores_per_key = static_cast<double>(arch.heads) * b;
  act.returned_kv = returned_kv_bytes(arch);
  if (kernels.saved_names) {
    parts.attention = attention;
    parts.mlp = mlp;
    detail::keep_named(arch, parts, *kernels.saved_names, unit);
  }
  if (separate) finish_experts_unit(routed.activations, units.back());
}

// What the head keeps of its input: the final norm's input and output (or
// the head's input alone; run eagerly, the norm's upcast too; it runs outside
// any checkpointed region) and the projection's output.
double head_input_saved(const ArchConfig& arch, const KernelChoices& kernels) {
  const double b = bytes_of(arch);
  const double h = static_cast<double>(arch.hidden);
  double saved = arch.final_norm ? 2.0 * h * b + eager_norm_extra(arch, kernels, h) : h * b;
  if (arch.embed_dim > 0) saved += static_cast<double>(arch.embedding_width()) * b;
  return saved;
}

UnitSpec build_head(const ArchConfig& arch, const CheckpointNames& names, const KernelChoices& kernels) {
  const LossKernel loss = effective_loss(kernels);
  UnitSpec unit{"head", UnitKind::kHead, {}, {}, {}};
  UnitWriter out{unit, "", arch.dtype};
  const double b = bytes_of(arch);
  const double vocab = static_cast<double>(arch.vocab);
  const int64_t width = arch.embedding_width();

  if (arch.final_norm) out.add_norm(arch, names.final_norm, norm_op(arch, "final_norm", "final_layer_norm"), arch.hidden);
  if (arch.embed_dim > 0) out.add_linear(names.project_out, width, arch.hidden, TensorRole::kHead, false);
  if (!arch.tie_embeddings) out.add_tensor(std::string(names.head) + ".weight", {arch.vocab, width}, TensorRole::kHead);
  out.add_gemm(names.head, arch.vocab, width);
  unit.compute.gemms.back().logits = true;

  // A chunked loss keeps the gradient of the logits GEMM's input instead of
  // that input, the same bytes.
  double saved = head_input_saved(arch, kernels);
  ActivationBytes& act = unit.activations;
  switch (loss) {
    case LossKernel::kFp32Logits: {
      // TorchTitan: cross_entropy(logits.float()) = log_softmax + nll_loss.
      // Forward: the logits (b) and their fp32 copy (unless already fp32) are
      // freed once the loss is computed (train.py's `del pred`); the fp32
      // log-softmax is kept. Backward: nll_loss's dense fp32 gradient and
      // log_softmax's, then the cast back to the logits' dtype. Fused
      // traffic: read the logits, write the log-softmax; read it, write the
      // logits' gradient (eager_kernels.cpp counts the eager kernels).
      out.add_loss("cross_entropy", vocab * (b + 4.0), vocab * (4.0 + b));
      saved += 4.0 * vocab;
      if (b < 4.0) act.forward_pieces = {b * vocab};
      act.loss_logits = 4.0 * vocab;
      act.returned_logits = act.loss_logits;
      act.working_pieces = {4.0 * vocab, 4.0 * vocab};
      act.working = 8.0 * vocab;
      act.logits_gradient = b * vocab;
      break;
    }
    case LossKernel::kShiftedFp32Logits:
      // Hugging Face (transformers 4.31, LlamaForCausalLM.forward):
      // logits.float() (the compute-dtype logits are dropped by the
      // reassignment), logits[..., :-1, :].contiguous() (an fp32 copy, freed
      // when the loss returns), then CrossEntropyLoss as above. The backward
      // also zero-fills a full fp32 gradient for the slice; it replaces
      // log_softmax's gradient, so two fp32 pieces at once, as above. Fused
      // traffic as above; the eager factors count the copy and the slice.
      out.add_loss("shifted_cross_entropy", vocab * (b + 4.0), vocab * (4.0 + b));
      saved += 4.0 * vocab;
      act.forward_pieces = {4.0 * vocab};
      act.loss_logits = 4.0 * vocab;
      act.returned_logits = act.loss_logits;
      act.working_pieces = {4.0 * vocab, 4.0 * vocab};
      act.working = 8.0 * vocab;
      act.logits_gradient = b * vocab;
      break;
    case LossKernel::kLogSoftmax:
      // torch's F.cross_entropy over the compute-dtype logits: log_softmax
      // writes its output in that dtype and keeps it for the backward; the
      // logits are freed once the loss is computed unless the model returns
      // them. Backward: nll_loss's dense gradient, then log_softmax's, which
      // is the logits' gradient. Fused traffic: read the logits, write the
      // log-softmax; read it, write the gradient.
      out.add_loss("log_softmax_cross_entropy", 2.0 * vocab * b, 2.0 * vocab * b);
      saved += b * vocab;
      act.loss_logits = b * vocab;
      act.returned_logits = act.loss_logits;
      act.working_pieces = {b * vocab, b * vocab};
      act.working = 2.0 * b * vocab;
      act.logits_gradient = b * vocab;
      break;
    case LossKernel::kLossParallel:
      // torch/distributed/tensor/parallel/loss.py, the local vocabulary shard.
      // Forward: logits.float() (A), then _log_softmax's x - max (B), exp(B)
      // (summed, freed) and B - log-sum-exp, the log-softmax kept (D): the
      // logits, A and B beside the exp or D. Backward
      // (_nll_loss_and_log_softmax_backward, before the cast back):
      // zeros_like(D), exp(D), their sum, then its product with the
      // gradient in place of exp(D): three fp32 pieces at once.
      out.add_loss("loss_parallel_cross_entropy", vocab * (b + 4.0), vocab * (4.0 + b));
      saved += 4.0 * vocab;
      act.forward_pieces = {b * vocab, 4.0 * vocab};
      act.loss_logits = 4.0 * vocab;
      act.returned_logits = act.loss_logits;
      act.working_pieces = {4.0 * vocab, 4.0 * vocab, 4.0 * vocab};
      act.working = 12.0 * vocab;
      act.logits_gradient = b * vocab;
      break;
    case LossKernel::kFused:
      // flash-attn's CrossEntropyLoss (llm-foundry's default): the forward
      // reads the logits once (online softmax) and keeps them with one fp32
      // log-sum-exp per token; the backward reads them and writes their
      // gradient (a new tensor: inplace_backward is off by default).
      out.add_loss("fused_cross_entropy", vocab * b, 2.0 * vocab * b);
      saved += vocab * b + 4.0;
      act.returned_logits = vocab * b;
      act.working = vocab * b;
      act.logits_gradient = vocab * b;
      break;
    case LossKernel::kChunked:
      // Liger's fused linear cross-entropy: per chunk of tokens, the logits
      // GEMM, a kernel that reads the chunk twice and writes its gradient in
      // place, and the input and weight gradient GEMMs, all in the forward;
      // one chunk of logits exists at a time, about tokens x width elements
      // (chunk = tokens / ceil(vocab / width), rounded to a power of two).
      out.add_elementwise("chunked_cross_entropy", 3.0 * vocab * b, 0.0);
      act.forward_pieces = {static_cast<double>(width) * b};
      act.working = 0;
      break;
  }
  if (act.logits_gradient > 0) act.head_input_gradient = static_cast<double>(width) * b;
  act.saved_none = act.saved_selective = act.saved_full = saved;
  return unit;
}

// The units of `checkpoint` as the stack stores them, with `local_experts`
// routed experts per MoE block, in a unit of their own when `experts_unit`.
// The spec keeps the checkpoint's arch: the kernels say how it is stored.
ModelSpec build_units(const ArchConfig& checkpoint, const KernelChoices& kernels, int64_t local_experts,
                      bool experts_unit) {
  const ArchConfig arch = stored_arch(checkpoint, kernels);
  ModelSpec spec{arch.name, checkpoint, {}, kernels};
  spec.units.reserve(static_cast<size_t>(arch.layers) * (experts_unit ? 2 : 1) + 2);
  const detail::CheckpointNames names = detail::checkpoint_names(arch);
  spec.units.push_back(build_embedding(arch, names));
  for (int64_t layer = 0; layer < arch.layers; ++layer) {
    build_block(arch, names, layer, kernels, local_experts, experts_unit, spec.units);
  }
  spec.units.push_back(build_head(arch, names, kernels));
  return spec;
}

void divide(std::vector<double>& values, double by) {
  for (double& v : values) v /= by;
}

// Sequence parallelism: every element-wise op and every activation of a
// unit, the hidden-wide ones too, on 1/tp of the tokens, so the rank's share
// of them is the whole model's over tp (Korthikanti et al. 2022, section 4.2.2).
void spread_over_sequence(const ModelSpec& whole, double tp, ModelSpec& local) {
  RAGGED_ASSERT(whole.units.size() == local.units.size(), "the whole model and its rank's part have the same units");
  for (size_t u = 0; u < local.units.size(); ++u) {
    const UnitSpec& from = whole.units[u];
    UnitSpec& to = local.units[u];
    RAGGED_ASSERT(from.compute.elementwise.size() == to.compute.elementwise.size(), "the same element-wise ops");
    for (size_t i = 0; i < to.compute.elementwise.size(); ++i) {
      const ElementwiseOp& op = from.compute.elementwise[i];
      to.compute.elementwise[i].bytes_per_token = op.bytes_per_token / tp;
      to.compute.elementwise[i].backward_bytes_per_token = op.backward_bytes_per_token < 0 ? -1 : op.backward_bytes_per_token / tp;
    }
    ActivationBytes act = from.activations;
    for (double* v : {&act.saved_none, &act.saved_selective, &act.saved_full, &act.working, &act.logits_gradient,
                      &act.head_input_gradient, &act.loss_logits, &act.returned_logits, &act.returned_kv,
                      &act.scores_per_key}) {
      *v /= tp;
    }
    divide(act.working_pieces, tp);
    divide(act.forward_pieces, tp);
    to.activations = act;
  }
}

// TorchTitan's op-level selective checkpointing run eagerly under sequence
// parallelism keeps two things the count above (Korthikanti et al.'s, for
// Megatron's row-parallel layers, which save no output) leaves out. Eager
// SAC caches the output of every op its policy must save, whether the
// backward reads it or not: a row-parallel GEMM's saved output (every second
// mm: Llama's w2) is its partial sum over all the tokens, the whole width on
// every tp rank, not 1/tp of it; and every reduce-scatter after a
// row-parallel GEMM keeps its output (the save list holds
// _c10d_functional.reduce_scatter_tensor), the rank's 1/tp of the tokens at
// that width (torchtitan models/llama3/infra/parallelize.py,
// _op_sac_save_list; torch.utils.checkpoint's selective caching mode).
// Compiled, the partitioner saves only what the backward reads, and neither
// is read. A row-parallel GEMM is one whose input width tp cut.
void keep_sequence_parallel_saves(const ModelSpec& whole, double tp, ModelSpec& local) {
  if (whole.kernels.saved_names || !whole.kernels.eager_blocks) return;
  const double b = bytes_of(whole.arch);
  for (size_t u = 0; u < local.units.size(); ++u) {
    UnitSpec& to = local.units[u];
    if (to.kind != UnitKind::kBlock || !to.activations.selective_recomputes_gemms) continue;
    const std::vector<GemmShape>& whole_gemms = whole.units[u].compute.gemms;
    const std::vector<GemmShape>& local_gemms = to.compute.gemms;
    RAGGED_ASSERT(whole_gemms.size() == local_gemms.size(), "a split block has the whole block's GEMMs");
    double kept = 0;
    for (size_t i = 0; i < local_gemms.size(); ++i) {
      if (local_gemms[i].routed_experts || local_gemms[i].k == whole_gemms[i].k) continue;
      const double width = gemm_output_bytes(whole_gemms[i], b);
      if (selective_saves_gemm(i)) kept += width * (1.0 - 1.0 / tp);  // saved as selective_saved counts it, but whole
      kept += width / tp;                                 // the reduce-scatter's output
    }
    to.activations.saved_selective += kept;
  }
}

// Whole experts under tensor parallelism (Megatron-Core's
// --expert-tensor-parallel-size 1): each tp rank routes its own 1/tp of the
// tokens (sequence parallelism) and dispatches them to experts held whole,
// so the router and the routed experts' GEMMs see 1/tp of the tokens at the
// whole width, where split experts see every token at 1/tp of it (the same
// FLOPs, other shapes). Their element-wise work and activations are already
// the rank's 1/tp of the tokens (spread_over_sequence).
void route_own_tokens(double tp, ModelSpec& local) {
  for (UnitSpec& unit : local.units) {
    for (GemmShape& gemm : unit.compute.gemms) {
      const TensorSpec* weight = unit.weight_of(gemm);
      const bool router = weight != nullptr && weight->role == TensorRole::kRouter;
      if (gemm.routed_experts || router) gemm.token_fraction /= tp;
    }
  }
}

// KempnerForge's tp plan: the embedding whole on every tp rank; the head's
// GEMM split by the vocabulary, its logits all-gathered, so the loss and
// the logits it holds are the whole vocabulary's on every rank. Under
// sequence parallelism the final norm still runs on the rank's tokens.
void gather_logits(const ModelSpec& whole, bool sequence_parallel, double tp, ModelSpec& local) {
  local.units.front() = whole.units.front();
  const UnitSpec& full = whole.units.back();
  UnitSpec& head = local.units.back();
  head.compute.elementwise.back() = full.compute.elementwise.back();
  const double spread_input = sequence_parallel ? head_input_saved(whole.arch, whole.kernels) * (1.0 - 1.0 / tp) : 0.0;
  head.activations = full.activations;
  for (double* saved : {&head.activations.saved_none, &head.activations.saved_selective, &head.activations.saved_full}) {
    *saved -= spread_input;
  }
}

}  // namespace

ArchConfig stored_arch(const ArchConfig& checkpoint, const KernelChoices& kernels) {
  ArchConfig arch = checkpoint;
  if (!kernels.fused_projections) return arch;
  if (arch.attention == AttentionKind::kGqa) arch.qkv_fused = true;
  if (arch.mlp == MlpKind::kGated || arch.experts > 0) arch.gate_up_fused = true;
  return arch;
}

ModelSpec build_model(const ArchConfig& arch, const KernelChoices& kernels) {
  validate_arch(arch, "");
  return build_units(arch, kernels, arch.experts, false);
}

namespace {

// Which dimension tensor parallelism cut each of a rank's tensors along,
// from the whole model's shape of the same tensor (the builders emit both in
// the same order).
void mark_tensor_cuts(const ModelSpec& whole, ModelSpec& local) {
  RAGGED_ASSERT(whole.units.size() == local.units.size(), "a split model has the whole model's units");
  for (size_t u = 0; u < local.units.size(); ++u) {
    std::vector<TensorSpec>& tensors = local.units[u].tensors;
    RAGGED_ASSERT(whole.units[u].tensors.size() == tensors.size(), "a split unit has the whole unit's tensors");
    for (size_t t = 0; t < tensors.size(); ++t) {
      const std::vector<int64_t>& full = whole.units[u].tensors[t].shape;
      const std::vector<int64_t>& part = tensors[t].shape;
      if (full == part) continue;
      tensors[t].tp_cut = full[0] != part[0] ? TensorCut::kRows : TensorCut::kColumns;
    }
  }
}

}  // namespace

ModelSpec build_model(const ArchConfig& arch, const KernelChoices& kernels, const ModelSplit& split) {
  if (split.trivial()) return build_model(arch, kernels);
  validate_arch(arch, "");
  if (const std::vector<SplitProblem> problems = check_split(arch, split); !problems.empty()) {
    throw InputError(fmt::format("mesh.{}: {}", problems.front().field, problems.front().message));
  }
  const int64_t local_experts = arch.experts / split.ep;
  const bool experts_unit = split.ep > 1;
  ArchConfig local_arch = tensor_parallel_arch(arch, split.tp, split.vocabulary_parallel);
  if (split.whole_experts) local_arch.moe_intermediate = arch.moe_intermediate;
  ModelSpec local = build_units(local_arch, kernels, local_experts, experts_unit);
  local.name = arch.name;
  local.split = split;
  if (split.tp > 1) {
    const ModelSpec whole = build_units(arch, kernels, local_experts, experts_unit);
    mark_tensor_cuts(whole, local);
    if (split.sequence_parallel) {
      spread_over_sequence(whole, static_cast<double>(split.tp), local);
      keep_sequence_parallel_saves(whole, static_cast<double>(split.tp), local);
    }
    if (split.gathered_logits) gather_logits(whole, split.sequence_parallel, static_cast<double>(split.tp), local);
    if (split.whole_experts) route_own_tokens(static_cast<double>(split.tp), local);
  }
  return local;
}

}  // namespace ragged::models
