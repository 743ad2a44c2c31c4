// HostWorkload: the activations between units, the caches forward leaves for
// backward, and the activation gradient that backward passes down.

#include "backend/workload.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "backend/context_chunks.hpp"
#include "backend/mesh_step.hpp"
#include "backend/workload_internal.hpp"
#include "backend/workload_state.hpp"
#include "common/errors.hpp"
#include "scenarios/scenario.pb.h"
#include "scenarios/scenario_rules.hpp"

namespace ragged::backend {

using detail::Buf;
using models::UnitKind;

void check_update_kernel(const scenarios::Training& training) {
  if (!training.optimizer().has_adamw() || training.optimizer().adamw().implementation() == scenarios::FUSED_KERNEL) return;
  throw InputError(fmt::format("training.optimizer.adamw.implementation: {} describes another stack's update; `ragged "
                               "run` updates with one fused AdamW kernel: simulate it, or run with --set "
                               "training.optimizer.adamw.implementation=FUSED_KERNEL",
                               scenarios::AdamWImplementation_Name(training.optimizer().adamw().implementation())));
}

void check_loop_metrics(const scenarios::Training& training) {
  if (training.outputs().metric_cross_entropies() <= 0) return;
  throw InputError(fmt::format("training.outputs.metric_cross_entropies: {}: `ragged run` computes the loss only, no "
                               "metrics over the logits; simulate it, or run with --set "
                               "training.outputs.metric_cross_entropies=0",
                               training.outputs().metric_cross_entropies()));
}

void check_optimizer_step(const scenarios::Training& training) {
  if (scenarios::steps_optimizer(training)) return;
  throw InputError("training.optimizer_step: false describes a harness that never steps its optimizer; `ragged run` "
                   "trains (and checks the trained parameters): simulate it, or run without it");
}

void check_workload_supported(const models::ModelSpec& model) {
  const models::ArchConfig& a = model.arch;
  std::vector<std::string> parts;
  if (a.norm == models::NormKind::kLayerNorm) parts.push_back(a.norm_bias ? "LayerNorm with bias" : "LayerNorm");
  if (a.mlp == models::MlpKind::kPlain) parts.push_back("a two-matrix MLP (up, activation, down)");
  if (a.qkv_fused) parts.push_back("a fused q/k/v projection");
  if (a.positions == models::PositionKind::kLearned) parts.push_back("learned position embeddings");
  if (a.positions == models::PositionKind::kAlibi) parts.push_back("ALiBi attention biases");
  if (a.parallel_block) parts.push_back("attention and MLP in parallel");
  if (!a.final_norm) parts.push_back("no final norm");
  if (a.embed_dim > 0) parts.push_back("a token table projected to hidden (word_embed_proj_dim)");
  if (a.embedding_norm) parts.push_back("a LayerNorm after the embedding");
  // The workloads compute attention with their own kernel and the loss from
  // fp32 logits; the other kernels change what the Program's buffers hold.
  if (model.kernels.attention != models::AttentionKernel::kFlash2) {
    throw InputError(fmt::format("training.attention is {}: `ragged run` computes attention with its own kernel and "
                                 "sizes it like FlashAttention-2; `ragged plan` and `ragged simulate` model the other "
                                 "kernels. Leave training.attention unset (FLASH_ATTENTION_2) to run",
                                 models::attention_kernel_name(model.kernels.attention)));
  }
  if (model.kernels.loss != models::LossKernel::kFp32Logits) {
    throw InputError(fmt::format("training.loss is {}: `ragged run` computes the loss from fp32 logits; `ragged plan` "
                                 "and `ragged simulate` model the other kernels. Leave training.loss unset "
                                 "(FP32_LOGITS) to run",
                                 models::loss_kernel_name(model.kernels.loss)));
  }
  if (parts.empty()) return;
  throw InputError(fmt::format(
      "model {} ({}): `ragged run` computes Llama-style and mixture-of-experts blocks (RMSNorm, separate q/k/v, a "
      "gated MLP, attention then MLP); this model has {}. `ragged plan` and `ragged simulate` support it; to run for "
      "real, use a Llama-style model",
      model.name, a.family, fmt::join(parts, ", ")));
}

bool head_reads_embedding(const models::ModelSpec& model) {
  if (!model.arch.tie_embeddings || model.units.empty()) return false;
  for (const models::TensorSpec& tensor : model.units.back().tensors) {
    if (tensor.name == "lm_head.weight") return false;
  }
  return true;
}

size_t workload_tensor_count(const models::ModelSpec& model, int unit) {
  const models::UnitSpec& spec = model.units.at(static_cast<size_t>(unit));
  const bool tied = spec.kind == UnitKind::kHead && head_reads_embedding(model);
  return spec.tensors.size() + (tied ? 1 : 0);
}

HostWorkload::HostWorkload(const models::ModelSpec& model, int64_t sequences, int64_t seq_len, TensorParallelRank tp,
                           ContextParallelRank cp, ExpertParallelRank ep)
    : state_(new State) {
  State& s = *state_;
  s.tp = tp;
  s.cp = cp;
  s.ep = ep;
  RAGGED_ASSERT(ep.size == model.split.ep && ep.rank >= 0 && ep.rank < ep.size,
                "host workload: a rank of the expert-parallel group the model was split for");
  if (ep.size > 1 && cp.size > 1) {
    throw InputError(fmt::format("training.mesh.ep {} with cp {}: `ragged run` runs expert parallelism with FSDP, HSDP "
                                 "and tensor parallelism so far; `ragged simulate` models the whole mesh",
                                 ep.size, cp.size));
  }
  RAGGED_ASSERT(tp.size >= 1 && tp.rank >= 0 && tp.rank < tp.size, "host workload: a rank of its tensor-parallel group");
  RAGGED_ASSERT(cp.size >= 1 && cp.rank >= 0 && cp.rank < cp.size, "host workload: a rank of its context-parallel group");
  if (cp.size > 1) check_context_split(cp.size, seq_len);
  const int64_t local_len = seq_len / cp.size;  // a cp rank's tokens of each sequence
  if (tp.size > 1 || cp.size > 1) {
    check_tensor_parallel_supported(model, tp.size, sequences * local_len, model.split.sequence_parallel);
  }
  s.model = model;
  s.sequences = sequences;
  s.seq_len = seq_len;
  s.dims = detail::Dims{sequences * local_len, model.arch.hidden, local_len};
  s.vocab = model.arch.vocab;
  RAGGED_ASSERT(sequences >= 0 && seq_len >= 0, "host workload: negative batch shape");
  check_workload_supported(model);
  const int units = s.units();
  RAGGED_ASSERT(
      units >= 2 && model.units.front().kind == UnitKind::kEmbedding && model.units.back().kind == UnitKind::kHead,
      "host workload: a model starts with its embedding and ends with its head");
  const models::UnitSpec& embed = model.units.front();
  RAGGED_ASSERT(embed.tensors.size() == 1 && embed.tensors[0].shape == std::vector<int64_t>({s.vocab, s.dims.hidden}),
                "host workload: the embedding unit holds one [vocab, hidden] table");
  s.blocks.resize(static_cast<size_t>(units));
  s.experts.resize(static_cast<size_t>(units));
  for (int u = 1; u + 1 < units; ++u) {
    const models::UnitSpec& unit = model.units[static_cast<size_t>(u)];
    if (unit.kind == UnitKind::kExperts) {
      s.experts[static_cast<size_t>(u)] = detail::experts_layout(model, unit);
    } else {
      s.blocks[static_cast<size_t>(u)] = detail::block_layout(model, unit);
    }
  }
  if (ep.size > 1) s.ep_units.resize(static_cast<size_t>(units));
  s.head = detail::head_layout(model, model.units.back());
  s.acts.resize(static_cast<size_t>(units));
  s.forwarded.assign(static_cast<size_t>(units), false);
  s.caches.resize(static_cast<size_t>(units));
  if (tp.size > 1 || cp.size > 1) s.tp_units.resize(static_cast<size_t>(units));
}

HostWorkload::~HostWorkload() = default;

void HostWorkload::set_batch(const Batch& batch) {
  State& s = *state_;
  RAGGED_ASSERT(batch.sequences == s.sequences && batch.seq_len == s.seq_len,
                fmt::format("host workload: batch of {}x{} tokens, built for {}x{}", batch.sequences, batch.seq_len,
                            s.sequences, s.seq_len));
  const auto whole = static_cast<size_t>(s.sequences * s.seq_len);
  RAGGED_ASSERT(batch.tokens.size() == whole && batch.labels.size() == whole,
                "host workload: batch tokens and labels must hold sequences * seq_len ids");
  const int64_t vocab = s.vocab * s.tp.size;  // a tp rank holds vocab / tp rows of the tables
  for (size_t i = 0; i < whole; ++i) {
    RAGGED_ASSERT(batch.tokens[i] >= 0 && batch.tokens[i] < vocab && batch.labels[i] >= 0 && batch.labels[i] < vocab,
                  "host workload: token id outside the vocabulary");
  }
  s.batch = batch;
  if (s.cp.size > 1) {
    // This cp rank's chunks of each sequence, in order, and their positions.
    const int64_t local_len = s.dims.seq_len;
    s.positions.resize(static_cast<size_t>(s.dims.tokens));
    s.batch.tokens.resize(static_cast<size_t>(s.dims.tokens));
    s.batch.labels.resize(static_cast<size_t>(s.dims.tokens));
    for (int64_t q = 0; q < s.sequences; ++q) {
      for (int64_t i = 0; i < local_len; ++i) {
        const int64_t position = context_position(s.cp.rank, s.cp.size, i, local_len);
        const auto at = static_cast<size_t>(q * local_len + i);
        const auto from = static_cast<size_t>(q * s.seq_len + position);
        s.positions[at] = static_cast<int32_t>(position);
        s.batch.tokens[at] = batch.tokens[from];
        s.batch.labels[at] = batch.labels[from];
      }
    }
  }
  const auto tokens = static_cast<size_t>(s.dims.tokens);
  if (s.tp.size > 1) {
    const auto local = [&s](int32_t id) { return local_vocabulary_id(id, s.tp.rank, s.vocab); };
    s.local_tokens.resize(tokens);
    s.local_labels.resize(tokens);
    for (size_t i = 0; i < tokens; ++i) {
      s.local_tokens[i] = local(s.batch.tokens[i]);
      s.local_labels[i] = local(s.batch.labels[i]);
    }
  }
  s.has_batch = true;
  s.forwarded.assign(s.forwarded.size(), false);
  s.grad_unit = -1;
}

// Under tensor parallelism every unit runs the parallel path; under context
// parallelism alone the blocks (their attention reads every rank's keys).
bool HostWorkload::in_parts(int unit) const {
  const State& s = *state_;
  return s.tp.size > 1 || (s.cp.size > 1 && s.model.units.at(static_cast<size_t>(unit)).kind == UnitKind::kBlock);
}

void HostWorkload::forward(int unit, const ConstTensors& params, models::UnitPart part) {
  State& s = *state_;
  if (in_parts(unit)) {
    tp_forward(unit, params, part);
    return;
  }
  RAGGED_ASSERT(part == models::UnitPart::kWhole, "host workload: parts of a unit without tensor parallelism");
  const models::UnitSpec& spec = s.unit_checked(unit, params.size());
  const auto u = static_cast<size_t>(unit);
  RAGGED_ASSERT(unit == 0 || s.forwarded[u - 1], "host workload: forward runs the units in order");
  const int64_t size = s.dims.tokens * s.dims.hidden;
  if (spec.kind != UnitKind::kHead) s.acts[u].resize(static_cast<size_t>(size));
  switch (spec.kind) {
    case UnitKind::kEmbedding:
      detail::embed_forward(params[0], s.batch.tokens.data(), s.dims.tokens, s.dims.hidden, s.acts[u].data());
      break;
    case UnitKind::kBlock:
      detail::block_forward(s.ctx, s.blocks[u], params, s.dims, s.acts[u - 1].data(), s.caches[u], s.acts[u].data());
      break;
    case UnitKind::kExperts:  // its output comes with the combine (ep_end)
      experts_forward(unit, params);
      break;
    case UnitKind::kHead:
      detail::head_forward(s.ctx, params[static_cast<size_t>(s.head.norm)],
                           params[static_cast<size_t>(s.head_weight(spec))], s.dims, s.vocab, s.acts[u - 1].data(),
                           s.batch.labels.data(), s.head_cache);
      break;
  }
  s.forwarded[u] = true;
}

void HostWorkload::loss_backward(int unit) {
  State& s = *state_;
  const auto u = static_cast<size_t>(unit);
  RAGGED_ASSERT(u + 1 == s.forwarded.size() && s.forwarded[u],
                "host workload: the loss backward follows the head's forward");
  // A tp rank's probabilities are its vocabulary's: its labels are local (-1 off the rank).
  const int32_t* labels = s.tp.size > 1 ? s.local_labels.data() : s.batch.labels.data();
  detail::head_loss_backward(s.head_cache, labels, s.dims.tokens, s.vocab);
}

void HostWorkload::backward(int unit, const ConstTensors& params, const Tensors& grads, models::UnitPart part) {
  State& s = *state_;
  if (in_parts(unit)) {
    tp_backward(unit, params, grads, part);
    return;
  }
  RAGGED_ASSERT(part == models::UnitPart::kWhole, "host workload: parts of a unit without tensor parallelism");
  const models::UnitSpec& spec = s.unit_checked(unit, params.size());
  RAGGED_ASSERT(grads.size() == params.size(), "host workload: one gradient per tensor");
  const auto u = static_cast<size_t>(unit);
  RAGGED_ASSERT(s.forwarded[u], fmt::format("host workload: backward of {} before its forward", spec.name));
  const int64_t size = s.dims.tokens * s.dims.hidden;
  if (spec.kind == UnitKind::kHead) {
    s.grad.resize(static_cast<size_t>(size));
    const auto norm = static_cast<size_t>(s.head.norm);
    const auto weight = static_cast<size_t>(s.head_weight(spec));
    detail::head_backward(s.ctx, params[norm], params[weight], grads[norm], grads[weight], s.dims, s.vocab,
                          s.acts[u - 1].data(), s.batch.labels.data(), s.head_cache, s.grad.data());
    s.grad_unit = unit - 1;
    return;
  }
  RAGGED_ASSERT(s.grad_unit == unit, fmt::format("host workload: backward of {} out of order", spec.name));
  if (spec.kind == UnitKind::kEmbedding) {
    detail::embed_backward(s.batch.tokens.data(), s.dims.tokens, s.dims.hidden, s.grad.data(), grads[0]);
    s.grad_unit = -1;
    return;
  }
  if (spec.kind == UnitKind::kExperts) {  // the block's gradient comes with the exchange back (ep_end)
    experts_backward(unit, params, grads);
    return;
  }
  s.grad_next.resize(static_cast<size_t>(size));
  detail::block_backward(s.ctx, s.blocks[u], params, grads, s.dims, s.acts[u - 1].data(), s.caches[u], s.grad.data(),
                         s.grad_next.data());
  std::swap(s.grad, s.grad_next);
  s.grad_unit = unit - 1;
}

std::span<const float> HostWorkload::output(int unit) const {
  const State& s = *state_;
  const auto u = static_cast<size_t>(unit);
  RAGGED_ASSERT(unit >= 0 && unit + 1 < s.units() && s.forwarded[u],
                fmt::format("host workload: no output of unit {} yet", unit));
  return s.acts[u];
}

void HostWorkload::receive_output(int unit, std::span<const float> values) {
  State& s = *state_;
  const auto u = static_cast<size_t>(unit);
  RAGGED_ASSERT(unit >= 0 && unit + 1 < s.units() && s.has_batch, "host workload: set_batch before receiving");
  RAGGED_ASSERT(static_cast<int64_t>(values.size()) == s.dims.tokens * s.dims.hidden,
                "host workload: a unit's output holds tokens x hidden values");
  s.acts[u].assign(values.begin(), values.end());
  s.forwarded[u] = true;
}

void HostWorkload::receive_output_gradient(int unit, std::span<const float> values) {
  State& s = *state_;
  RAGGED_ASSERT(unit >= 0 && unit < s.units() && s.forwarded[static_cast<size_t>(unit)],
                fmt::format("host workload: the gradient of unit {}'s output before its forward", unit));
  RAGGED_ASSERT(static_cast<int64_t>(values.size()) == s.dims.tokens * s.dims.hidden,
                "host workload: a unit's output gradient holds tokens x hidden values");
  s.grad.assign(values.begin(), values.end());
  s.grad_unit = unit;
}

std::span<const float> HostWorkload::output_gradient(int unit) const {
  const State& s = *state_;
  RAGGED_ASSERT(unit >= 0 && s.grad_unit == unit,
                fmt::format("host workload: no gradient of unit {}'s output (the backward is at {})", unit, s.grad_unit));
  return s.grad;
}

double HostWorkload::loss() const {
  RAGGED_ASSERT(state_->has_batch && state_->forwarded.back(), "host workload: loss before the head's forward");
  return state_->head_cache.loss;
}

double HostWorkload::gemm_flops() const { return state_->ctx.flops; }

const TensorParallelRank& HostWorkload::tensor_parallel() const { return state_->tp; }

std::vector<int64_t> HostWorkload::routing(int unit) const {
  const State& s = *state_;
  RAGGED_ASSERT(unit >= 0 && unit < s.units() && s.forwarded[static_cast<size_t>(unit)],
                "host workload: routing of a unit not forwarded");
  const auto u = static_cast<size_t>(unit);
  if (s.model.units[u].kind != UnitKind::kBlock || !s.blocks[u].moe) return {};
  return s.caches[u].moe.experts;
}

}  // namespace ragged::backend
