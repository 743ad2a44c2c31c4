// One tensor-parallel rank's units (docs/MESH.md, docs/BACKEND.md):
// Megatron's sequence-parallel split, computed as the Program's parts between
// its exchanges. Between parts a rank holds its rows of the hidden state; a
// part reads every rank's rows gathered and leaves partial sums (over its
// heads, its MLP columns, its vocabulary) that the group reduce-scatters into
// each rank's rows, where the residual adds them:
//   block  attention: X = gather(x); p = o_proj(attn(rms(X))) over the rank's
//          heads; x1 = x + scatter(p). MLP: X1 = gather(x1); p =
//          down(swiglu(rms(X1))) over its columns; x2 = x1 + scatter(p).
//   embed  p = lookups of the rank's table rows (zeros elsewhere); x = scatter(p).
//   head   X = gather(x); the rank's vocabulary's logits of rms(X); per token
//          their maximum, sum of exponentials and the target's logit,
//          gathered and combined in rank order into the loss.
// The backward runs the conjugates: a gather where the forward scattered, a
// reduce-scatter of partial input gradients where it gathered. Norm weights
// are whole on every rank and get partial gradients here, which the
// Program's all-reduce of the uncut weights sums over the group.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "backend/mesh_step.hpp"
#include "backend/workload_cp.hpp"
#include "backend/workload_state.hpp"

namespace ragged::backend {

using detail::Buf;
using models::UnitKind;
using models::UnitPart;

namespace {

bool is_row_parallel_bias(const models::TensorSpec& t) {
  return t.tp_cut == models::TensorCut::kWhole && (t.name.ends_with("o_proj.bias") || t.name.ends_with("down_proj.bias") ||
                                                   t.name.ends_with("down_proj_bias") || t.name.ends_with("w2.bias"));
}

int part_index(UnitPart part) { return part == UnitPart::kMlp ? 1 : 0; }

}  // namespace

void check_tensor_parallel_supported(const models::ModelSpec& model, int tp, int64_t tokens, bool sequence_parallel) {
  std::vector<std::string> problems;
  if (!sequence_parallel) problems.push_back("sequence parallelism off (the host runs tp with it: leave sequence_parallel true)");
  if (tokens % tp != 0) {
    problems.push_back(fmt::format("{} tokens a micro-batch, which tp {} does not split into equal rows (use a "
                                   "micro_batch_size x sequence_length that tp divides)",
                                   tokens, tp));
  }
  if (model.arch.attention == models::AttentionKind::kMla) problems.push_back("MLA attention");
  for (const models::UnitSpec& unit : model.units) {
    for (const models::TensorSpec& t : unit.tensors) {
      if (is_row_parallel_bias(t)) problems.push_back(fmt::format("a bias after a row-parallel projection ({})", t.name));
    }
  }
  if (problems.empty()) return;
  throw InputError(fmt::format("training.mesh.tp {}: `ragged run` computes tensor parallelism for Llama-style dense "
                               "blocks; this run has {}. `ragged plan` and `ragged simulate` model it",
                               tp, fmt::join(problems, ", ")));
}

TpExchange HostWorkload::tp_begin(const TpStep& step) {
  State& s = *state_;
  RAGGED_ASSERT(!s.tp_units.empty(), "host workload: a mesh exchange without a mesh");
  const auto u = static_cast<size_t>(step.unit);
  TpUnitState& t = s.tp_units.at(u);
  const int64_t n = s.rows() * s.dims.hidden;  // a rank's slot
  const auto whole = static_cast<size_t>(s.dims.tokens * s.dims.hidden);
  if (step.collective == TpCollective::kLossStats) {
    // The head's forward filled this rank's slot: 3 doubles a token, moved as floats.
    return {reinterpret_cast<float*>(s.tp_loss.stats.data()), s.dims.tokens * 3 * 2};
  }
  if (step.collective == TpCollective::kKeyValueGather || step.collective == TpCollective::kKeyValueGradientScatter) {
    return key_value_exchange(s, u, step.collective == TpCollective::kKeyValueGather);
  }
  if (step.pass == TpPass::kAgain) {
    t.scratch.assign(whole, 0.0f);
    return {t.scratch.data(), n};
  }
  if (step.collective == TpCollective::kReduceScatter) {
    RAGGED_ASSERT(t.partial.size() == whole, "host workload: a reduce-scatter before its part computed");
    return {t.partial.data(), n};
  }
  // An all-gather of this rank's rows of what the part reads.
  const models::UnitKind kind = s.model.units[u].kind;
  const float* rows = nullptr;
  if (step.pass == TpPass::kForward) {
    rows = step.part == UnitPart::kMlp ? t.x1.data() : s.acts.at(u - 1).data();
  } else {
    const bool from_output = step.part == UnitPart::kMlp || kind == UnitKind::kEmbedding || kind == UnitKind::kExperts;
    RAGGED_ASSERT(!from_output || s.grad_unit == step.unit, "host workload: a gradient gathered out of order");
    rows = from_output ? s.grad.data() : t.dx1.data();
  }
  Buf& into = step.pass == TpPass::kForward ? t.gathered[part_index(step.part)] : t.grad_gathered;
  into.resize(whole);
  std::copy(rows, rows + n, into.data() + s.tp.rank * n);
  return {into.data(), n};
}

void HostWorkload::tp_end(const TpStep& step) {
  State& s = *state_;
  const auto u = static_cast<size_t>(step.unit);
  if (step.collective == TpCollective::kLossStats) {
    // Every rank combines the gathered statistics alike, in rank order.
    const int64_t tokens = s.dims.tokens, vocab = s.vocab;
    const std::vector<double>& stats = s.tp_loss.stats;
    double total = 0;
    for (int64_t r = 0; r < tokens; ++r) {
      double max = stats[static_cast<size_t>(r * 3)];
      for (int q = 1; q < s.tp.size; ++q) max = std::max(max, stats[static_cast<size_t>((q * tokens + r) * 3)]);
      double sum = 0, target = 0;
      for (int q = 0; q < s.tp.size; ++q) {
        const double* at = stats.data() + (q * tokens + r) * 3;
        sum += at[1] * std::exp(at[0] - max);
        target += at[2];
      }
      total += max + std::log(sum) - target;
      // The rank's probabilities, as the whole head rounds them (workload_head.cpp).
      float* row = s.head_cache.probs.data() + r * vocab;
      const double inv_sum = 1.0 / sum;
      for (int64_t v = 0; v < vocab; ++v) {
        row[v] = static_cast<float>(std::exp(static_cast<double>(row[v]) - max));
        row[v] = static_cast<float>(row[v] * inv_sum);
      }
    }
    s.head_cache.loss = tokens == 0 ? 0.0 : total / static_cast<double>(tokens);
    s.forwarded[u] = true;
    return;
  }
  if (step.collective == TpCollective::kKeyValueGather) {
    place_keys_and_values(s, u);
    return;
  }
  if (step.collective == TpCollective::kKeyValueGradientScatter) {
    own_key_value_gradients(s, u);
    return;
  }
  if (step.pass == TpPass::kAgain || step.collective == TpCollective::kAllGather) return;  // a part reads the gather
  TpUnitState& t = s.tp_units.at(u);
  const int64_t n = s.rows() * s.dims.hidden;
  const float* total = t.partial.data() + s.tp.rank * n;
  const auto add = [n, total](const Buf& residual, Buf& out) {
    out.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = residual[static_cast<size_t>(i)] + total[i];
  };
  const models::UnitKind kind = s.model.units[u].kind;
  if (step.pass == TpPass::kForward) {
    if (kind == UnitKind::kExperts) {  // the mixture's output and the block's residual
      add(s.tp_units.at(u - 1).x1, s.acts[u]);
      s.forwarded[u] = true;
    } else if (kind == UnitKind::kEmbedding) {
      s.acts[u].assign(total, total + n);
      s.forwarded[u] = true;
    } else if (step.part != UnitPart::kMlp) {  // the attention's output (its core's, under cp)
      add(s.acts.at(u - 1), t.x1);
    } else {
      add(t.x1, s.acts[u]);
      s.forwarded[u] = true;
    }
    return;
  }
  if (kind == UnitKind::kHead) {
    s.grad.assign(total, total + n);
  } else if (step.part == UnitPart::kMlp) {
    add(s.grad, t.dx1);
    return;
  } else {
    add(t.dx1, s.grad_next);
    std::swap(s.grad, s.grad_next);
  }
  s.grad_unit = step.unit - 1;
}

void HostWorkload::tp_forward(int unit, const ConstTensors& params, UnitPart part) {
  State& s = *state_;
  const models::UnitSpec& spec = s.unit_checked(unit, params.size());
  const auto u = static_cast<size_t>(unit);
  TpUnitState& t = s.tp_units[u];
  const int64_t tokens = s.dims.tokens, h = s.dims.hidden;
  const auto whole = static_cast<size_t>(tokens * h);
  const bool block = spec.kind == UnitKind::kBlock;
  if (block && gathers_before(part, false)) local_exchange(unit, part, TpPass::kForward, TpCollective::kAllGather);
  const Buf& input = t.gathered[part_index(part)];
  RAGGED_ASSERT(spec.kind == UnitKind::kEmbedding || spec.kind == UnitKind::kExperts ||
                    part == UnitPart::kAttentionCore || input.size() == whole,
                fmt::format("host workload: {} computes before its input is gathered", spec.name));
  t.partial.resize(whole);
  switch (spec.kind) {
    case UnitKind::kEmbedding:
      detail::embed_forward(params[0], s.local_tokens.data(), tokens, h, t.partial.data());
      break;
    case UnitKind::kBlock: {
      const detail::BlockLayout& lay = s.blocks[u];
      detail::BlockCache& c = s.caches[u];
      switch (part) {
        case UnitPart::kAttention:
        case UnitPart::kAttentionInput:
          c.n1.resize(whole);
          detail::rms_norm_forward(input.data(), detail::param_at(params, lay.in_norm), tokens, h, c.n1.data());
          if (part == UnitPart::kAttention) {
            detail::attention_forward(s.ctx, lay.attention, params, s.dims, c.n1.data(), c.attention, t.partial.data());
          } else {
            detail::attention_input_forward(s.ctx, lay.attention, params, s.dims, c.n1.data(), c.attention);
          }
          break;
        case UnitPart::kAttentionCore:
          detail::attention_core_forward(s.ctx, lay.attention, params, core_over_every_key(s, lay.attention),
                                         t.k_all.data(), t.v_all.data(), c.attention, t.partial.data());
          break;
        case UnitPart::kMlp:
          c.n2.resize(whole);
          detail::rms_norm_forward(input.data(), detail::param_at(params, lay.post_norm), tokens, h, c.n2.data());
          if (lay.moe) {
            // Every rank routes every token alike (the router is whole); its
            // experts' columns give partial outputs, summed by the reduce-scatter
            // (the experts unit's, when they are a unit of their own).
            detail::moe_forward(s.ctx, lay.experts, params, s.dims, c.n2.data(), c.moe, t.partial.data());
            if (lay.experts_apart) s.forwarded[u] = true;
            break;
          }
          c.dense.x = c.n2;
          detail::glu_forward(s.ctx, detail::bind_glu(lay.dense, h, 0, params, nullptr), c.dense);
          std::copy(c.dense.y.begin(), c.dense.y.end(), t.partial.begin());
          break;
        case UnitPart::kWhole: RAGGED_ASSERT(false, "host workload: a parallel block computes as its parts");
      }
      if (scatters_after(part, false)) local_exchange(unit, part, TpPass::kForward, TpCollective::kReduceScatter);
      break;
    }
    case UnitKind::kHead: {
      // This rank's logits and, per token, its maximum, sum of exp(logit -
      // maximum) and the target's logit (0 when another rank holds it).
      detail::HeadCache& hc = s.head_cache;
      const int64_t vocab = s.vocab;
      hc.n.resize(whole);
      detail::rms_norm_forward(input.data(), params[static_cast<size_t>(s.head.norm)], tokens, h, hc.n.data());
      hc.probs.resize(static_cast<size_t>(tokens * vocab));
      const float* weight = params[static_cast<size_t>(s.head_weight(spec))];
      detail::linear_forward(s.ctx, detail::Linear{weight, nullptr, nullptr, nullptr, vocab, h, false}, hc.n.data(),
                             tokens, hc.probs.data());
      s.tp_loss.stats.assign(static_cast<size_t>(s.tp.size * tokens * 3), 0.0);
      double* mine = s.tp_loss.stats.data() + s.tp.rank * tokens * 3;
      for (int64_t r = 0; r < tokens; ++r) {
        const float* row = hc.probs.data() + r * vocab;
        const double max = *std::max_element(row, row + vocab);
        double sum = 0;
        for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - max);
        const int32_t label = s.local_labels[static_cast<size_t>(r)];
        mine[r * 3] = max;
        mine[r * 3 + 1] = sum;
        mine[r * 3 + 2] = label >= 0 ? row[label] : 0.0;
      }
      hc.has_gradient = false;
      break;
    }
    case UnitKind::kExperts:  // its partial output comes with the combine (ep_end)
      experts_forward(unit, params);
      break;
  }
}

void HostWorkload::tp_backward(int unit, const ConstTensors& params, const Tensors& grads, UnitPart part) {
  State& s = *state_;
  const models::UnitSpec& spec = s.unit_checked(unit, params.size());
  RAGGED_ASSERT(grads.size() == params.size(), "host workload: one gradient per tensor");
  const auto u = static_cast<size_t>(unit);
  TpUnitState& t = s.tp_units[u];
  const int64_t tokens = s.dims.tokens, h = s.dims.hidden;
  const auto whole = static_cast<size_t>(tokens * h);
  const bool block = spec.kind == UnitKind::kBlock;
  if (block && gathers_before(part, true)) local_exchange(unit, part, TpPass::kBackward, TpCollective::kAllGather);
  const bool experts_gathered = part == UnitPart::kMlp && s.blocks[u].experts_apart;  // the experts unit's gather
  RAGGED_ASSERT(spec.kind == UnitKind::kHead || part == UnitPart::kAttentionInput || experts_gathered ||
                    t.grad_gathered.size() == whole,
                fmt::format("host workload: {}'s backward before its output gradient is gathered", spec.name));
  t.partial.resize(whole);
  switch (spec.kind) {
    case UnitKind::kHead: {
      const auto norm = static_cast<size_t>(s.head.norm);
      const auto weight = static_cast<size_t>(s.head_weight(spec));
      detail::head_backward(s.ctx, params[norm], params[weight], grads[norm], grads[weight], s.dims, s.vocab,
                            t.gathered[0].data(), s.local_labels.data(), s.head_cache, t.partial.data());
      break;
    }
    case UnitKind::kBlock: {
      const detail::BlockLayout& lay = s.blocks[u];
      const detail::BlockCache& c = s.caches[u];
      Buf dn(whole);
      switch (part) {
        case UnitPart::kMlp:
          // Partial outputs make partial gate gradients, hence partial router
          // gradients (all-reduced with the uncut weights') and input gradients.
          if (lay.experts_apart) {
            // The experts unit gathered the output gradient and left the
            // routed experts' input gradient and the gates'.
            const Buf& dout = s.tp_units.at(u + 1).grad_gathered;
            RAGGED_ASSERT(c.dn2_routed.size() == whole && dout.size() == whole,
                          "host workload: the experts unit's backward precedes its block's");
            std::copy(c.dn2_routed.begin(), c.dn2_routed.end(), dn.begin());
            detail::moe_finish_backward(s.ctx, lay.experts, params, grads, s.dims, c.n2.data(), c.moe, c.dgates,
                                        dout.data(), dn.data());
          } else if (lay.moe) {
            detail::moe_backward(s.ctx, lay.experts, params, grads, s.dims, c.n2.data(), c.moe,
                                 t.grad_gathered.data(), dn.data());
          } else {
            detail::glu_backward(s.ctx, detail::bind_glu(lay.dense, h, 0, params, &grads), c.dense,
                                 t.grad_gathered.data(), dn.data());
          }
          detail::rms_norm_backward(t.gathered[1].data(), detail::param_at(params, lay.post_norm), dn.data(), tokens,
                                    h, t.partial.data(), detail::grad_at(&grads, lay.post_norm));
          break;
        case UnitPart::kAttentionCore:
          // dq of this rank's queries, dk and dv of every key: the cp group
          // then sums each rank's keys' gradients (the Program's reduce-scatter).
          detail::attention_core_backward(s.ctx, lay.attention, params, grads, core_over_every_key(s, lay.attention),
                                          t.k_all.data(), t.v_all.data(), c.attention, t.grad_gathered.data(), t.dq,
                                          t.dk_all, t.dv_all);
          break;
        case UnitPart::kAttention:
        case UnitPart::kAttentionInput:
          if (part == UnitPart::kAttention) {
            detail::attention_backward(s.ctx, lay.attention, params, grads, s.dims, c.n1.data(), c.attention,
                                       t.grad_gathered.data(), dn.data());
          } else {
            detail::attention_input_backward(s.ctx, lay.attention, params, grads, s.dims, c.n1.data(), c.attention,
                                             t.dq, t.dk, t.dv, dn.data());
          }
          detail::rms_norm_backward(t.gathered[0].data(), detail::param_at(params, lay.in_norm), dn.data(), tokens, h,
                                    t.partial.data(), detail::grad_at(&grads, lay.in_norm));
          break;
        case UnitPart::kWhole: RAGGED_ASSERT(false, "host workload: a parallel block computes as its parts");
      }
      if (scatters_after(part, true)) local_exchange(unit, part, TpPass::kBackward, TpCollective::kReduceScatter);
      break;
    }
    case UnitKind::kEmbedding:
      detail::embed_backward(s.local_tokens.data(), tokens, h, t.grad_gathered.data(), grads[0]);
      s.grad_unit = -1;
      break;
    case UnitKind::kExperts:  // its input gradient goes home with the exchange (ep_end)
      experts_backward(unit, params, grads);
      break;
  }
}

void HostWorkload::local_exchange(int unit, UnitPart part, TpPass pass, TpCollective collective) {
  if (state_->tp.size > 1) return;  // the Program's tp collectives run it
  const TpStep step{unit, part, pass, collective};
  tp_begin(step);
  tp_end(step);
}

}  // namespace ragged::backend
