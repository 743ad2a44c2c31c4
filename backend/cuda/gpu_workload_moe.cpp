// The experts of a block on the GPU, the host's math (workload_moe.cpp,
// workload_glu.cpp): router logits r = n2 R^T (fp32), each token's top_k
// experts and gates (softmax over the chosen logits) by the host's own
// route_top_k on r + bias copied to the host, each routed copy's SwiGLU on
// its gathered norm-2 row, the outputs added to their tokens weighted by
// their gates, then the shared experts' SwiGLU on every token. One expert's
// GEMMs run on its contiguous rows (dropless: up to every token); backward
// routes again from the cached logits (the tables are the running block's
// only) and rebuilds an expert's output (for its gate's gradient) rather
// than keeping it.

#include <cuda_runtime_api.h>

#include <utility>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/gpu_workload_internal.hpp"
#include "backend/cuda/gpu_workload_moe_kernels.hpp"
#include "backend/cuda/host_reference.hpp"
#include "backend/cuda/workload_kernels.hpp"

namespace ragged::backend::gpu::detail {
namespace {

using ragged::backend::detail::GluLayout;
using ragged::backend::detail::MoeCache;
using ragged::backend::detail::MoeLayout;

template <typename S>
S* at(const Regions& cache, BlockRegion region) {
  return reinterpret_cast<S*>(cache[static_cast<size_t>(region)]);
}

const void* weight(const Params& params, const ragged::backend::detail::LinearSlot& slot) {
  return params[static_cast<size_t>(slot.weight)];
}

void* weight_grad(const Grads& grads, const ragged::backend::detail::LinearSlot& slot) {
  return grads[static_cast<size_t>(slot.weight)];
}

// Expert e's copies: the first and how many.
struct Span {
  int64_t first = 0, count = 0;
};
Span span(const std::vector<int64_t>& offsets, int64_t expert) {
  const auto e = static_cast<size_t>(expert);
  return Span{offsets[e], offsets[e + 1] - offsets[e]};
}

template <typename T>
void upload(T* device, const std::vector<T>& host, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
}

// The router's bias, copied to the host (empty without one); the caller synchronises.
template <typename S>
std::vector<S> router_bias(const MoeLayout& lay, const Params& params, cudaStream_t stream) {
  if (lay.router.bias < 0) return {};
  std::vector<S> bias(static_cast<size_t>(lay.experts));
  CUDA_CHECK(cudaMemcpyAsync(bias.data(), params[static_cast<size_t>(lay.router.bias)], bias.size() * sizeof(S),
                             cudaMemcpyDeviceToHost, stream));
  return bias;
}

float to_float(float x) { return x; }
float to_float(uint16_t bits) { return float_from_bf16(bits); }

}  // namespace

RoutingTables routing_tables(const MoeRouting& routing, int64_t copies) {
  auto* base = reinterpret_cast<std::byte*>(routing.rows);
  const RoutingLayout at = routing_layout(copies);
  return RoutingTables{reinterpret_cast<int32_t*>(base + at.rows),         reinterpret_cast<int32_t*>(base + at.slots),
                       reinterpret_cast<int32_t*>(base + at.slot_experts), reinterpret_cast<float*>(base + at.gates),
                       reinterpret_cast<float*>(base + at.slot_gates),     reinterpret_cast<double*>(base + at.dgates)};
}

void upload_routing(const ExpertRouting& host, const MoeRouting& routing, cudaStream_t stream) {
  const RoutingTables device = routing_tables(routing, static_cast<int64_t>(host.slot_experts.size()));
  upload(device.rows, host.rows, stream);
  upload(device.gates, host.gates, stream);
  upload(device.slots, host.slots, stream);
  upload(device.slot_experts, host.slot_experts, stream);
  upload(device.slot_gates, host.slot_gates, stream);
}

// Routes on the host from the fp32 logits in the cache (+ the router's bias,
// added as the host's linear_forward adds it). Synchronises twice: for the
// logits, and so that the caller may drop the host tables at once (a copy
// from pageable memory need not be staged when the call returns).
template <typename S>
ExpertRouting route_block(const BlockPlan& plan, const Params& params, const MoeRouting& routing, const Regions& cache,
                          cudaStream_t stream) {
  const MoeLayout& lay = plan.layout.experts;
  std::vector<float> logits(static_cast<size_t>(plan.tokens * lay.experts));
  CUDA_CHECK(cudaMemcpyAsync(logits.data(), cache[static_cast<size_t>(kLogits)], logits.size() * sizeof(float),
                             cudaMemcpyDeviceToHost, stream));
  const std::vector<S> bias = router_bias<S>(lay, params, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  for (size_t i = 0; i < logits.size() && !bias.empty(); ++i) logits[i] += to_float(bias[i % bias.size()]);
  ExpertRouting host = route_experts(lay, plan.tokens, std::move(logits));
  upload_routing(host, routing, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

template <typename G>
void zero_weight_grad(Gemms& gemms, const Grads& grads, const ragged::backend::detail::LinearSlot& slot) {
  const auto bytes = static_cast<size_t>(slot.out * slot.in) * sizeof(G);
  CUDA_CHECK(cudaMemsetAsync(weight_grad(grads, slot), 0, bytes, gemms.stream()));
}

template <typename S>
void glu_backward(Gemms& gemms, const GluLayout& glu, const Params& params, const Grads& grads, const S* x,
                  const S* gate, const S* up, const S* product, const S* dy, S* dm, S* dup, S* dx, int64_t rows,
                  int64_t hidden) {
  const int64_t f = glu.width;
  gemms.input_grad(dy, weight(params, glu.down), dm, rows, hidden, f, 0.0f);
  gemms.weight_grad(dy, product, weight_grad(grads, glu.down), rows, hidden, f);
  swiglu_backward(dm, dup, gate, up, rows * f, gemms.stream());
  gemms.input_grad(dm, weight(params, glu.gate), dx, rows, f, hidden, 0.0f);
  gemms.input_grad(dup, weight(params, glu.up), dx, rows, f, hidden, 1.0f);
  gemms.weight_grad(dm, x, weight_grad(grads, glu.gate), rows, f, hidden);
  gemms.weight_grad(dup, x, weight_grad(grads, glu.up), rows, f, hidden);
}

ExpertRouting route_experts(const MoeLayout& lay, int64_t tokens, std::vector<float> logits) {
  MoeCache cache;
  cache.logits = std::move(logits);
  ragged::backend::detail::route_top_k(lay, tokens, cache);
  ExpertRouting out;
  out.offsets.assign(1, 0);
  for (const ragged::backend::detail::GluCache& expert : cache.routed) {
    for (size_t i = 0; i < expert.rows.size(); ++i) {
      out.rows.push_back(static_cast<int32_t>(expert.rows[i]));
      out.slots.push_back(static_cast<int32_t>(expert.slots[i]));
      out.gates.push_back(expert.gates[i]);
    }
    out.offsets.push_back(static_cast<int64_t>(out.rows.size()));
  }
  out.slot_experts.assign(cache.experts.begin(), cache.experts.end());
  out.slot_gates = std::move(cache.weights);
  return out;
}

// The order keeps regions that share forward scratch apart: under selective
// checkpointing the norm-2 output and both products share one slot, so every
// read of n2 (router, gather, shared gate/up) comes before the first product.
template <typename S>
void moe_forward(Gemms& gemms, const BlockPlan& plan, const Params& params, const MoeRouting& routing,
                 const Regions& cache, S* out) {
  const MoeLayout& lay = plan.layout.experts;
  const int64_t t = plan.tokens, h = plan.hidden, f = plan.expert_ffn, fs = plan.shared_ffn;
  const cudaStream_t stream = gemms.stream();
  const S* n2 = at<S>(cache, kNorm2);
  gemms.forward_f32(n2, weight(params, lay.router), at<float>(cache, kLogits), t, lay.experts, h);
  const std::vector<int64_t> offsets = route_block<S>(plan, params, routing, cache, stream).offsets;
  const RoutingTables tab = routing_tables(routing, t * lay.top_k);
  S* x = at<S>(cache, kRoutedInput);
  gather_rows(x, n2, tab.rows, t * lay.top_k, h, stream);
  if (lay.has_shared) {
    gemms.forward(n2, weight(params, lay.shared.gate), at<S>(cache, kSharedGate), t, fs, h);
    gemms.forward(n2, weight(params, lay.shared.up), at<S>(cache, kSharedUp), t, fs, h);
  }
  S* gate = at<S>(cache, kRoutedGate);
  S* up = at<S>(cache, kRoutedUp);
  for (int64_t e = 0; e < lay.experts; ++e) {
    const Span s = span(offsets, e);
    if (s.count == 0) continue;
    const GluLayout& glu = lay.routed[static_cast<size_t>(e)];
    gemms.forward(x + s.first * h, weight(params, glu.gate), gate + s.first * f, s.count, f, h);
    gemms.forward(x + s.first * h, weight(params, glu.up), up + s.first * f, s.count, f, h);
  }
  S* product = at<S>(cache, kRoutedProduct);
  swiglu_forward(product, gate, up, t * lay.top_k * f, stream);
  if (out != nullptr) {
    CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<size_t>(t * h) * sizeof(S), stream));
    auto* y = reinterpret_cast<S*>(routing.output);
    for (int64_t e = 0; e < lay.experts; ++e) {
      const Span s = span(offsets, e);
      if (s.count == 0) continue;
      gemms.forward(product + s.first * f, weight(params, lay.routed[static_cast<size_t>(e)].down), y, s.count, h, f);
      add_gated_rows(out, y, tab.rows + s.first, tab.gates + s.first, s.count, h, stream);
    }
  }
  if (!lay.has_shared) return;
  S* shared = at<S>(cache, kSharedProduct);
  swiglu_forward(shared, at<S>(cache, kSharedGate), at<S>(cache, kSharedUp), t * fs, stream);
  if (out != nullptr) gemms.forward(shared, weight(params, lay.shared.down), out, t, h, fs, 1.0f);
}

template <typename S>
void moe_rebuild_elementwise(Gemms& gemms, const BlockPlan& plan, const Regions& cache) {
  const MoeLayout& lay = plan.layout.experts;
  swiglu_forward(at<S>(cache, kRoutedProduct), at<S>(cache, kRoutedGate), at<S>(cache, kRoutedUp),
                 plan.tokens * lay.top_k * plan.expert_ffn, gemms.stream());
  if (!lay.has_shared) return;
  swiglu_forward(at<S>(cache, kSharedProduct), at<S>(cache, kSharedGate), at<S>(cache, kSharedUp),
                 plan.tokens * plan.shared_ffn, gemms.stream());
}

template <typename S, typename G>
void moe_backward(Gemms& gemms, const BlockPlan& plan, const Params& params, const Grads& grads,
                  const MoeRouting& routing, const Regions& cache, std::byte* scratch, const S* dout) {
  const MoeLayout& lay = plan.layout.experts;
  const int64_t t = plan.tokens, h = plan.hidden, f = plan.expert_ffn;
  const cudaStream_t stream = gemms.stream();
  auto scratch_at = [&](BlockScratch s) { return reinterpret_cast<S*>(scratch + plan.scratch_offset[s]); };
  S* dn2 = scratch_at(kDNorm2);
  S* rows = scratch_at(kDRows);  // an expert's output, then its output's gradient, then its input's
  S* dm = scratch_at(kDGate);
  S* dup = scratch_at(kDUp);
  CUDA_CHECK(cudaMemsetAsync(dn2, 0, static_cast<size_t>(t * h) * sizeof(S), stream));
  const std::vector<int64_t> offsets = route_block<S>(plan, params, routing, cache, stream).offsets;
  const RoutingTables tab = routing_tables(routing, t * lay.top_k);
  const S* x = at<S>(cache, kRoutedInput);
  const S* gate = at<S>(cache, kRoutedGate);
  const S* up = at<S>(cache, kRoutedUp);
  const S* product = at<S>(cache, kRoutedProduct);
  for (int64_t e = 0; e < lay.experts; ++e) {
    const GluLayout& glu = lay.routed[static_cast<size_t>(e)];
    const Span s = span(offsets, e);
    if (s.count == 0) {
      for (const auto& slot : {glu.gate, glu.up, glu.down}) zero_weight_grad<G>(gemms, grads, slot);
      continue;
    }
    const int64_t rf = s.first * f;
    gemms.forward(product + rf, weight(params, glu.down), rows, s.count, h, f);
    gate_backward(rows, tab.dgates, dout, tab.rows + s.first, tab.slots + s.first, tab.gates + s.first, s.count, h,
                  stream);
    glu_backward(gemms, glu, params, grads, x + s.first * h, gate + rf, up + rf, product + rf, rows, dm, dup, rows,
                 s.count, h);
    add_rows(dn2, rows, tab.rows + s.first, s.count, h, stream);
  }
  shared_and_router_backward<S, G>(gemms, plan, params, grads, tab, cache, scratch, dout);
}

template <typename S, typename G>
void shared_and_router_backward(Gemms& gemms, const BlockPlan& plan, const Params& params, const Grads& grads,
                                const RoutingTables& tab, const Regions& cache, std::byte* scratch, const S* dout) {
  const MoeLayout& lay = plan.layout.experts;
  const int64_t t = plan.tokens, h = plan.hidden;
  const cudaStream_t stream = gemms.stream();
  auto scratch_at = [&](BlockScratch s) { return reinterpret_cast<S*>(scratch + plan.scratch_offset[s]); };
  S* dn2 = scratch_at(kDNorm2);
  S* rows = scratch_at(kDRows);
  const S* n2 = at<S>(cache, kNorm2);
  if (lay.has_shared) {
    glu_backward(gemms, lay.shared, params, grads, n2, at<S>(cache, kSharedGate), at<S>(cache, kSharedUp),
                 at<S>(cache, kSharedProduct), dout, scratch_at(kDGate), scratch_at(kDUp), rows, t, h);
    add(dn2, dn2, rows, t * h, stream);
  }
  // The gates' gradients wait in the routing tables until the rows are free for the logits'.
  S* dlogits = scratch_at(kDLogits);
  CUDA_CHECK(cudaMemsetAsync(dlogits, 0, static_cast<size_t>(t * lay.experts) * sizeof(S), stream));
  gate_softmax_backward(dlogits, tab.dgates, tab.slot_experts, tab.slot_gates, t, lay.top_k, lay.experts, stream);
  gemms.input_grad(dlogits, weight(params, lay.router), dn2, t, lay.experts, h, 1.0f);
  gemms.weight_grad(dlogits, n2, weight_grad(grads, lay.router), t, lay.experts, h);
  if (lay.router.bias >= 0) {
    column_sums<S, G>(static_cast<G*>(grads[static_cast<size_t>(lay.router.bias)]), dlogits, nullptr, t, lay.experts,
                      stream);
  }
}

template <typename S>
ExpertRouting moe_forward_apart(Gemms& gemms, const BlockPlan& plan, const Params& params, const MoeRouting& routing,
                                const Regions& cache, S* shared_out) {
  const MoeLayout& lay = plan.layout.experts;
  const int64_t t = plan.tokens, h = plan.hidden, fs = plan.shared_ffn;
  const cudaStream_t stream = gemms.stream();
  const S* n2 = at<S>(cache, kNorm2);
  gemms.forward_f32(n2, weight(params, lay.router), at<float>(cache, kLogits), t, lay.experts, h);
  ExpertRouting host = route_block<S>(plan, params, routing, cache, stream);
  gather_rows(at<S>(cache, kRoutedInput), n2, routing_tables(routing, t * lay.top_k).rows, t * lay.top_k, h, stream);
  if (lay.has_shared) {
    gemms.forward(n2, weight(params, lay.shared.gate), at<S>(cache, kSharedGate), t, fs, h);
    gemms.forward(n2, weight(params, lay.shared.up), at<S>(cache, kSharedUp), t, fs, h);
    S* shared = at<S>(cache, kSharedProduct);
    swiglu_forward(shared, at<S>(cache, kSharedGate), at<S>(cache, kSharedUp), t * fs, stream);
    gemms.forward(shared, weight(params, lay.shared.down), shared_out, t, h, fs);
  }
  return host;
}

template <typename S, typename G>
void moe_backward_apart(Gemms& gemms, const BlockPlan& plan, const Params& params, const Grads& grads,
                        const MoeRouting& routing, const ExpertRouting& host, const Regions& cache, std::byte* scratch,
                        const S* dout, const S* routed_dx) {
  const MoeLayout& lay = plan.layout.experts;
  const int64_t t = plan.tokens, h = plan.hidden;
  const cudaStream_t stream = gemms.stream();
  S* dn2 = reinterpret_cast<S*>(scratch + plan.scratch_offset[kDNorm2]);
  CUDA_CHECK(cudaMemsetAsync(dn2, 0, static_cast<size_t>(t * h) * sizeof(S), stream));
  upload_routing(host, routing, stream);
  const RoutingTables tab = routing_tables(routing, t * lay.top_k);
  for (int64_t e = 0; e < lay.experts; ++e) {
    const Span s = span(host.offsets, e);
    if (s.count > 0) add_rows(dn2, routed_dx + s.first * h, tab.rows + s.first, s.count, h, stream);
  }
  shared_and_router_backward<S, G>(gemms, plan, params, grads, tab, cache, scratch, dout);
}

template ExpertRouting route_block<float>(const BlockPlan&, const Params&, const MoeRouting&, const Regions&,
                                          cudaStream_t);
template ExpertRouting route_block<uint16_t>(const BlockPlan&, const Params&, const MoeRouting&, const Regions&,
                                             cudaStream_t);
template void glu_backward(Gemms&, const GluLayout&, const Params&, const Grads&, const float*, const float*,
                           const float*, const float*, const float*, float*, float*, float*, int64_t, int64_t);
template void glu_backward(Gemms&, const GluLayout&, const Params&, const Grads&, const uint16_t*, const uint16_t*,
                           const uint16_t*, const uint16_t*, const uint16_t*, uint16_t*, uint16_t*, uint16_t*, int64_t,
                           int64_t);
template void zero_weight_grad<float>(Gemms&, const Grads&, const ragged::backend::detail::LinearSlot&);
template void zero_weight_grad<uint16_t>(Gemms&, const Grads&, const ragged::backend::detail::LinearSlot&);
template ExpertRouting moe_forward_apart(Gemms&, const BlockPlan&, const Params&, const MoeRouting&, const Regions&,
                                         float*);
template ExpertRouting moe_forward_apart(Gemms&, const BlockPlan&, const Params&, const MoeRouting&, const Regions&,
                                         uint16_t*);
template void moe_forward(Gemms&, const BlockPlan&, const Params&, const MoeRouting&, const Regions&, float*);
template void moe_forward(Gemms&, const BlockPlan&, const Params&, const MoeRouting&, const Regions&, uint16_t*);
template void moe_rebuild_elementwise<float>(Gemms&, const BlockPlan&, const Regions&);
template void moe_rebuild_elementwise<uint16_t>(Gemms&, const BlockPlan&, const Regions&);
#define RAGGED_MOE_BACKWARD(S, G)                                                                                  \
  template void moe_backward<S, G>(Gemms&, const BlockPlan&, const Params&, const Grads&, const MoeRouting&,       \
                                   const Regions&, std::byte*, const S*);                                          \
  template void moe_backward_apart<S, G>(Gemms&, const BlockPlan&, const Params&, const Grads&, const MoeRouting&, \
                                         const ExpertRouting&, const Regions&, std::byte*, const S*, const S*);    \
  template void shared_and_router_backward<S, G>(Gemms&, const BlockPlan&, const Params&, const Grads&,            \
                                                 const RoutingTables&, const Regions&, std::byte*, const S*);
RAGGED_MOE_BACKWARD(float, float)
RAGGED_MOE_BACKWARD(uint16_t, float)
RAGGED_MOE_BACKWARD(uint16_t, uint16_t)
#undef RAGGED_MOE_BACKWARD

}  // namespace ragged::backend::gpu::detail
