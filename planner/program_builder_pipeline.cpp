#include <algorithm>

#include "common/errors.hpp"
#include "planner/program_builder_internal.hpp"

namespace ragged::planner::internal {

void ProgramBuilder::prepare_pipeline() {
  const StageOfPipeline& p = *in_.pipeline;
  std::vector<int> local(in_.model->units.size(), -1);
  for (int u = 0; u < units_; ++u) local[static_cast<size_t>(unit(u).unit_index)] = u;
  for (int chunk : p.stages->chunks_of(p.stage)) {
    std::vector<int>& units = chunk_units_.emplace_back();
    for (int model_unit : p.stages->chunks[static_cast<size_t>(chunk)])
      units.push_back(local[static_cast<size_t>(model_unit)]);
  }
  actions_ = stage_schedule(p.schedule, static_cast<int>(p.stages->stages), p.stage,
                            in_.training->gradient_accumulation_steps(), static_cast<int>(p.stages->virtual_stages),
                            overlaps_expert_all_to_all() ? 1 : 0);
  prepare_split_backward();
  last_backward_.assign(static_cast<size_t>(units_), -1);
  accumulations_.assign(static_cast<size_t>(units_), 0);
  for (const PipelineAction& a : actions_) {
    if (a.pass == PipelineAction::Pass::kForward) continue;
    for (int u : chunk_units_[static_cast<size_t>(a.chunk)]) last_backward_[static_cast<size_t>(u)] = a.micro_batch;
  }
}

int64_t ProgramBuilder::pipeline_receive_buffer_bytes() const {
  const auto micro_batches = static_cast<int64_t>(in_.training->gradient_accumulation_steps());
  int64_t buffers = 0;
  for (int local = 0; local < static_cast<int>(chunk_units_.size()); ++local) {
    const int chunk = model_chunk(local);
    const int stage = stage_of(chunk);
    // The forward input from the chunk before, the output's gradient from the chunk after.
    if (chunk > 0 && stage_of(chunk - 1) != stage) buffers += micro_batches;
    if (chunk < last_chunk() && stage_of(chunk + 1) != stage) buffers += micro_batches;
  }
  return buffers * stage_boundary_bytes();
}

std::vector<GatherPass> ProgramBuilder::gather_passes() const {
  std::vector<GatherPass> passes;
  for (const PipelineAction& a : actions_) {
    // ZB-H1's weight gradients read the saved inputs and output gradients,
    // not the parameters: they gather nothing.
    if (a.pass == PipelineAction::Pass::kBackwardWeight) continue;
    std::vector<int> units = chunk_units_[static_cast<size_t>(a.chunk)];
    const bool backward = a.pass != PipelineAction::Pass::kForward;
    if (backward) std::reverse(units.begin(), units.end());
    passes.push_back({std::move(units), a.micro_batch, backward});
  }
  return passes;
}

void ProgramBuilder::run_pipeline(std::vector<uint32_t>& grads_ready) {
  for (size_t i = 0; i < actions_.size(); ++i) {
    const PipelineAction& a = actions_[i];
    if (overlaps_expert_all_to_all() && a.pass == PipelineAction::Pass::kForward && i + 1 < actions_.size() &&
        actions_[i + 1].pass == PipelineAction::Pass::kBackward) {
      combined_passes(a, actions_[i + 1], grads_ready);
      ++i;
      continue;
    }
    const std::vector<int>& units = chunk_units_[static_cast<size_t>(a.chunk)];
    const int chunk = model_chunk(a.chunk);
    if (a.pass == PipelineAction::Pass::kForward) {
      if (chunk > 0) receive(a.micro_batch, chunk - 1, false);
      for (int u : units) forward_unit(u, a.micro_batch);
      if (chunk < last_chunk()) send(a.micro_batch, chunk, false);
    } else if (a.pass == PipelineAction::Pass::kBackwardWeight) {
      for (auto u = units.rbegin(); u != units.rend(); ++u) {
        backward_unit(*u, a.micro_batch, grads_ready, BackwardPart::kWeight);
      }
      reduce_chunk(a.micro_batch, grads_ready);
    } else {
      const BackwardPart part =
          a.pass == PipelineAction::Pass::kBackwardInput ? BackwardPart::kInput : BackwardPart::kWhole;
      if (chunk < last_chunk()) receive(a.micro_batch, chunk, true);
      for (auto u = units.rbegin(); u != units.rend(); ++u) backward_unit(*u, a.micro_batch, grads_ready, part);
      std::vector<uint32_t> reduced = reduce_chunk(a.micro_batch, grads_ready);
      if (chunk > 0) send(a.micro_batch, chunk - 1, true, std::move(reduced));
    }
  }
}

void ProgramBuilder::receive(int mb, int lower_chunk, bool backward) {
  const int from = stage_of(backward ? lower_chunk + 1 : lower_chunk);
  const uint32_t id =
      w_.collective(OpKind::kRecv, Stream::kPipelineRecv, Group::kPipeline, -1, mb,
                    fmt::format("mb{} chunk {} {} from stage {}", mb, backward ? lower_chunk + 1 : lower_chunk,
                                backward ? "gradient" : "activations", from),
                    stage_boundary_bytes(), -1, {});
  program_.ops[id].peer = from;
  program_.ops[id].message = message(mb, lower_chunk, backward);
  stage_input_ = id;
}

std::vector<uint32_t> ProgramBuilder::reduce_chunk(int mb, std::vector<uint32_t>& grads_ready) {
  std::vector<uint32_t> reduced;
  if (held_grads_.empty()) return reduced;
  // The chunk's backward is over when its last unit's gradients are (the
  // compute stream ran the others before it).
  const uint32_t chunk_done = held_grads_.back().done;
  // run_post_backward walks the FSDP states in registration order: the
  // chunk's units as the forward meets them.
  for (auto h = held_grads_.rbegin(); h != held_grads_.rend(); ++h) {
    const uint32_t r = grads_.reduce(h->unit, mb, chunk_done, h->grads);
    grads_ready[static_cast<size_t>(h->unit)] = r;
    compute_waits_.push_back(r);  // FSDPParamGroup.post_backward / the final callback: wait_event
    reduced.push_back(r);
  }
  held_grads_.clear();
  return reduced;
}

void ProgramBuilder::send(int mb, int lower_chunk, bool backward, std::vector<uint32_t> also_after) {
  const int to = stage_of(backward ? lower_chunk : lower_chunk + 1);
  std::vector<uint32_t> deps = mesh_waits_;  // the chunk's last collectives make what is sent
  deps.insert(deps.end(), also_after.begin(), also_after.end());
  if (const auto last = last_compute()) deps.push_back(*last);
  const uint32_t id =
      w_.collective(OpKind::kSend, Stream::kPipelineSend, Group::kPipeline, -1, mb,
                    fmt::format("mb{} chunk {} {} to stage {}", mb, backward ? lower_chunk + 1 : lower_chunk,
                                backward ? "gradient" : "activations", to),
                    stage_boundary_bytes(), -1, std::move(deps));
  program_.ops[id].peer = to;
  program_.ops[id].message = message(mb, lower_chunk, backward);
}

// Megatron-LM's finalize_model_grads, _allreduce_word_embedding_grads:
// after the data-parallel reduction the table's main gradient on the first
// stage and its copy's on the last are all-reduced over the two ranks (each
// sends its whole gradient and receives the other's), then the optimizer
// steps both copies alike.
void ProgramBuilder::exchange_table_gradients(std::vector<uint32_t>& grads_ready) {
  const int stages = static_cast<int>(in_.pipeline->stages->stages);
  const int stage = in_.pipeline->stage;
  const int last_mb = in_.training->gradient_accumulation_steps() - 1;
  const bool first = stage == 0;
  const int other = first ? stages - 1 : 0;
  for (int u = 0; u < units_; ++u) {
    if (!is_embedding(u) && !is_head(u)) continue;
    const models::TensorRole role = is_embedding(u) ? models::TensorRole::kEmbedding : models::TensorRole::kHead;
    int64_t elements = 0;
    for (const models::TensorSpec& t : spec(u).tensors) elements += t.role == role ? t.numel() : 0;
    if (elements == 0) continue;
    const int64_t bytes = elements * bytes_.reduce;
    const uint32_t ready = grads_ready[static_cast<size_t>(u)];
    const int received = w_.buffer(fmt::format("{} table gradient from stage {}", spec(u).name, other),
                                   BufferKind::kUnshardedGrads, u, bytes);
    w_.alloc(received, Stream::kCompute, {ready});
    const uint32_t sent = w_.collective(OpKind::kSend, Stream::kPipelineSend, Group::kPipeline, u, last_mb,
                                        fmt::format("{} table gradient to stage {}", spec(u).name, other), bytes, -1,
                                        {ready});
    program_.ops[sent].peer = other;
    program_.ops[sent].message = table_message(first);
    const uint32_t got = w_.collective(OpKind::kRecv, Stream::kPipelineRecv, Group::kPipeline, u, last_mb,
                                       fmt::format("{} table gradient from stage {}", spec(u).name, other), bytes,
                                       received, {ready});
    program_.ops[got].peer = other;
    program_.ops[got].message = table_message(!first);
    const uint32_t added = w_.traffic(OpKind::kGradAccumulate, Stream::kCompute, u, last_mb,
                                      spec(u).name + " add the other stage's table gradient", 3 * bytes, {sent, got},
                                      received);
    w_.free(received, Stream::kCompute, {added});
    grads_ready[static_cast<size_t>(u)] = added;
  }
}

}  // namespace ragged::planner::internal
