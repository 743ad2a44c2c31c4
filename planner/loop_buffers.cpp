#include "planner/loop_buffers.hpp"

#include <utility>

#include "planner/strategy_traits.hpp"

namespace ragged::planner {

LoopBuffers::LoopBuffers(ProgramWriter* writer, const scenarios::Training& training, size_t units)
    : w_(writer),
      outputs_(training.outputs()),
      grad_shards_freed_(strategy_traits(training.strategy()).grad_shards_freed_each_step),
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

void LoopBuffers::loss_computed(uint32_t head_forward) {
  const bool held = outputs_.held_until_next_forward();
  for (int buffer : held ? held_ : batch_) w_->free(buffer, Stream::kCompute, {head_forward});
  held_ = held ? std::move(batch_) : std::vector<int>{};
  batch_.clear();
}

void LoopBuffers::step_end() {
  const std::vector<Op>& ops = w_->program().ops;
  std::vector<uint32_t> last_of_stream;
  for (Stream stream : {Stream::kCompute, Stream::kAllGather, Stream::kReduceScatter, Stream::kAllReduce}) {
    for (auto op = ops.rbegin(); op != ops.rend(); ++op) {
      if (op->stream != stream) continue;
      last_of_stream.push_back(op->id);
      break;
    }
  }
  for (int buffer : grad_shards_) {
    if (buffer >= 0) w_->free(buffer, Stream::kCompute, last_of_stream);
  }
  for (int buffer : held_) w_->free(buffer, Stream::kCompute, last_of_stream);
  held_.clear();
}

}  // namespace ragged::planner
