#include "planner/program_builder.hpp"

#include "planner/checkpointing_plan.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.hpp"
#include "planner/compute_work.hpp"
#include "planner/gather_schedule.hpp"
#include "planner/gradient_reduction.hpp"
#include "planner/loop_buffers.hpp"
#include "planner/mesh_collectives.hpp"
#include "planner/pipeline_schedule.hpp"
#include "planner/optimizer_program.hpp"
#include "planner/program_writer.hpp"
#include "planner/strategy_traits.hpp"
#include "planner/unit_buffers.hpp"

namespace ragged::planner {
namespace {

int64_t dtype_bytes(scenarios::DType dtype) { return dtype == scenarios::FP32 ? 4 : 2; }

// Builds one step: forward and backward of every micro-batch, then the
// optimizer. All-gathers are issued in the order their units compute; the
// k-th all-gather's buffer waits for the free of the (k - window)-th, so at
// most `window` units hold unsharded parameters and the AG stream runs at most
// window - 1 units ahead of compute (the prefetch).
class Builder {
 public:
  Builder(const ProgramInputs& in, int rank)
      : in_(in),
        w_(&program_),
        rank_(rank),
        loop_(&w_, *in.training, in.plan->units.size(), *in.model),
        traits_(strategy_traits(in.training->strategy())),
        p_(dtype_bytes(in.training->precision().param())),
        r_(dtype_bytes(in.training->precision().reduce())),
        o_(dtype_bytes(in.training->precision().master())),
        grads_(&w_, &loop_, *in.plan, *in.model, traits_, in.replicate_ranks, ElementBytes{p_, r_, o_},
               &compute_waits_) {
    const scenarios::Training& t = *in.training;
    if (traits_.one_communicator) w_.serialise_shard_collectives();
    unit_mode_ = unit_checkpointing(*in.model, *in.plan, t);
    mesh_ = mesh_of(t);
    batch_ = MicroBatch{t.micro_batch_size(), t.sequence_length(), t.compiled(), in.model->kernels,
                        t.compile_scope() == scenarios::TRANSFORMER_BLOCKS, mesh_.cp};
    reshard_ = t.reshard_after_forward();
    window_ = std::max(1, t.prefetch_depth() + 1);
    if (traits_.max_unsharded_units > 0) window_ = std::min(window_, traits_.max_unsharded_units);
    units_ = static_cast<int>(in.plan->units.size());
    if (pipelined()) prepare_pipeline();
  }

  Program build() {
    const scenarios::Training& t = *in_.training;
    program_.strategy = in_.plan->strategy;
    program_.rank = rank_;
    program_.shard_ranks = in_.plan->ranks;
    program_.replicate_ranks = in_.replicate_ranks;
    program_.mesh = mesh_;
    program_.micro_batches = t.gradient_accumulation_steps();
    // The tp ranks share their tokens and the pp stages pass them on: a
    // GPU's share is 1/(tp x pp) of them.
    program_.tokens_per_step = batch_.tokens() * program_.micro_batches / (mesh_.tp * mesh_.pp);
    if (pipelined()) {
      program_.stage = in_.pipeline->stage;
      program_.stages = static_cast<int>(in_.pipeline->stages->stages);
    }
    const models::ModelSpec& whole = in_.whole_model != nullptr ? *in_.whole_model : *in_.model;
    program_.model_flops_per_step =
        whole.model_flops_per_token(batch_.seq_len) * static_cast<double>(program_.tokens_per_step);
    const auto kept = [this](int u) { return kept_gathered(u); };
    gathers_ = pipelined() ? GatherSchedule(gather_passes(), kept, true)
                           : GatherSchedule(units_, program_.micro_batches, kept);
    loop_.previous_step_outputs(outputs_bytes());
    std::vector<uint32_t> grads_ready(units_, 0);
    if (pipelined()) {
      run_pipeline(grads_ready);
    } else {
      for (int mb = 0; mb < program_.micro_batches; ++mb) {
        forward(mb);
        backward(mb, grads_ready);
      }
    }
    OptimizerContext optimizer = optimizer_context();
    add_optimizer_ops(w_, optimizer, grads_ready);
    loop_.step_end();
    fill_persistent(optimizer);
    return std::move(program_);
  }

 private:
  const UnitPlan& unit(int u) const { return in_.plan->units[u]; }
  const models::UnitSpec& spec(int u) const { return in_.model->units[unit(u).unit_index]; }
  int64_t shard(int u) const { return unit(u).layout.shard_size; }
  // What an all-gather brings in: everything but ZeRO-3's persistent small
  // parameters, which stay gathered (charged once in persistent memory).
  int64_t gathered_elements(int u) const {
    const UnitLayout& l = unit(u).layout;
    return l.padded_elements() - l.ranks * l.persistent_shard_elements;
  }

  // Units that stay gathered from their forward to their backward: the last
  // one (backward starts with it) and the embedding when the head's GEMM
  // reads its table (tied embeddings) or it is in FSDP's root group.
  bool kept_gathered(int u) const {
    return pipelined() || !reshard_ || u == units_ - 1 || (u == 0 && (in_.model->arch.tie_embeddings || root_group()));
  }
  // FSDP's root group (the embedding and the head) is the whole model's: a
  // pipeline stage holds a part of it.
  bool root_group() const { return traits_.root_group_outside_blocks && !pipelined(); }
  bool is_head(int u) const { return spec(u).kind == models::UnitKind::kHead; }
  bool is_embedding(int u) const { return spec(u).kind == models::UnitKind::kEmbedding; }
  bool pipelined() const { return in_.pipeline != nullptr; }

  // A pipeline stage (planner/pipeline_stages.hpp, pipeline_schedule.hpp):
  // its chunks' units as this plan's indices, the schedule's actions, and
  // for each unit the micro-batch of its last backward (where its
  // parameters are released and its gradients reduced).
  void prepare_pipeline() {
    const StageOfPipeline& p = *in_.pipeline;
    std::vector<int> local(in_.model->units.size(), -1);
    for (int u = 0; u < units_; ++u) local[static_cast<size_t>(unit(u).unit_index)] = u;
    for (int chunk : p.stages->chunks_of(p.stage)) {
      std::vector<int>& units = chunk_units_.emplace_back();
      for (int model_unit : p.stages->chunks[static_cast<size_t>(chunk)]) units.push_back(local[static_cast<size_t>(model_unit)]);
    }
    actions_ = stage_schedule(p.schedule, static_cast<int>(p.stages->stages), p.stage,
                              in_.training->gradient_accumulation_steps(), static_cast<int>(p.stages->virtual_stages));
    stage_grads_.assign(static_cast<size_t>(units_), -1);
    const auto passes = static_cast<size_t>(in_.training->gradient_accumulation_steps() * units_);
    weight_work_.assign(passes, {});
    input_gradient_.assign(passes, 0);
    last_backward_.assign(static_cast<size_t>(units_), -1);
    for (const PipelineAction& a : actions_) {
      if (a.pass == PipelineAction::Pass::kForward) continue;
      for (int u : chunk_units_[static_cast<size_t>(a.chunk)]) last_backward_[static_cast<size_t>(u)] = a.micro_batch;
    }
  }

  std::vector<GatherPass> gather_passes() const {
    std::vector<GatherPass> passes;
    for (const PipelineAction& a : actions_) {
      std::vector<int> units = chunk_units_[static_cast<size_t>(a.chunk)];
      const bool backward = a.pass != PipelineAction::Pass::kForward;
      if (backward) std::reverse(units.begin(), units.end());
      passes.push_back({std::move(units), a.micro_batch, backward});
    }
    return passes;
  }

  // The model chunk a local chunk is, and the last of the pipeline.
  int model_chunk(int local) const {
    return local * static_cast<int>(in_.pipeline->stages->stages) + in_.pipeline->stage;
  }
  int last_chunk() const { return static_cast<int>(in_.pipeline->stages->chunk_count()) - 1; }

  // The stage's passes in the schedule's order: a forward receives its
  // chunk's input from the previous chunk's stage and sends its output to
  // the next; a backward receives the gradient of its output and sends the
  // gradient of its input.
  void run_pipeline(std::vector<uint32_t>& grads_ready) {
    for (const PipelineAction& a : actions_) {
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
      } else {
        const BackwardPart part =
            a.pass == PipelineAction::Pass::kBackwardInput ? BackwardPart::kInput : BackwardPart::kWhole;
        if (chunk < last_chunk()) receive(a.micro_batch, chunk, true);
        for (auto u = units.rbegin(); u != units.rend(); ++u) backward_unit(*u, a.micro_batch, grads_ready, part);
        if (chunk > 0) send(a.micro_batch, chunk - 1, true);
      }
    }
  }

  // What passes between two chunks: a micro-batch's hidden states (spread
  // over the tp ranks under sequence parallelism), or their gradients.
  int64_t stage_boundary_bytes() const {
    const int64_t spread = mesh_.sequence_parallel && mesh_.tp > 1 ? mesh_.tp : 1;
    return batch_.tokens() * in_.model->arch.hidden * p_ / spread;
  }
  // The same on the send and its receive: micro-batch, the lower chunk, direction.
  int64_t message(int mb, int lower_chunk, bool backward) const {
    return (int64_t{mb} * (last_chunk() + 1) + lower_chunk) * 2 + (backward ? 1 : 0);
  }
  int stage_of(int chunk) const { return chunk % static_cast<int>(in_.pipeline->stages->stages); }

  void receive(int mb, int lower_chunk, bool backward) {
    const int from = stage_of(backward ? lower_chunk + 1 : lower_chunk);
    const uint32_t id = w_.collective(OpKind::kRecv, Stream::kPipelineRecv, Group::kPipeline, -1, mb,
                                      fmt::format("mb{} chunk {} {} from stage {}", mb, backward ? lower_chunk + 1 : lower_chunk,
                                                  backward ? "gradient" : "activations", from),
                                      stage_boundary_bytes(), -1, {});
    program_.ops[id].peer = from;
    program_.ops[id].message = message(mb, lower_chunk, backward);
    stage_input_ = id;
  }

  void send(int mb, int lower_chunk, bool backward) {
    const int to = stage_of(backward ? lower_chunk : lower_chunk + 1);
    std::vector<uint32_t> deps = mesh_waits_;  // the chunk's last collectives make what is sent
    if (const auto last = w_.last_on(Stream::kCompute)) deps.push_back(*last);
    const uint32_t id = w_.collective(OpKind::kSend, Stream::kPipelineSend, Group::kPipeline, -1, mb,
                                      fmt::format("mb{} chunk {} {} to stage {}", mb, backward ? lower_chunk + 1 : lower_chunk,
                                                  backward ? "gradient" : "activations", to),
                                      stage_boundary_bytes(), -1, std::move(deps));
    program_.ops[id].peer = to;
    program_.ops[id].message = message(mb, lower_chunk, backward);
  }

  // A received input is what the next compute reads.
  void take_stage_input(std::vector<uint32_t>& deps) {
    if (!stage_input_) return;
    deps.push_back(*stage_input_);
    stage_input_.reset();
  }

  // How far the backward of micro-batch mb may issue all-gathers: behind
  // the root's fence, not into the next micro-batch.
  int gather_limit(int mb) const {
    return traits_.root_fences_micro_batches && !pipelined() ? gathers_.last_of_micro_batch(mb) : gathers_.size();
  }

  // Issues every all-gather up to index `through` that may start. Gather k
  // waits for (a) its window slot: the free of gather k - window, or, for a
  // unit kept gathered until its backward (which does not count against the
  // window), the forward compute that used it; and (b) the free of the
  // previous gather of the same unit, so that no unit is held twice.
  void issue_gathers_through(int through) {
    while (next_gather_ < gathers_.size() && next_gather_ <= through) {
      const int k = next_gather_;
      if (gathers_[k].emitted) {  // the root's head, gathered with the embedding
        ++next_gather_;
        continue;
      }
      std::vector<uint32_t> deps;
      if (int slot = k - window_; slot >= 0) {
        const Gather& g = gathers_[slot];
        if (g.is_freed) deps.push_back(g.freed);
        else if (g.is_computed && kept_gathered(g.unit) && !g.backward) deps.push_back(g.computed);
        else return;
      }
      if (int same = gathers_.previous_of_unit(k); same >= 0) {
        if (!gathers_[same].is_freed) return;
        deps.push_back(gathers_[same].freed);
      }
      emit_gather(k, std::move(deps));
      ++next_gather_;
      if (root_group() && gathers_[k].unit == 0 && !gathers_[k].backward) gather_root_head(gathers_[k].micro_batch);
    }
  }

  // The root group's all-gather brings the head in with the embedding, at
  // the start of the forward; it holds no prefetch slot until the head's
  // forward (as the kept head did before).
  void gather_root_head(int mb) {
    const int k = gathers_.find(units_ - 1, mb, false);
    if (k < 0 || gathers_[k].emitted) return;
    std::vector<uint32_t> deps;
    if (int same = gathers_.previous_of_unit(k); same >= 0) {
      RAGGED_ASSERT(gathers_[same].is_freed, "the root's head is freed in the backward before the next gather");
      deps.push_back(gathers_[same].freed);
    }
    emit_gather(k, std::move(deps));
  }

  void emit_gather(int k, std::vector<uint32_t> slot_free) {
    Gather& g = gathers_[k];
    const UnitLayout& layout = unit(g.unit).layout;
    // FSDP1's limiter blocks the CPU until the unit leaving the window is
    // freed; it synchronizes on free events only, which a unit the root keeps
    // gathered has not recorded.
    std::vector<uint32_t> host_waits;
    for (uint32_t dep : slot_free) {
      if (traits_.gather_window_blocks_host && program_.ops[dep].kind == OpKind::kFree) host_waits.push_back(dep);
    }
    if (g.micro_batch == fenced_micro_batch_) slot_free.insert(slot_free.end(), fence_.begin(), fence_.end());
    // ZeRO-3 fetches a unit group by group (planner/zero3_fetch.hpp), one
    // collective each; the others gather the unit at once.
    std::vector<std::vector<int>> groups = layout.fetch_groups;
    if (groups.empty()) groups.emplace_back();
    std::optional<uint32_t> last;
    for (const std::vector<int>& group : groups) {
      const auto [alloc, gathered] = gather_group(g, group, last ? std::vector<uint32_t>{*last} : slot_free);
      if (!last) host(alloc).waits = host_waits;
      last = gathered;
    }
    g.ready = *last;
    g.emitted = true;
  }

  // One collective of gather g: the unit's (`group` empty) or a ZeRO-3 fetch
  // group's, with the strategy's cast and copy-in before it. Returns its
  // buffer's alloc and the all-gather.
  std::pair<uint32_t, uint32_t> gather_group(Gather& g, const std::vector<int>& group, std::vector<uint32_t> deps) {
    const int u = g.unit;
    const UnitLayout& layout = unit(u).layout;
    const bool whole = group.empty();
    const std::string what = group_suffix(group);
    const std::string label = gather_label(g);
    const int64_t shard_elements = whole ? shard(u) : group_shard_elements(layout, group);
    const int64_t gathered_bytes = whole ? gathered_elements(u) * p_ : layout.ranks * shard_elements * p_;
    const bool copied = whole ? layout.copies.all_gather_out > 0 : group.size() > 1;
    const int64_t copy_in = whole ? layout.copies.all_gather_in : (copied ? shard_elements : 0);
    const int64_t params = group_params(u, group);
    int out = w_.buffer(spec(u).name + " unsharded params" + what, BufferKind::kUnshardedParams, u, gathered_bytes);
    program_.buffers[static_cast<size_t>(out)].tensors = group;
    const uint32_t alloc = w_.alloc(out, Stream::kAllGather, std::move(deps));
    uint32_t last = alloc;
    if (traits_.cast_before_gather && p_ != o_) {
      last = w_.traffic(OpKind::kCast, Stream::kAllGather, u, g.micro_batch, label + " cast shard",
                        shard_elements * (o_ + p_), {last}, out);
      if (traits_.cast_per_parameter) host(last).framework_ops = params;
    }
    if (copy_in > 0) {
      last = w_.traffic(OpKind::kCopyIn, Stream::kAllGather, u, g.micro_batch, label + " all-gather copy-in" + what,
                        copy_in * 2 * p_, {last}, out);
      host(last).list_tensors = params;
    }
    last = w_.collective(OpKind::kAllGather, Stream::kAllGather, unit(u).group, u, g.micro_batch,
                         label + " all-gather" + what, gathered_bytes, out, {last});
    // Without a copy-out the parameters' views are set up at the gather.
    if (traits_.views_per_parameter && !copied) host(last).param_views = params;
    if (copied) g.copy_sources.emplace_back(out, last);
    else g.params_buffers.push_back(out);
    return {alloc, last};
  }

  std::string gather_label(const Gather& g) const {
    return fmt::format("{} {}", spec(g.unit).name, g.backward ? "(bwd)" : "(fwd)");
  }
  // Names a ZeRO-3 fetch group's ops and buffers by its tensors (" [2,3,4]").
  static std::string group_suffix(const std::vector<int>& group) {
    return group.empty() ? "" : fmt::format(" [{}]", fmt::join(group, ","));
  }
  // The parameters a gathered buffer holds: a fetch group's, else the unit's.
  int64_t group_params(int u, const std::vector<int>& group) const {
    return group.empty() ? tensors(u, true) : static_cast<int64_t>(group.size());
  }

  // Waits for unit u's parameters on the compute stream; copies them out of
  // each rank-major gathered buffer first.
  uint32_t params_ready(Gather& g) {
    const std::vector<std::pair<int, uint32_t>> sources = std::move(g.copy_sources);
    g.copy_sources.clear();
    for (const auto& [source, gathered] : sources) g.ready = copy_out(g, source, gathered);
    return g.ready;
  }

  // The copy-out of gathered buffer `source` (a unit, or a ZeRO-3 prefetch
  // set; its all-gather `gathered`) into per-tensor storage, which then holds
  // the parameters; after everything gathered so far (g.ready).
  uint32_t copy_out(Gather& g, int source, uint32_t gathered) {
    const UnitLayout& layout = unit(g.unit).layout;
    const std::vector<int> group = program_.buffers[static_cast<size_t>(source)].tensors;
    const bool whole = group.empty();
    const std::string what = group_suffix(group);
    const std::string label = gather_label(g);
    std::vector<int64_t> pieces;
    if (whole) pieces = per_tensor_pieces(g.unit, p_, true);
    for (int t : group) pieces.push_back(layout.ranks * layout.slots[static_cast<size_t>(t)].length * p_);
    int64_t bytes = 0;
    for (int64_t piece : pieces) bytes += piece;
    const int64_t copied = whole ? layout.copies.all_gather_out : bytes / p_;
    const int64_t params = group_params(g.unit, group);
    int copies = w_.buffer(spec(g.unit).name + " parameter copies" + what, BufferKind::kParamCopies, g.unit,
                           whole ? gathered_elements(g.unit) * p_ : bytes);
    program_.buffers[static_cast<size_t>(copies)].pieces = std::move(pieces);
    program_.buffers[static_cast<size_t>(copies)].tensors = group;
    compute_alloc(copies);
    uint32_t out = w_.traffic(OpKind::kCopyOut, Stream::kCompute, g.unit, g.micro_batch,
                              label + " all-gather copy-out" + what, copied * 2 * p_,
                              gathered == g.ready ? std::vector<uint32_t>{gathered}
                                                  : std::vector<uint32_t>{gathered, g.ready},
                              copies);
    host(out).list_tensors = params;
    if (traits_.copy_out_per_parameter) host(out).framework_ops = params;
    if (traits_.views_per_parameter) host(out).param_views = params;
    if (traits_.fetch_blocks_host) host(out).waits = {g.ready};
    w_.free(source, Stream::kCompute, {out});
    g.params_buffers.push_back(copies);
    return out;
  }

  // ZeRO-3's CPU waits for a unit's all-gather before its compute; a unit
  // with a copy-out waits there already (params_ready).
  void block_host_on_fetch(uint32_t compute, const Gather& g) {
    if (traits_.fetch_blocks_host && unit(g.unit).layout.copies.all_gather_out == 0) host(compute).waits.push_back(g.ready);
  }

  void release_params(int k, uint32_t after) {
    Gather& g = gathers_[k];
    for (int buffer : g.params_buffers) {
      g.freed = w_.free(buffer, Stream::kCompute, {after});
      const int64_t params = group_params(g.unit, program_.buffers[static_cast<size_t>(buffer)].tensors);
      if (traits_.reshard_per_parameter) host(g.freed).param_reshards = params;
    }
    g.is_freed = true;
  }

  std::vector<int64_t> per_tensor_pieces(int u, int64_t element_bytes, bool skip_persistent) const {
    return planner::per_tensor_pieces(unit(u).layout, element_bytes, skip_persistent);
  }
  int64_t tensors(int u, bool gathered_only) const { return tensor_count(unit(u).layout, gathered_only); }
  HostWork& host(uint32_t op) { return program_.ops[op].host; }

  // Allocates on the compute stream; the first compute op after a hand-over
  // carries the backpressure wait (the next unit's work cannot start).
  uint32_t compute_alloc(int buffer) {
    std::vector<uint32_t> deps = std::move(compute_waits_);
    compute_waits_.clear();
    return w_.alloc(buffer, Stream::kCompute, std::move(deps));
  }

  // Bytes of `per_token` for this micro-batch.
  int64_t for_batch(double per_token) const {
    return static_cast<int64_t>(per_token * static_cast<double>(batch_.tokens()));
  }
  std::vector<int64_t> for_batch(const std::vector<double>& per_token) const {
    std::vector<int64_t> bytes;
    for (double piece : per_token) bytes.push_back(for_batch(piece));
    return bytes;
  }

  // A buffer of the given pieces (one allocation each), or none when they are all empty.
  int pieces_buffer(const std::string& name, BufferKind kind, int u, const std::vector<int64_t>& pieces) {
    std::vector<int64_t> kept;
    int64_t total = 0;
    for (int64_t piece : pieces) {
      if (piece <= 0) continue;
      kept.push_back(piece);
      total += piece;
    }
    if (kept.empty()) return -1;
    const int buffer = w_.buffer(name, kind, u, total);
    if (kept.size() > 1) program_.buffers[static_cast<size_t>(buffer)].pieces = std::move(kept);
    return buffer;
  }

  models::Checkpointing mode_of(int u) const { return unit_mode_[static_cast<size_t>(u)]; }

  // Unit u's buffers of what it keeps, its forward's transients (-1: none)
  // and its backward's working memory (planner/unit_buffers.hpp).
  int activation_buffer(int u, int mb) {
    const std::string name = fmt::format("{} activations mb{}", spec(u).name, mb);
    const int act = pieces_buffer(name, BufferKind::kActivations, u,
                                  for_batch(activation_pieces(spec(u), mode_of(u), batch_.seq_len)));
    return act >= 0 ? act : w_.buffer(name, BufferKind::kActivations, u, 0);
  }
  int forward_workspace(int u) {
    return pieces_buffer(spec(u).name + " forward workspace", BufferKind::kWorkspace, u,
                         for_batch(forward_workspace_pieces(spec(u), mode_of(u), batch_.seq_len,
                                                            loop_.outputs().logits())));
  }
  int backward_workspace(int u) {
    const std::string name = spec(u).name + " backward workspace";
    const int workspace = pieces_buffer(name, BufferKind::kWorkspace, u,
                                        for_batch(backward_workspace_pieces(spec(u), mode_of(u), batch_.seq_len)));
    return workspace >= 0 ? workspace : w_.buffer(name, BufferKind::kWorkspace, u, 0);
  }

  bool chunked_loss() const { return in_.model->kernels.loss == models::LossKernel::kChunked; }

  // The mesh's collectives of unit u's `pass` that come before its compute
  // (planner/mesh_collectives.hpp): each waits for the compute stream as it
  // stands, and, unless `pass` is a recompute (which reads the unit's saved
  // input), for the previous unit's collectives after its compute; the
  // compute that follows waits for all of them (their ids join `deps`).
  void mesh_before(int u, int mb, Pass pass, std::vector<uint32_t>& deps) {
    std::vector<uint32_t> input;
    if (pass != Pass::kRecompute && pass != Pass::kSelectiveRecompute) {
      input = std::move(mesh_waits_);
      mesh_waits_.clear();
      deps.insert(deps.end(), input.begin(), input.end());
    }
    if (mesh_.fsdp_only()) return;
    if (const auto last = w_.last_on(Stream::kCompute)) input.push_back(*last);
    for (const MeshCollective& c : mesh_collectives(spec(u), *in_.model, mesh_, batch_, p_, pass)) {
      if (c.after_compute) continue;
      deps.push_back(w_.collective(c.kind, mesh_stream(c.group), c.group, u, mb, mesh_label(u, c, pass), c.bytes, -1,
                                   input));
    }
  }
  // Those after it: they wait for the compute, the next compute for them.
  void mesh_after(int u, int mb, Pass pass, uint32_t compute) {
    if (mesh_.fsdp_only()) return;
    for (const MeshCollective& c : mesh_collectives(spec(u), *in_.model, mesh_, batch_, p_, pass)) {
      if (!c.after_compute) continue;
      mesh_waits_.push_back(w_.collective(c.kind, mesh_stream(c.group), c.group, u, mb, mesh_label(u, c, pass), c.bytes,
                                          -1, {compute}));
    }
  }
  std::string mesh_label(int u, const MeshCollective& c, Pass pass) const {
    return fmt::format("{} {} {}", spec(u).name, pass == Pass::kBackward ? "(bwd)" : "(fwd)", c.what);
  }

  void forward(int mb) {
    for (int u = 0; u < units_; ++u) forward_unit(u, mb);
  }

  void forward_unit(int u, int mb) {
    {
      int k = gathers_.find(u, mb, false);
      issue_gathers_through(k + window_ - 1);
      issue_gathers_through(k);
      RAGGED_ASSERT(gathers_[k].emitted, "an all-gather must be issued before its unit computes");
      uint32_t ready = params_ready(gathers_[k]);
      int act = activation_buffer(u, mb);
      compute_alloc(act);
      // Interleaved 1F1B runs a micro-batch's chunks apart: index, not order.
      const auto at = static_cast<size_t>(mb * units_ + u);
      if (activations_.size() <= at) activations_.resize(at + 1, -1);
      activations_[at] = act;
      // A chunked loss writes the head's weight gradient in its forward.
      if (is_head(u) && chunked_loss()) {
        if (!pipelined()) head_grads_ = head_gradients();
        else if (stage_grads_[static_cast<size_t>(u)] < 0) stage_grads_[static_cast<size_t>(u)] = grads_.unsharded_grads(u);
      }
      const int workspace = forward_workspace(u);
      if (workspace >= 0) w_.alloc(workspace, Stream::kCompute, {});
      if (mode_of(u) != models::Checkpointing::kNone) return_kv(u, false);
      if (is_head(u)) loop_.return_logits(u, batch_.tokens(), false);
      std::vector<uint32_t> deps = {ready};
      if (is_head(u) && in_.model->arch.tie_embeddings) deps.push_back(embedding_ready(mb));
      take_stage_input(deps);
      mesh_before(u, mb, Pass::kForward, deps);
      uint32_t fwd = w_.compute(OpKind::kComputeFwd, u, mb, spec(u).name + " forward", forward_work(spec(u), batch_), deps);
      mesh_after(u, mb, Pass::kForward, fwd);
      if (workspace >= 0) w_.free(workspace, Stream::kCompute, {fwd});
      block_host_on_fetch(fwd, gathers_[k]);
      gathers_[k].computed = fwd;
      gathers_[k].is_computed = true;
      if (!kept_gathered(u)) release_params(k, fwd);
      if (is_head(u)) loop_.loss_computed(fwd);
    }
  }

  // Unit u's keys and values for a model returning its cache (a block
  // without checkpointing: from its backward, LoopBuffers::add_output).
  void return_kv(int u, bool after_backward) {
    if (!loop_.outputs().kv_cache()) return;
    loop_.add_output(u, spec(u).name + " returned keys and values", for_batch(spec(u).activations.returned_kv),
                     after_backward);
  }

  // One micro-batch's outputs: every block's keys and values, the logits.
  int64_t outputs_bytes() const {
    double per_token = 0;
    for (int u = 0; u < units_; ++u) {
      if (loop_.outputs().kv_cache()) per_token += spec(u).activations.returned_kv;
      if (u == units_ - 1 && loop_.outputs().logits()) per_token += spec(u).activations.returned_logits;
    }
    return for_batch(per_token);
  }

  // The head's unsharded gradients; with tied embeddings first the shared
  // table's gradient (the embedding's buffer), which lives from here to the
  // embedding's reduce-scatter.
  int head_gradients() {
    if (in_.model->arch.tie_embeddings) tied_grads_ = grads_.unsharded_grads(0);
    return grads_.unsharded_grads(units_ - 1);
  }

  // The head's loss backward ahead of its GEMMs, in autograd's order: the
  // loss's fp32 gradients are freed before the weight gradient is made, the
  // logits' gradient is kept for the GEMMs (planner/unit_buffers.hpp). Adds
  // the op to `deps`; returns the logits' gradient buffer.
  int loss_backward(int u, int mb, std::vector<uint32_t>& deps) {
    const models::UnitSpec& s = spec(u);
    const int workspace = pieces_buffer(s.name + " loss workspace", BufferKind::kWorkspace, u,
                                        for_batch(loss_workspace_pieces(s)));
    const int gradient = w_.buffer(s.name + " logits gradient", BufferKind::kWorkspace, u,
                                   for_batch(s.activations.logits_gradient));
    if (workspace >= 0) compute_alloc(workspace);
    compute_alloc(gradient);
    const uint32_t loss = w_.compute(OpKind::kComputeBwd, u, mb, s.name + " loss backward",
                                     loss_backward_work(s, batch_), deps);
    program_.ops[loss].buffer = gradient;
    program_.ops[loss].loss_only = true;
    if (workspace >= 0) w_.free(workspace, Stream::kCompute, {loss});
    deps.push_back(loss);
    return gradient;
  }

  // The tied head reads the embedding table: the embedding's forward gather
  // of this micro-batch (kept until the embedding's backward).
  uint32_t embedding_ready(int mb) const { return gathers_[gathers_.find(0, mb, false)].ready; }

  void backward(int mb, std::vector<uint32_t>& grads_ready) {
    for (int u = units_ - 1; u >= 0; --u) backward_unit(u, mb, grads_ready);
    std::vector<uint32_t> reduced;  // the root's end-of-backward wait: the last reduction, which ends after the others
    if (traits_.root_fences_micro_batches) reduced = {grads_ready[0]};
    if (!loop_.train_metrics(units_ - 1, mb, batch_.tokens(), reduced)) {
      compute_waits_.insert(compute_waits_.end(), reduced.begin(), reduced.end());
    }
    if (traits_.root_fences_micro_batches) fence_next_micro_batch(mb + 1, grads_ready[0]);
  }

  // ZB-H1 runs a unit's backward as its input gradient (kInput: what the
  // previous stage waits for) and later its weight gradients (kWeight); the
  // other schedules run it whole.
  enum class BackwardPart { kWhole, kInput, kWeight };

  void backward_unit(int u, int mb, std::vector<uint32_t>& grads_ready, BackwardPart part = BackwardPart::kWhole) {
    if (part == BackwardPart::kWeight) {
      weight_gradients(u, mb, grads_ready);
      return;
    }
    {
      bool regather = !kept_gathered(u);
      int k = gathers_.find(u, mb, regather);
      if (regather) {
        issue_gathers_through(std::min(k + window_ - 1, gather_limit(mb)));
        issue_gathers_through(k);
      }
      RAGGED_ASSERT(gathers_[k].emitted, "an all-gather must be issued before its unit computes");
      uint32_t ready = regather ? params_ready(gathers_[k]) : gathers_[k].ready;
      const models::UnitSpec& s = spec(u);
      std::vector<uint32_t> deps = {ready};
      if (is_head(u) && in_.model->arch.tie_embeddings) deps.push_back(embedding_ready(mb));
      take_stage_input(deps);
      mesh_before(u, mb, Pass::kBackward, deps);
      const int logits_gradient = splits_loss_backward(s) ? loss_backward(u, mb, deps) : -1;
      int workspace = backward_workspace(u);
      compute_alloc(workspace);
      ComputeWork again = recompute_work(s, batch_, mode_of(u));
      int64_t first_compute = -1;
      if (total_flops(again) > 0 || again.elementwise_bytes > 0) {
        // Full recomputation runs the forward again, its mesh collectives too;
        // selective, the all-gathers its recomputed matmuls read.
        const Pass pass = mode_of(u) == models::Checkpointing::kFull ? Pass::kRecompute : Pass::kSelectiveRecompute;
        std::vector<uint32_t> again_deps = {ready};
        mesh_before(u, mb, pass, again_deps);
        deps.push_back(w_.compute(OpKind::kRecompute, u, mb, s.name + " recompute", std::move(again), again_deps));
        first_compute = deps.back();
        mesh_after(u, mb, pass, deps.back());
        deps.insert(deps.end(), mesh_waits_.begin(), mesh_waits_.end());
        mesh_waits_.clear();
      }
      // A tied head adds the shared table's gradient to the embedding's, so
      // that buffer lives from the head's backward (a chunked loss: its
      // forward) to the embedding's reduce.
      const bool tied = in_.model->arch.tie_embeddings;
      int grads = -1;
      if (pipelined()) {
        // A stage accumulates each unit's gradients over the step's
        // micro-batches, reduced after the last (PyTorch's pipelining turns
        // FSDP's gradient sync off for the others).
        int& held = stage_grads_[static_cast<size_t>(u)];
        if (held < 0) held = grads_.unsharded_grads(u);
        grads = held;
      } else if (is_head(u) && head_grads_ >= 0) {
        grads = head_grads_;
        head_grads_ = -1;
      } else if (is_head(u)) {
        grads = head_gradients();
      } else {
        grads = tied && is_embedding(u) ? tied_grads_ : grads_.unsharded_grads(u);
      }
      ComputeWork work = logits_gradient >= 0 ? backward_work_after_loss(s, batch_) : backward_work(s, batch_);
      if (part == BackwardPart::kInput) {
        SplitBackward split = split_weight_gradients(std::move(work));
        work = std::move(split.input);
        weight_work_[static_cast<size_t>(mb * units_ + u)] = std::move(split.weight);
      }
      uint32_t bwd = w_.compute(OpKind::kComputeBwd, u, mb,
                                s.name + (part == BackwardPart::kInput ? " backward (input)" : " backward"), std::move(work), deps);
      mesh_after(u, mb, Pass::kBackward, bwd);
      if (logits_gradient >= 0) {
        program_.ops[bwd].buffer = logits_gradient;
        w_.free(logits_gradient, Stream::kCompute, {bwd});
      }
      if (regather) block_host_on_fetch(first_compute >= 0 ? static_cast<uint32_t>(first_compute) : bwd, gathers_[k]);
      w_.free(workspace, Stream::kCompute, {bwd});
      if (part == BackwardPart::kInput) {
        // The weight gradients read the saved inputs: they stay until then.
        input_gradient_[static_cast<size_t>(mb * units_ + u)] = bwd;
        return;
      }
      finish_backward(u, mb, k, bwd, grads, grads_ready);
    }
  }

  // ZB-H1's W: the unit's dW GEMMs after its B, into the stage's gradients.
  void weight_gradients(int u, int mb, std::vector<uint32_t>& grads_ready) {
    const auto at = static_cast<size_t>(mb * units_ + u);
    const models::UnitSpec& s = spec(u);
    const uint32_t wgrad = w_.compute(OpKind::kComputeBwd, u, mb, s.name + " backward (weights)",
                                      std::move(weight_work_[at]), {input_gradient_[at]});
    program_.ops[wgrad].buffer = stage_grads_[static_cast<size_t>(u)];
    finish_backward(u, mb, gathers_.find(u, mb, false), wgrad, stage_grads_[static_cast<size_t>(u)], grads_ready);
  }

  // After a unit's backward `bwd` of micro-batch mb: its activations go;
  // after its last, its gathered parameters are released and `grads` reduced.
  void finish_backward(int u, int mb, int k, uint32_t bwd, int grads, std::vector<uint32_t>& grads_ready) {
    w_.free(activations_[static_cast<size_t>(mb * units_ + u)], Stream::kCompute, {bwd});
    if (mode_of(u) == models::Checkpointing::kNone) return_kv(u, true);
    if (is_head(u)) loop_.return_logits(u, batch_.tokens(), true);
    if (pipelined() && mb != last_backward_[static_cast<size_t>(u)]) return;  // gathered and unreduced to the last
    if (gathers_[k].emitted && !gathers_[k].is_freed) release_params(k, bwd);
    // The root group reduces the head's gradients with the embedding's.
    if (is_head(u) && root_group() && units_ > 1) {
      root_head_grads_ = grads;
      return;
    }
    if (is_embedding(u) && root_head_grads_ >= 0) {
      grads_ready[units_ - 1] = grads_.reduce(units_ - 1, mb, bwd, root_head_grads_);
      root_head_grads_ = -1;
    }
    grads_ready[u] = grads_.reduce(u, mb, bwd, grads);
  }

  // The next forward's all-gathers wait for the compute stream as it stands
  // (the root's pre-forward), which has waited for the reductions.
  void fence_next_micro_batch(int mb, uint32_t reduced) {
    fenced_micro_batch_ = mb;
    fence_ = {reduced};
    if (const auto last = w_.last_on(Stream::kCompute)) fence_.push_back(*last);
  }

  OptimizerContext optimizer_context() const {
    OptimizerContext c;
    c.model = in_.model;
    c.plan = in_.plan;
    c.optimizer = in_.training->optimizer();
    c.rank = rank_;
    c.param_bytes = p_;
    c.master_bytes = o_;
    c.refresh_compute_shard = !traits_.cast_before_gather;
    c.flat_shards = traits_.optimizer_over_flat_shards;
    return c;
  }

  void fill_persistent(const OptimizerContext& optimizer) {
    int64_t shard_total = 0, persistent_small = 0;
    for (int u = 0; u < units_; ++u) {
      shard_total += shard(u);
      persistent_small += unit(u).layout.persistent_elements;
    }
    PersistentMemory& m = program_.persistent;
    m.master_params = shard_total * o_;
    m.compute_params = traits_.cast_before_gather ? 0 : shard_total * p_;
    m.gradients = traits_.grad_shards_freed_each_step ? 0 : shard_total * grads_.grad_shard_bytes();
    m.optimizer_states = optimizer_state_bytes(optimizer);
    m.gathered_small_params = persistent_small * p_;
  }

  const ProgramInputs& in_;
  Program program_;
  ProgramWriter w_;
  int rank_;
  LoopBuffers loop_;
  StrategyTraits traits_;
  int64_t p_ = 2, r_ = 4, o_ = 4;
  std::vector<uint32_t> compute_waits_;  // for the compute stream's next op
  GradientReduction grads_;
  std::vector<models::Checkpointing> unit_mode_;  // per unit (planner/checkpointing_plan.hpp)
  int tied_grads_ = -1;  // the embedding's gradient buffer, allocated at a tied head's backward
  int head_grads_ = -1;  // the head's gradients, allocated in its forward by a chunked loss
  int root_head_grads_ = -1;  // the head's gradients, reduced with the embedding's (root_group_outside_blocks)
  MicroBatch batch_;
  Mesh mesh_;
  // A pipeline stage's (prepare_pipeline).
  std::vector<std::vector<int>> chunk_units_;
  std::vector<PipelineAction> actions_;
  std::vector<int> stage_grads_;    // per unit: its gradients, accumulated over the micro-batches
  std::vector<int> last_backward_;  // per unit
  std::optional<uint32_t> stage_input_;  // the receive the next compute reads
  std::vector<uint32_t> mesh_waits_;  // the last unit's mesh collectives after its compute, for the next compute
  bool reshard_ = true;
  int window_ = 2;
  int units_ = 0;
  GatherSchedule gathers_{0, 0, [](int) { return true; }};
  int next_gather_ = 0;
  std::vector<int> activations_;  // [micro_batch * units + unit]
  // ZB-H1: each (micro-batch, unit)'s weight-gradient work and the input
  // gradient it follows, [micro_batch * units + unit].
  std::vector<ComputeWork> weight_work_;
  std::vector<uint32_t> input_gradient_;
  int fenced_micro_batch_ = -1;           // whose all-gathers wait for fence_ (root_fences_micro_batches)
  std::vector<uint32_t> fence_;
};

}  // namespace

ProgramInputs program_inputs(const ResolvedScenario& resolved, const Plan& plan) {
  ProgramInputs inputs;
  inputs.model = &resolved.model;
  inputs.plan = &plan;
  inputs.training = &resolved.scenario().training();
  inputs.replicate_ranks = resolved.scenario().training().replicate_group_size();
  inputs.whole_model = &resolved.whole();
  return inputs;
}

Program build_program(const ProgramInputs& inputs, int rank) {
  RAGGED_ASSERT(inputs.model && inputs.plan && inputs.training, "program inputs must be set");
  RAGGED_ASSERT(rank >= 0 && rank < inputs.plan->ranks, "the rank must be inside the shard group");
  return Builder(inputs, rank).build();
}

std::vector<Program> build_stage_programs(const ResolvedScenario& resolved, const PipelinePlan& pipeline) {
  std::vector<Program> programs;
  for (int s = 0; s < pipeline.stages.stages; ++s) {
    const StageOfPipeline stage{&pipeline.stages, s, pipeline.schedule};
    ProgramInputs inputs = program_inputs(resolved, pipeline.plans[static_cast<size_t>(s)]);
    inputs.pipeline = &stage;
    programs.push_back(build_program(inputs, 0));
  }
  return programs;
}

ScenarioPrograms build_scenario_programs(const ResolvedScenario& resolved) {
  ScenarioPrograms out;
  if (resolved.scenario().training().mesh().pp() > 1) {
    out.programs = build_stage_programs(resolved, plan_pipeline(resolved));
    return out;
  }
  const Plan plan = plan_scenario(resolved);
  const ProgramInputs inputs = program_inputs(resolved, plan);
  out.rank = representative_rank(inputs);
  out.programs.push_back(build_program(inputs, out.rank));
  return out;
}

int representative_rank(const ProgramInputs& inputs) {
  OptimizerContext context;
  context.model = inputs.model;
  context.plan = inputs.plan;
  context.optimizer = inputs.training->optimizer();
  std::vector<double> load(static_cast<size_t>(inputs.plan->ranks), 0.0);
  for (const auto& m : owned_matrices(context)) load[static_cast<size_t>(m.owner)] += m.flops;
  return static_cast<int>(std::max_element(load.begin(), load.end()) - load.begin());
}

}  // namespace ragged::planner
