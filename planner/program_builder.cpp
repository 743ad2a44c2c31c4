#include "planner/program_builder.hpp"

#include <algorithm>
#include <numeric>

#include "common/errors.hpp"
#include "planner/program_builder_internal.hpp"

namespace ragged::planner {
namespace internal {
namespace {

int64_t dtype_bytes(scenarios::DType dtype) { return dtype == scenarios::FP32 ? 4 : 2; }

// The routed experts reduce in training.experts.reduce where it is set,
// otherwise in precision.reduce as the rest of the model does.
ElementBytes element_bytes(const scenarios::Training& t) {
  const int64_t reduce = dtype_bytes(t.precision().reduce());
  const scenarios::DType experts = t.experts().reduce();
  return ElementBytes{dtype_bytes(t.precision().param()), reduce, dtype_bytes(t.precision().master()),
                      experts == scenarios::DTYPE_UNSPECIFIED ? reduce : dtype_bytes(experts)};
}

}  // namespace

ProgramBuilder::ProgramBuilder(const ProgramInputs& in, int rank)
    : in_(in),
      w_(&program_),
      rank_(rank),
      loop_(&w_, *in.training, in.plan->units.size(), *in.model),
      traits_(strategy_traits(in.training->strategy())),
      bytes_(element_bytes(*in.training)),
      grads_(&w_, &loop_, *in.plan, *in.model, traits_, in.replicate_ranks, bytes_, &compute_waits_) {
  const scenarios::Training& t = *in.training;
  if (traits_.one_communicator) w_.serialise_shard_collectives();
  unit_mode_ = unit_checkpointing(*in.model, *in.plan, t);
  mesh_ = mesh_of(t);
  batch_ = MicroBatch{t.micro_batch_size(),
                      t.sequence_length(),
                      t.compiled(),
                      in.model->kernels,
                      t.compile_scope() == scenarios::TRANSFORMER_BLOCKS,
                      mesh_.cp};
  // Megatron's runtimes run context parallelism in Transformer Engine's
  // attention; the others in PyTorch's ring attention.
  batch_.ring_merges_in_fp32 = t.strategy() != scenarios::MEGATRON && t.strategy() != scenarios::MEGATRON_DDP;
  for (const models::UnitSpec& unit : in.model->units) {
    if (unit.compute.attention) {
      batch_.key_value_width = key_value_width(unit, *in.model);
      break;
    }
  }
  reshard_ = t.reshard_after_forward();
  window_ = std::max(1, t.prefetch_depth() + 1);
  if (traits_.max_unsharded_units > 0) window_ = std::min(window_, traits_.max_unsharded_units);
  if (traits_.replicated_params) {
    window_ = 1;  // autocast casts a unit's parameters as its ops run, not ahead
    if (t.strategy() == scenarios::DDP) ddp_.emplace(&w_, &loop_, *in.plan, *in.model, t, in.replicate_ranks, bytes_);
  }
  units_ = static_cast<int>(in.plan->units.size());
  if (pipelined()) prepare_pipeline();
  if (t.strategy() == scenarios::MEGATRON_DDP) {
    std::vector<std::vector<int>> chunks = chunk_units_;
    if (!pipelined()) {  // one model chunk: every unit
      chunks.emplace_back(static_cast<size_t>(units_));
      std::iota(chunks.back().begin(), chunks.back().end(), 0);
    }
    distopt_.emplace(&w_, *in.plan, t, in.replicate_ranks, bytes_, chunks, !pipelined() || in.pipeline->stage == 0);
  }
  if (defers_gradient_sync()) stage_grads_.assign(static_cast<size_t>(units_), -1);
}

Program ProgramBuilder::build() {
  const scenarios::Training& t = *in_.training;
  program_.strategy = in_.plan->strategy;
  program_.rank = rank_;
  program_.shard_ranks = in_.plan->ranks;
  program_.replicate_ranks = in_.replicate_ranks;
  program_.mesh = mesh_;
  program_.micro_batches = t.gradient_accumulation_steps();
  program_.optimizer_steps = steps_optimizer();
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
  if (pipelined()) {
    gathers_ = GatherSchedule(gather_passes(), kept,
                              reshards_each_pass() ? StageGathers::kWhenResharded : StageGathers::kOncePerStep);
  } else if (overlaps_expert_all_to_all()) {
    // Megatron's DDP holds its parameters whole: each unit's one "gather" (its
    // parameters as they are) serves every pass, whatever order the combined
    // steps run the micro-batches' units in.
    RAGGED_ASSERT(traits_.replicated_params, "the combined step without stages runs over replicated parameters");
    // The split backward's weight gradients (delay_weight_gradients), as a stage keeps them.
    prepare_split_backward();
    std::vector<GatherPass> passes;
    std::vector<int> units(static_cast<size_t>(units_));
    for (int u = 0; u < units_; ++u) units[static_cast<size_t>(u)] = u;
    for (int mb = 0; mb < program_.micro_batches; ++mb) {
      passes.push_back({units, mb, false});
      passes.push_back({std::vector<int>(units.rbegin(), units.rend()), mb, true});
    }
    gathers_ = GatherSchedule(passes, kept, StageGathers::kOncePerStep);
  } else {
    gathers_ = GatherSchedule(units_, program_.micro_batches, kept);
  }
  loop_.previous_step_outputs(outputs_bytes());
  std::vector<uint32_t> grads_ready(units_, 0);
  if (distopt_) distopt_->start_step();
  if (pipelined()) {
    run_pipeline(grads_ready);
  } else if (overlaps_expert_all_to_all()) {
    // Megatron-Core's combined_1f1b_schedule_for_no_pipelining: the first
    // forward alone, each later one with the backward before it, the last
    // backward alone.
    forward(0);
    for (int mb = 1; mb < program_.micro_batches; ++mb) combined_micro_batches(mb, grads_ready);
    backward(program_.micro_batches - 1, grads_ready);
  } else {
    for (int mb = 0; mb < program_.micro_batches; ++mb) {
      forward(mb);
      backward(mb, grads_ready);
    }
  }
  if (distopt_) std::fill(grads_ready.begin(), grads_ready.end(), distopt_->finish_backward());
  if (distopt_ && pipelined() && in_.model->arch.table_copied_across_stages) exchange_table_gradients(grads_ready);
  OptimizerContext optimizer = optimizer_context();
  if (steps_optimizer()) add_optimizer_ops(w_, optimizer, grads_ready);
  if (distopt_) distopt_->after_optimizer(*w_.last_on(Stream::kCompute));
  loop_.step_end();
  fill_persistent(optimizer);
  return std::move(program_);
}

int ProgramBuilder::pieces_buffer(const std::string& name, BufferKind kind, int u, const std::vector<int64_t>& pieces) {
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

int ProgramBuilder::activation_buffer(int u, int mb) {
  const std::string name = fmt::format("{} activations mb{}", spec(u).name, mb);
  const int act = pieces_buffer(name, BufferKind::kActivations, u,
                                for_batch(activation_pieces(spec(u), mode_of(u), batch_.seq_len)));
  return act >= 0 ? act : w_.buffer(name, BufferKind::kActivations, u, 0);
}

int ProgramBuilder::backward_workspace(int u) {
  const std::string name = spec(u).name + " backward workspace";
  const int workspace = pieces_buffer(name, BufferKind::kWorkspace, u,
                                      for_batch(backward_workspace_pieces(spec(u), mode_of(u), batch_.seq_len)));
  return workspace >= 0 ? workspace : w_.buffer(name, BufferKind::kWorkspace, u, 0);
}

void ProgramBuilder::mesh_before(int u, int mb, Pass pass, std::vector<uint32_t>& deps, models::UnitPart part,
                                 bool chained) {
  std::vector<uint32_t> input;
  if (chained || (pass != Pass::kRecompute && pass != Pass::kSelectiveRecompute)) {
    input = std::move(mesh_waits_);
    mesh_waits_.clear();
    deps.insert(deps.end(), input.begin(), input.end());
  }
  if (mesh_.fsdp_only()) return;
  const std::optional<uint32_t> last_compute = this->last_compute();  // the router's, before a dispatch
  if (last_compute) input.push_back(*last_compute);
  const TpOverlapSides sides = overlap_sides(u, pass, part);
  if (sides.gathered > 0) {
    issue_gather_steps(u, mb, pass, part, sides.gathered, input);
    return;
  }
  for (const MeshCollective& c : mesh_collectives(spec(u), *in_.model, mesh_, batch_, bytes_.param, pass, part)) {
    if (c.after_compute) continue;
    deps.push_back(w_.collective(c.kind, mesh_stream(c.group), c.group, u, mb, mesh_label(u, c, pass, part), c.bytes,
                                 -1, input));
    mark_mesh_op(program_.ops[deps.back()], c, pass, part);
    // A dropless dispatch's all-to-all takes its split sizes as host
    // integers: the CPU copies the router's token counts and waits for them
    // before it issues the dispatch (torchtitan's ExpertParallel, a blocking
    // `.to("cpu")`; Megatron-Core's all-to-all dispatcher, one
    // `d2h_event.synchronize()` a forward; DeepEP's normal dispatch, the CPU
    // spinning on `moe_recv_counter`), so every kernel after it is issued
    // with the GPU's queue drained. The backward reuses the sizes.
    if (c.group == Group::kExpert && c.kind == OpKind::kAllToAll && pass != Pass::kBackward && last_compute) {
      host(deps.back()).waits = {*last_compute};
    }
  }
}

void ProgramBuilder::mark_mesh_op(Op& op, const MeshCollective& c, Pass pass, models::UnitPart part) const {
  op.part = part;
  op.pass = pass;
  if (c.group == Group::kExpert && c.kind == OpKind::kAllToAll) {
    op.routed_experts = in_.model->arch.experts;
    op.experts_per_token = in_.model->arch.experts_per_token;
  }
}

void ProgramBuilder::mesh_after(int u, int mb, Pass pass, uint32_t compute, models::UnitPart part) {
  if (mesh_.fsdp_only()) return;
  if (hold_mesh_after_) {
    held_after_.push_back({u, mb, pass, compute, part});
    return;
  }
  issue_mesh_after({u, mb, pass, compute, part}, mesh_waits_);
}

void ProgramBuilder::issue_mesh_after(const HeldAfter& held, std::vector<uint32_t>& into) {
  const int u = held.unit;
  for (const MeshCollective& c :
       mesh_collectives(spec(u), *in_.model, mesh_, batch_, bytes_.param, held.pass, held.part)) {
    if (!c.after_compute) continue;
    into.push_back(w_.collective(c.kind, mesh_stream(c.group), c.group, u, held.micro_batch,
                                 mesh_label(u, c, held.pass, held.part), c.bytes, -1, {held.compute}));
    mark_mesh_op(program_.ops[into.back()], c, held.pass, held.part);
  }
}

// With a batch-first layout (DTensor's Shard(1)) torch's functional
// collectives gather into a rank-major buffer and rearrange it with
// torch.cat(torch.chunk(buffer, tp, dim=0), dim=1), and a reduce-scatter on
// dim 1 first concatenates its input's chunks along dim 0
// (torch/distributed/_functional_collectives.py, all_gather_tensor and
// reduce_scatter_tensor): one copy kernel of the whole buffer, read and
// written, on the compute stream beside each of the part's sequence-parallel
// collectives.
ComputeWork ProgramBuilder::with_layout_copies(int u, Pass pass, models::UnitPart part, ComputeWork work) const {
  if (!mesh_.batch_first || mesh_.tp == 1 || !mesh_.sequence_parallel) return work;
  for (const MeshCollective& c : mesh_collectives(spec(u), *in_.model, mesh_, batch_, bytes_.param, pass, part)) {
    if (c.group != Group::kTensor || (c.kind != OpKind::kAllGather && c.kind != OpKind::kReduceScatter)) continue;
    work.elementwise_bytes += 2.0 * static_cast<double>(c.bytes);
    work.elementwise_kernels += 1;
  }
  return work;
}

std::vector<uint32_t> ProgramBuilder::compute_parts(OpKind kind, int u, int mb, Pass pass, std::string_view what,
                                                    std::vector<uint32_t> deps, const PartWork& work,
                                                    bool issued_first) {
  std::vector<uint32_t> ops;
  const std::vector<models::UnitPart> parts = parts_of(u, pass);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) deps.clear();  // the compute stream runs the parts in order
    if (i > 0 || !issued_first) mesh_before(u, mb, pass, deps, parts[i], i > 0);
    if (before_next_compute_) std::exchange(before_next_compute_, nullptr)();
    const std::string name = fmt::format("{}{} {}", spec(u).name, part_label(parts[i]), what);
    if (const TpOverlapSides sides = overlap_sides(u, pass, parts[i]); sides.any()) {
      ops.push_back(overlapped_compute(kind, u, mb, pass, parts[i], name, deps,
                                       with_layout_copies(u, pass, parts[i], work(parts[i])), sides));
      if (sides.scattered == 0) mesh_after(u, mb, pass, ops.back(), parts[i]);  // else the chunks scattered it
      continue;
    }
    ops.push_back(w_.compute(kind, u, mb, name, with_layout_copies(u, pass, parts[i], work(parts[i])), deps));
    program_.ops[ops.back()].part = parts[i];
    mesh_after(u, mb, pass, ops.back(), parts[i]);
  }
  return ops;
}

void ProgramBuilder::forward_unit(int u, int mb) {
  {
    int k = gathers_.find(u, mb, false);
    issue_gathers_through(k + window_ - 1);
    issue_gathers_through(k);
    RAGGED_ASSERT(gathers_[k].emitted, "an all-gather must be issued before its unit computes");
    params_ready(gathers_[k]);
    int act = activation_buffer(u, mb);
    compute_alloc(act);
    // Interleaved 1F1B runs a micro-batch's chunks apart: index, not order.
    const auto at = static_cast<size_t>(mb * units_ + u);
    if (activations_.size() <= at) activations_.resize(at + 1, -1);
    activations_[at] = act;
    // A chunked loss writes the head's weight gradient in its forward.
    if (is_head(u) && chunked_loss() && !traits_.replicated_params) {
      if (!pipelined())
        head_grads_ = head_gradients();
      else if (stage_grads_[static_cast<size_t>(u)] < 0)
        stage_grads_[static_cast<size_t>(u)] = held_stage_grads(u);
    }
    const int workspace = forward_workspace(u);
    if (workspace >= 0) w_.alloc(workspace, Stream::kCompute, {});
    if (mode_of(u) != models::Checkpointing::kNone) return_kv(u, false);
    if (is_head(u)) loop_.return_logits(u, batch_.tokens(), false);
    std::vector<uint32_t> deps = params_deps(gathers_[k]);
    if (distopt_) {
      for (uint32_t gathered : distopt_->before_forward(u)) deps.push_back(gathered);
    }
    if (is_head(u) && in_.model->arch.tie_embeddings) {
      for (uint32_t e : embedding_ready(mb)) deps.push_back(e);
    }
    take_stage_input(deps);
    const uint32_t fwd = compute_parts(OpKind::kComputeFwd, u, mb, Pass::kForward, "forward", std::move(deps),
                                       [&](models::UnitPart part) { return forward_work(spec(u), batch_, part); })
                             .back();
    if (workspace >= 0) w_.free(workspace, Stream::kCompute, {fwd});
    block_host_on_fetch(fwd, gathers_[k]);
    gathers_[k].computed = fwd;
    gathers_[k].is_computed = true;
    if (!kept_gathered(u)) release_params(k, fwd);
    if (is_head(u)) loop_.loss_computed(fwd);
  }
}

int64_t ProgramBuilder::outputs_bytes() const {
  double per_token = 0;
  for (int u = 0; u < units_; ++u) {
    if (loop_.outputs().kv_cache()) per_token += spec(u).activations.returned_kv;
    if (u == units_ - 1 && loop_.outputs().logits()) per_token += spec(u).activations.returned_logits;
  }
  return for_batch(per_token);
}

OptimizerContext ProgramBuilder::optimizer_context() const {
  OptimizerContext c;
  c.model = in_.model;
  c.plan = in_.plan;
  c.optimizer = in_.training->optimizer();
  c.rank = rank_;
  c.param_bytes = bytes_.param;
  c.master_bytes = bytes_.master;
  c.refresh_compute_shard = !traits_.cast_before_gather;
  c.flat_shards = traits_.optimizer_over_flat_shards;
  c.count_gradient_zeros = in_.training->step_statistics().gradient_zeros();
  return c;
}

void ProgramBuilder::fill_persistent(const OptimizerContext& optimizer) {
  int64_t shard_total = 0, persistent_small = 0;
  for (int u = 0; u < units_; ++u) {
    shard_total += shard(u);
    persistent_small += unit(u).layout.persistent_elements;
  }
  PersistentMemory& m = program_.persistent;
  m.master_params = shard_total * bytes_.master;
  m.compute_params = traits_.cast_before_gather ? 0 : shard_total * bytes_.param;
  m.gradients = traits_.grad_shards_freed_each_step ? 0 : shard_total * grads_.grad_shard_bytes();
  if (ddp_) m.gradients = ddp_->bucket_bytes();
  if (distopt_) {  // the parameters and main gradients whole, the master weights sharded
    m.compute_params = distopt_->param_buffer_bytes();
    m.gradients = distopt_->grad_buffer_bytes() + distopt_->torch_ddp_bucket_bytes();
  }
  if (!steps_optimizer()) {  // every unit's gradients whole, in the reduce dtype, from step to step
    m.gradients = 0;
    for (int u = 0; u < units_; ++u) m.gradients += gathered_elements(u) * grads_.reduce_bytes(u);
  }
  m.optimizer_states = steps_optimizer() ? optimizer_state_bytes(optimizer) : 0;  // never stepped: no states
  m.gathered_small_params = persistent_small * bytes_.param;
  if (in_.pipeline && in_.training->pipeline().receive_buffers() == scenarios::ONE_BUFFER_PER_MICRO_BATCH) {
    m.pipeline_receive_buffers = pipeline_receive_buffer_bytes();
  }
}

}  // namespace internal

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
  return internal::ProgramBuilder(inputs, rank).build();
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
  // A shard-group rank's load: the dense matrices it owns and those of the
  // routed experts it owns in its expert shard group.
  const Plan& plan = *inputs.plan;
  const std::vector<OwnedMatrix> matrices = owned_matrices(context);
  if (matrices.empty()) return 0;  // every rank alike
  std::vector<double> dense(static_cast<size_t>(plan.ranks), 0.0);
  std::vector<double> experts(static_cast<size_t>(group_ranks(plan, Group::kExpertShard)), 0.0);
  for (const auto& m : matrices) {
    (m.group == Group::kExpertShard ? experts : dense)[static_cast<size_t>(m.owner)] += m.flops;
  }
  std::vector<double> load(dense.size());
  for (int r = 0; r < plan.ranks; ++r) {
    load[static_cast<size_t>(r)] =
        dense[static_cast<size_t>(r)] + experts[static_cast<size_t>(rank_in_group(plan, Group::kExpertShard, r))];
  }
  return static_cast<int>(std::max_element(load.begin(), load.end()) - load.begin());
}

}  // namespace ragged::planner
