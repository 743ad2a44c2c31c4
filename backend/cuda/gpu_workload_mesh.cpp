// GpuMeshWorkload (gpu_workload_mesh.hpp): one tensor-parallel rank's units
// as the Program's parts and exchanges, the host's workload_tp.cpp step for
// step on the GPU workload's kernels.

#include "backend/cuda/gpu_workload_mesh.hpp"

#include <fmt/format.h>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/device_arena.hpp"
#include "backend/cuda/gpu_workload_internal.hpp"
#include "backend/cuda/gpu_workload_mesh_state.hpp"
#include "backend/cuda/mesh_kernels.hpp"
#include "backend/cuda/workload_kernels.hpp"
#include "backend/mesh_step.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu {

using detail::BlockPlan;
using detail::MeshBuffer;
using models::UnitKind;
using models::UnitPart;

int64_t gpu_mesh_private_bytes(const models::ModelSpec& model, const GpuWorkloadConfig& config, int tp, int cp) {
  return detail::mesh_plan(model, config, tp, cp).bytes;
}

GpuMeshWorkload::GpuMeshWorkload(const models::ModelSpec& model, GpuWorkloadConfig config, TensorParallelRank tp,
                                 ContextParallelRank cp, ExpertParallelRank ep, cublasHandle_t cublas,
                                 cudaStream_t compute, DeviceArena& arena)
    : state_(std::make_unique<State>(model, config, tp, cp, ep, cublas, compute)) {
  State& s = *state_;
  check_gpu_supported(model);
  if (tp.size > 1 || cp.size > 1) {
    check_tensor_parallel_supported(model, tp.size, s.config.sequences * s.config.seq_len,
                                    model.split.sequence_parallel);
  }
  RAGGED_ASSERT(tp.rank >= 0 && tp.rank < tp.size && cp.rank >= 0 && cp.rank < cp.size,
                "GPU mesh workload: a rank of its tensor- and context-parallel groups");
  RAGGED_ASSERT(ep.size == model.split.ep && ep.rank >= 0 && ep.rank < ep.size && (ep.size == 1 || cp.size == 1),
                "GPU mesh workload: a rank of the expert-parallel group the model was split for (not with cp)");
  s.experts.resize(static_cast<size_t>(s.units()));
  for (int u = 1; u + 1 < s.units(); ++u) {
    if (s.is_experts(u)) {
      s.experts[static_cast<size_t>(u)].plan = detail::experts_plan(model, s.config, u);
      s.blocks.emplace_back();
    } else {
      s.blocks.push_back(detail::block_plan(model, s.config, u));
    }
  }
  s.head = detail::head_plan(model, s.config);
  s.plan = detail::mesh_plan(model, config, tp.size, cp.size);
  s.base = static_cast<std::byte*>(arena.allocate(static_cast<size_t>(s.plan.bytes)));
  CUDA_CHECK(cudaMemsetAsync(s.at<double>(detail::kMeshLossSum), 0, sizeof(double), compute));
  if (cp.size > 1) {
    s.positions_host = context_positions(cp.rank, cp.size, config.sequences, config.seq_len);
    s.key_rows_host = gathered_key_rows(cp.size, config.sequences, config.seq_len);
    detail::upload(s.at<int32_t>(detail::kMeshPositions), s.positions_host, compute);
    detail::upload(s.at<int32_t>(detail::kMeshKeyRows), s.key_rows_host, compute);
  }
}

GpuMeshWorkload::~GpuMeshWorkload() = default;

void GpuMeshWorkload::set_batch(const Batch& batch) {
  State& s = *state_;
  const auto tokens = static_cast<size_t>(s.plan.tokens);
  const auto sequences_tokens = static_cast<size_t>(s.plan.sequences * s.plan.seq_len);
  RAGGED_ASSERT(batch.tokens.size() == sequences_tokens && batch.labels.size() == sequences_tokens,
                fmt::format("GPU mesh workload: a batch of {} tokens, built for {}", batch.tokens.size(),
                            sequences_tokens));
  s.tokens_host.resize(tokens);
  s.labels_host.resize(tokens);
  const int64_t whole = s.plan.vocab * s.tp.size;
  const int64_t local_len = s.plan.seq_len / s.cp.size;
  for (size_t i = 0; i < tokens; ++i) {
    // Under cp the rank's chunks of each sequence, in order (the host's set_batch).
    const size_t from = s.cp.size == 1 ? i
                                       : static_cast<size_t>(static_cast<int64_t>(i) / local_len * s.plan.seq_len +
                                                             s.positions_host[i]);
    const int32_t token = batch.tokens[from], label = batch.labels[from];
    RAGGED_ASSERT(token >= 0 && token < whole && label >= 0 && label < whole,
                  "GPU mesh workload: token id outside the vocabulary");
    s.tokens_host[i] = local_vocabulary_id(token, s.tp.rank, s.plan.vocab);
    s.labels_host[i] = local_vocabulary_id(label, s.tp.rank, s.plan.vocab);
  }
  detail::group_by_token(s.tokens_host, s.plan.vocab, s.order_host, s.rows_host);
  detail::upload(s.at<int32_t>(detail::kMeshTokens), s.tokens_host, s.stream());
  detail::upload(s.at<int32_t>(detail::kMeshLabels), s.labels_host, s.stream());
  detail::upload(s.at<int32_t>(detail::kMeshTokenOrder), s.order_host, s.stream());
  detail::upload(s.at<int32_t>(detail::kMeshTokenRows), s.rows_host, s.stream());
  s.head_dlogits = false;
}

void GpuMeshWorkload::forward(int unit, const std::vector<const void*>& params) {
  State& s = *state_;
  const models::UnitSpec& spec = s.unit_checked(unit, params.size());
  if (spec.kind == UnitKind::kExperts) {
    experts_forward(unit, params);
    return;
  }
  if (spec.kind == UnitKind::kBlock) {  // the Program's whole block: no tp or cp group
    RAGGED_ASSERT(s.tp.size == 1 && s.cp.size == 1, "GPU mesh workload: " + spec.name + " computes as its parts");
    forward_part(unit, UnitPart::kAttention, params);
    forward_part(unit, UnitPart::kMlp, params);
    return;
  }
  const int64_t t = s.plan.tokens, h = s.plan.hidden;
  const bool head = spec.kind == UnitKind::kHead;
  if (head) local_exchange(unit, UnitPart::kWhole, TpPass::kForward, TpCollective::kAllGather);
  detail::with_types(s.config, [&](auto storage, auto) {
    using S = decltype(storage);
    switch (spec.kind) {
      case UnitKind::kEmbedding:
        embedding_gather(s.at<S>(detail::kMeshPartial), static_cast<const S*>(params[0]),
                         s.at<int32_t>(detail::kMeshTokens), t, h, s.stream());
        break;
      case UnitKind::kHead: {
        // The input was gathered into the cache; this rank's logits and statistics.
        const detail::HeadCache cache = s.head_cache();
        rms_norm_forward(reinterpret_cast<S*>(cache.norm), reinterpret_cast<const S*>(cache.input),
                         detail::param<S>(params, s.head.norm), t, h, s.stream());
        s.gemms.forward_f32(cache.norm, params[static_cast<size_t>(s.head.weight)], cache.probs, t, s.plan.vocab, h);
        vocabulary_stats(s.at<double>(detail::kMeshStats) + s.tp.rank * t * 3, cache.probs,
                         s.at<int32_t>(detail::kMeshLabels), t, s.plan.vocab, s.stream());
        s.head_dlogits = false;
        break;
      }
      case UnitKind::kBlock:
      case UnitKind::kExperts:
        break;  // above
    }
  });
  local_exchange(unit, UnitPart::kWhole, TpPass::kForward,
                 head ? TpCollective::kLossStats : TpCollective::kReduceScatter);
}

void GpuMeshWorkload::forward_part(int unit, UnitPart part, const std::vector<const void*>& params) {
  State& s = *state_;
  const models::UnitSpec& spec = s.unit_checked(unit, params.size());
  RAGGED_ASSERT(spec.kind == UnitKind::kBlock, "GPU mesh workload: parts of a block only: " + spec.name);
  if (gathers_before(part, false)) local_exchange(unit, part, TpPass::kForward, TpCollective::kAllGather);
  if (part == UnitPart::kAttentionInput || part == UnitPart::kAttentionCore) {
    context_forward_part(unit, part, params);
    if (scatters_after(part, false)) local_exchange(unit, part, TpPass::kForward, TpCollective::kReduceScatter);
    return;
  }
  const BlockPlan& plan = s.block(unit);
  // A MoE block's experts unit makes its MLP's output (the combine, then tp's reduce-scatter).
  const bool experts_apart = part == UnitPart::kMlp && plan.layout.experts_apart;
  const detail::Regions cache = s.cache(unit);
  const int64_t t = s.plan.tokens, h = s.plan.hidden;
  detail::with_types(s.config, [&](auto storage, auto) {
    using S = decltype(storage);
    S* partial = s.at<S>(detail::kMeshPartial);
    switch (part) {
      case UnitPart::kAttention:
        // cache[kInput] holds the gathered input.
        rms_norm_forward(reinterpret_cast<S*>(cache[detail::kNorm1]), reinterpret_cast<const S*>(cache[detail::kInput]),
                         detail::param<S>(params, plan.layout.in_norm), t, h, s.stream());
        detail::attention_forward_part<S>(s.gemms, plan, params, cache, partial);
        break;
      case UnitPart::kMlp:
        // cache[kResidual1] holds the gathered residual after the attention.
        rms_norm_forward(reinterpret_cast<S*>(cache[detail::kNorm2]),
                         reinterpret_cast<const S*>(cache[detail::kResidual1]),
                         detail::param<S>(params, plan.layout.post_norm), t, h, s.stream());
        if (experts_apart) {
          mlp_forward_apart(unit, params);
        } else {
          detail::mlp_forward_part<S>(s.gemms, plan, params, s.routing(), cache, partial);
        }
        break;
      default: RAGGED_ASSERT(false, "GPU mesh workload: a block computes as its parts");
    }
  });
  if (!experts_apart) local_exchange(unit, part, TpPass::kForward, TpCollective::kReduceScatter);
}

void GpuMeshWorkload::loss_backward(int unit) {
  State& s = *state_;
  RAGGED_ASSERT(s.model.units.at(static_cast<size_t>(unit)).kind == UnitKind::kHead,
                "GPU mesh workload: the loss backward is the head's");
  const detail::HeadCache cache = s.head_cache();
  detail::with_types(s.config, [&](auto storage, auto) {
    using S = decltype(storage);
    // fp32: the gradient overwrites the probabilities; bf16: its own buffer.
    S* dlogits = s.head.dlogits_bytes == 0 ? reinterpret_cast<S*>(cache.probs) : s.at<S>(detail::kMeshLogitsGrad);
    detail::head_loss_backward<S>(s.head, cache, dlogits, s.at<int32_t>(detail::kMeshLabels), s.stream());
  });
  s.head_dlogits = true;
}

void GpuMeshWorkload::backward(int unit, const std::vector<const void*>& params, const std::vector<void*>& grads) {
  State& s = *state_;
  const models::UnitSpec& spec = s.unit_checked(unit, params.size());
  RAGGED_ASSERT(grads.size() == params.size(), "GPU mesh workload: one gradient per tensor");
  if (spec.kind == UnitKind::kExperts) {
    experts_backward(unit, params, grads);
    return;
  }
  if (spec.kind == UnitKind::kBlock) {  // the Program's whole block: no tp or cp group
    RAGGED_ASSERT(s.tp.size == 1 && s.cp.size == 1, "GPU mesh workload: " + spec.name + " computes as its parts");
    backward_part(unit, UnitPart::kMlp, params, grads);
    backward_part(unit, UnitPart::kAttention, params, grads);
    return;
  }
  if (spec.kind == UnitKind::kHead && !s.head_dlogits) loss_backward(unit);
  if (spec.kind == UnitKind::kEmbedding) {
    local_exchange(unit, UnitPart::kWhole, TpPass::kBackward, TpCollective::kAllGather);
  }
  detail::with_types(s.config, [&](auto storage, auto gradient) {
    using S = decltype(storage);
    using G = decltype(gradient);
    switch (spec.kind) {
      case UnitKind::kHead: {
        const detail::HeadCache cache = s.head_cache();
        const S* dlogits =
            s.head.dlogits_bytes == 0 ? reinterpret_cast<const S*>(cache.probs) : s.at<S>(detail::kMeshLogitsGrad);
        detail::head_backward<S, G>(s.gemms, s.head, params, grads, cache, dlogits, s.at<std::byte>(detail::kMeshScratch),
                                    s.at<S>(detail::kMeshPartial));
        s.head_dlogits = false;
        break;
      }
      case UnitKind::kEmbedding:
        embedding_backward(static_cast<G*>(grads[0]), s.at<S>(detail::kMeshGradGathered),
                           s.at<int32_t>(detail::kMeshTokenOrder), s.at<int32_t>(detail::kMeshTokenRows), s.plan.vocab,
                           s.plan.hidden, s.stream());
        break;
      case UnitKind::kBlock:
      case UnitKind::kExperts:
        break;  // above
    }
  });
  if (spec.kind == UnitKind::kHead) {
    local_exchange(unit, UnitPart::kWhole, TpPass::kBackward, TpCollective::kReduceScatter);
  }
}

void GpuMeshWorkload::backward_part(int unit, UnitPart part, const std::vector<const void*>& params,
                                    const std::vector<void*>& grads) {
  State& s = *state_;
  const models::UnitSpec& spec = s.unit_checked(unit, params.size());
  RAGGED_ASSERT(spec.kind == UnitKind::kBlock && grads.size() == params.size(),
                "GPU mesh workload: a block part's backward, one gradient per tensor: " + spec.name);
  // A MoE block's experts unit gathered its MLP's output gradient.
  const bool experts_gathered = part == UnitPart::kMlp && s.experts_apart(unit);
  if (gathers_before(part, true) && !experts_gathered) {
    local_exchange(unit, part, TpPass::kBackward, TpCollective::kAllGather);
  }
  if (part == UnitPart::kAttentionInput || part == UnitPart::kAttentionCore) {
    context_backward_part(unit, part, params, grads);
    if (scatters_after(part, true)) local_exchange(unit, part, TpPass::kBackward, TpCollective::kReduceScatter);
    return;
  }
  const BlockPlan& plan = s.block(unit);
  const detail::Regions cache = s.cache(unit);
  std::byte* scratch = s.at<std::byte>(detail::kMeshScratch);
  detail::with_types(s.config, [&](auto storage, auto gradient) {
    using S = decltype(storage);
    using G = decltype(gradient);
    const S* dy = s.at<S>(detail::kMeshGradGathered);
    switch (part) {
      case UnitPart::kMlp:
        if (experts_gathered) {
          mlp_backward_apart(unit, params, grads);
        } else {
          detail::mlp_backward_part<S, G>(s.gemms, plan, params, grads, s.routing(), cache, scratch, dy);
        }
        s.norm_backward<S, G>(unit, detail::kDNorm2, detail::kResidual1, plan.layout.post_norm, params, grads);
        break;
      case UnitPart::kAttention:
        detail::attention_backward_part<S, G>(s.gemms, plan, params, grads, cache, scratch, dy);
        s.norm_backward<S, G>(unit, detail::kDNorm1, detail::kInput, plan.layout.in_norm, params, grads);
        break;
      default: RAGGED_ASSERT(false, "GPU mesh workload: a block computes as its parts");
    }
  });
  local_exchange(unit, part, TpPass::kBackward, TpCollective::kReduceScatter);
}

MeshExchange GpuMeshWorkload::exchange_begin(const TpStep& step, cudaStream_t stream) {
  State& s = *state_;
  RAGGED_ASSERT(step.pass != TpPass::kAgain, "GPU mesh workload: no recomputed pass (the run refuses checkpointing)");
  const int64_t t = s.plan.tokens;
  switch (step.collective) {
    case TpCollective::kLossStats:  // 3 doubles a token, moved as floats
      return {s.at<double>(detail::kMeshStats), t * 3 * 2, ElementType::f32};
    case TpCollective::kReduceScatter: return {s.at<std::byte>(detail::kMeshPartial), s.slot(), s.config.params};
    case TpCollective::kAllGather: break;
    case TpCollective::kKeyValueGather:
    case TpCollective::kKeyValueGradientScatter: return key_value_begin(step, stream);
  }
  // An all-gather of this rank's rows of what the part reads.
  const UnitKind kind = s.model.units.at(static_cast<size_t>(step.unit)).kind;
  const std::byte* rows = nullptr;
  std::byte* into = nullptr;
  if (step.pass == TpPass::kForward) {
    rows = step.part == UnitPart::kMlp ? s.unit_at<std::byte>(s.plan.residual, step.unit)
                                       : s.unit_at<std::byte>(s.plan.output, step.unit - 1);
    if (kind == UnitKind::kHead) {
      into = s.head_cache().input;
    } else {
      into = s.cache(step.unit)[step.part == UnitPart::kMlp ? detail::kResidual1 : detail::kInput];
    }
  } else {
    const bool from_output = step.part == UnitPart::kMlp || kind == UnitKind::kEmbedding || kind == UnitKind::kExperts;
    rows = s.at<std::byte>(from_output ? detail::kMeshGrad : detail::kMeshResidualGrad);
    into = s.at<std::byte>(detail::kMeshGradGathered);
  }
  CUDA_CHECK(cudaMemcpyAsync(into + s.tp.rank * s.slot_bytes(), rows, static_cast<size_t>(s.slot_bytes()),
                             cudaMemcpyDeviceToDevice, stream));
  return {into, s.slot(), s.config.params};
}

void GpuMeshWorkload::exchange_end(const TpStep& step, cudaStream_t stream) {
  State& s = *state_;
  const int64_t t = s.plan.tokens, n = s.slot();
  if (step.collective == TpCollective::kLossStats) {
    // Every rank combines the gathered statistics alike, in rank order.
    double* row_losses = s.at<double>(detail::kMeshRowLosses);
    vocabulary_softmax(s.head_cache().probs, row_losses, s.at<double>(detail::kMeshStats), s.tp.size, t, s.plan.vocab,
                       stream);
    add_mean_loss(s.at<double>(detail::kMeshLossSum), row_losses, t, stream);
    ++s.head_forwards;
    return;
  }
  if (step.collective == TpCollective::kKeyValueGather || step.collective == TpCollective::kKeyValueGradientScatter) {
    key_value_end(step, stream);
    return;
  }
  if (step.collective != TpCollective::kReduceScatter) return;  // a part reads the gather
  const UnitKind kind = s.model.units.at(static_cast<size_t>(step.unit)).kind;
  detail::with_types(s.config, [&](auto storage, auto) {
    using S = decltype(storage);
    const S* total = s.at<S>(detail::kMeshPartial) + s.tp.rank * n;
    const auto output = [&](int unit) { return s.unit_at<S>(s.plan.output, unit); };
    S* residual_grad = s.at<S>(detail::kMeshResidualGrad);
    if (step.pass == TpPass::kForward) {
      if (kind == UnitKind::kEmbedding) {
        CUDA_CHECK(cudaMemcpyAsync(output(step.unit), total, static_cast<size_t>(s.slot_bytes()),
                                   cudaMemcpyDeviceToDevice, stream));
      } else if (kind == UnitKind::kExperts) {  // the mixture's output and its block's residual
        add(output(step.unit), s.unit_at<S>(s.plan.residual, step.unit - 1), total, n, stream);
      } else if (step.part == UnitPart::kMlp) {
        add(output(step.unit), s.unit_at<S>(s.plan.residual, step.unit), total, n, stream);
      } else {
        add(s.unit_at<S>(s.plan.residual, step.unit), output(step.unit - 1), total, n, stream);
      }
      return;
    }
    S* grad = s.at<S>(detail::kMeshGrad);
    if (kind == UnitKind::kHead) {
      CUDA_CHECK(cudaMemcpyAsync(grad, total, static_cast<size_t>(s.slot_bytes()), cudaMemcpyDeviceToDevice, stream));
    } else if (step.part == UnitPart::kMlp) {
      add(residual_grad, grad, total, n, stream);
    } else {
      add(grad, residual_grad, total, n, stream);  // the block's input gradient: passed down
    }
  });
}

void GpuMeshWorkload::local_exchange(int unit, UnitPart part, TpPass pass, TpCollective collective) {
  const State& s = *state_;
  if (s.tp.size > 1 || (s.cp.size == 1 && s.ep.size == 1)) return;
  exchange_in_place(TpStep{unit, part, pass, collective}, s.stream());
}

void GpuMeshWorkload::exchange_in_place(const TpStep& step, cudaStream_t stream) {
  exchange_begin(step, stream);  // a gather of one rank leaves the slot as it is
  exchange_end(step, stream);
}

double GpuMeshWorkload::take_mean_loss() {
  State& s = *state_;
  return detail::take_mean_loss(s.at<double>(detail::kMeshLossSum), s.head_forwards, s.stream());
}

}  // namespace ragged::backend::gpu
