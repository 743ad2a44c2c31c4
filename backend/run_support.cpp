#include "backend/run_support.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <limits>

#include "backend/host_optimizer.hpp"
#include "backend/tensor_pieces.hpp"
#include "common/errors.hpp"
#include "planner/dbuffer.hpp"
#include "planner/layout_strategy.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::backend {

void check_launch(const planner::ResolvedScenario& resolved, const Communicator& comm, bool host) {
  const scenarios::Scenario& s = resolved.scenario();
  const scenarios::Mesh& mesh = s.training().mesh();
  const bool mesh_inside = mesh.tp() > 1 || mesh.cp() > 1 || mesh.ep() > 1;
  // Both executors run tp with cp or with ep (not cp with ep), without
  // pipeline stages; the host runs stages without a mesh, the GPU none.
  const bool runs_mesh = mesh_inside && mesh.pp() <= 1 && (mesh.ep() <= 1 || mesh.cp() <= 1);
  if (mesh_inside && !host && !runs_mesh) {
    throw InputError(
        fmt::format("training.mesh: {} has tp {}, cp {}, ep {}, pp {}; the GPU executor runs tensor, "
                    "context and expert parallelism, tp with cp or with ep but not cp with ep, and no "
                    "pipeline stages so far (stages run on --device cpu; ragged simulate models every "
                    "mesh); set cp or ep to 1 and pp to 1",
                    s.name(), mesh.tp(), mesh.cp(), mesh.ep(), mesh.pp()));
  }
  if (mesh_inside && host && !runs_mesh) {
    throw InputError(fmt::format("training.mesh: {} has tp {}, cp {}, ep {}, pp {}; `ragged run` runs FSDP and HSDP, "
                                 "and on the host pipeline stages, or tensor parallelism with context or expert "
                                 "parallelism (not all three) so far (the others are simulated: ragged simulate); "
                                 "set them to 1 for ragged run",
                                 s.name(), mesh.tp(), mesh.cp(), mesh.ep(), mesh.pp()));
  }
  if (runs_mesh && mesh.tp() > 1) {
    // Each tp rank holds whole key/value heads and an equal share of the vocabulary.
    const models::ArchConfig& whole = resolved.whole().arch;
    if (whole.kv_heads % mesh.tp() != 0 || whole.vocab % mesh.tp() != 0) {
      throw InputError(fmt::format("training.mesh.tp {}: `ragged run` splits the {} key/value heads and the vocabulary "
                                   "of {} evenly; use a tp that divides both (simulate models replicated heads and "
                                   "padded vocabularies)",
                                   mesh.tp(), whole.kv_heads, whole.vocab));
    }
  }
  if (scenarios::total_gpus(s) != comm.size()) {
    throw InputError(fmt::format("{} has {} GPUs but {} process{} run: launch `mpirun -np {}` or pass --gpus {}",
                                 s.name(), scenarios::total_gpus(s), comm.size(), comm.size() == 1 ? "" : "es",
                                 scenarios::total_gpus(s), comm.size()));
  }
}

void check_ranks_agree(const planner::ResolvedScenario& resolved, const RunOptions& options, Communicator& comm) {
  if (comm.size() <= 1) return;
  const std::string what = fmt::format(
      "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", scenarios::to_text(resolved.scenario()), options.device, options.steps,
      options.warmup_steps, options.seed, options.verify_collectives, options.check_reference,
      options.ordered_reductions, options.tolerance,
      options.inject_nan ? options.inject_nan->tensor : "", options.inject_nan ? options.inject_nan->step : 0);
  uint64_t hash = 14695981039346656037ull;  // FNV-1a
  for (unsigned char c : what) hash = (hash ^ c) * 1099511628211ull;
  // Sums of 16-bit pieces are exact in a double for any job size: a rank
  // whose piece is not the mean holds another hash, and if none does, all
  // hold the same. The count of such ranks is the same on every rank.
  int differing = 0;
  for (int piece = 0; piece < 4; ++piece) {
    const double mine = static_cast<double>((hash >> (16 * piece)) & 0xffff);
    differing |= comm.sum(mine) != mine * comm.size();
  }
  if (comm.sum(differing) > 0) {
    throw AgreedInputError(fmt::format("the {} ranks were not given the same scenario and options: launch every "
                                       "rank with the same file and arguments",
                                       comm.size()));
  }
}

namespace {

// Every rank's piece of every 8-bit Adam matrix must start at a tile row, so
// that each rank quantises whole tiles alone; the block granularity (the
// default with 8-bit Adam) guarantees it, a finer one may not.
void check_adam8bit_tiles(const models::ModelSpec& model, const planner::Plan& plan, const scenarios::Optimizer& o) {
  for (const planner::UnitPlan& unit : plan.units) {
    const models::UnitSpec& spec = model.units[static_cast<size_t>(unit.unit_index)];
    for (int64_t rank = 0; rank < plan.ranks; ++rank) {
      for (const planner::ShardView& view : planner::shard_views(unit.problem, unit.layout, rank)) {
        const models::TensorSpec& t = spec.tensors[static_cast<size_t>(view.tensor)];
        if (tensor_rule(o, t) != TensorRule::kAdam8bit) continue;
        const Adam8bitTiles tiles = adam8bit_tiles(o, t);
        if (starts_tile_row(tiles, view.tensor_offset)) continue;
        throw InputError(fmt::format(
            "training.granularity: the {} layout starts rank {}'s piece of {} at element {}, inside a band of 8-bit "
            "Adam's {}x{} tiles, so no rank could quantise its tiles alone; use granularity block:{}x{} (the default "
            "with adam8bit) or a multiple of it",
            plan.strategy, rank, t.name, view.tensor_offset, tiles.rows, tiles.cols, tiles.rows, tiles.cols));
      }
    }
  }
}

}  // namespace

planner::Plan plan_for_run(const planner::ResolvedScenario& resolved, models::DType param_dtype) {
  const scenarios::Training& training = resolved.scenario().training();
  planner::PlanOptions plan_options;
  plan_options.param_dtype = param_dtype;
  auto strategy = planner::make_strategy(training.strategy());
  planner::Plan plan =
      planner::plan_model(resolved.model, resolved.granularity, training.shard_group_size(), *strategy, plan_options);
  // Every rank plans the same world from the same scenario (check_ranks_agree
  // ran first), so every rank finds a refusal alike: rank 0 says it and no
  // rank aborts the job (the launcher's SIGTERM would reach ranks still
  // planning and each would say where it was).
  try {
    check_plan_for_run(resolved, plan);
  } catch (const AgreedInputError&) {
    throw;
  } catch (const InputError& e) {
    throw AgreedInputError(e.what());
  }
  return plan;
}

void check_plan_for_run(const planner::ResolvedScenario& resolved, const planner::Plan& plan) {
  const scenarios::Training& training = resolved.scenario().training();
  // The executors reduce gradient shards in place; DDP's buckets are the simulator's alone.
  if (training.strategy() == scenarios::DDP) {
    throw InputError("training.strategy: DDP is simulated only (`ragged simulate`); `ragged run` executes the FSDP "
                     "strategies: set strategy RAGGED, FSDP1 or FSDP2");
  }
  if (training.strategy() == scenarios::MEGATRON_DDP) {
    throw InputError("training.strategy: MEGATRON_DDP is simulated only (`ragged simulate`); `ragged run` executes "
                     "the FSDP strategies: set strategy RAGGED, FSDP1 or FSDP2");
  }
  // The executors compute each region's input once; the per-projection
  // redistributions are a cost of another stack's tp plan the simulator models.
  if (training.mesh().tp() > 1 && training.mesh().column_input() == scenarios::PER_PROJECTION) {
    throw InputError("training.mesh.column_input: PER_PROJECTION models a tp plan whose every column-parallel "
                     "projection redistributes its own input; `ragged run` gathers once per region: set PER_MODULE "
                     "(ragged simulate models both)");
  }
  // The executors split the head's loss by the vocabulary (loss_parallel).
  if (training.mesh().tp() > 1 && training.mesh().gathered_logits()) {
    throw InputError("training.mesh.gathered_logits: true is simulated only (`ragged simulate`); `ragged run` "
                     "computes a vocabulary-parallel loss: remove gathered_logits");
  }
  // The executors run each tp collective whole; the chunked overlap is the simulator's model of two runtimes.
  if (training.mesh().tp_overlap() == scenarios::ASYNC_TP || training.mesh().tp_overlap() == scenarios::USERBUFFERS) {
    throw InputError(fmt::format("training.mesh.tp_overlap: {} is simulated only (`ragged simulate`); `ragged run` "
                                 "runs each tp collective whole: set TP_OVERLAP_NONE",
                                 scenarios::TpOverlap_Name(training.mesh().tp_overlap())));
  }
  // The executors split each routed expert over the tp ranks as the MLP.
  if (scenarios::whole_experts(training.mesh())) {
    throw InputError("training.mesh.expert_tp: 1 (whole experts under tp) is simulated only (`ragged simulate`); "
                     "`ragged run` splits the routed experts over the tp ranks: leave expert_tp unset");
  }
  // The executors' routers are what they are; an uneven load is the simulator's what-if.
  if (training.experts().busiest_load() != 1.0 || training.experts().kernel() == scenarios::PADDED ||
      training.experts().kernel() == scenarios::MULTI_STREAM ||
      training.experts().epilogue() == scenarios::EAGER_EPILOGUE ||
      training.experts().checkpointing() != scenarios::CHECKPOINTING_UNSPECIFIED) {
    throw InputError(
        "training.experts: an uneven router load, the PADDED and MULTI_STREAM expert kernels, the "
        "EAGER_EPILOGUE and the experts' own checkpointing are simulated only (`ragged simulate`); `ragged run` "
        "routes its own tokens, runs its own expert GEMMs and checkpoints whole blocks: remove the experts block");
  }
  // The executors' loop measures nothing beside its update.
  if (training.step_statistics().gradient_zeros()) {
    throw InputError(
        "training.step_statistics.gradient_zeros (Megatron-LM's --log-num-zeros-in-grad) is simulated "
        "only (`ragged simulate`); `ragged run` counts no zeros: remove step_statistics");
  }
  // The executors' attention reads the kv heads; the copies are another stack's cost.
  if (training.kv_heads() == scenarios::REPEATED_KV) {
    throw InputError("training.kv_heads: REPEATED_KV (keys and values copied to every query head) is simulated only "
                     "(`ragged simulate`); `ragged run`'s attention reads the kv heads: set NATIVE_KV");
  }
  // The executors' blocks hold the checkpoint's projections, which they load by name.
  if (training.projections() == scenarios::FUSED_PROJECTIONS) {
    throw InputError(
        "training.projections: FUSED_PROJECTIONS (q/k/v and gate/up each stored as one projection, "
        "Megatron-Core's and nanotron's layout) is simulated only (`ragged simulate`); `ragged run` "
        "holds the checkpoint's projections: set CHECKPOINT_PROJECTIONS");
  }
  // The executors run TorchTitan's op list under selective checkpointing.
  if (training.activation_checkpointing() == scenarios::SAVED_NAMES) {
    throw InputError("training.activation_checkpointing: SAVED_NAMES (a JAX remat policy) is modelled by ragged "
                     "simulate; `ragged run` runs NONE, SELECTIVE or FULL: set one of them");
  }
  if (training.optimizer().has_adam8bit() && !plan.honours_granularity()) {
    throw InputError(fmt::format(
        "{} cuts 8-bit Adam's blocks across ranks at {} ranks (its shards do not fall on block boundaries), so no rank "
        "could quantise its blocks alone: use the ragged strategy, or a rank count whose shards align",
        plan.strategy, plan.ranks));
  }
  if (training.optimizer().has_adam8bit()) check_adam8bit_tiles(resolved.model, plan, training.optimizer());
}

std::vector<UnitShard> make_shards(const models::ModelSpec& model, const planner::Plan& plan, int rank, uint64_t seed,
                                   const models::ModelSpec* whole, int tp_rank, ExpertPlace experts) {
  const std::vector<std::vector<TensorOrigin>> origins =
      whole ? tensor_origins(*whole, model, experts.rank) : std::vector<std::vector<TensorOrigin>>();
  // A tensor's id counts the model's tensors before it (a pipeline stage's
  // plan starts past unit 0), so every rank initialises it alike.
  std::vector<int64_t> first_id(model.units.size() + 1, 0);
  for (size_t u = 0; u < model.units.size(); ++u) first_id[u + 1] = first_id[u] + static_cast<int64_t>(model.units[u].tensors.size());
  std::vector<UnitShard> shards;
  shards.reserve(plan.units.size());
  for (const planner::UnitPlan& unit : plan.units) {
    const auto u = static_cast<size_t>(unit.unit_index);
    const int unit_rank = unit.group == planner::Group::kExpertShard ? experts.shard_rank : rank;
    shards.emplace_back(model.units[u], unit, unit_rank, first_id[u]);
    shards.back().initialise(seed, whole ? &origins[u] : nullptr, tp_rank);
  }
  return shards;
}

ModelParams gather_params(std::vector<UnitShard>& shards, Communicator& comm, Communicator* expert_comm) {
  ModelParams params;
  for (UnitShard& s : shards) {
    std::vector<float> buffer(static_cast<size_t>(s.shard_size() * s.ranks()));
    std::copy(s.master().begin(), s.master().end(), buffer.begin() + s.rank() * s.shard_size());
    Communicator& group = s.group() == planner::Group::kExpertShard ? *expert_comm : comm;
    group.all_gather_in_place(buffer.data(), s.shard_size());
    std::vector<float> per_tensor;
    const float* base = buffer.data();
    if (!s.contiguous()) {
      per_tensor.resize(static_cast<size_t>(s.unsharded_elements()));
      s.copy_out(buffer.data(), per_tensor.data());
      base = per_tensor.data();
    }
    const auto pointers = s.params_in(base, !s.contiguous());
    for (size_t t = 0; t < s.spec().tensors.size(); ++t) {
      params.emplace_back(pointers[t], pointers[t] + s.spec().tensors[t].numel());
    }
  }
  return params;
}

namespace {

// Elements of this rank's master shards that differ bitwise from replica 0's,
// summed over the world.
int64_t replica_differences(std::vector<UnitShard>& shards, const RankGroups& groups, Communicator& world) {
  int64_t differing = 0;
  Communicator& replicas = *groups.replicas;
  if (replicas.size() > 1) {
    for (UnitShard& s : shards) {
      const auto n = static_cast<size_t>(s.shard_size());
      std::vector<float> all(n * static_cast<size_t>(replicas.size()));
      std::copy(s.master().begin(), s.master().end(), all.begin() + static_cast<std::ptrdiff_t>(n) * replicas.rank());
      replicas.all_gather_in_place(all.data(), s.shard_size());
      for (size_t e = 0; e < n; ++e) {
        differing += std::memcmp(&all[e], &s.master()[e], sizeof(float)) != 0 ? 1 : 0;
      }
    }
  }
  return static_cast<int64_t>(world.sum(static_cast<double>(differing)));
}

// Trains the single-process reference and compares `trained` with it.
void judge_on_rank_zero(const planner::ResolvedScenario& resolved, const ModelParams& trained,
                        const RankGroups& groups, const RunStages& stages, int64_t steps, const RunOptions& options,
                        RunResult& result) {
  const scenarios::Training& training = resolved.scenario().training();
  const bool tensor_parallel = groups.tp > 1 || groups.cp > 1;
  ModelParams reference =
      tensor_parallel
          ? reference_train_tensor_parallel(resolved.whole(), resolved.model, training, groups.reading_ranks(),
                                            groups.shard->size(), steps, options.seed, static_cast<int>(groups.cp),
                                            static_cast<int>(groups.ep))
          : reference_train(
                resolved.whole(), training, stages.stage_ranks, groups.shard->size(), steps, options.seed,
                stages.stages > 1 && training.pipeline().gradient_sync() != scenarios::EVERY_MICRO_BATCH_GRADIENT_SYNC,
                static_cast<int>(groups.ep));
  ParamError e = compare_params(resolved.whole(), trained, reference);
  result.reference_error = e.max_relative;
  result.reference_differing = e.differing_elements;
  result.reference_elements = e.elements;
  result.worst_tensor = e.worst_tensor;
  result.reference_non_finite = e.non_finite_elements;
  result.reference_first_non_finite = e.first_non_finite;
  result.reference_bitwise = options.tolerance < 0;
  result.reference_tolerance = std::max(0.0, options.tolerance);
  const bool match = result.reference_bitwise ? e.differing_elements == 0 : e.max_relative <= options.tolerance;
  result.reference_ok = match && e.non_finite_elements == 0 && result.replica_differing == 0;
}

}  // namespace

void judge_against_reference(const planner::ResolvedScenario& resolved, std::vector<UnitShard>& shards,
                             const RankGroups& groups, const RunStages& stages, Communicator& world, int64_t steps,
                             const RunOptions& options, RunResult& result) {
  result.replica_differing = replica_differences(shards, groups, world);
  const bool mesh = groups.tp > 1 || groups.cp > 1 || groups.ep > 1;
  ModelParams trained = mesh ? gather_mesh_params(resolved, shards, groups)
                             : gather_stage_params(resolved, stages, shards, groups, world);
  if (world.rank() == 0) judge_on_rank_zero(resolved, trained, groups, stages, steps, options, result);
  // The other ranks wait out rank 0's reference training in a barrier that
  // does not hold a core: it has the CPU to itself when ranks outnumber cores.
  world.barrier();
}

ModelParams gather_mesh_params(const planner::ResolvedScenario& resolved, std::vector<UnitShard>& shards,
                               const RankGroups& groups) {
  Communicator& world = *groups.world;
  ModelParams mine = gather_params(shards, *groups.shard, groups.expert_shard);
  const models::ModelSpec& split = resolved.model;
  const models::ModelSpec& whole = resolved.whole();
  const auto tp = static_cast<int>(groups.tp);
  // The first ep group's places (world ranks 0 .. ep x tp - 1; rank r is tp
  // rank r % tp of ep rank r / tp) hold every piece: the first place the
  // dense tensors (tp rank 0 the uncut ones), each place its experts.
  const auto held = [&](int rank, size_t unit, const models::TensorSpec& piece) {
    const bool experts = split.units[unit].kind == models::UnitKind::kExperts;
    return (experts || rank / tp == 0) && (piece.tp_cut != models::TensorCut::kWhole || rank % tp == 0);
  };
  const int senders = static_cast<int>(groups.ep) * tp;
  if (world.rank() > 0 && world.rank() < senders) {
    size_t flat = 0;
    for (size_t u = 0; u < split.units.size(); ++u) {
      for (const models::TensorSpec& piece : split.units[u].tensors) {
        // Only what rank 0 receives: a send no receive matches would never finish.
        if (held(world.rank(), u, piece)) {
          world.send(mine[flat].data(), static_cast<int64_t>(mine[flat].size()), 0, static_cast<int64_t>(flat));
        }
        ++flat;
      }
    }
    world.wait_sends();
  }
  if (world.rank() != 0) return {};
  ModelParams params;
  for (const models::UnitSpec& unit : whole.units) {
    for (const models::TensorSpec& t : unit.tensors) params.emplace_back(static_cast<size_t>(t.numel()), 0.0f);
  }
  for (int r = 0; r < senders; ++r) {
    const std::vector<std::vector<TensorOrigin>> origins = tensor_origins(whole, split, r / tp);
    size_t flat = 0;
    for (size_t u = 0; u < split.units.size(); ++u) {
      for (size_t t = 0; t < split.units[u].tensors.size(); ++t, ++flat) {
        const models::TensorSpec& piece = split.units[u].tensors[t];
        if (!held(r, u, piece)) continue;
        std::vector<float> received;
        if (r > 0) {
          received.resize(mine[flat].size());
          world.recv(received.data(), static_cast<int64_t>(received.size()), r, static_cast<int64_t>(flat));
        }
        const std::vector<float>& values = r == 0 ? mine[flat] : received;
        const TensorOrigin& o = origins[u][t];
        std::vector<float>& into = params[static_cast<size_t>(o.id)];
        for (int64_t i = 0; i < piece.numel(); ++i) {
          const int64_t at = piece.tp_cut == models::TensorCut::kWhole ? i : whole_index(piece, *o.whole, r % tp, i);
          into[static_cast<size_t>(o.first + at)] = values[static_cast<size_t>(i)];
        }
      }
    }
  }
  return params;
}

namespace {

struct TensorAt {
  int unit = -1;
  int tensor = -1;
};

TensorAt find_tensor(const models::ModelSpec& model, const std::string& name) {
  for (size_t u = 0; u < model.units.size(); ++u) {
    for (size_t t = 0; t < model.units[u].tensors.size(); ++t) {
      if (model.units[u].tensors[t].name == name) return {static_cast<int>(u), static_cast<int>(t)};
    }
  }
  return {};
}

}  // namespace

std::string op_label(const planner::Program& program, int64_t op) {
  if (op < 0 || op >= static_cast<int64_t>(program.ops.size())) return "no op";
  const planner::Op& o = program.ops[static_cast<size_t>(op)];
  return fmt::format("{}: {}, unit {}", o.name, planner::op_kind_name(o.kind), o.unit);
}

void check_injection(const models::ModelSpec& model, const std::optional<NanInjection>& injection) {
  if (!injection) return;
  if (find_tensor(model, injection->tensor).unit < 0) {
    std::vector<std::string> examples;
    for (const models::UnitSpec& unit : model.units) {
      for (const models::TensorSpec& t : unit.tensors) {
        if (examples.size() < 4) examples.push_back(t.name);
      }
    }
    throw InputError(fmt::format("--inject-nan: {} has no tensor '{}'; its tensors are named like {}", model.name,
                                 injection->tensor, fmt::join(examples, ", ")));
  }
  if (injection->step < 1) throw InputError("--inject-nan: the step counts from 1 (warm-up steps included)");
}

std::optional<NanSlot> nan_slot(const models::ModelSpec& model, const std::optional<NanInjection>& injection,
                                int64_t step, const std::vector<UnitShard>& shards) {
  if (!injection || injection->step != step) return std::nullopt;
  const TensorAt at = find_tensor(model, injection->tensor);
  const UnitShard& shard = shards[static_cast<size_t>(at.unit)];
  const int64_t element = shard.spec().tensors[static_cast<size_t>(at.tensor)].numel() / 2;
  for (const planner::ShardView& view : shard.views()) {
    if (view.tensor != at.tensor || element < view.tensor_offset || element >= view.tensor_offset + view.elements) continue;
    return NanSlot{at.unit, view.shard_offset + element - view.tensor_offset};
  }
  return std::nullopt;
}

void inject_nan(const models::ModelSpec& model, const std::optional<NanInjection>& injection, int64_t step,
                std::vector<UnitShard>& shards) {
  if (const std::optional<NanSlot> slot = nan_slot(model, injection, step, shards)) {
    shards[static_cast<size_t>(slot->unit)].master()[static_cast<size_t>(slot->offset)] =
        std::numeric_limits<float>::quiet_NaN();
  }
}

bool stop_on_non_finite(const std::optional<NonFinite>& mine, int64_t step, const models::ModelSpec& model,
                        Communicator& world, RunResult& result) {
  const std::optional<NonFinite> agreed = agree_non_finite(mine, step, world);
  if (!agreed) return false;
  result.non_finite = describe(*agreed, model);
  return true;
}

std::vector<std::string> RunResult::failures() const {
  std::vector<std::string> out;
  if (!non_finite.empty()) out.push_back("not finite: " + non_finite + " (the run stopped there)");
  if (collective_errors > 0) {
    out.push_back(fmt::format("collectives: {} wrong elements in the verifiable self-tests", collective_errors));
  }
  if (reference_error >= 0 && !reference_ok) {
    if (reference_non_finite > 0) {
      out.push_back(fmt::format("reference: {} elements are NaN or infinite, first {}", reference_non_finite,
                                reference_first_non_finite));
    } else if (reference_bitwise && reference_differing > 0) {
      out.push_back(fmt::format("reference: {} of {} elements differ bitwise where the run claims bitwise equality "
                                "(max relative error {:.3g} in {})",
                                reference_differing, reference_elements, reference_error, worst_tensor));
    } else if (!reference_bitwise && !(reference_error <= reference_tolerance)) {
      out.push_back(fmt::format("reference: relative error {:.3g} in {} exceeds the tolerance {:.3g}", reference_error,
                                worst_tensor, reference_tolerance));
    }
    if (replica_differing > 0) {
      out.push_back(fmt::format("replicas: {} shard elements differ bitwise from replica 0's", replica_differing));
    }
  }
  return out;
}

}  // namespace ragged::backend
