// GpuMeshWorkload (gpu_workload_mesh.hpp): one tensor-parallel rank's units
// as the Program's parts and exchanges, the host's workload_tp.cpp step for
// step on the GPU workload's kernels.

#include "backend/cuda/gpu_workload_mesh.hpp"

#include <fmt/format.h>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/device_arena.hpp"
#include "backend/cuda/gpu_workload_internal.hpp"
#include "backend/cuda/mesh_kernels.hpp"
#include "backend/cuda/workload_kernels.hpp"
#include "backend/mesh_step.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu {

using detail::BlockPlan;
using detail::MeshBuffer;
using models::UnitKind;
using models::UnitPart;

void check_gpu_tensor_parallel(const models::ModelSpec& model, int tp, int64_t tokens, bool sequence_parallel) {
  check_tensor_parallel_supported(model, tp, tokens, sequence_parallel);
  for (int u = 0; u < static_cast<int>(model.units.size()); ++u) {
    const models::UnitSpec& unit = model.units[static_cast<size_t>(u)];
    if (unit.kind != UnitKind::kBlock || !detail::block_plan(model, GpuWorkloadConfig{}, u).layout.moe) continue;
    throw InputError(fmt::format("training.mesh.tp {}: the GPU computes tensor parallelism for dense Llama-style "
                                 "blocks; {} holds experts, which run tensor-parallel on --device cpu",
                                 tp, unit.name));
  }
}

int64_t gpu_mesh_private_bytes(const models::ModelSpec& model, const GpuWorkloadConfig& config, int tp) {
  return detail::mesh_plan(model, config, tp).bytes;
}

struct GpuMeshWorkload::State {
  models::ModelSpec model;
  GpuWorkloadConfig config;
  TensorParallelRank tp;
  detail::Gemms gemms;
  std::vector<BlockPlan> blocks;  // unit u at u - 1
  detail::HeadPlan head;
  detail::MeshPlan plan;
  std::byte* base = nullptr;
  std::vector<int32_t> tokens_host, labels_host, order_host, rows_host;
  int head_forwards = 0;
  bool head_dlogits = false;  // loss_backward ran since the head's forward

  State(const models::ModelSpec& spec, const GpuWorkloadConfig& c, TensorParallelRank rank, cublasHandle_t cublas,
        cudaStream_t stream)
      : model(spec), config(c), tp(rank), gemms(cublas, stream, c) {}

  cudaStream_t stream() const { return gemms.stream(); }
  int units() const { return static_cast<int>(model.units.size()); }
  template <typename T>
  T* at(MeshBuffer which) const {
    return reinterpret_cast<T*>(base + plan.offset[which]);
  }
  template <typename T>
  T* unit_at(const std::vector<int64_t>& offsets, int unit) const {
    const int64_t offset = offsets.at(static_cast<size_t>(unit));
    RAGGED_ASSERT(offset >= 0, fmt::format("GPU mesh workload: unit {} keeps no such buffer", unit));
    return reinterpret_cast<T*>(base + offset);
  }
  const BlockPlan& block(int unit) const { return blocks.at(static_cast<size_t>(unit) - 1); }
  detail::Regions cache(int unit) const {
    return block(unit).regions(models::Checkpointing::kNone, unit_at<std::byte>(plan.cache, unit), nullptr, false);
  }
  detail::HeadCache head_cache() const {
    std::byte* saved = at<std::byte>(detail::kMeshHeadCache);
    return detail::HeadCache{saved, saved + head.input_bytes,
                             reinterpret_cast<float*>(saved + head.input_bytes + head.norm_bytes)};
  }
  const models::UnitSpec& unit_checked(int unit, size_t pointers) const {
    RAGGED_ASSERT(unit >= 0 && unit < units(), fmt::format("GPU mesh workload: no unit {}", unit));
    const models::UnitSpec& spec = model.units[static_cast<size_t>(unit)];
    RAGGED_ASSERT(pointers == spec.tensors.size(), fmt::format("GPU mesh workload: unit {} takes {} tensors, got {}",
                                                               spec.name, spec.tensors.size(), pointers));
    return spec;
  }
  // A rank's slot of a hidden state: its rows.
  int64_t slot() const { return plan.rows * plan.hidden; }
  int64_t slot_bytes() const { return slot() * plan.element; }
};

GpuMeshWorkload::GpuMeshWorkload(const models::ModelSpec& model, GpuWorkloadConfig config, TensorParallelRank tp,
                                 cublasHandle_t cublas, cudaStream_t compute, DeviceArena& arena)
    : state_(std::make_unique<State>(model, config, tp, cublas, compute)) {
  check_gpu_supported(model);
  check_gpu_tensor_parallel(model, tp.size, config.sequences * config.seq_len, model.split.sequence_parallel);
  State& s = *state_;
  RAGGED_ASSERT(tp.rank >= 0 && tp.rank < tp.size, "GPU mesh workload: a rank of its tensor-parallel group");
  for (int u = 1; u + 1 < s.units(); ++u) s.blocks.push_back(detail::block_plan(model, config, u));
  s.head = detail::head_plan(model, config);
  s.plan = detail::mesh_plan(model, config, tp.size);
  s.base = static_cast<std::byte*>(arena.allocate(static_cast<size_t>(s.plan.bytes)));
  CUDA_CHECK(cudaMemsetAsync(s.at<double>(detail::kMeshLossSum), 0, sizeof(double), compute));
}

GpuMeshWorkload::~GpuMeshWorkload() = default;

void GpuMeshWorkload::set_batch(const Batch& batch) {
  State& s = *state_;
  const auto tokens = static_cast<size_t>(s.plan.tokens);
  RAGGED_ASSERT(batch.tokens.size() == tokens && batch.labels.size() == tokens,
                fmt::format("GPU mesh workload: a batch of {} tokens, built for {}", batch.tokens.size(), tokens));
  s.tokens_host.resize(tokens);
  s.labels_host.resize(tokens);
  const int64_t whole = s.plan.vocab * s.tp.size;
  for (size_t i = 0; i < tokens; ++i) {
    RAGGED_ASSERT(batch.tokens[i] >= 0 && batch.tokens[i] < whole && batch.labels[i] >= 0 && batch.labels[i] < whole,
                  "GPU mesh workload: token id outside the vocabulary");
    s.tokens_host[i] = local_vocabulary_id(batch.tokens[i], s.tp.rank, s.plan.vocab);
    s.labels_host[i] = local_vocabulary_id(batch.labels[i], s.tp.rank, s.plan.vocab);
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
  const int64_t t = s.plan.tokens, h = s.plan.hidden;
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
        RAGGED_ASSERT(false, "GPU mesh workload: " + spec.name + " computes as its parts");
    }
  });
}

void GpuMeshWorkload::forward_part(int unit, UnitPart part, const std::vector<const void*>& params) {
  State& s = *state_;
  const models::UnitSpec& spec = s.unit_checked(unit, params.size());
  RAGGED_ASSERT(spec.kind == UnitKind::kBlock, "GPU mesh workload: parts of a block only: " + spec.name);
  const BlockPlan& plan = s.block(unit);
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
        detail::mlp_forward_part<S>(s.gemms, plan, params, detail::MoeRouting{}, cache, partial);
        break;
      default: RAGGED_ASSERT(false, "GPU mesh workload: the attention's input and core parts are context parallelism's");
    }
  });
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
  if (spec.kind == UnitKind::kHead && !s.head_dlogits) loss_backward(unit);
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
        RAGGED_ASSERT(false, "GPU mesh workload: " + spec.name + " computes as its parts");
    }
  });
}

void GpuMeshWorkload::backward_part(int unit, UnitPart part, const std::vector<const void*>& params,
                                    const std::vector<void*>& grads) {
  State& s = *state_;
  const models::UnitSpec& spec = s.unit_checked(unit, params.size());
  RAGGED_ASSERT(spec.kind == UnitKind::kBlock && grads.size() == params.size(),
                "GPU mesh workload: a block part's backward, one gradient per tensor: " + spec.name);
  const BlockPlan& plan = s.block(unit);
  const detail::Regions cache = s.cache(unit);
  const int64_t t = s.plan.tokens, h = s.plan.hidden;
  std::byte* scratch = s.at<std::byte>(detail::kMeshScratch);
  detail::with_types(s.config, [&](auto storage, auto gradient) {
    using S = decltype(storage);
    using G = decltype(gradient);
    const S* dy = s.at<S>(detail::kMeshGradGathered);
    S* partial = s.at<S>(detail::kMeshPartial);
    // The norm's input gradient over the gathered rows is a partial sum (the
    // rank's heads or columns), reduce-scattered by the Program.
    const auto norm_backward = [&](detail::BlockScratch dnorm, detail::BlockRegion input, int weight) {
      const S* dn = reinterpret_cast<const S*>(scratch + plan.scratch_offset[dnorm]);
      const S* x = reinterpret_cast<const S*>(cache[input]);
      rms_norm_weight_grad(detail::grad<G>(grads, weight), dn, x, t, h, s.stream());
      rms_norm_backward<S>(partial, nullptr, dn, x, detail::param<S>(params, weight), t, h, s.stream());
    };
    switch (part) {
      case UnitPart::kMlp:
        detail::mlp_backward_part<S, G>(s.gemms, plan, params, grads, detail::MoeRouting{}, cache, scratch, dy);
        norm_backward(detail::kDNorm2, detail::kResidual1, plan.layout.post_norm);
        break;
      case UnitPart::kAttention:
        detail::attention_backward_part<S, G>(s.gemms, plan, params, grads, cache, scratch, dy);
        norm_backward(detail::kDNorm1, detail::kInput, plan.layout.in_norm);
        break;
      default: RAGGED_ASSERT(false, "GPU mesh workload: the attention's input and core parts are context parallelism's");
    }
  });
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
    case TpCollective::kKeyValueGradientScatter:
      RAGGED_ASSERT(false, "GPU mesh workload: context parallelism runs on --device cpu (the run refuses it)");
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
    const bool from_output = step.part == UnitPart::kMlp || kind == UnitKind::kEmbedding;
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

double GpuMeshWorkload::take_mean_loss() {
  State& s = *state_;
  return detail::take_mean_loss(s.at<double>(detail::kMeshLossSum), s.head_forwards, s.stream());
}

}  // namespace ragged::backend::gpu
