#pragma once
// What the training loop keeps beyond a unit's activations, as Program
// buffers (docs/SIMULATOR.md section 8, "Gradient shards and what the
// training loop keeps"): the sharded gradients a loop frees every step
// (zero_grad, StrategyTraits::grad_shards_freed_each_step), and what the
// model returns and the loop holds (scenario training.outputs).

#include <cstdint>
#include <string>
#include <vector>

#include "models/model_spec.hpp"
#include "planner/program_writer.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::planner {

class LoopBuffers {
 public:
  LoopBuffers(ProgramWriter* writer, const scenarios::Training& training, size_t units, const models::ModelSpec& model);

  const scenarios::ModelOutputs& outputs() const { return outputs_; }

  // Unit u's gradient shard when the strategy frees them each step,
  // allocated on `stream` after `reduced` the first time it is asked for in
  // the step; returns the op to follow (the alloc, else `reduced`).
  uint32_t grad_shard(int u, const std::string& name, int64_t bytes, Stream stream, uint32_t reduced);

  // The previous step's outputs, live from the step's start to its first
  // forward's end when the loop holds them: `bytes`, one micro-batch's worth.
  void previous_step_outputs(int64_t bytes);
  // Something unit u returns, `bytes` for the micro-batch, allocated now on
  // the compute stream. `after_backward`: counted from the unit's backward
  // (a block without checkpointing holds it among its activations until
  // then), and only when the loop holds the outputs that long.
  void add_output(int u, const std::string& name, int64_t bytes, bool after_backward = false);
  // The logits the head returns (outputs.logits): the fp32 copy from the
  // head's forward (`after_backward` false); the fused loss's, among the
  // head's activations to its backward, from there (true).
  void return_logits(int head, int64_t tokens, bool after_backward);
  // Once the loss is computed (after the head's forward) the loop drops this
  // micro-batch's outputs or, holding them until the next forward returns,
  // the previous forward's.
  void loss_computed(uint32_t head_forward);
  // The loop's metrics over micro-batch `mb`'s returned logits after its
  // backward (outputs.metric_cross_entropies), one op on the head unit,
  // after the ops `after`. False when the loop computes none.
  bool train_metrics(int head, int mb, int64_t tokens, std::vector<uint32_t> after = {});
  // The loop's zero_grad after the optimizer, and the outputs it holds into
  // the next step (previous_step_outputs stands for them there): once every
  // stream is done.
  void step_end();

 private:
  ProgramWriter* w_;
  scenarios::ModelOutputs outputs_;
  bool grad_shards_freed_ = false;
  int64_t vocab_ = 0;
  double returned_logits_ = 0;  // the head's, bytes per token
  bool fused_loss_ = false;
  std::vector<int> grad_shards_;  // per unit: its kGradShards buffer once allocated, else -1
  std::vector<int> batch_;        // the current micro-batch's kModelOutputs buffers
  std::vector<int> held_;         // the previous forward's, while the loop holds them
};

}  // namespace ragged::planner
