#pragma once
// One tensor- or context-parallel rank's compute on the GPU (docs/MESH.md):
// the host's HostWorkload under a mesh (backend/workload_tp.cpp) with the GPU
// workload's kernels (gpu_workload_internal.hpp), on the rank's split of the
// model (models::ModelSplit: its heads, kv heads, MLP columns and vocabulary
// rows). A block computes as the Program's parts between the tp group's
// exchanges, which the CUDA executor runs through NCCL on the
// tensor-parallel stream between exchange_begin and exchange_end:
//   block  attention: X = gather(x); p = o_proj(attn(rms(X))) over the rank's
//          heads; x1 = x + scatter(p). MLP: X1 = gather(x1); p =
//          down(swiglu(rms(X1))) over its columns; x2 = x1 + scatter(p).
//   embed  p = lookups of the rank's table rows (zeros elsewhere); x = scatter(p).
//   head   X = gather(x); the rank's vocabulary's logits of rms(X); per token
//          their maximum, sum of exponentials and the target's logit,
//          gathered and combined in rank order into the loss.
// The backward runs the conjugates. The uncut weights (norms) get partial
// gradients, which the Program's all-reduce on the tp group sums.
//
// Under context parallelism a rank holds the head-tail chunks of each
// sequence (context_chunks.hpp) and a block computes as its attention's
// input part (the q, k, v projections), its core (the attention over every
// key of the rank's sequences, gathered by the cp group, and the o
// projection) and its MLP, as the host's workload_cp.cpp does.
//
// Under expert parallelism (alone or with tp; gpu_workload_mesh_experts.cpp)
// a mixture-of-experts block computes its attention, router, routing and
// shared experts, and its routed experts are the next unit's, as the host's
// workload_ep.cpp runs them: the "ep dispatch" sends each routed copy's
// norm-2 row to its expert's rank (counts first), the owner runs each local
// expert's SwiGLU on every source's rows, "ep combine" brings the outputs
// back and the source adds gate x y in expert order, then the shared
// experts' output, then the residual (after the tp reduce-scatter under tp).
// The rows' order between ranks is expert_rows.hpp's. Without a tp group the
// Program computes whole units: the workload runs a block as its parts and
// every tp exchange in place, as under cp alone.
//
// It keeps every activation in its own memory (MeshPlan), as the host
// workload does, not in the Program's activation buffers: the run refuses
// activation checkpointing with a mesh on the GPU. Llama-style and
// mixture-of-experts blocks (the host's: every rank routes every token
// alike, its experts' columns give partial outputs and gate gradients that
// the group sums; the router's gradient is among the uncut weights').
// Compute calls enqueue on the compute stream given at construction; the
// exchange calls on the stream they are given.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cuda/gpu_workload.hpp"
#include "backend/expert_rows.hpp"
#include "backend/workload.hpp"
#include "models/model_spec.hpp"

namespace ragged::backend::gpu {

// `count` elements of `type` a rank, the ranks' slots one after another from
// `buffer` (NCCL's in-place all-gather and reduce-scatter).
struct MeshExchange {
  void* buffer = nullptr;
  int64_t count = 0;
  ElementType type = ElementType::f32;
};

// An expert-parallel exchange: blocks of rows of `row_elements` elements of
// `type`, from `send` to each peer and from each peer into `receive`
// (between two ranks matched in the order listed: expert_rows.hpp).
struct ExpertRows {
  const void* send = nullptr;
  void* receive = nullptr;
  int64_t row_elements = 0;
  ElementType type = ElementType::f32;
  std::vector<RowBlock> sends, receives;
};

// The private memory GpuMeshWorkload carves (MeshPlan::bytes).
int64_t gpu_mesh_private_bytes(const models::ModelSpec& model, const GpuWorkloadConfig& config, int tp, int cp = 1);

class GpuMeshWorkload {
 public:
  // `config` describes whole sequences; a cp rank computes its chunks of them.
  GpuMeshWorkload(const models::ModelSpec& model, GpuWorkloadConfig config, TensorParallelRank tp,
                  ContextParallelRank cp, ExpertParallelRank ep, cublasHandle_t cublas, cudaStream_t compute,
                  DeviceArena& arena);
  ~GpuMeshWorkload();
  GpuMeshWorkload(const GpuMeshWorkload&) = delete;
  GpuMeshWorkload& operator=(const GpuMeshWorkload&) = delete;

  // Token ids over the whole vocabulary; the rank keeps its rows' ids.
  void set_batch(const Batch& batch);
  // The embedding, the head and an experts unit (whole units), and a block's
  // parts (a whole block without a tp or cp group: its parts in turn).
  void forward(int unit, const std::vector<const void*>& params);
  void forward_part(int unit, models::UnitPart part, const std::vector<const void*>& params);
  void loss_backward(int unit);
  // WRITE every gradient of the unit (or the part's tensors), as GpuWorkload does.
  void backward(int unit, const std::vector<const void*>& params, const std::vector<void*>& grads);
  void backward_part(int unit, models::UnitPart part, const std::vector<const void*>& params,
                     const std::vector<void*>& grads);
  // The buffer a tp or cp exchange moves (this rank's slot filled on
  // `stream`), then what its result feeds, also on `stream`.
  MeshExchange exchange_begin(const TpStep& step, cudaStream_t stream);
  void exchange_end(const TpStep& step, cudaStream_t stream);
  // An expert-parallel exchange of an experts unit, on `stream`: the counts
  // that go first (each peer's rows per local expert, int64 moved as float
  // pairs; no blocks when the receivers know them already), then the rows,
  // then what they feed. expert_begin synchronises `stream` once the counts
  // arrived (the owner's GEMMs are sized on the host).
  ExpertRows expert_counts(const EpStep& step, cudaStream_t stream);
  ExpertRows expert_begin(const EpStep& step, cudaStream_t stream);
  void expert_end(const EpStep& step, cudaStream_t stream);
  // Mean cross-entropy of every head forward since the last call (synchronises).
  double take_mean_loss();

 private:
  // Context parallelism (gpu_workload_context.cpp): the attention's input
  // and core parts, and the exchange of keys and values between them.
  void context_forward_part(int unit, models::UnitPart part, const std::vector<const void*>& params);
  void context_backward_part(int unit, models::UnitPart part, const std::vector<const void*>& params,
                             const std::vector<void*>& grads);
  MeshExchange key_value_begin(const TpStep& step, cudaStream_t stream);
  void key_value_end(const TpStep& step, cudaStream_t stream);
  // Under cp without a tp group the Program has no tp exchanges: the
  // workload runs them itself, in place over one rank on the compute stream,
  // as the host's local_exchange does. (Without cp or tp the caller drives
  // every exchange, as the tests do.)
  void local_exchange(int unit, models::UnitPart part, TpPass pass, TpCollective collective);
  void exchange_in_place(const TpStep& step, cudaStream_t stream);
  // Expert parallelism (gpu_workload_mesh_experts.cpp): a block's MLP part
  // whose experts are a unit apart, and an experts unit's own experts.
  void mlp_forward_apart(int unit, const std::vector<const void*>& params);
  void mlp_backward_apart(int unit, const std::vector<const void*>& params, const std::vector<void*>& grads);
  void experts_forward(int unit, const std::vector<const void*>& params);
  void experts_backward(int unit, const std::vector<const void*>& params, const std::vector<void*>& grads);

  struct State;  // gpu_workload_mesh_state.hpp
  std::unique_ptr<State> state_;
};

}  // namespace ragged::backend::gpu
