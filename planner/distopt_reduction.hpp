#pragma once
// Megatron-LM's DistributedDataParallel and distributed optimizer in the
// Program (strategy MEGATRON_DDP), a part of the Program builder beside
// GradientReduction and DdpReduction. Each rank holds its parameters whole in
// the compute dtype and their main gradients in a persistent buffer
// (param_and_grad_buffer.py); per step:
// - zero_grad_buffer zeroes the gradient buffer (one pass, compute stream);
// - the backward accumulates every micro-batch's weight gradients into it
//   (gradient_accumulation_fusion: the wgrad GEMMs add into main_grad, no
//   kernel of their own);
// - on the last micro-batch each bucket is scaled by 1/dp on the compute
//   stream (start_grad_sync: grad_data *= gradient_scaling_factor) and
//   reduce-scattered over its data-parallel group: as soon as its last
//   gradient is made with overlap_grad_reduce (register_grad_ready), else
//   all after the backward (finish_grad_sync); with several distributed
//   optimizer instances (dp_replicate) each reduced shard is then
//   all-reduced over them; the optimizer waits for every reduction
//   (finalize_model_grads);
// - the optimizer takes the norm of the rank's gradient shard and clips it,
//   then steps the shard (fp32 master weights and Adam
//   states, planner/optimizer_program.hpp) and copies it into the
//   parameters (refresh_compute_shard);
// - the updated parameters are all-gathered per bucket over the same group:
//   right after the step (step_with_ready_grads: start_param_sync), or with
//   overlap_param_gather in the next forward, a unit waiting for its
//   buckets' all-gathers and each wait dispatching the next bucket's
//   (finish_param_sync; a buffer's first bucket is dispatched by its first
//   unit's forward pre-hook). A one-step Program puts them at its start.

#include <cstdint>
#include <vector>

#include "planner/distopt_buckets.hpp"
#include "planner/gradient_reduction.hpp"
#include "planner/plan.hpp"
#include "planner/program_writer.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::planner {

class DistOptReduction {
 public:
  // `chunks`: the model chunks this rank holds, each its units in forward
  // order (one chunk without pipeline stages); `first_stage`: whether this
  // rank is on the pipeline's first stage (later stages' buffers are one
  // bucket each).
  DistOptReduction(ProgramWriter* writer, const Plan& plan, const scenarios::Training& training,
                   int64_t replicate_ranks, ElementBytes bytes, const std::vector<std::vector<int>>& chunks,
                   bool first_stage);

  // The step's start: the gradient buffers zeroed.
  void start_step();
  // Unit u's forward pre-hook: the all-gathers its compute waits for (its
  // buckets', on its first forward of the step with overlap_param_gather).
  std::vector<uint32_t> before_forward(int u);
  // After unit u's last backward of the step (`done`): with
  // overlap_grad_reduce the reductions of the buckets it completes.
  void after_backward(int u, uint32_t done);
  // finalize_model_grads: the reductions not issued yet; the compute stream
  // waits for all of them. Returns the op after which every shard is final.
  uint32_t finish_backward();
  // After the optimizer's last update (`updated`): the all-gathers, unless
  // overlapped with the next forward.
  void after_optimizer(uint32_t updated);

  // Whether the wgrad GEMMs write the main gradients themselves
  // (gradient_accumulation_fusion), or a .grad is added into them.
  bool fused_accumulation() const { return fused_accumulation_; }
  const std::vector<DistOptBucket>& buckets() const { return buckets_; }
  // The persistent buffers: the parameters (compute dtype) and the main gradients.
  int64_t param_buffer_bytes() const { return elements_ * bytes_.param; }
  int64_t grad_buffer_bytes() const { return elements_ * bytes_.reduce; }
  // torch DDP's bucket tensors around the model (torch_ddp_buckets), in the
  // parameters' dtype; none with one data-parallel rank.
  int64_t torch_ddp_bucket_bytes() const {
    return torch_ddp_buckets_ && data_parallel_ranks_ > 1 ? elements_ * bytes_.param : 0;
  }
  // The elements of the buckets' shards this rank owns.
  int64_t shard_elements() const;

 private:
  // Whether bucket b is sharded over more than one rank: a shard group of one
  // (every data-parallel rank its own optimizer instance: Megatron's DDP
  // without the distributed optimizer) updates all of it, with nothing to
  // reduce-scatter or all-gather.
  bool sharded(size_t b) const { return buckets_[b].ranks > 1; }
  void reduce(size_t b, uint32_t after);
  uint32_t gather(size_t b, std::vector<uint32_t> deps);
  void dispatch_gather(size_t b);

  ProgramWriter& w_;
  int64_t replicate_ranks_;
  ElementBytes bytes_;
  bool overlap_grad_reduce_;
  bool overlap_param_gather_;
  bool fused_accumulation_;
  bool torch_ddp_buckets_;
  int64_t data_parallel_ranks_;                    // the scaling factor's dp: dp_shard x cp x dp_replicate
  int last_micro_batch_;                           // the one whose backward reduces (the others run under no_sync)
  std::vector<DistOptBucket> buckets_;             // every buffer's, each buffer's in backward order
  std::vector<int> next_gather_;                   // per bucket: the one its all-gather's wait dispatches, -1: none
  std::vector<int64_t> gathered_;                  // per bucket: its all-gather, -1 before
  std::vector<int64_t> reduced_;                   // per bucket: its last reduction op, -1 before
  std::vector<std::vector<size_t>> unit_buckets_;  // per unit: the buckets holding its parameters
  std::vector<bool> forwarded_;                    // per unit: its first forward of the step is issued
  int64_t elements_ = 0;
};

}  // namespace ragged::planner
