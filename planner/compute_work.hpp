#pragma once
// The compute of one unit for one micro-batch, as GEMMs, attention and
// element-wise traffic: what compute, recompute ops carry.

#include <cstdint>

#include "models/model_spec.hpp"
#include "planner/program.hpp"

namespace ragged::planner {

struct MicroBatch {
  int64_t sequences = 1;  // micro_batch_size
  int64_t seq_len = 1;
  bool fused_elementwise = true;  // false: eager kernels (eager_kernels.hpp)
  models::KernelChoices kernels = {};  // the attention and loss kernels (the model's)
  // With fused_elementwise: only transformer blocks are fused (torchtitan
  // compiles each block); the embed and head units run eagerly.
  bool fused_blocks_only = false;
  // Context parallelism: each rank holds seq_len / cp of every sequence's
  // tokens and attends over the whole of it (seq_len is the context).
  int64_t cp = 1;
  // With cp > 1: the steps of the ring merged, and their gradients
  // accumulated, by the framework's own fp32 ops, as PyTorch's context
  // parallelism does (torch.distributed.tensor.experimental,
  // _templated_ring_attention; ring_merge_work in compute_work.cpp). False:
  // the attention kernels do it (Transformer Engine's context parallelism,
  // Megatron's runtimes).
  bool ring_merges_in_fp32 = false;
  // Elements of one token's keys and values (both) on a rank, for the
  // ring's gradient accumulators of them.
  int64_t key_value_width = 0;
  int64_t tokens() const { return sequences * seq_len / cp; }
};

// The rows (tokens) of one micro-batch a GEMM of the unit multiplies.
int64_t gemm_rows(const models::GemmShape& g, const MicroBatch& batch);

// Whether an op tagged `op` belongs to the compute of `part` (kWhole: all;
// kAttention: both sides of the attention).
bool in_part(models::UnitPart op, models::UnitPart part);

// The unit's forward: its GEMMs (a chunked loss adds the logits GEMM's
// gradient GEMMs), FlashAttention's FLOPs or the math backend's GEMMs and
// element-wise passes, the element-wise traffic.
// `part`: one side of a block cut at its tensor-parallel collectives
// (models::UnitPart); the parts' work sums to the whole's.
ComputeWork forward_work(const models::UnitSpec& unit, const MicroBatch& batch,
                         models::UnitPart part = models::UnitPart::kWhole);
// dX and dW GEMMs for every forward GEMM (not the logits GEMM of a chunked
// loss, done in the forward), 2.5x FlashAttention's FLOPs or the math
// backend's four GEMMs and softmax backward, the element-wise ops' backward
// traffic (gradients read and written).
ComputeWork backward_work(const models::UnitSpec& unit, const MicroBatch& batch,
                          models::UnitPart part = models::UnitPart::kWhole);
// The same backward in two parts, as the head runs it when its loss has a
// backward of its own (ActivationBytes::logits_gradient): the loss's
// element-wise backward alone, then everything else (they sum to the whole).
ComputeWork loss_backward_work(const models::UnitSpec& unit, const MicroBatch& batch);
ComputeWork backward_work_after_loss(const models::UnitSpec& unit, const MicroBatch& batch);
// A backward's work in ZB-H1's two passes (pipeline_schedule.hpp): the
// weight gradients' GEMMs (Gemm::weight_gradient) apart from the rest (the
// input gradient's GEMMs, attention's backward, the element-wise ops).
struct SplitBackward {
  ComputeWork input;
  ComputeWork weight;
};
SplitBackward split_weight_gradients(ComputeWork whole);
// What activation checkpointing recomputes before a unit's backward: the
// whole forward (full); for selective, TorchTitan's op-level policy: every
// element-wise op and every other matmul (and the math backend's attention,
// whose batched matmuls and softmax it does not save); nothing for none.
ComputeWork recompute_work(const models::UnitSpec& unit, const MicroBatch& batch, models::Checkpointing mode,
                           models::UnitPart part = models::UnitPart::kWhole);

double total_flops(const ComputeWork& work);

}  // namespace ragged::planner
