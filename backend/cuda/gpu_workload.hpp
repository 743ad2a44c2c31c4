#pragma once
// The real compute of a training step on one GPU: the host workload's math
// (backend/workload_internal.hpp: RMSNorm, attention projections with causal
// softmax attention per sequence, SwiGLU MLP, embedding, head with a real
// cross-entropy) as cuBLAS GEMMs and naive CUDA kernels (attention recomputes
// its scores rather than keeping them), forward and backward (dX and dW), for
// Llama-style models, dense or with experts stored per expert (Mixtral,
// Qwen3-MoE: gpu_workload_moe.cpp; their routing is still the fixed pattern
// (7 token + j) mod experts with sigmoid gates, not yet the host's top-k of
// the gate). Parameters and
// activations are stored in the scenario's parameter dtype (bf16 or fp32),
// GEMMs accumulate in fp32, gradients are written in their own dtype.
//
// Where the memory lives, so that the arena holds what the Program says:
//   - forward of unit u keeps what its backward needs (its input included)
//     in the unit's activation buffer (the Program's kActivations buffer);
//     when that buffer is too small for everything (activation
//     checkpointing), forward keeps less: under selective checkpointing all
//     but the cheap element-wise results (the norm outputs and the SwiGLU
//     product), under full checkpointing its input only; recompute() then
//     rebuilds the rest at the start of the backward workspace (kWorkspace);
//   - backward's scratch comes from the backward workspace, after what
//     recompute() rebuilt;
//   - the residual stream handed from one unit to the next (its value going
//     forward, its gradient going backward), the batch's tokens, labels and
//     routing (which tokens each expert runs, computed on the host), one
//     expert's output rows during forward,
//     the losses and, when checkpointing is configured, the scratch a block's
//     forward computes the activations it does not keep in, live in private
//     buffers (gpu_private_bytes()), carved once from the device's arena.
// The embedding keeps nothing and the head always keeps everything (as the
// model counts them: models/model_builder.cpp). One micro-batch at a time:
// set_batch, forward of every unit, backward of every unit (recompute just
// before a unit's backward).
// Every call is asynchronous on the compute stream given at construction;
// only take_mean_loss() synchronises.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/workload.hpp"
#include "models/model_spec.hpp"

namespace ragged::backend::gpu {

class DeviceArena;

enum class ElementType { f32, bf16 };
int64_t element_bytes(ElementType type);

struct GpuWorkloadConfig {
  int64_t sequences = 1;  // per micro-batch on this rank
  int64_t seq_len = 1;
  ElementType params = ElementType::bf16;  // parameters and activations
  ElementType grads = ElementType::f32;    // the unsharded gradients backward writes (fp32 when params are)
  // The most a block's forward may drop: sizes the private forward scratch
  // (none: no scratch, every block must keep everything).
  models::Checkpointing checkpointing = models::Checkpointing::kNone;
};

// Throws InputError naming the unit and what the GPU workload lacks (fused
// or biased experts, MLA, tied embeddings, attention sinks, ...): those run
// on --device cpu.
void check_gpu_supported(const models::ModelSpec& model);

// The device memory of one unit, known without a GPU (so that the executor
// and the tests can check it against the Program's buffers).
struct GpuUnitBytes {
  int64_t saved = 0;      // what forward keeps for backward when nothing is recomputed (input included)
  int64_t selective = 0;  // what it keeps under selective checkpointing
  int64_t input = 0;      // what it keeps under full checkpointing (the head: everything)
  int64_t workspace = 0;  // backward's scratch (the head's: the logits' gradient first unless loss_backward wrote it)
  int64_t loss_gradient = 0;  // the head: the logits' gradient loss_backward() writes (0: fp32, in place)
  int64_t recompute = 0;  // what recompute() rebuilds in the workspace under full checkpointing: saved - input

  // Kept by forward, and rebuilt by recompute(), under `mode`.
  int64_t kept(models::Checkpointing mode) const;
  int64_t rebuilt(models::Checkpointing mode) const { return saved - kept(mode); }
};
GpuUnitBytes gpu_unit_bytes(const models::ModelSpec& model, const GpuWorkloadConfig& config, int unit);
// The private buffers (residual stream and its gradient, tokens, labels,
// losses, the forward scratch config.checkpointing asks for): carved once,
// as one block of exactly this many bytes.
int64_t gpu_private_bytes(const models::ModelSpec& model, const GpuWorkloadConfig& config);

class GpuWorkload {
 public:
  // Carves the private buffers from `arena`; `compute` is the stream every
  // call enqueues on; cuBLAS is bound to it.
  GpuWorkload(const models::ModelSpec& model, GpuWorkloadConfig config, cublasHandle_t cublas, cudaStream_t compute,
              DeviceArena& arena);
  ~GpuWorkload();
  GpuWorkload(const GpuWorkload&) = delete;
  GpuWorkload& operator=(const GpuWorkload&) = delete;

  // Starts a micro-batch: copies its tokens and labels to the device.
  void set_batch(const Batch& batch);
  // Forward of unit u (units in order): keeps its cache in `saved`: all of
  // it when `saved_capacity` >= gpu_unit_bytes(u).saved, else what selective
  // or else full checkpointing keeps (.selective, .input). Throws InputError
  // when even the input does not fit, or when dropping more needs forward
  // scratch that config.checkpointing did not carve.
  void forward(int unit, const std::vector<const void*>& params, void* saved, int64_t saved_capacity);
  // Rebuilds in `workspace` what forward did not keep (no-op when it kept
  // everything); `workspace` holds at least gpu_unit_bytes(u).rebuilt(mode)
  // for the mode forward used, else InputError. Backward gets the same
  // workspace.
  void recompute(int unit, const std::vector<const void*>& params, void* workspace, int64_t capacity);
  // The head's loss backward alone (the Program's loss_only op): the logits'
  // gradient into `gradient` (at least gpu_unit_bytes(head).loss_gradient
  // bytes, else InputError), which the head's backward then reads; that
  // backward runs it itself, first in its workspace, when this was not called.
  void loss_backward(int unit, void* gradient, int64_t capacity);
  // Backward of unit u (units in reverse order): WRITES (not adds) every
  // gradient of the unit's tensors in `grads` (one pointer per tensor, in the
  // unit's tensor order, dtype config.grads; the embedding's whole table,
  // zero rows included) and passes the residual gradient on. `workspace`
  // holds at least gpu_unit_bytes(u).workspace plus what recompute() rebuilt
  // there; else InputError. It consumes the unit's cache (the head's fp32
  // probabilities become the logits' gradient in place).
  void backward(int unit, const std::vector<const void*>& params, const std::vector<void*>& grads, void* workspace,
                int64_t capacity);
  // Mean cross-entropy of every head forward since the last call
  // (synchronises the compute stream); 0 when there was none.
  double take_mean_loss();
  // FLOPs of the GEMMs enqueued so far.
  double gemm_flops() const;
  // The GEMM attention's kernel seconds since the workload was made
  // (Gemms::attention_seconds); 0 when attention runs the reference kernels.
  double attention_seconds() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ragged::backend::gpu
