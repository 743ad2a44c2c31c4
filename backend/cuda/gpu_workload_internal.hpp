#pragma once
// Internal to the GPU workload: its GEMMs in the configured element types,
// and the forward/backward of a block and of the embedding and head, as
// templates over the storage type S (float, or uint16_t for bf16 bits) and
// the gradient type G, instantiated for (float, float), (bf16, float) and
// (bf16, bf16).

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/gemm.hpp"
#include "backend/cuda/gpu_workload.hpp"
#include "backend/cuda/gpu_workload_layout.hpp"
#include "backend/cuda/workload_kernels.hpp"
#include "backend/expert_rows.hpp"

namespace ragged::backend::gpu::detail {

using Params = std::vector<const void*>;
using Grads = std::vector<void*>;

template <typename T>
const T* param(const Params& params, int index) {
  return index < 0 ? nullptr : static_cast<const T*>(params[static_cast<size_t>(index)]);
}
template <typename T>
T* grad(const Grads& grads, int index) {
  return index < 0 ? nullptr : static_cast<T*>(grads[static_cast<size_t>(index)]);
}

// Calls f(S{}, G{}) with the configured storage and gradient types.
template <typename F>
void with_types(const GpuWorkloadConfig& config, F&& f) {
  if (config.params == ElementType::f32) {
    f(float{}, float{});
  } else if (config.grads == ElementType::f32) {
    f(uint16_t{}, float{});
  } else {
    f(uint16_t{}, uint16_t{});
  }
}

// Enqueues the copy of `host` to `device` on `stream` (`host` must outlive it).
void upload(void* device, const std::vector<int32_t>& host, cudaStream_t stream);

// The mean of the `forwards` head forwards' mean losses summed at `device`
// (0 when none), read after synchronising `stream`; the sum and the count restart.
double take_mean_loss(double* device, int& forwards, cudaStream_t stream);

// Row-major GEMMs of projections y = x W^T, W [out x in]: activations in
// the parameter dtype, weight gradients in the gradient dtype, fp32
// accumulation; fp32 runs pedantic (no TF32) to compare with the host.
class Gemms {
 public:
  Gemms(cublasHandle_t handle, cudaStream_t stream, const GpuWorkloadConfig& config)
      : handle_(handle), stream_(stream), params_(config.params), grads_(config.grads) {}

  cudaStream_t stream() const { return stream_; }
  cublasHandle_t handle() const { return handle_; }
  // The GEMM attention's scratch (PrivatePlan::attention_scratch bytes); null:
  // attention runs the float64 reference kernels.
  std::byte* attention_scratch = nullptr;
  // CUDA events around each attention call (forward, recompute and backward),
  // so a run can say what its attention cost apart from the unit's other
  // compute, which the Program times as one op.
  void begin_attention();
  void end_attention();
  // The seconds of every attention call so far (waits for the last).
  double attention_seconds() const;
  // y[rows x out] = x W^T (+ beta y).
  void forward(const void* x, const void* w, void* y, int64_t rows, int64_t out, int64_t in, float beta = 0.0f);
  // The same with fp32 y (the head's logits).
  void forward_f32(const void* x, const void* w, float* y, int64_t rows, int64_t out, int64_t in);
  // dx[rows x in] = dy W (+ beta dx).
  void input_grad(const void* dy, const void* w, void* dx, int64_t rows, int64_t out, int64_t in, float beta);
  // dW[out x in] = dy^T x, written in the gradient dtype.
  void weight_grad(const void* dy, const void* x, void* dw, int64_t rows, int64_t out, int64_t in);
  double flops() const { return flops_; }

 private:
  void run(const GemmShape& shape, const void* a, const void* b, void* c, ElementType c_type, float beta);

  cublasHandle_t handle_;
  cudaStream_t stream_;
  ElementType params_, grads_;
  double flops_ = 0;
  std::vector<std::unique_ptr<CudaEvent>> attention_events_;  // start, end, start, end, ...
};

// Where the running block's routing lives: the private kExpertRows buffer,
// which each MoE block's forward and backward fill from its own logits
// (gpu_workload_moe.cpp), so nothing of it outlives one call.
struct MoeRouting {
  int32_t* rows = nullptr;       // device: the routing tables (routing_layout), copies' tokens first
  std::byte* output = nullptr;   // forward scratch: one expert's output rows
};

// Writes every region of `cache` (regions sharing memory as the forward
// scratch allows) and, when `out` is not null, the block's output. When
// cache[kInput] is not `x`, the input is kept there first.
template <typename S>
void block_forward(Gemms& gemms, const BlockPlan& plan, const Params& params, const MoeRouting& routing, const S* x,
                   const Regions& cache, S* out);
// Under selective checkpointing: the norm outputs and the SwiGLU products
// from the kept input, residual, gates and ups.
template <typename S>
void block_rebuild_selective(Gemms& gemms, const BlockPlan& plan, const Params& params, const Regions& cache);
// dx from dx2 (dx may not alias dx2); every gradient of the block written.
template <typename S, typename G>
void block_backward(Gemms& gemms, const BlockPlan& plan, const Params& params, const Grads& grads,
                    const MoeRouting& routing, const Regions& cache, std::byte* scratch, const S* dx2, S* dx);

// The keys and values an attention core reads, and its shape: the block's
// own (its tokens' k and v in the cache), or under context parallelism
// every token's of the rank's sequences, gathered (gpu_workload_context.cpp).
// k holds the keys before the k norm, which the attention kernels apply.
template <typename S>
struct KeysRead {
  const S* k = nullptr;
  const S* v = nullptr;
  AttentionShape shape;
};
template <typename S>
KeysRead<S> own_keys(const BlockPlan& plan, const Regions& cache) {
  const ragged::backend::detail::AttentionLayout& att = plan.layout.attention;
  return {reinterpret_cast<const S*>(cache[kKey]), reinterpret_cast<const S*>(cache[kValue]),
          AttentionShape{plan.tokens, plan.seq_len, att.heads, att.kv_heads, att.qk_dim}};
}

// A block's halves, which block_forward/block_backward compose and a
// tensor-parallel rank runs as the Program's parts (gpu_workload_mesh.cpp):
// the attention from the norm-1 output in the cache (q, k, v, the mixed
// heads) to out = o_proj(u); the MLP (or the experts) from the norm-2 output
// to out (none: stop before the down projection, as a recompute does).
template <typename S>
void attention_forward_part(Gemms& gemms, const BlockPlan& plan, const Params& params, const Regions& cache, S* out);
template <typename S>
void mlp_forward_part(Gemms& gemms, const BlockPlan& plan, const Params& params, const MoeRouting& routing,
                      const Regions& cache, S* out);
// From the gradient dy of the MLP's output: dn2 in `scratch` at kDNorm2 and
// every MLP (or expert and router) gradient written.
template <typename S, typename G>
void mlp_backward_part(Gemms& gemms, const BlockPlan& plan, const Params& params, const Grads& grads,
                       const MoeRouting& routing, const Regions& cache, std::byte* scratch, const S* dy);
// From the gradient dy of o_proj's output: dn1 in `scratch` at kDNorm1 and
// the projections' and q/k norms' gradients written.
template <typename S, typename G>
void attention_backward_part(Gemms& gemms, const BlockPlan& plan, const Params& params, const Grads& grads,
                             const Regions& cache, std::byte* scratch, const S* dy);
// The attention as context parallelism splits it around its exchange of
// keys and values (the Program's kAttentionInput and kAttentionCore parts),
// which attention_forward_part/attention_backward_part compose over the
// block's own keys: the q, k, v projections of the norm-1 output; the core
// over `keys` and the o projection into out. Backward: the core's from dy
// (dq in scratch at kDQuery; the gradients of every key read into dk, dv,
// keys.shape.key_rows() rows), then, with the rank's own keys' gradients in
// scratch at kDKey and kDValue, the q/k norms' and the projections' (dn1 in
// scratch at kDNorm1).
template <typename S>
void attention_input_forward_part(Gemms& gemms, const BlockPlan& plan, const Params& params, const Regions& cache);
template <typename S>
void attention_core_forward_part(Gemms& gemms, const BlockPlan& plan, const Params& params, const Regions& cache,
                                 const KeysRead<S>& keys, S* out);
template <typename S, typename G>
void attention_core_backward_part(Gemms& gemms, const BlockPlan& plan, const Params& params, const Grads& grads,
                                  const Regions& cache, std::byte* scratch, const S* dy, const KeysRead<S>& keys,
                                  S* dk, S* dv);
template <typename S, typename G>
void attention_input_backward_part(Gemms& gemms, const BlockPlan& plan, const Params& params, const Grads& grads,
                                   const Regions& cache, std::byte* scratch);

// The experts of a block (gpu_workload_moe.cpp), from the norm-2 output in
// the cache: its regions and, when `out` is not null, out = the experts'
// sum (routed, gate-weighted, then shared), before the residual. Forward
// and backward each route on the host from the cached logits (a copy to the
// host and back, with stream synchronisations, per call).
template <typename S>
void moe_forward(Gemms& gemms, const BlockPlan& plan, const Params& params, const MoeRouting& routing,
                 const Regions& cache, S* out);
template <typename S>
void moe_rebuild_elementwise(Gemms& gemms, const BlockPlan& plan, const Regions& cache);
// dn2 (in `scratch` at kDNorm2) from dout; every expert and router gradient written.
template <typename S, typename G>
void moe_backward(Gemms& gemms, const BlockPlan& plan, const Params& params, const Grads& grads,
                  const MoeRouting& routing, const Regions& cache, std::byte* scratch, const S* dout);

// The routing tables of MoeRouting (routing_layout) for `copies` routed copies.
struct RoutingTables {
  int32_t *rows, *slots, *slot_experts;
  float *gates, *slot_gates;
  double* dgates;
};
RoutingTables routing_tables(const MoeRouting& routing, int64_t copies);
// A block's routing: route_experts on the host from the fp32 logits in its
// cache (+ the router's bias), its tables uploaded (synchronises `stream`);
// or the tables of a routing kept on the host uploaded again (`host` must
// outlive the copy).
template <typename S>
ExpertRouting route_block(const BlockPlan& plan, const Params& params, const MoeRouting& routing, const Regions& cache,
                          cudaStream_t stream);
void upload_routing(const ExpertRouting& host, const MoeRouting& routing, cudaStream_t stream);
// A SwiGLU MLP's backward on `rows` rows of input x: dy (which dx may
// alias) -> dm (becoming the gate's gradient in place), dup -> dx; every
// weight gradient written. An expert no row reached writes zeros instead.
template <typename S>
void glu_backward(Gemms& gemms, const ragged::backend::detail::GluLayout& glu, const Params& params, const Grads& grads,
                  const S* x, const S* gate, const S* up, const S* product, const S* dy, S* dm, S* dup, S* dx,
                  int64_t rows, int64_t hidden);
template <typename G>
void zero_weight_grad(Gemms& gemms, const Grads& grads, const ragged::backend::detail::LinearSlot& slot);
// The end of a mixture's backward once the routed copies' input gradients
// are in dn2 (scratch kDNorm2) and the gates' gradients in the tables: the
// shared experts' input gradient added, then the gates' softmax into the
// router, whose input gradient is added too; their gradients written.
template <typename S, typename G>
void shared_and_router_backward(Gemms& gemms, const BlockPlan& plan, const Params& params, const Grads& grads,
                                const RoutingTables& tab, const Regions& cache, std::byte* scratch, const S* dout);

// A block whose routed experts are a unit of their own (expert parallelism,
// gpu_workload_experts.cpp), the host's moe_forward with experts apart: the
// router's logits, the routing (returned, its tables uploaded), each copy's
// norm-2 row gathered in copy order into kRoutedInput (what the dispatch
// sends) and the shared experts' output into `shared_out` (when the block
// has them). Its backward once the copies' input gradients came home
// (`routed_dx`, copy order) and the gates' gradients wait in the tables:
// dn2 = those rows added to their tokens in expert order (the host's
// add_expert_rows), then shared_and_router_backward.
template <typename S>
ExpertRouting moe_forward_apart(Gemms& gemms, const BlockPlan& plan, const Params& params, const MoeRouting& routing,
                                const Regions& cache, S* shared_out);
template <typename S, typename G>
void moe_backward_apart(Gemms& gemms, const BlockPlan& plan, const Params& params, const Grads& grads,
                        const MoeRouting& routing, const ExpertRouting& host, const Regions& cache, std::byte* scratch,
                        const S* dout, const S* routed_dx);
// An experts unit's own experts on the rows sources sent (ExpertsPlan's
// cache at `cache`, local expert j's rows at runs[j]): each expert's gate
// and up GEMMs on its run, the SwiGLU product of every row, each expert's
// down GEMM into `y` (the owner's order). Backward from the outputs'
// gradients `dy` (the same order): the input gradients into `dx`, every
// expert's gradients written (zeros for an expert no row reached).
template <typename S>
void experts_forward(Gemms& gemms, const ExpertsPlan& plan, const Params& params, const std::vector<ExpertRun>& runs,
                     std::byte* cache, S* y);
template <typename S, typename G>
void experts_backward(Gemms& gemms, const ExpertsPlan& plan, const Params& params, const Grads& grads,
                      const std::vector<ExpertRun>& runs, std::byte* cache, std::byte* scratch, const S* dy, S* dx);

// The head's cache: input, norm output, fp32 probabilities.
struct HeadCache {
  std::byte* input = nullptr;
  std::byte* norm = nullptr;
  float* probs = nullptr;
};
// Keeps the input, normalises, fills probabilities and per-row losses.
template <typename S>
void head_forward(Gemms& gemms, const HeadPlan& plan, const Params& params, const S* x, const HeadCache& cache,
                  const int32_t* labels, double* row_losses);
// The loss's backward: the logits' gradient into dlogits (fp32 storage: the
// probabilities themselves, in place).
template <typename S>
void head_loss_backward(const HeadPlan& plan, const HeadCache& cache, S* dlogits, const int32_t* labels,
                        cudaStream_t stream);
// The GEMMs' and the norm's backward from the logits' gradient; scratch holds
// plan.dnorm_bytes.
template <typename S, typename G>
void head_backward(Gemms& gemms, const HeadPlan& plan, const Params& params, const Grads& grads, const HeadCache& cache,
                   const S* dlogits, std::byte* scratch, S* dx);

}  // namespace ragged::backend::gpu::detail
