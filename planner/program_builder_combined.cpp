// Megatron-Core's combined 1F1B step (--overlap-moe-expert-parallel-comm):
// a steady-state forward and the backward that follows it in the stage's
// schedule (or, without stages, a micro-batch's forward and the previous
// one's backward: pipeline_parallel/combined_1f1b.py,
// combined_1f1b_schedule_for_no_pipelining), emitted as one pass whose
// layers interleave (megatron/core/models/common/model_chunk_schedule_plan.py,
// TransformerModelChunkSchedulePlan.run and TransformerLayerSchedulePlan.run).
#include <algorithm>

#include "common/errors.hpp"
#include "planner/program_builder_internal.hpp"

namespace ragged::planner::internal {
namespace {

// A chunk's units as Megatron's schedule plan sees them: what comes before
// the first block (the embedding: pre_process), the transformer layers (a
// block and its routed experts, when they are a unit of their own), and
// what comes after the last (the head: post_process).
struct ChunkLayers {
  struct Layer {
    int block = -1;
    int experts = -1;
  };
  std::vector<int> before;
  std::vector<Layer> layers;
  std::vector<int> after;
};

ChunkLayers chunk_layers(const std::vector<int>& units, const std::function<models::UnitKind(int)>& kind_of) {
  ChunkLayers out;
  for (int u : units) {
    const models::UnitKind kind = kind_of(u);
    if (kind == models::UnitKind::kBlock) {
      out.layers.push_back({u, -1});
    } else if (kind == models::UnitKind::kExperts && !out.layers.empty() && out.layers.back().experts < 0) {
      out.layers.back().experts = u;
    } else if (out.layers.empty()) {
      out.before.push_back(u);
    } else {
      out.after.push_back(u);
    }
  }
  return out;
}

}  // namespace

void ProgramBuilder::enter(PassThread& thread) {
  RAGGED_ASSERT(thread_ == nullptr && mesh_waits_.empty() && !stage_input_,
                "a combined step emits one of its passes at a time");
  mesh_waits_ = std::move(thread.mesh_waits);
  thread.mesh_waits.clear();
  stage_input_ = thread.stage_input;
  thread.stage_input.reset();
  thread_ = &thread;
  thread_section_begin_ = program_.ops.size();
}

void ProgramBuilder::leave(PassThread& thread) {
  if (const std::optional<uint32_t> kernel = section_kernel()) thread.last_compute = kernel;
  thread.mesh_waits = std::move(mesh_waits_);
  mesh_waits_.clear();
  thread.stage_input = stage_input_;
  stage_input_.reset();
  thread_ = nullptr;
}

void ProgramBuilder::combined_passes(const PipelineAction& forward, const PipelineAction& backward,
                                     std::vector<uint32_t>& grads_ready) {
  const int fmb = forward.micro_batch, bmb = backward.micro_batch;
  const int f_chunk = model_chunk(forward.chunk), b_chunk = model_chunk(backward.chunk);
  CombinedEnds ends;
  ends.forward_start = [&] {
    if (f_chunk > 0) receive(fmb, f_chunk - 1, false);
  };
  ends.backward_start = [&] {
    if (b_chunk < last_chunk()) receive(bmb, b_chunk, true);
  };
  ends.forward_end = [&] {
    if (f_chunk < last_chunk()) send(fmb, f_chunk, false);
  };
  ends.backward_end = [&] {
    std::vector<uint32_t> reduced = reduce_chunk(bmb, grads_ready);
    if (b_chunk > 0) send(bmb, b_chunk - 1, true, std::move(reduced));
  };
  combined_units(chunk_units_[static_cast<size_t>(forward.chunk)], fmb,
                 chunk_units_[static_cast<size_t>(backward.chunk)], bmb, grads_ready, ends);
}

void ProgramBuilder::combined_micro_batches(int forward_mb, std::vector<uint32_t>& grads_ready) {
  std::vector<int> units(static_cast<size_t>(units_));
  for (int u = 0; u < units_; ++u) units[static_cast<size_t>(u)] = u;
  const int backward_mb = forward_mb - 1;
  CombinedEnds ends;
  ends.backward_end = [&] { finish_micro_batch_backward(backward_mb, grads_ready); };
  combined_units(units, forward_mb, units, backward_mb, grads_ready, ends);
}

void ProgramBuilder::combined_units(const std::vector<int>& forward_units, int fmb,
                                    const std::vector<int>& backward_units, int bmb, std::vector<uint32_t>& grads_ready,
                                    const CombinedEnds& ends) {
  const auto kind_of = [&](int u) { return spec(u).kind; };
  const ChunkLayers f = chunk_layers(forward_units, kind_of);
  const ChunkLayers b = chunk_layers(backward_units, kind_of);
  const auto backward_of = [&](int u) { backward_unit(u, bmb, grads_ready, BackwardPart::kWhole); };
  // A layer's passes alone: the block then its experts, backward the reverse.
  const auto forward_layer = [&](const ChunkLayers::Layer& layer) {
    forward_unit(layer.block, fmb);
    if (layer.experts >= 0) forward_unit(layer.experts, fmb);
  };
  const auto backward_layer = [&](const ChunkLayers::Layer& layer) {
    if (layer.experts >= 0) backward_of(layer.experts);
    backward_of(layer.block);
  };
  const auto run = [](const std::function<void()>& step) {
    if (step) step();
  };

  // What the passes before left for the next compute goes to the forward,
  // as it would without the overlap.
  PassThread fwd{std::move(mesh_waits_), std::nullopt, w_.last_on(Stream::kCompute)};
  mesh_waits_.clear();
  PassThread bwd{{}, std::nullopt, fwd.last_compute};
  const auto in = [&](PassThread& thread, const std::function<void()>& body) {
    enter(thread);
    body();
    leave(thread);
  };

  in(fwd, [&] {
    run(ends.forward_start);
    for (int u : f.before) forward_unit(u, fmb);
  });
  in(bwd, [&] {
    run(ends.backward_start);
    for (auto u = b.after.rbegin(); u != b.after.rend(); ++u) backward_of(*u);
  });
  const size_t pairs = std::min(f.layers.size(), b.layers.size());
  for (size_t i = 0; i < pairs; ++i) {
    const ChunkLayers::Layer& fl = f.layers[i];
    const ChunkLayers::Layer& bl = b.layers[b.layers.size() - 1 - i];
    const bool overlapped = fl.experts >= 0 && bl.experts >= 0 && parts_of(bl.experts, Pass::kBackward).size() == 1;
    if (!overlapped) {  // a dense layer: its passes one after the other
      in(fwd, [&] { forward_layer(fl); });
      in(bwd, [&] { backward_layer(bl); });
      continue;
    }
    // Compute: the forward's attention and router, the backward's experts,
    // the forward's experts, the backward's attention. Communication: the
    // backward's combine, the forward's dispatch, the backward's dispatch,
    // the forward's combine.
    in(fwd, [&] { forward_unit(fl.block, fmb); });
    in(bwd, [&] {
      hold_mesh_after_ = true;
      if (in_.training->experts().delay_weight_gradients()) {
        // --delay-wgrad-compute: the dispatch's backward waits for the input
        // gradient; the weight gradients follow it on the compute stream.
        backward_unit(bl.experts, bmb, grads_ready, BackwardPart::kInput);
        hold_mesh_after_ = false;
        weight_gradients(bl.experts, bmb, grads_ready);
      } else {
        backward_of(bl.experts);
        hold_mesh_after_ = false;
      }
    });
    in(fwd, [&] {
      before_next_compute_ = [&] {
        for (const HeldAfter& held : held_after_) issue_mesh_after(held, bwd.mesh_waits);
        held_after_.clear();
      };
      forward_unit(fl.experts, fmb);
      RAGGED_ASSERT(!before_next_compute_ && held_after_.empty(), "the held collectives follow the dispatch");
    });
    in(bwd, [&] { backward_of(bl.block); });
  }
  for (size_t i = pairs; i < b.layers.size(); ++i) {
    in(bwd, [&] { backward_layer(b.layers[b.layers.size() - 1 - i]); });
  }
  for (size_t i = pairs; i < f.layers.size(); ++i) {
    in(fwd, [&] { forward_layer(f.layers[i]); });
  }
  in(fwd, [&] {
    for (int u : f.after) forward_unit(u, fmb);
    run(ends.forward_end);
  });
  in(bwd, [&] {
    for (auto u = b.before.rbegin(); u != b.before.rend(); ++u) backward_of(*u);
    run(ends.backward_end);
  });
  // What either pass leaves for the next compute, as the passes alone would.
  mesh_waits_ = std::move(bwd.mesh_waits);
  mesh_waits_.insert(mesh_waits_.end(), fwd.mesh_waits.begin(), fwd.mesh_waits.end());
}

}  // namespace ragged::planner::internal
