#include <algorithm>

#include "common/errors.hpp"
#include "planner/program_builder_internal.hpp"

namespace ragged::planner::internal {

int ProgramBuilder::loss_backward(int u, int mb, std::vector<uint32_t>& deps) {
  const models::UnitSpec& s = spec(u);
  const int workspace =
      pieces_buffer(s.name + " loss workspace", BufferKind::kWorkspace, u, for_batch(loss_workspace_pieces(s)));
  const int gradient =
      w_.buffer(s.name + " logits gradient", BufferKind::kWorkspace, u, for_batch(s.activations.logits_gradient));
  if (workspace >= 0) compute_alloc(workspace);
  compute_alloc(gradient);
  const uint32_t loss =
      w_.compute(OpKind::kComputeBwd, u, mb, s.name + " loss backward", loss_backward_work(s, batch_), deps);
  program_.ops[loss].buffer = gradient;
  program_.ops[loss].loss_only = true;
  if (workspace >= 0) w_.free(workspace, Stream::kCompute, {loss});
  deps.push_back(loss);
  return gradient;
}

void ProgramBuilder::backward(int mb, std::vector<uint32_t>& grads_ready) {
  for (int u = units_ - 1; u >= 0; --u) backward_unit(u, mb, grads_ready);
  finish_micro_batch_backward(mb, grads_ready);
}

void ProgramBuilder::finish_micro_batch_backward(int mb, std::vector<uint32_t>& grads_ready) {
  if (ddp_) {  // the Reducer's finalize_backward, before the backward returns
    if (const std::optional<uint32_t> synced = ddp_->finish_micro_batch(mb)) {
      std::fill(grads_ready.begin(), grads_ready.end(), *synced);
    }
  }
  std::vector<uint32_t> reduced;  // the root's end-of-backward wait: the last reduction, which ends after the others
  if (traits_.root_fences_micro_batches) reduced = {grads_ready[0]};
  if (!loop_.train_metrics(units_ - 1, mb, batch_.tokens(), reduced)) {
    compute_waits_.insert(compute_waits_.end(), reduced.begin(), reduced.end());
  }
  if (traits_.root_fences_micro_batches) fence_next_micro_batch(mb + 1, grads_ready[0]);
}

void ProgramBuilder::backward_unit(int u, int mb, std::vector<uint32_t>& grads_ready, BackwardPart part) {
  if (part == BackwardPart::kWeight) {
    weight_gradients(u, mb, grads_ready);
    return;
  }
  {
    bool regather = !kept_gathered(u);
    int k = gathers_.find(u, mb, regather);
    if (reshards_each_pass()) {  // the parameters this backward computes with: its own gather or an earlier one
      k = gathers_.find(u, mb, true);
      regather = gathers_[k].backward && gathers_[k].micro_batch == mb;
    }
    if (regather) {
      issue_gathers_through(std::min(k + window_ - 1, gather_limit(mb)));
      issue_gathers_through(k);
    }
    RAGGED_ASSERT(gathers_[k].emitted, "an all-gather must be issued before its unit computes");
    if (regather) params_ready(gathers_[k]);
    const std::vector<uint32_t> ready = params_deps(gathers_[k]);
    const models::UnitSpec& s = spec(u);
    std::vector<uint32_t> deps = ready;
    if (is_head(u) && in_.model->arch.tie_embeddings) {
      for (uint32_t e : embedding_ready(mb)) deps.push_back(e);
    }
    take_stage_input(deps);
    // The backward's first part's collectives are issued ahead of the
    // recompute, which they overlap.
    mesh_before(u, mb, Pass::kBackward, deps, parts_of(u, Pass::kBackward).front());
    const int logits_gradient = splits_loss_backward(s) ? loss_backward(u, mb, deps) : -1;
    int workspace = backward_workspace(u);
    compute_alloc(workspace);
    const models::Checkpointing mode = mode_of(u);
    int64_t first_compute = -1;
    if (const ComputeWork again = recompute_work(s, batch_, mode); total_flops(again) > 0 || again.elementwise_bytes > 0) {
      // Full recomputation runs the forward again, its mesh collectives too;
      // selective, the all-gathers its recomputed matmuls read.
      const Pass pass = mode == models::Checkpointing::kFull ? Pass::kRecompute : Pass::kSelectiveRecompute;
      const std::vector<uint32_t> ops =
          compute_parts(OpKind::kRecompute, u, mb, pass, "recompute", ready,
                        [&](models::UnitPart p) { return recompute_work(s, batch_, mode, p); });
      first_compute = ops.front();
      deps.push_back(ops.back());
      deps.insert(deps.end(), mesh_waits_.begin(), mesh_waits_.end());
      mesh_waits_.clear();
    }
    // A tied head adds the shared table's gradient to the embedding's, so
    // that buffer lives from the head's backward (a chunked loss: its
    // forward) to the embedding's reduce.
    const bool tied = in_.model->arch.tie_embeddings;
    int grads = -1;
    if (ddp_) {
      // A tied head's share of the table's gradient waits for the
      // embedding's: autograd sums the two before AccumulateGrad.
      if (tied && is_head(u)) tied_grads_ = ddp_->gradient_buffer(0, mb);
      grads = tied && is_embedding(u) ? tied_grads_ : ddp_->gradient_buffer(u, mb);
    } else if (distopt_) {
      // With gradient_accumulation_fusion the wgrad GEMMs accumulate into
      // the main-grad buffer; without, autograd makes a .grad first.
      grads = distopt_->fused_accumulation() ? -1 : unfused_gradients(u);
    } else if (!steps_optimizer()) {
      grads = -1;  // held from step to step: persistent memory (fill_persistent)
    } else if ((pipelined() && !stage_reduces_every_micro_batch()) ||
               (defers_gradient_sync() && !tied && !(is_head(u) && head_grads_ >= 0))) {
      // A stage accumulates each unit's gradients over the step's
      // micro-batches, reduced after the last (PyTorch's pipelining turns
      // FSDP's gradient sync off for the others); so does FSDP2 with its
      // gradient sync off on the accumulation micro-batches.
      int& held = stage_grads_[static_cast<size_t>(u)];
      if (held < 0) held = held_stage_grads(u);
      grads = held;
    } else if (is_head(u) && head_grads_ >= 0) {
      grads = head_grads_;
      head_grads_ = -1;
    } else if (is_head(u)) {
      grads = head_gradients();
    } else {
      grads = tied && is_embedding(u) ? tied_grads_ : grads_.unsharded_grads(u);
    }
    const auto at = static_cast<size_t>(mb * units_ + u);
    const auto work = [&](models::UnitPart p) {
      ComputeWork whole = logits_gradient >= 0 ? backward_work_after_loss(s, batch_) : backward_work(s, batch_, p);
      if (part != BackwardPart::kInput) return whole;
      // ZB-H1's W gets the weight gradients of every part.
      SplitBackward split = split_weight_gradients(std::move(whole));
      std::vector<Gemm>& later = weight_work_[at].gemms;
      later.insert(later.end(), split.weight.gemms.begin(), split.weight.gemms.end());
      return std::move(split.input);
    };
    if (part == BackwardPart::kInput) weight_work_[at] = {};
    const uint32_t bwd = compute_parts(OpKind::kComputeBwd, u, mb, Pass::kBackward,
                                       part == BackwardPart::kInput ? "backward (input)" : "backward", std::move(deps),
                                       work, true)
                             .back();
    if (logits_gradient >= 0) {
      program_.ops[bwd].buffer = logits_gradient;
      w_.free(logits_gradient, Stream::kCompute, {bwd});
    }
    if (regather) block_host_on_fetch(first_compute >= 0 ? static_cast<uint32_t>(first_compute) : bwd, gathers_[k]);
    if (reshards_each_pass()) {  // held gathered after the backward: its window slot is free from here
      gathers_[k].computed = bwd;
      gathers_[k].is_computed = true;
    }
    w_.free(workspace, Stream::kCompute, {bwd});
    if (part == BackwardPart::kInput) {
      // The weight gradients read the saved inputs: they stay until then.
      input_gradient_[static_cast<size_t>(mb * units_ + u)] = bwd;
      return;
    }
    finish_backward(u, mb, k, bwd, grads, grads_ready);
  }
}

void ProgramBuilder::weight_gradients(int u, int mb, std::vector<uint32_t>& grads_ready) {
  const auto at = static_cast<size_t>(mb * units_ + u);
  const models::UnitSpec& s = spec(u);
  const uint32_t wgrad = w_.compute(OpKind::kComputeBwd, u, mb, s.name + " backward (weights)",
                                    std::move(weight_work_[at]), {input_gradient_[at]});
  program_.ops[wgrad].buffer = stage_grads_[static_cast<size_t>(u)];
  program_.ops[wgrad].weight_gradients_only = true;
  finish_backward(u, mb, gathers_.find(u, mb, true), wgrad, stage_grads_[static_cast<size_t>(u)], grads_ready);
}

void ProgramBuilder::finish_backward(int u, int mb, int k, uint32_t bwd, int grads,
                                     std::vector<uint32_t>& grads_ready) {
  w_.free(activations_[static_cast<size_t>(mb * units_ + u)], Stream::kCompute, {bwd});
  if (mode_of(u) == models::Checkpointing::kNone) return_kv(u, true);
  if (is_head(u)) loop_.return_logits(u, batch_.tokens(), true);
  if (distopt_ && grads >= 0) {
    bwd = add_into_main_grad(u, mb, bwd, grads);
    grads = -1;
  }
  // A stage keeps its parameters gathered to their last backward, and their
  // gradients unreduced too unless it reduces every micro-batch.
  const bool before_last = pipelined() && mb != last_backward_[static_cast<size_t>(u)];
  if (before_last && !stage_reduces_every_micro_batch()) {
    if (stage_accumulates_in_reduce_dtype()) accumulate_unsharded_grads(u, mb, take_first_accumulation(u), bwd, grads);
    return;
  }
  if (!before_last && gathers_[k].emitted && !gathers_[k].is_freed) release_params(k, bwd);
  if (!steps_optimizer()) {
    // AccumulateGrad adds the unit's gradients to those it holds (read both
    // in the reduce dtype, write the sum), on the compute stream.
    const int64_t elements = gathered_elements(u);
    w_.traffic(OpKind::kGradAccumulate, Stream::kCompute, u, mb, spec(u).name + " accumulate unsharded grads",
               elements * (bytes_.param + 2 * grads_.reduce_bytes(u)), {bwd}, -1);
    return;
  }
  const uint32_t done = replicated_gradients(u, mb, bwd, grads);
  if (ddp_) {
    grads_ready[u] = ddp_->after_backward(u, mb, done, grads);
    return;
  }
  if (distopt_) {  // the other micro-batches run under no_sync()
    if (pipelined() || mb + 1 == program_.micro_batches) distopt_->after_backward(u, done);
    return;
  }
  if (defers_gradient_sync() && stage_grads_[static_cast<size_t>(u)] == grads) {
    // The last micro-batch's gradients are added, then reduced as usual.
    const uint32_t accumulated = accumulate_unsharded_grads(u, mb, mb == 0, done, grads);
    if (mb + 1 < program_.micro_batches) return;
    stage_grads_[static_cast<size_t>(u)] = -1;
    grads_ready[u] = grads_.reduce(u, mb, accumulated, grads);
    return;
  }
  if (reduce_after_chunk()) {
    const uint32_t accumulated = stage_accumulates_in_reduce_dtype()
                                     ? accumulate_unsharded_grads(u, mb, take_first_accumulation(u), done, grads)
                                     : done;
    held_grads_.push_back({u, accumulated, grads});
    return;
  }
  // The root group reduces the head's gradients with the embedding's.
  if (is_head(u) && root_group() && units_ > 1) {
    root_head_grads_ = grads;
    return;
  }
  if (is_embedding(u) && root_head_grads_ >= 0) {
    grads_ready[units_ - 1] = grads_.reduce(units_ - 1, mb, bwd, root_head_grads_);
    root_head_grads_ = -1;
  }
  grads_ready[u] = grads_.reduce(u, mb, done, grads);
}

uint32_t ProgramBuilder::accumulate_unsharded_grads(int u, int mb, bool first, uint32_t after, int grads) {
  // Gradients autograd already made in the reduce dtype are kept as they are.
  const int64_t elements = gathered_elements(u);
  const int64_t r = grads_.reduce_bytes(u);
  const int64_t bytes =
      first ? (bytes_.param == r ? 0 : elements * (bytes_.param + r)) : elements * (bytes_.param + 2 * r);
  if (bytes == 0) return after;
  return w_.traffic(OpKind::kGradAccumulate, Stream::kCompute, u, mb, spec(u).name + " accumulate unsharded grads",
                    bytes, {after}, grads);
}

int ProgramBuilder::unfused_gradients(int u) {
  const int grads =
      w_.buffer(spec(u).name + " .grad", BufferKind::kUnshardedGrads, u, gathered_elements(u) * bytes_.param);
  w_.alloc(grads, Stream::kCompute, {});
  return grads;
}

// Megatron's backward post-hook without gradient_accumulation_fusion
// (distributed_data_parallel.py, _make_backward_post_hook): each
// parameter's .grad added into its main_grad (read both, write the sum) and
// dropped, one kernel a parameter, every micro-batch.
uint32_t ProgramBuilder::add_into_main_grad(int u, int mb, uint32_t bwd, int grads) {
  const int64_t elements = gathered_elements(u);
  const uint32_t added =
      w_.traffic(OpKind::kGradAccumulate, Stream::kCompute, u, mb, spec(u).name + " add .grad into main_grad",
                 elements * (bytes_.param + 2 * bytes_.reduce), {bwd}, grads);
  host(added).framework_ops = static_cast<int64_t>(spec(u).tensors.size());
  w_.free(grads, Stream::kCompute, {added});
  return added;
}

uint32_t ProgramBuilder::replicated_gradients(int u, int mb, uint32_t bwd, int grads) {
  if (mesh_.tp == 1 || !mesh_.sequence_parallel) return bwd;
  // A replicated embedding (gathered_logits) sees every token on every tp
  // rank: its gradient is already the same on each.
  if (is_embedding(u) && mesh_.gathered_logits) return bwd;
  // Whole routed experts are not replicated over tp: each tp rank holds
  // other experts, whose gradients FSDP reduces over their expert shard group.
  if (mesh_.whole_experts && spec(u).kind == models::UnitKind::kExperts) return bwd;
  int64_t elements = 0;
  for (const models::TensorSpec& t : spec(u).tensors) {
    if (t.tp_cut == models::TensorCut::kWhole) elements += t.numel();
  }
  if (elements == 0) return bwd;
  const uint32_t sum = w_.collective(OpKind::kAllReduce, Stream::kTensorParallel, Group::kTensor, u, mb,
                                     spec(u).name + " (bwd) tp all-reduce of the uncut weights' gradients",
                                     elements * bytes_.param, grads, {bwd});
  program_.ops[sum].pass = Pass::kBackward;
  compute_waits_.push_back(sum);
  return sum;
}

}  // namespace ragged::planner::internal
