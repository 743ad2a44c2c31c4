#pragma once
// DDP's gradients in the Program (strategy DDP), a part of the Program
// builder beside GradientReduction, after torch's Reducer
// (torch/csrc/distributed/c10d/reducer.cpp, gradient_as_bucket_view=False):
// - autograd's AccumulateGrad puts each unit's gradients in .grad: the first
//   gradient of the step is taken as it is (a parameter of the compute
//   dtype), or cast from the compute dtype under autocast (ToCopyBackward);
//   later micro-batches add theirs (.grad += new, after the cast);
// - on a micro-batch that synchronises, the Reducer's hook copies each
//   gradient into its bucket, divided by the world size on the way
//   (mark_variable_ready_dense: at::mul_out), and a bucket whose last
//   gradient is in is all-reduced over the replicas on the communicator's
//   stream, buckets in order (mark_bucket_ready), while the backward goes on;
// - at the end of the backward (finalize_backward, queued on the autograd
//   engine) the compute stream waits for each bucket's all-reduce and copies
//   the bucket back into the gradients (finalize_bucket_dense);
// - .grad lives from its first gradient to the loop's zero_grad
//   (set_to_none), the buckets for the whole run.
// On one GPU nothing is bucketed or reduced (plain single-GPU training).

#include <cstdint>
#include <optional>
#include <vector>

#include "models/model_spec.hpp"
#include "planner/ddp_buckets.hpp"
#include "planner/gradient_reduction.hpp"
#include "planner/loop_buffers.hpp"
#include "planner/plan.hpp"
#include "planner/program_writer.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::planner {

class DdpReduction {
 public:
  DdpReduction(ProgramWriter* writer, LoopBuffers* loop, const Plan& plan, const models::ModelSpec& model,
               const scenarios::Training& training, int64_t replicate_ranks, ElementBytes bytes);

  // The buffer unit u's backward of micro-batch mb writes its gradients
  // into, allocated now on the compute stream: a new one, or -1 when
  // autograd keeps that gradient as .grad (the step's first, already in the
  // parameters' dtype), which is then allocated here instead.
  int gradient_buffer(int u, int mb);
  // After unit u's backward `done` made its gradients in `grads`:
  // AccumulateGrad, then, when mb synchronises, the copy into the buckets
  // and the all-reduce of every bucket this unit completes. Returns the op
  // after which .grad holds the unit's gradients so far.
  uint32_t after_backward(int u, int mb, uint32_t done, int grads);
  // The end of micro-batch mb's backward: the copies out of the reduced
  // buckets; returns the last, or nothing when mb does not synchronise.
  std::optional<uint32_t> finish_micro_batch(int mb);

  bool synchronises(int mb) const;
  const std::vector<DdpBucket>& buckets() const { return buckets_; }
  // The buckets' memory, held over the run (none on one GPU).
  int64_t bucket_bytes() const;

 private:
  int64_t elements(int u) const { return plan_.units[static_cast<size_t>(u)].layout.padded_elements(); }
  int64_t params(int u) const { return static_cast<int64_t>(plan_.units[static_cast<size_t>(u)].problem.tensors.size()); }
  const std::string& name(int u) const;
  HostWork& host(uint32_t op) { return w_.program().ops[op].host; }

  ProgramWriter& w_;
  LoopBuffers& loop_;
  const Plan& plan_;
  const models::ModelSpec& model_;
  int64_t replicate_ranks_;
  int micro_batches_;
  bool sync_last_only_;
  ElementBytes bytes_;
  std::vector<DdpBucket> buckets_;
  std::vector<int> first_micro_batch_;  // per unit: the micro-batch that made .grad, -1 before
  std::vector<uint32_t> all_reduces_;   // per bucket, this micro-batch's
  size_t next_bucket_ = 0;
};

}  // namespace ragged::planner
