// GpuWorkload: the private buffers (residual stream ping-pong, batch, losses,
// forward scratch), which buffer each unit's cache lives in, and the order of
// forward, recompute and backward; the math is in gpu_workload_block.cpp and
// gpu_workload_head.cpp.

#include "backend/cuda/gpu_workload.hpp"

#include <fmt/format.h>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/device_arena.hpp"
#include "backend/cuda/gpu_workload_internal.hpp"
#include "backend/cuda/workload_kernels.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu {

void detail::upload(void* device, const std::vector<int32_t>& host, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(device, host.data(), host.size() * sizeof(int32_t), cudaMemcpyHostToDevice, stream));
}

double detail::take_mean_loss(double* device, int& forwards, cudaStream_t stream) {
  if (forwards == 0) return 0.0;
  double sum = 0;
  CUDA_CHECK(cudaMemcpyAsync(&sum, device, sizeof(double), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaMemsetAsync(device, 0, sizeof(double), stream));
  const double mean = sum / forwards;
  forwards = 0;
  return mean;
}

namespace {

using detail::BlockPlan;
using detail::group_by_token;
using detail::upload;
using detail::with_types;
using models::Checkpointing;
using models::UnitKind;

}  // namespace

struct GpuWorkload::State {
  // What the last forward of a unit did in this micro-batch.
  struct Run {
    Checkpointing mode = Checkpointing::kNone;
    std::byte* saved = nullptr;
    std::byte* workspace = nullptr;  // where recompute() rebuilt the rest
    bool forwarded = false;
    bool rebuilt = false;
  };

  models::ModelSpec model;
  GpuWorkloadConfig config;
  detail::Gemms gemms;
  int64_t tokens = 0;
  std::vector<BlockPlan> blocks;  // unit u at u - 1
  detail::HeadPlan head;
  detail::PrivatePlan layout;
  std::byte* base = nullptr;

  std::vector<Run> runs;
  std::vector<int32_t> tokens_host, labels_host, order_host, rows_host;
  detail::MoeRouting routing;
  bool has_batch = false;
  int value = 0;  // the stream buffer holding the last forward's output
  int grad = 0;   // the stream buffer holding the gradient of unit grad_unit's output
  int grad_unit = -1;
  int head_forwards = 0;
  // The logits' gradient loss_backward() wrote for the head's backward (null: not yet).
  void* head_dlogits = nullptr;

  State(const models::ModelSpec& spec, const GpuWorkloadConfig& c, cublasHandle_t cublas, cudaStream_t stream)
      : model(spec), config(c), gemms(cublas, stream, c), tokens(c.sequences * c.seq_len) {}

  cudaStream_t stream() const { return gemms.stream(); }
  int units() const { return static_cast<int>(model.units.size()); }
  template <typename T>
  T* buffer(detail::PrivateBuffer which) const {
    return reinterpret_cast<T*>(base + layout.offset[which]);
  }
  template <typename S>
  S* residual(int which) const {
    return buffer<S>(which == 0 ? detail::kStream0 : detail::kStream1);
  }

  const models::UnitSpec& unit_checked(int unit, size_t pointers) const {
    RAGGED_ASSERT(unit >= 0 && unit < units(), fmt::format("GPU workload: no unit {}", unit));
    RAGGED_ASSERT(has_batch, "GPU workload: set_batch before forward/backward");
    const models::UnitSpec& spec = model.units[static_cast<size_t>(unit)];
    RAGGED_ASSERT(pointers == spec.tensors.size(), fmt::format("GPU workload: unit {} takes {} tensors, got {}",
                                                               spec.name, spec.tensors.size(), pointers));
    return spec;
  }

  detail::HeadCache head_cache(std::byte* saved) const {
    return detail::HeadCache{saved, saved + head.input_bytes,
                             reinterpret_cast<float*>(saved + head.input_bytes + head.norm_bytes)};
  }
};

GpuWorkload::GpuWorkload(const models::ModelSpec& model, GpuWorkloadConfig config, cublasHandle_t cublas,
                         cudaStream_t compute, DeviceArena& arena)
    : state_(std::make_unique<State>(model, config, cublas, compute)) {
  check_gpu_supported(model);
  State& s = *state_;
  for (int u = 1; u + 1 < s.units(); ++u) s.blocks.push_back(detail::block_plan(model, config, u));
  s.head = detail::head_plan(model, config);
  s.layout = detail::private_plan(model, config);
  s.base = static_cast<std::byte*>(arena.allocate(static_cast<size_t>(s.layout.bytes)));
  s.routing.rows = s.buffer<int32_t>(detail::kExpertRows);
  s.routing.output = s.buffer<std::byte>(detail::kExpertOutput);
  if (s.layout.attention_scratch > 0) s.gemms.attention_scratch = s.buffer<std::byte>(detail::kAttentionScratch);
  CUDA_CHECK(cudaMemsetAsync(s.buffer<double>(detail::kLossSum), 0, sizeof(double), compute));
  s.runs.resize(static_cast<size_t>(s.units()));
}

GpuWorkload::~GpuWorkload() = default;

void GpuWorkload::set_batch(const Batch& batch) {
  State& s = *state_;
  RAGGED_ASSERT(batch.sequences == s.config.sequences && batch.seq_len == s.config.seq_len,
                fmt::format("GPU workload: batch of {}x{} tokens, built for {}x{}", batch.sequences, batch.seq_len,
                            s.config.sequences, s.config.seq_len));
  const auto tokens = static_cast<size_t>(s.tokens);
  RAGGED_ASSERT(batch.tokens.size() == tokens && batch.labels.size() == tokens,
                "GPU workload: batch tokens and labels must hold sequences * seq_len ids");
  const int64_t vocab = s.model.arch.vocab;
  for (size_t i = 0; i < tokens; ++i) {
    RAGGED_ASSERT(batch.tokens[i] >= 0 && batch.tokens[i] < vocab && batch.labels[i] >= 0 && batch.labels[i] < vocab,
                  "GPU workload: token id outside the vocabulary");
  }
  s.tokens_host = batch.tokens;
  s.labels_host = batch.labels;
  group_by_token(s.tokens_host, vocab, s.order_host, s.rows_host);
  upload(s.buffer<int32_t>(detail::kTokens), s.tokens_host, s.stream());
  upload(s.buffer<int32_t>(detail::kLabels), s.labels_host, s.stream());
  upload(s.buffer<int32_t>(detail::kTokenOrder), s.order_host, s.stream());
  upload(s.buffer<int32_t>(detail::kTokenRows), s.rows_host, s.stream());
  s.runs.assign(s.runs.size(), State::Run{});
  s.has_batch = true;
  s.grad_unit = -1;
}

void GpuWorkload::forward(int unit, const std::vector<const void*>& params, void* saved, int64_t saved_capacity) {
  State& s = *state_;
  const models::UnitSpec& spec = s.unit_checked(unit, params.size());
  RAGGED_ASSERT(unit == 0 || s.runs[static_cast<size_t>(unit) - 1].forwarded,
                "GPU workload: forward runs the units in order");
  State::Run& run = s.runs[static_cast<size_t>(unit)];
  run = State::Run{Checkpointing::kNone, static_cast<std::byte*>(saved), nullptr, true, true};
  const int64_t hidden = s.model.arch.hidden;
  with_types(s.config, [&](auto storage, auto) {
    using S = decltype(storage);
    switch (spec.kind) {
      case UnitKind::kEmbedding:
        embedding_gather(s.residual<S>(0), static_cast<const S*>(params[0]), s.buffer<int32_t>(detail::kTokens),
                         s.tokens, hidden, s.stream());
        s.value = 0;
        break;
      case UnitKind::kBlock: {
        const BlockPlan& plan = s.blocks[static_cast<size_t>(unit) - 1];
        run.mode = plan.mode_for(saved_capacity, s.layout.forward_scratch, spec.name);
        run.rebuilt = run.mode == Checkpointing::kNone;
        const detail::Regions cache =
            plan.regions(run.mode, run.saved, s.buffer<std::byte>(detail::kForwardScratch), true);
        detail::block_forward(s.gemms, plan, params, s.routing, s.residual<S>(s.value), cache,
                              s.residual<S>(1 - s.value));
        s.value = 1 - s.value;
        break;
      }
      case UnitKind::kExperts:
        RAGGED_ASSERT(false,
                      "GPU workload: experts in units of their own run in the mesh workload (gpu_workload_mesh.hpp)");
        break;
      case UnitKind::kHead:
        if (saved_capacity < s.head.saved_bytes()) {
          throw InputError(fmt::format("GPU workload: forward of {} keeps {} bytes; its activation buffer holds {}",
                                       spec.name, s.head.saved_bytes(), saved_capacity));
        }
        detail::head_forward(s.gemms, s.head, params, s.residual<S>(s.value), s.head_cache(run.saved),
                             s.buffer<int32_t>(detail::kLabels), s.buffer<double>(detail::kRowLosses));
        add_mean_loss(s.buffer<double>(detail::kLossSum), s.buffer<double>(detail::kRowLosses), s.tokens, s.stream());
        ++s.head_forwards;
        break;
    }
  });
}

void GpuWorkload::recompute(int unit, const std::vector<const void*>& params, void* workspace, int64_t capacity) {
  State& s = *state_;
  const models::UnitSpec& spec = s.unit_checked(unit, params.size());
  State::Run& run = s.runs[static_cast<size_t>(unit)];
  RAGGED_ASSERT(run.forwarded, fmt::format("GPU workload: recompute of {} before its forward", spec.name));
  if (run.mode == Checkpointing::kNone) return;
  const BlockPlan& plan = s.blocks[static_cast<size_t>(unit) - 1];
  if (capacity < plan.rebuilt_bytes(run.mode)) {
    throw InputError(fmt::format("GPU workload: recompute of {} rebuilds {} bytes; its workspace holds {}", spec.name,
                                 plan.rebuilt_bytes(run.mode), capacity));
  }
  run.workspace = static_cast<std::byte*>(workspace);
  const detail::Regions cache = plan.regions(run.mode, run.saved, run.workspace, false);
  with_types(s.config, [&](auto storage, auto) {
    using S = decltype(storage);
    if (run.mode == Checkpointing::kSelective) {
      detail::block_rebuild_selective<S>(s.gemms, plan, params, cache);
    } else {
      const auto* input = reinterpret_cast<const S*>(cache[detail::kInput]);
      detail::block_forward<S>(s.gemms, plan, params, s.routing, input, cache, nullptr);
    }
  });
  run.rebuilt = true;
}

void GpuWorkload::loss_backward(int unit, void* gradient, int64_t capacity) {
  State& s = *state_;
  const models::UnitSpec& spec = s.model.units.at(static_cast<size_t>(unit));
  RAGGED_ASSERT(spec.kind == UnitKind::kHead && s.runs[static_cast<size_t>(unit)].forwarded,
                fmt::format("GPU workload: loss backward of {}, not a head after its forward", spec.name));
  if (capacity < s.head.dlogits_bytes) {
    throw InputError(fmt::format("GPU workload: the loss backward of {} needs {} bytes for the logits' gradient; "
                                 "got {}", spec.name, s.head.dlogits_bytes, capacity));
  }
  const detail::HeadCache cache = s.head_cache(s.runs[static_cast<size_t>(unit)].saved);
  with_types(s.config, [&](auto storage, auto) {
    using S = decltype(storage);
    // fp32: the gradient overwrites the probabilities; bf16: it goes to `gradient`.
    S* dlogits = s.head.dlogits_bytes == 0 ? reinterpret_cast<S*>(cache.probs) : static_cast<S*>(gradient);
    detail::head_loss_backward<S>(s.head, cache, dlogits, s.buffer<int32_t>(detail::kLabels), s.stream());
    s.head_dlogits = dlogits;
  });
}

void GpuWorkload::backward(int unit, const std::vector<const void*>& params, const std::vector<void*>& grads,
                           void* workspace, int64_t capacity) {
  State& s = *state_;
  const models::UnitSpec& spec = s.unit_checked(unit, params.size());
  RAGGED_ASSERT(grads.size() == params.size(), "GPU workload: one gradient per tensor");
  State::Run& run = s.runs[static_cast<size_t>(unit)];
  RAGGED_ASSERT(run.forwarded, fmt::format("GPU workload: backward of {} without a forward", spec.name));
  RAGGED_ASSERT(spec.kind == UnitKind::kHead || s.grad_unit == unit,
                fmt::format("GPU workload: backward of {} out of order", spec.name));
  RAGGED_ASSERT(run.rebuilt, fmt::format("GPU workload: backward of {} needs its recompute first", spec.name));
  auto* scratch = static_cast<std::byte*>(workspace);
  auto need = [&](int64_t bytes) {
    if (capacity < bytes) {
      throw InputError(fmt::format("GPU workload: backward of {} needs a workspace of {} bytes; got {}", spec.name,
                                   bytes, capacity));
    }
  };
  with_types(s.config, [&](auto storage, auto gradient) {
    using S = decltype(storage);
    using G = decltype(gradient);
    switch (spec.kind) {
      case UnitKind::kHead: {
        // Without an earlier loss_backward() the logits' gradient goes first in scratch.
        const int64_t dlogits_bytes = s.head_dlogits != nullptr ? 0 : s.head.dlogits_bytes;
        need(dlogits_bytes + s.head.dnorm_bytes);
        if (s.head_dlogits == nullptr) loss_backward(unit, scratch, dlogits_bytes);
        s.grad = 0;
        detail::head_backward<S, G>(s.gemms, s.head, params, grads, s.head_cache(run.saved),
                                    static_cast<const S*>(s.head_dlogits), scratch + dlogits_bytes,
                                    s.residual<S>(s.grad));
        s.head_dlogits = nullptr;
        break;
      }
      case UnitKind::kExperts:
        RAGGED_ASSERT(false,
                      "GPU workload: experts in units of their own run in the mesh workload (gpu_workload_mesh.hpp)");
        break;
      case UnitKind::kBlock: {
        const BlockPlan& plan = s.blocks[static_cast<size_t>(unit) - 1];
        const int64_t rebuilt = plan.rebuilt_bytes(run.mode);
        RAGGED_ASSERT(rebuilt == 0 || scratch == run.workspace,
                      fmt::format("GPU workload: backward of {} gets the workspace recompute rebuilt in", spec.name));
        need(rebuilt + plan.scratch_bytes);
        const detail::Regions cache = plan.regions(run.mode, run.saved, scratch, false);
        detail::block_backward<S, G>(s.gemms, plan, params, grads, s.routing, cache, scratch + rebuilt,
                                     s.residual<S>(s.grad), s.residual<S>(1 - s.grad));
        s.grad = 1 - s.grad;
        break;
      }
      case UnitKind::kEmbedding:
        embedding_backward(static_cast<G*>(grads[0]), s.residual<S>(s.grad), s.buffer<int32_t>(detail::kTokenOrder),
                           s.buffer<int32_t>(detail::kTokenRows), s.model.arch.vocab, s.model.arch.hidden, s.stream());
        break;
    }
  });
  run.forwarded = false;  // backward consumed the cache
  s.grad_unit = unit - 1;
}

double GpuWorkload::take_mean_loss() {
  State& s = *state_;
  return detail::take_mean_loss(s.buffer<double>(detail::kLossSum), s.head_forwards, s.stream());
}

double GpuWorkload::gemm_flops() const { return state_->gemms.flops(); }

double GpuWorkload::attention_seconds() const { return state_->gemms.attention_seconds(); }

}  // namespace ragged::backend::gpu
