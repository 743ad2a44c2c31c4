#include "planner/loop_buffers.hpp"

#include <utility>

#include "planner/strategy_traits.hpp"

namespace ragged::planner {

LoopBuffers::LoopBuffers(ProgramWriter* writer, const scenarios::Training& training, size_t units,
                         const models::ModelSpec& model)
    : w_(writer),
      outputs_(training.outputs()),
      grad_shards_freed_(strategy_traits(training.strategy()).grad_shards_freed_each_step),
      vocab_(model.arch.vocab),
      returned_logits_(model.units.empty() ? 0.0 : model.units.back().activations.returned_logits),
      fused_loss_(models::effective_loss(model.kernels) == models::LossKernel::kFused),
      grad_shards_(units, -1) {}

uint32_t LoopBuffers::grad_shard(int u, const std::string& name, int64_t bytes, Stream stream, uint32_t reduced) {
  int& shard = grad_shards_[static_cast<size_t>(u)];
  if (!grad_shards_freed_ || shard >= 0) return reduced;
  shard = w_->buffer(name + " grad shard", BufferKind::kGradShards, u, bytes);
  return w_->alloc(shard, stream, {reduced});
}

void LoopBuffers::previous_step_outputs(int64_t bytes) {
  if (!outputs_.held_until_next_forward() || bytes <= 0) return;
  const int buffer = w_->buffer("previous step's outputs", BufferKind::kModelOutputs, -1, bytes);
  w_->alloc(buffer, Stream::kCompute, {});
  held_.push_back(buffer);
}

void LoopBuffers::add_output(int u, const std::string& name, int64_t bytes, bool after_backward) {
  if (bytes <= 0 || (after_backward && !outputs_.held_until_next_forward())) return;
  const int buffer = w_->buffer(name, BufferKind::kModelOutputs, u, bytes);
  w_->alloc(buffer, Stream::kCompute, {});
  (after_backward ? held_ : batch_).push_back(buffer);
}

void LoopBuffers::return_logits(int head, int64_t tokens, bool after_backward) {
  if (!outputs_.logits() || after_backward != fused_loss_) return;
  add_output(head, "head returned logits", static_cast<int64_t>(returned_logits_ * static_cast<double>(tokens)),
             after_backward);
}

void LoopBuffers::loss_computed(uint32_t head_forward) {
  const bool held = outputs_.held_until_next_forward();
  for (int buffer : held ? held_ : batch_) w_->free(buffer, Stream::kCompute, {head_forward});
  held_ = held ? std::move(batch_) : std::vector<int>{};
  batch_.clear();
}

// Per metric (Composer's LanguageCrossEntropy.update): CrossEntropyLoss under
// autocast casts the logits to fp32 (read the logits' bytes, write 4, unless
// they are fp32), log_softmax (read 4, write 4, as eager_kernels.cpp counts
// it) and nll_loss (one element per token, not counted); then
// (target != ignore_index).sum() and two additions to the metric's state:
// seven torch ops. Before them the loop shifts the labels once
// (HuggingFaceModel.eval_forward: clone, copy, fill).
constexpr int64_t kOpsPerMetric = 7;
constexpr int64_t kLabelShiftOps = 3;
constexpr double kFp32Bytes = 4.0;

bool LoopBuffers::train_metrics(int head, int mb, int64_t tokens, std::vector<uint32_t> after) {
  const int metrics = outputs_.metric_cross_entropies();
  if (metrics <= 0 || returned_logits_ <= 0 || vocab_ <= 0) return false;
  const double elements = static_cast<double>(tokens) * static_cast<double>(vocab_);
  const double logits_bytes = returned_logits_ / static_cast<double>(vocab_);
  const bool cast = logits_bytes < kFp32Bytes;
  ComputeWork work;
  work.elementwise_bytes = metrics * elements * ((cast ? logits_bytes + kFp32Bytes : 0.0) + 2.0 * kFp32Bytes);
  work.elementwise_kernels = kLabelShiftOps + metrics * (kOpsPerMetric - (cast ? 0 : 1));
  // One metric's fp32 copy and log-softmax at a time: each is freed when its
  // update returns.
  const auto fp32 = static_cast<int64_t>(elements * kFp32Bytes);
  const int workspace = w_->buffer("train metrics workspace", BufferKind::kWorkspace, head, (cast ? 2 : 1) * fp32);
  if (cast) w_->program().buffers[static_cast<size_t>(workspace)].pieces = {fp32, fp32};
  w_->alloc(workspace, Stream::kCompute, std::move(after));
  const uint32_t op = w_->compute(OpKind::kTrainMetrics, head, mb, "train metrics", std::move(work), {});
  w_->free(workspace, Stream::kCompute, {op});
  return true;
}

void LoopBuffers::step_end() {
  std::vector<uint32_t> last_of_stream;
  for (Stream stream : {Stream::kCompute, Stream::kAllGather, Stream::kReduceScatter, Stream::kAllReduce}) {
    if (const auto last = w_->last_on(stream)) last_of_stream.push_back(*last);
  }
  for (int buffer : grad_shards_) {
    if (buffer >= 0) w_->free(buffer, Stream::kCompute, last_of_stream);
  }
  for (int buffer : held_) w_->free(buffer, Stream::kCompute, last_of_stream);
  held_.clear();
}

}  // namespace ragged::planner
