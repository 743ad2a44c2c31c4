#pragma once
// The builder behind build_program (planner/program_builder.hpp), shared by
// the files that hold its parts: program_builder.cpp (construction, the
// forward, buffers, mesh collectives, persistent memory),
// program_builder_gathers.cpp (all-gathers, copy-outs, releases),
// program_builder_backward.cpp (the backward and gradient reduction) and
// program_builder_pipeline.cpp (a stage's schedule, sends and receives).

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "planner/checkpointing_plan.hpp"
#include "planner/compute_work.hpp"
#include "planner/ddp_reduction.hpp"
#include "planner/distopt_reduction.hpp"
#include "planner/gather_schedule.hpp"
#include "planner/gradient_reduction.hpp"
#include "planner/loop_buffers.hpp"
#include "planner/mesh_collectives.hpp"
#include "planner/optimizer_program.hpp"
#include "planner/pipeline_schedule.hpp"
#include "planner/program_builder.hpp"
#include "planner/program_writer.hpp"
#include "planner/strategy_traits.hpp"
#include "planner/tp_overlap.hpp"
#include "planner/unit_buffers.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::planner::internal {

// Builds one step: forward and backward of every micro-batch, then the
// optimizer. All-gathers are issued in the order their units compute; the
// k-th all-gather's buffer waits for the free of the (k - window)-th, so at
// most `window` units hold unsharded parameters and the AG stream runs at most
// window - 1 units ahead of compute (the prefetch).
class ProgramBuilder {
 public:
  ProgramBuilder(const ProgramInputs& in, int rank);

  Program build();

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
  // A pipeline stage keeps them all gathered over the step unless it
  // reshards after each forward (reshards_each_pass), when the stage's root
  // group (its embedding or head) alone stays gathered.
  // DDP: autocast's casts are saved for the backward unless the block
  // recomputes its forward (full checkpointing wraps the blocks alone).
  bool kept_gathered(int u) const {
    if (traits_.replicated_params) {
      return mode_of(u) != models::Checkpointing::kFull || !models::is_block_part(spec(u).kind);
    }
    if (pipelined()) return !reshard_ || is_head(u) || is_embedding(u);
    return !reshard_ || u == units_ - 1 || (u == 0 && (in_.model->arch.tie_embeddings || root_group()));
  }
  // torch.distributed.pipelining over FSDP2 with reshard_after_forward=True
  // (training.reshard_after_forward under pp > 1): every forward reshards its
  // unit, every backward gathers it again and leaves it gathered (the stage
  // turns reshard_after_backward off until the last backward), so a unit is
  // gathered for each backward and each forward that does not follow one.
  bool reshards_each_pass() const { return pipelined() && reshard_; }
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
  void prepare_pipeline();

  std::vector<GatherPass> gather_passes() const;
  // torch.distributed.pipelining's receive buffers this stage keeps: a
  // micro-batch's hidden states (or their gradient) per micro-batch of the
  // step, for each of its chunks' neighbours on another stage.
  int64_t pipeline_receive_buffer_bytes() const;

  // The model chunk a local chunk is, and the last of the pipeline.
  int model_chunk(int local) const {
    return local * static_cast<int>(in_.pipeline->stages->stages) + in_.pipeline->stage;
  }
  int last_chunk() const { return static_cast<int>(in_.pipeline->stages->chunk_count()) - 1; }

  // The stage's passes in the schedule's order: a forward receives its
  // chunk's input from the previous chunk's stage and sends its output to
  // the next; a backward receives the gradient of its output and sends the
  // gradient of its input.
  void run_pipeline(std::vector<uint32_t>& grads_ready);

  // What passes between two chunks: a micro-batch's hidden states (spread
  // over the tp ranks under sequence parallelism), or their gradients.
  int64_t stage_boundary_bytes() const {
    const int64_t spread = mesh_.sequence_parallel && mesh_.tp > 1 ? mesh_.tp : 1;
    return batch_.tokens() * in_.model->arch.hidden * bytes_.param / spread;
  }
  // The same on the send and its receive: micro-batch, the lower chunk, direction.
  int64_t message(int mb, int lower_chunk, bool backward) const {
    return (int64_t{mb} * (last_chunk() + 1) + lower_chunk) * 2 + (backward ? 1 : 0);
  }
  int stage_of(int chunk) const { return chunk % static_cast<int>(in_.pipeline->stages->stages); }
  // The tied table's gradient exchange between the first and the last
  // stage, after every micro-batch's message: one id each way.
  int64_t table_message(bool to_last_stage) const {
    return (int64_t{in_.training->gradient_accumulation_steps()} + 1) * (last_chunk() + 1) * 2 + (to_last_stage ? 0 : 1);
  }
  // Megatron's embedding group: the first stage's table and the last
  // stage's copy sum their main gradients before the optimizer.
  void exchange_table_gradients(std::vector<uint32_t>& grads_ready);

  // Megatron-Core's combined 1F1B (training.experts.overlap_all_to_all,
  // program_builder_combined.cpp): a steady-state forward and the backward
  // after it run as one pass, layer by layer, each layer's expert all-to-alls
  // beside the other pass's compute: for forward layer i and backward layer
  // j, the compute stream runs i's attention and router, j's experts, i's
  // experts, j's attention; the communication stream j's combine, i's
  // dispatch, j's dispatch, i's combine (TransformerLayerSchedulePlan.run).
  bool overlaps_expert_all_to_all() const { return mesh_.ep > 1 && in_.training->experts().overlap_all_to_all(); }
  // A pipeline stage's: the forward and the backward of two of its actions.
  void combined_passes(const PipelineAction& forward, const PipelineAction& backward,
                       std::vector<uint32_t>& grads_ready);
  // Without stages (combined_1f1b_schedule_for_no_pipelining): micro-batch
  // `forward_mb`'s forward with the backward of the one before it.
  void combined_micro_batches(int forward_mb, std::vector<uint32_t>& grads_ready);
  // What each pass does before and after its units in a combined step
  // (receives, sends, a micro-batch's or a chunk's end of backward).
  struct CombinedEnds {
    std::function<void()> forward_start, backward_start, forward_end, backward_end;
  };
  void combined_units(const std::vector<int>& forward_units, int forward_mb, const std::vector<int>& backward_units,
                      int backward_mb, std::vector<uint32_t>& grads_ready, const CombinedEnds& ends);
  // One of the two passes a combined step interleaves: what the builder
  // keeps between the units of one pass, held aside while the other's emit.
  struct PassThread {
    std::vector<uint32_t> mesh_waits;
    std::optional<uint32_t> stage_input;
    std::optional<uint32_t> last_compute;
  };
  void enter(PassThread& thread);
  void leave(PassThread& thread);
  // The compute a collective issued now follows in its own pass: the compute
  // stream's last op, or, in a combined step, the pass's last kernel (the
  // allocator's bookkeeping on the stream aside: it orders nothing on the GPU).
  std::optional<uint32_t> last_compute() const {
    if (!thread_) return w_.last_on(Stream::kCompute);
    const std::optional<uint32_t> own = section_kernel();
    return own ? own : thread_->last_compute;
  }
  // The last compute-stream kernel emitted since the pass's section began.
  std::optional<uint32_t> section_kernel() const {
    for (size_t i = program_.ops.size(); i-- > thread_section_begin_;) {
      const Op& op = program_.ops[i];
      if (op.stream == Stream::kCompute && op.kind != OpKind::kAlloc && op.kind != OpKind::kFree)
        return static_cast<uint32_t>(i);
    }
    return std::nullopt;
  }
  PassThread* thread_ = nullptr;
  size_t thread_section_begin_ = 0;  // the first op of the pass's current section
  // A combined step's backward experts hold their collectives after the
  // compute (the dispatch's backward) until the forward's dispatch is issued.
  struct HeldAfter {
    int unit;
    int micro_batch;
    Pass pass;
    uint32_t compute;
    models::UnitPart part;
  };
  bool hold_mesh_after_ = false;
  std::vector<HeldAfter> held_after_;
  void issue_mesh_after(const HeldAfter& held, std::vector<uint32_t>& into);
  // Run once between the next forward compute's collectives and its compute.
  std::function<void()> before_next_compute_;
  void receive(int mb, int lower_chunk, bool backward);

  void send(int mb, int lower_chunk, bool backward, std::vector<uint32_t> also_after = {});
  // scenarios::AFTER_CHUNK_BACKWARD (torch.distributed.pipelining's
  // run_post_backward): a chunk's last backward holds its units' gradients
  // (finish_backward) and reduces them here, after the chunk's backward, in
  // the chunk's forward order, the compute stream waiting for each; returns
  // the reductions (the gradient send waits for them too).
  // scenarios::LAST_MICRO_BATCH (FSDP2's set_requires_gradient_sync(False)
  // on the accumulation micro-batches): each unit's unsharded gradients are
  // held over the step and accumulated on the compute stream, reduced after
  // the last micro-batch's backward (finish_backward).
  bool defers_gradient_sync() const {
    return !pipelined() && in_.training->accumulation_gradient_sync() == scenarios::LAST_MICRO_BATCH;
  }
  // training.optimizer_step false: forward and backward only. Each unit's
  // gradients are held unsharded (persistent, from earlier steps) and
  // accumulated in place; nothing is reduced and no optimizer runs.
  bool steps_optimizer() const { return scenarios::steps_optimizer(*in_.training); }
  // scenarios::EVERY_MICRO_BATCH_GRADIENT_SYNC: a stage reduces each unit's
  // gradients after every micro-batch's backward, as FSDP does without
  // stages; its parameters stay gathered to the step's last backward.
  bool stage_reduces_every_micro_batch() const {
    return pipelined() && in_.training->pipeline().gradient_sync() == scenarios::EVERY_MICRO_BATCH_GRADIENT_SYNC;
  }
  bool reduce_after_chunk() const {
    return pipelined() && in_.training->pipeline().gradient_sync() == scenarios::AFTER_CHUNK_BACKWARD;
  }
  // torch.distributed.pipelining turns FSDP's gradient sync off for every
  // backward of the step (stage.py, backward_maybe_with_nosync); under FSDP2
  // the unit's gradients then live in an accumulator of the reduce dtype
  // until the chunk's reduction (StrategyTraits): fp32 under bf16
  // parameters, twice the bytes autograd made.
  bool stage_accumulates_in_reduce_dtype() const {
    return reduce_after_chunk() && traits_.accumulates_unsynced_grads_in_reduce_dtype;
  }
  // FSDPParamGroup.post_backward's accumulation without gradient sync, on
  // the compute stream after the backward `after`: the first micro-batch's
  // gradients cast to the reduce dtype, each later one added to the held sum.
  uint32_t accumulate_unsharded_grads(int u, int mb, bool first, uint32_t after, int grads);
  // Whether this is the unit's first accumulation of the step.
  bool take_first_accumulation(int u) { return accumulations_[static_cast<size_t>(u)]++ == 0; }
  // The gradients a stage (or FSDP2 without gradient sync) holds over the
  // step's micro-batches, in the dtype they are accumulated in.
  int held_stage_grads(int u) {
    return pipelined() && !stage_accumulates_in_reduce_dtype() ? grads_.unsharded_grads(u)
                                                               : grads_.unsharded_grads(u, grads_.reduce_bytes(u));
  }
  std::vector<uint32_t> reduce_chunk(int mb, std::vector<uint32_t>& grads_ready);

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
  void issue_gathers_through(int through);

  // The root group's all-gather brings the head in with the embedding, at
  // the start of the forward; it holds no prefetch slot until the head's
  // forward (as the kept head did before).
  void gather_root_head(int mb);

  void emit_gather(int k, std::vector<uint32_t> slot_free);

  // DDP's "gather": the unit computes with its own parameters; under
  // autocast (compute dtype below the master dtype) its ops cast them on
  // the compute stream first, one kernel a parameter.
  void cast_replicated_params(Gather& g);

  // What a unit's compute waits for to read gather g's parameters: nothing
  // when DDP uses them as they are.
  static std::vector<uint32_t> params_deps(const Gather& g) {
    return g.params_buffers.empty() ? std::vector<uint32_t>{} : std::vector<uint32_t>{g.ready};
  }

  // One collective of gather g: the unit's (`group` empty) or a ZeRO-3 fetch
  // group's, with the strategy's cast and copy-in before it. Returns its
  // buffer's alloc and the all-gather.
  std::pair<uint32_t, uint32_t> gather_group(Gather& g, const std::vector<int>& group, std::vector<uint32_t> deps);

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
  uint32_t params_ready(Gather& g);

  // The copy-out of gathered buffer `source` (a unit, or a ZeRO-3 prefetch
  // set; its all-gather `gathered`) into per-tensor storage, which then holds
  // the parameters; after everything gathered so far (g.ready).
  uint32_t copy_out(Gather& g, int source, uint32_t gathered);

  // ZeRO-3's CPU waits for a unit's all-gather before its compute; a unit
  // with a copy-out waits there already (params_ready).
  void block_host_on_fetch(uint32_t compute, const Gather& g) {
    if (traits_.fetch_blocks_host && unit(g.unit).layout.copies.all_gather_out == 0)
      host(compute).waits.push_back(g.ready);
  }

  void release_params(int k, uint32_t after);

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
  int pieces_buffer(const std::string& name, BufferKind kind, int u, const std::vector<int64_t>& pieces);

  models::Checkpointing mode_of(int u) const { return unit_mode_[static_cast<size_t>(u)]; }

  // Unit u's buffers of what it keeps, its forward's transients (-1: none)
  // and its backward's working memory (planner/unit_buffers.hpp).
  int activation_buffer(int u, int mb);
  int forward_workspace(int u) {
    return pieces_buffer(
        spec(u).name + " forward workspace", BufferKind::kWorkspace, u,
        for_batch(forward_workspace_pieces(spec(u), mode_of(u), batch_.seq_len, loop_.outputs().logits())));
  }
  int backward_workspace(int u);

  bool chunked_loss() const { return in_.model->kernels.loss == models::LossKernel::kChunked; }

  // The mesh's collectives of unit u's `pass` that come before its compute
  // (planner/mesh_collectives.hpp): each waits for the compute stream as it
  // stands, and, unless `pass` is a recompute (which reads the unit's saved
  // input), for the previous unit's collectives after its compute; the
  // compute that follows waits for all of them (their ids join `deps`).
  // A unit's second part (`chained`) waits for its first part's collectives
  // in every pass.
  void mesh_before(int u, int mb, Pass pass, std::vector<uint32_t>& deps,
                   models::UnitPart part = models::UnitPart::kWhole, bool chained = false);
  // Those after it: they wait for the compute, the next compute for them.
  void mesh_after(int u, int mb, Pass pass, uint32_t compute, models::UnitPart part = models::UnitPart::kWhole);
  // What a mesh collective's op carries beside its bytes: its pass and part,
  // and for an ep all-to-all the routing the simulator needs.
  void mark_mesh_op(Op& op, const MeshCollective& c, Pass pass, models::UnitPart part) const;
  std::string mesh_label(int u, const MeshCollective& c, Pass pass, models::UnitPart part) const {
    return fmt::format("{}{} {} {}", spec(u).name, part_label(part), pass == Pass::kBackward ? "(bwd)" : "(fwd)",
                       c.what);
  }
  static std::string_view part_label(models::UnitPart part) {
    switch (part) {
      case models::UnitPart::kAttention: return " attention";
      case models::UnitPart::kAttentionInput: return " attention input";
      case models::UnitPart::kAttentionCore: return " attention core";
      case models::UnitPart::kMlp: return " mlp";
      case models::UnitPart::kWhole: break;
    }
    return "";
  }
  // Unit u's compute of one pass as its parts (block_parts; backward: the
  // MLP first), each between its mesh collectives; the first part waits for
  // `deps` (whose mesh collectives the caller may already have issued:
  // `issued_first`). Returns the ops, one per part, in order.
  using PartWork = std::function<ComputeWork(models::UnitPart)>;
  // `work` with the copies a batch-first layout adds around the part's
  // sequence-parallel collectives (Mesh::batch_first).
  ComputeWork with_layout_copies(int u, Pass pass, models::UnitPart part, ComputeWork work) const;
  std::vector<uint32_t> compute_parts(OpKind kind, int u, int mb, Pass pass, std::string_view what,
                                      std::vector<uint32_t> deps, const PartWork& work, bool issued_first = false);
  // Overlapped tensor parallelism (planner/tp_overlap.hpp): the sides of a
  // part the overlap takes over; the gather's steps, issued by mesh_before
  // and consumed by the part's compute; the part's compute in its chunks
  // between those steps and the scatter's transfers. Returns the last op.
  TpOverlapSides overlap_sides(int u, Pass pass, models::UnitPart part) const {
    return tp_overlap_sides(spec(u), *in_.model, mesh_, batch_, bytes_.param, pass, part);
  }
  void issue_gather_steps(int u, int mb, Pass pass, models::UnitPart part, int64_t gathered,
                          const std::vector<uint32_t>& input);
  // One step or chunk of an overlapped tp collective on the tp stream.
  uint32_t tp_transfer(OpKind kind, int u, int mb, Pass pass, models::UnitPart part, std::string what, int64_t bytes,
                       int ctas, std::vector<uint32_t> deps);
  uint32_t overlapped_compute(OpKind kind, int u, int mb, Pass pass, models::UnitPart part, const std::string& name,
                              std::vector<uint32_t> deps, ComputeWork whole, const TpOverlapSides& sides);
  // Room for a split backward (ZB-H1's W, delayed weight gradients): each
  // unit's pass of each micro-batch its later weight work and input
  // gradient, each unit its gradients held over the step.
  void prepare_split_backward() {
    const auto passes = static_cast<size_t>(in_.training->gradient_accumulation_steps() * units_);
    weight_work_.assign(passes, {});
    input_gradient_.assign(passes, 0);
    stage_grads_.assign(static_cast<size_t>(units_), -1);
  }
  std::vector<models::UnitPart> parts_of(int u, Pass pass) const {
    std::vector<models::UnitPart> parts = block_parts(spec(u), *in_.model, mesh_);
    if (pass == Pass::kBackward) std::reverse(parts.begin(), parts.end());
    return parts;
  }

  void forward(int mb) {
    for (int u = 0; u < units_; ++u) forward_unit(u, mb);
  }

  void forward_unit(int u, int mb);

  // Unit u's keys and values for a model returning its cache (a block
  // without checkpointing: from its backward, LoopBuffers::add_output).
  void return_kv(int u, bool after_backward) {
    if (!loop_.outputs().kv_cache()) return;
    loop_.add_output(u, spec(u).name + " returned keys and values", for_batch(spec(u).activations.returned_kv),
                     after_backward);
  }

  // One micro-batch's outputs: every block's keys and values, the logits.
  int64_t outputs_bytes() const;

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
  int loss_backward(int u, int mb, std::vector<uint32_t>& deps);

  // The tied head reads the embedding table: the embedding's forward gather
  // of this micro-batch (kept until the embedding's backward).
  std::vector<uint32_t> embedding_ready(int mb) const { return params_deps(gathers_[gathers_.find(0, mb, false)]); }

  void backward(int mb, std::vector<uint32_t>& grads_ready);
  // A micro-batch's end of backward without stages: DDP's finalize, the loop's
  // metrics, the root's fence.
  void finish_micro_batch_backward(int mb, std::vector<uint32_t>& grads_ready);

  // ZB-H1 runs a unit's backward as its input gradient (kInput: what the
  // previous stage waits for) and later its weight gradients (kWeight); the
  // other schedules run it whole.
  enum class BackwardPart { kWhole, kInput, kWeight };

  void backward_unit(int u, int mb, std::vector<uint32_t>& grads_ready, BackwardPart part = BackwardPart::kWhole);

  // ZB-H1's W: the unit's dW GEMMs after its B, into the stage's gradients.
  void weight_gradients(int u, int mb, std::vector<uint32_t>& grads_ready);

  // After a unit's backward `bwd` of micro-batch mb: its activations go;
  // after its last, its gathered parameters are released and `grads` reduced.
  // Sequence parallelism leaves each tp rank a partial gradient of the
  // weights tensor parallelism does not cut (models::TensorCut::kWhole: the
  // norms, a row-parallel bias, the router): summed over the tp group after
  // the unit's backward, before FSDP reduces them, and the next compute waits
  // (torchtitan: DTensor's Partial-to-Replicate all-reduce of the norms'
  // gradients; Megatron: finalize_model_grads' all-reduce of the
  // sequence-parallel parameters). Returns what the reduction waits for.
  uint32_t replicated_gradients(int u, int mb, uint32_t bwd, int grads);
  // Megatron's DDP without gradient_accumulation_fusion: the unit's .grad
  // (allocated before its backward) and its addition into the main grads.
  int unfused_gradients(int u);
  uint32_t add_into_main_grad(int u, int mb, uint32_t bwd, int grads);
  void finish_backward(int u, int mb, int k, uint32_t bwd, int grads, std::vector<uint32_t>& grads_ready);

  // The next forward's all-gathers wait for the compute stream as it stands
  // (the root's pre-forward), which has waited for the reductions.
  void fence_next_micro_batch(int mb, uint32_t reduced) {
    fenced_micro_batch_ = mb;
    fence_ = {reduced};
    if (const auto last = w_.last_on(Stream::kCompute)) fence_.push_back(*last);
  }

  OptimizerContext optimizer_context() const;

  void fill_persistent(const OptimizerContext& optimizer);

  const ProgramInputs& in_;
  Program program_;
  ProgramWriter w_;
  int rank_;
  LoopBuffers loop_;
  StrategyTraits traits_;
  ElementBytes bytes_;                   // the parameters as gathered, the reduction, the master weights
  std::vector<uint32_t> compute_waits_;  // for the compute stream's next op
  GradientReduction grads_;
  std::optional<DdpReduction> ddp_;  // strategy DDP
  std::optional<DistOptReduction> distopt_;  // strategy MEGATRON_DDP
  std::vector<models::Checkpointing> unit_mode_;  // per unit (planner/checkpointing_plan.hpp)
  int tied_grads_ = -1;       // the embedding's gradient buffer, allocated at a tied head's backward
  int head_grads_ = -1;       // the head's gradients, allocated in its forward by a chunked loss
  int root_head_grads_ = -1;  // the head's gradients, reduced with the embedding's (root_group_outside_blocks)
  MicroBatch batch_;
  Mesh mesh_;
  // A pipeline stage's (prepare_pipeline).
  std::vector<std::vector<int>> chunk_units_;
  std::vector<PipelineAction> actions_;
  std::vector<int> stage_grads_;         // per unit: its gradients, accumulated over the micro-batches
  std::vector<int> last_backward_;       // per unit
  std::vector<int> accumulations_;       // per unit: gradient accumulations so far (stage_accumulates_in_reduce_dtype)
  std::optional<uint32_t> stage_input_;  // the receive the next compute reads
  std::vector<uint32_t> mesh_waits_;     // the last unit's mesh collectives after its compute, for the next compute
  struct GatherSteps {
    int unit;
    int micro_batch;
    Pass pass;
    models::UnitPart part;
    std::vector<uint32_t> steps;  // the transfers of chunks 2..n (the first is the rank's own)
  };
  std::vector<GatherSteps> gather_steps_;  // issued, not yet consumed by their part's compute
  struct HeldGradients {
    int unit;
    uint32_t done;  // the op that made them
    int grads;      // their buffer
  };
  std::vector<HeldGradients> held_grads_;  // reduce_after_chunk: the chunk's, until its backward ends
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
  int fenced_micro_batch_ = -1;  // whose all-gathers wait for fence_ (root_fences_micro_batches)
  std::vector<uint32_t> fence_;
};

}  // namespace ragged::planner::internal
