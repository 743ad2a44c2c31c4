// Named checkpointing (the scenario's SAVED_NAMES): a dense block keeps its
// input and the named tensors its backward reads; the backward reruns the
// forward ops that rebuild whatever else it reads, and nothing more. This is
// how JAX's remat policies behave (jax.checkpoint with
// save_only_these_names or the dots policies): the saved residuals are the
// values the linearised backward and its recomputation consume, the rest of
// the forward is dead code there.

#include <array>

#include <fmt/format.h>

#include "common/errors.hpp"

#include "models/layer_parts.hpp"

namespace ragged::models {
namespace detail {
namespace {

// A dense block's forward as tensors and the ops that make them. A parallel
// block (GPT-NeoX, Falcon) has no residual between its halves: the MLP norm
// reads the block's input; one shared norm makes both halves' input.
enum Tensor : size_t { kInput, kNorm1, kQkv, kContext, kOutProj, kResidual, kNorm2, kMlpIn, kProduct, kMlpOut, kTensors };
enum Op : size_t { kNorm1Op, kQkvOp, kAttentionOp, kOutProjOp, kResidualOp, kNorm2Op, kMlpInOp, kActivationOp, kDownOp, kOps };

struct Dataflow {
  std::array<Op, kTensors> producer{};
  std::array<std::vector<Tensor>, kOps> inputs{};
  std::array<double, kTensors> bytes{};
  std::array<bool, kTensors> named{};
};

// What each op's backward reads: the input of a norm, of a projection (for
// its weight gradient), of the activation; the attention's q, k, v, output
// and statistics. Rotary and the residual adds read nothing.
std::vector<Tensor> backward_reads(const Dataflow& flow) {
  std::vector<Tensor> reads;
  for (Op op : {kNorm1Op, kQkvOp, kOutProjOp, kNorm2Op, kMlpInOp, kActivationOp, kDownOp}) {
    for (Tensor t : flow.inputs[op]) reads.push_back(t);
  }
  reads.push_back(kQkv);
  reads.push_back(kContext);
  return reads;
}

Dataflow dense_dataflow(const ArchConfig& arch, const BlockParts& parts, const SavedNames& names,
                        const UnitSpec& unit) {
  const double b = static_cast<double>(dtype_bytes(arch.dtype));
  const double h = static_cast<double>(arch.hidden) * b;
  const AttentionShape& attention = *unit.compute.attention;
  const double context = static_cast<double>(attention.heads) *
                         (static_cast<double>(attention.v_head_dim) * b + kSoftmaxStatBytes);
  Dataflow f;
  f.producer = {kNorm1Op, kNorm1Op, kQkvOp, kAttentionOp, kOutProjOp, kResidualOp, kNorm2Op, kMlpInOp, kActivationOp,
                kDownOp};
  const Tensor mlp_norm_input = arch.parallel_block ? kInput : kResidual;
  const Tensor mlp_input = arch.shared_block_norm ? kNorm1 : kNorm2;
  f.inputs[kNorm1Op] = {kInput};
  f.inputs[kQkvOp] = {kNorm1};
  f.inputs[kAttentionOp] = {kQkv};
  f.inputs[kOutProjOp] = {kContext};
  f.inputs[kResidualOp] = {kInput, kOutProj};
  f.inputs[kNorm2Op] = {mlp_norm_input};
  f.inputs[kMlpInOp] = {mlp_input};
  f.inputs[kActivationOp] = {kMlpIn};
  f.inputs[kDownOp] = {kProduct};
  const double product = parts.mlp.recomputable;
  f.bytes = {h, h, parts.attention.saved - context, context, h, arch.parallel_block ? 0.0 : h,
             arch.shared_block_norm ? 0.0 : h, parts.mlp.saved - product, product, h};
  f.named = {true,
             names.has(BlockTensor::kNormOut),
             names.has(BlockTensor::kQkv),
             names.has(BlockTensor::kAttentionOut),
             names.has(BlockTensor::kOutProj),
             names.has(BlockTensor::kResidual),
             names.has(BlockTensor::kNormOut),
             names.has(BlockTensor::kMlpIn),
             names.has(BlockTensor::kMlpProduct),
             names.has(BlockTensor::kMlpOut)};
  return f;
}

// Which op each of the unit's GEMMs and element-wise ops belongs to.
Op gemm_op(const BlockParts& parts, const UnitSpec& unit, size_t i) {
  if (i < parts.mlp_gemms) return unit.compute.gemms[i].part == UnitPart::kAttentionCore ? kOutProjOp : kQkvOp;
  return i + 1 == unit.compute.gemms.size() ? kDownOp : kMlpInOp;
}

Op elementwise_op(const BlockParts& parts, size_t i) {
  if (i == parts.norm1) return kNorm1Op;
  if (i == parts.residual) return kResidualOp;
  if (i == parts.norm2) return kNorm2Op;
  if (i == parts.activation) return kActivationOp;
  if (i < parts.residual) return kQkvOp;  // rotary, the q/k norms, MLA's latent norms
  return kOps;                            // the MLP's residual add: never reread
}

}  // namespace

void keep_named(const ArchConfig& arch, const BlockParts& parts, const SavedNames& names, UnitSpec& unit) {
  if (arch.is_moe_layer(parts.layer)) {
    throw InputError(fmt::format("training.saved_activations: layer {} of {} is a mixture-of-experts block; named "
                                 "checkpointing covers dense blocks: use SELECTIVE or FULL",
                                 parts.layer, arch.name));
  }
  const Dataflow flow = dense_dataflow(arch, parts, names, unit);
  std::array<bool, kOps> rerun{};
  std::array<bool, kTensors> kept{}, seen{};
  std::vector<Tensor> work = backward_reads(flow);
  while (!work.empty()) {
    const Tensor t = work.back();
    work.pop_back();
    if (seen[t]) continue;
    seen[t] = true;
    if (flow.named[t]) {
      kept[t] = true;
      continue;
    }
    const Op op = flow.producer[t];
    if (rerun[op]) continue;
    rerun[op] = true;
    for (Tensor input : flow.inputs[op]) work.push_back(input);
  }
  double saved = 0;
  for (size_t t = 0; t < kTensors; ++t) saved += kept[t] ? flow.bytes[t] : 0.0;
  ActivationBytes::RecomputedOps ops;
  ops.attention = rerun[kAttentionOp];
  for (size_t i = 0; i < unit.compute.gemms.size(); ++i) ops.gemms.push_back(rerun[gemm_op(parts, unit, i)]);
  for (size_t i = 0; i < unit.compute.elementwise.size(); ++i) {
    const Op op = elementwise_op(parts, i);
    ops.elementwise.push_back(op != kOps && rerun[op]);
  }
  unit.activations.saved_selective = saved;
  unit.activations.named_recompute = std::move(ops);
}

}  // namespace detail

UnitSpec named_recompute_ops(const UnitSpec& unit) {
  RAGGED_ASSERT(unit.activations.named_recompute.has_value(), "a unit under named checkpointing");
  const ActivationBytes::RecomputedOps& ops = *unit.activations.named_recompute;
  UnitSpec out{unit.name, unit.kind, {}, {}, unit.activations};
  for (size_t i = 0; i < unit.compute.gemms.size(); ++i) {
    if (ops.gemms[i]) out.compute.gemms.push_back(unit.compute.gemms[i]);
  }
  for (size_t i = 0; i < unit.compute.elementwise.size(); ++i) {
    if (ops.elementwise[i]) out.compute.elementwise.push_back(unit.compute.elementwise[i]);
  }
  if (ops.attention) out.compute.attention = unit.compute.attention;
  return out;
}

}  // namespace ragged::models
