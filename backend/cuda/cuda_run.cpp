#include "backend/cuda/cuda_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "backend/collective_watcher.hpp"
#include "backend/context_chunks.hpp"
#include "backend/cuda/calibration.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/cuda_executor.hpp"
#include "backend/cuda/device_collectives.hpp"
#include "backend/cuda/device_units.hpp"
#include "backend/cuda/gpu_workload.hpp"
#include "backend/cuda/gpu_workload_mesh.hpp"
#include "backend/host_optimizer.hpp"
#include "backend/run_stages.hpp"
#include "backend/run_support.hpp"
#include "backend/run_trace.hpp"
#include "backend/startup_deadline.hpp"
#include "backend/step_loop.hpp"
#include "backend/watchdog.hpp"
#include "backend/workload.hpp"
#include "common/errors.hpp"
#include "common/units.hpp"
#include "planner/arena_plan.hpp"
#include "planner/checkpointing_plan.hpp"
#include "planner/memory_breakdown.hpp"
#include "planner/mesh.hpp"
#include "planner/program_builder.hpp"
#include "planner/strategy_traits.hpp"

namespace ragged::backend::gpu {
namespace {

ElementType element_type(scenarios::DType dtype, const char* field) {
  if (dtype == scenarios::FP32) return ElementType::f32;
  if (dtype == scenarios::BF16) return ElementType::bf16;
  throw InputError(fmt::format("{}: the GPU backend runs FP32 or BF16; set {} to one of them", field, field));
}

// Headroom of the device arena beyond what is planned: alignment of the
// workload's own carving.
constexpr int64_t kArenaSlackBytes = 1 << 20;

// The arena is allocated once, up front, after NCCL has made its
// communicators (their buffers are then out of cudaMemGetInfo's free
// memory): say before trying when it cannot fit. cuBLAS's handle and
// workspace, made with the device's streams, still need room beside it.
constexpr int64_t kCublasHeadroomBytes = int64_t{256} << 20;

void check_device_fits(int ordinal, int64_t arena_bytes) {
  const MemoryInfo memory = device_memory(ordinal);
  if (arena_bytes + kCublasHeadroomBytes <= static_cast<int64_t>(memory.free_bytes)) return;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  throw InputError(fmt::format(
      "training: this rank needs {:.2f} GiB of device memory (shards, optimizer states, the Program's step buffers "
      "and the workload's) plus about 0.25 GiB for cuBLAS, but GPU {} has {:.2f} GiB free of {:.2f} once NCCL's "
      "communicators exist; use more GPUs, a smaller micro_batch_size or sequence_length, or "
      "activation_checkpointing: FULL",
      static_cast<double>(arena_bytes) / kGiB, ordinal, static_cast<double>(memory.free_bytes) / kGiB,
      static_cast<double>(memory.total_bytes) / kGiB));
}

}  // namespace

void check_gpu_runnable(const planner::ResolvedScenario& resolved, const RunOptions& options) {
  check_workload_supported(resolved.model);
  const scenarios::Training& t = resolved.scenario().training();
  if (t.optimizer().has_muon() || t.optimizer().has_shampoo()) {
    throw InputError(
        "training.optimizer: the GPU backend runs AdamW, 8-bit Adam and SGD; Muon and Shampoo run on --device cpu");
  }
  check_update_kernel(t);
  check_loop_metrics(t);
  if (t.mesh().pp() > 1) {
    throw InputError(fmt::format("training.mesh.pp: {} pipeline stages run on --device cpu so far; set pp: 1 for the "
                                 "GPU", t.mesh().pp()));
  }
  const planner::StrategyTraits traits = planner::strategy_traits(t.strategy());
  if (!traits.cast_before_gather || traits.grad_shard_in_param_dtype) {
    throw InputError(fmt::format("training.strategy: {} keeps persistent low-precision shards, which the GPU backend "
                                 "does not run; use RAGGED, VESCALE_PAPER, FSDP1 or FSDP2",
                                 scenarios::Strategy_Name(t.strategy())));
  }
  if (t.precision().master() != scenarios::FP32) {
    throw InputError("training.precision.master: the GPU backend keeps fp32 master weights; set master: FP32");
  }
  const planner::Mesh mesh = planner::mesh_of(t);
  if (mesh.tp > 1 && !mesh.vocabulary_parallel) {
    throw InputError(fmt::format("training.mesh.vocabulary_parallel: false: the GPU splits the embedding and the head "
                                 "by the vocabulary over tp {}; leave it true, or run on --device cpu",
                                 mesh.tp));
  }
  if (mesh.tp > 1 || mesh.cp > 1 || mesh.ep > 1) {
    if (planner::checkpointing_mode(t.activation_checkpointing()) != models::Checkpointing::kNone) {
      throw InputError(
          fmt::format("training.activation_checkpointing: {}: under tp {}, cp {} and ep {} the GPU keeps "
                      "every activation of a block's parts and recomputes none; set it to NONE, or run "
                      "on --device cpu",
                      scenarios::Checkpointing_Name(t.activation_checkpointing()), mesh.tp, mesh.cp, mesh.ep));
    }
  }
  if (mesh.tp > 1 || mesh.cp > 1) {
    if (mesh.cp > 1) check_context_split(static_cast<int>(mesh.cp), t.sequence_length());
    check_tensor_parallel_supported(resolved.model, static_cast<int>(mesh.tp),
                                    t.micro_batch_size() * t.sequence_length() / mesh.cp, mesh.sequence_parallel);
  }
  if (t.checkpoint_every() > 1) {
    throw InputError(fmt::format("training.checkpoint_every: {}: the GPU workload checkpoints every block or none; "
                                 "simulate it, or remove checkpoint_every to run", t.checkpoint_every()));
  }
  const ElementType param = element_type(t.precision().param(), "training.precision.param");
  const ElementType reduce = element_type(t.precision().reduce(), "training.precision.reduce");
  if (param == ElementType::f32 && reduce == ElementType::bf16) {
    throw InputError("training.precision.reduce: the GPU backend reduces fp32 parameters' gradients in fp32; "
                     "set reduce: FP32 (or param: BF16)");
  }
  if (element_bytes(param) > models::dtype_bytes(resolved.model.arch.dtype)) {
    throw InputError(fmt::format("training.precision.param: the Program sizes activations in the model's dtype ({}), "
                                 "which is narrower; set param: BF16, or model.inline_spec.dtype: \"fp32\"",
                                 models::dtype_name(resolved.model.arch.dtype)));
  }
  if (options.check_reference && (t.precision().param() != scenarios::FP32 || t.precision().reduce() != scenarios::FP32)) {
    throw InputError("--check-reference compares with the fp32 host reference: set training.precision "
                     "{ param: FP32 reduce: FP32 master: FP32 }");
  }
  check_injection(resolved.model, options.inject_nan);
  if (options.ordered_reductions) {
    throw InputError("--ordered-reductions: NCCL sums in its own order; ordered (bitwise) reductions run on --device cpu");
  }
  if (options.verify_collectives) {
    throw InputError("--verify-collectives checks the host communicators; run it with --device cpu");
  }
  check_gpu_supported(resolved.model);
  std::string why;
  if (!cuda_device_available(&why)) throw InputError("--device cuda: no GPU here (" + why + "); use --device cpu");
}

RunResult run_on_gpu(const planner::ResolvedScenario& resolved, const RunOptions& options, Communicator& comm) {
  check_gpu_runnable(resolved, options);
  check_launch(resolved, comm, false);
  check_ranks_agree(resolved, options, comm);
  const scenarios::Training& training = resolved.scenario().training();
  CudaExecutorConfig config;
  config.params = element_type(training.precision().param(), "training.precision.param");
  config.reduce = element_type(training.precision().reduce(), "training.precision.reduce");
  config.grads = planner::strategy_traits(training.strategy()).grads_in_reduce_dtype ? config.reduce : config.params;
  // Token ids over the whole vocabulary (a tp rank holds a share of its rows).
  config.data = DataConfig{options.seed, training.micro_batch_size(), training.sequence_length(),
                           resolved.whole().arch.vocab};
  if (training.optimizer().has_sgd()) {
    config.sgd = sgd_params(training.optimizer());
  } else {
    config.adamw = adamw_params(training.optimizer());
  }

  const planner::Plan plan =
      plan_for_run(resolved, config.params == ElementType::bf16 ? models::DType::kBF16 : models::DType::kF32);
  for (const planner::UnitPlan& unit : plan.units) {
    if (unit.layout.persistent_elements > 0) {
      throw InputError(fmt::format("training.strategy: {} keeps small parameters gathered, which the GPU backend does "
                                   "not run; use RAGGED or FSDP2", plan.strategy));
    }
  }
  const int tp = std::max(1, training.mesh().tp());
  const int cp = std::max(1, training.mesh().cp());
  const int ep = std::max(1, training.mesh().ep());  // with cp: refused (check_launch)
  const bool in_mesh = tp > 1 || cp > 1 || ep > 1;
  const RankGroups groups = split_rank_groups(comm, training.shard_group_size(), tp, cp, ep);
  const int shard_rank = groups.shard->rank();
  const int tp_rank = groups.tensor != nullptr ? groups.tensor->rank() : 0;
  const int cp_rank = groups.context != nullptr ? groups.context->rank() : 0;
  const ExpertPlace experts{groups.expert != nullptr ? groups.expert->rank() : 0,
                            groups.expert_shard != nullptr ? groups.expert_shard->rank() : 0};
  config.data_rank = groups.reading_rank();
  config.data_ranks = groups.reading_ranks();
  config.token_shares = cp;  // a cp group's ranks read the same sequences, each its chunks
  const planner::Program program = planner::build_program(planner::program_inputs(resolved, plan), shard_rank);
  std::vector<UnitShard> shards = make_shards(resolved.model, plan, shard_rank, options.seed,
                                              tp > 1 || ep > 1 ? &resolved.whole() : nullptr, tp_rank, experts);
  const StepMemory step_memory_plan = device_step_memory(program, shards, training.optimizer());
  const planner::ArenaPlan& arena = step_memory_plan.arena;
  const std::vector<bool>& grads_in_arena = step_memory_plan.grads_in_arena;
  const GpuWorkloadConfig workload_config{training.micro_batch_size(), training.sequence_length(), config.params,
                                          config.grads,
                                          planner::checkpointing_mode(training.activation_checkpointing())};
  config.private_bytes = in_mesh ? gpu_mesh_private_bytes(resolved.model, workload_config, tp, cp)
                                 : gpu_private_bytes(resolved.model, workload_config);
  config.persistent_bytes = device_units_bytes(shards, training.optimizer(), grads_in_arena);
  const int64_t arena_bytes = config.persistent_bytes + arena.bytes + config.private_bytes + kArenaSlackBytes;

  const int ordinal = default_device_ordinal();
  CUDA_CHECK(cudaSetDevice(ordinal));  // NCCL makes its communicators on the current device
  // A lost peer: one line, then the job ends (MPI_Abort) with kExitLostRank.
  const DeviceCollectives::LostHandler on_lost = [&comm](const std::string& line) {
    if (comm.size() < 2) return;  // no peer to lose: the call throws the line
    std::fputs(fmt::format("ragged: error: {}\n", line).c_str(), stderr);
    std::fflush(stderr);
    comm.abort(kExitLostRank);
  };
  DeviceCollectives collectives(training.shard_group_size(), options.collective_timeout_s, on_lost, tp, cp, ep);
  if (collectives.rank() != comm.rank() || collectives.size() != comm.size() || collectives.shard_rank() != shard_rank) {
    throw InternalError(fmt::format("NCCL sees rank {} of {}, the launch rank {} of {}", collectives.rank(),
                                    collectives.size(), comm.rank(), comm.size()));
  }
  try {
    check_device_fits(ordinal, arena_bytes);
  } catch (...) {
    if (comm.size() > 1) collectives.abort();  // peers may already wait in NCCL
    throw;
  }
  CudaDevice device(ordinal, static_cast<std::size_t>(arena_bytes));
  const cudaStream_t compute = device.stream(StreamKind::compute);
  std::vector<DeviceUnit> units =
      make_device_units(shards, training.optimizer(), device.arena(), compute, grads_in_arena);
  std::byte* step_memory = device.arena().allocate_array<std::byte>(arena.bytes);
  std::unique_ptr<GpuWorkload> plain;
  std::unique_ptr<GpuMeshWorkload> mesh;
  if (in_mesh) {
    mesh = std::make_unique<GpuMeshWorkload>(resolved.model, workload_config, TensorParallelRank{tp_rank, tp},
                                             ContextParallelRank{cp_rank, cp}, ExpertParallelRank{experts.rank, ep},
                                             device.cublas(), compute, device.arena());
  } else {
    plain = std::make_unique<GpuWorkload>(resolved.model, workload_config, device.cublas(), compute, device.arena());
  }
  const std::unique_ptr<Watchdog> watchdog = groups.world->start_watchdog(options.collective_timeout_s);
  disarm_startup_deadline();  // the watchdog bounds every wait from here
  std::unique_ptr<CollectiveWatcher> watcher;
  if (comm.size() > 1 && options.collective_timeout_s > 0) {
    watcher = std::make_unique<CollectiveWatcher>(
        // The watcher's thread queries this rank's events: on its device, not device 0.
        CollectiveWatcher::Communicators{[&collectives](std::string* error) { return collectives.status(error); },
                                         [&collectives] { collectives.abort(); },
                                         [ordinal] { CUDA_CHECK(cudaSetDevice(ordinal)); }},
        options.collective_timeout_s, comm.rank(), on_lost);
  }
  CudaExecutor executor(program, arena, step_memory, shards, units, collectives, GpuWorkloads{plain.get(), mesh.get()},
                        device, config, watcher.get());

  try {
    RunResult result;
    result.replicas = groups.replicas->size();
    StepLoop loop;
    loop.warmup_steps = options.warmup_steps;
    loop.steps = options.steps;
    loop.run_step = [&executor](int64_t step) { return executor.run_step(step); };
    // --inject-nan: the NaN written into the device's master shard after its step.
    loop.after_step = [&](int64_t step) {
      const std::optional<NanSlot> slot = nan_slot(resolved.model, options.inject_nan, step, shards);
      if (!slot) return;
      const float nan = std::numeric_limits<float>::quiet_NaN();
      CUDA_CHECK(cudaMemcpyAsync(units[static_cast<size_t>(slot->unit)].master + slot->offset, &nan, sizeof(nan),
                                 cudaMemcpyHostToDevice, compute));
      CUDA_CHECK(cudaStreamSynchronize(compute));
    };
    // A NaN in a gradient or a moment reaches the parameters in the same step's update.
    // Counted on the device; only a step that found one downloads the masters to name it.
    MasterFiniteScan finite_scan;
    loop.state_non_finite = [&]() -> std::optional<NonFinite> {
      if (finite_scan.non_finite(units, shards, compute) == 0) return std::nullopt;
      download_masters(units, shards, compute);
      return first_non_finite_master(shards);
    };
    const StepLoopResult ran = run_step_loop(loop, comm, *groups.world, resolved.model, result);
    const MemoryInfo memory = device.memory_info();
    result.device_used_bytes = static_cast<int64_t>(memory.total_bytes - memory.free_bytes);
    result.arena_held_bytes = ran.persistent_bytes + arena.bytes;
    result.program_peak_bytes = planner::memory_breakdown(program).peak_total();
    if (options.check_reference && !ran.stopped) {
      download_masters(units, shards, compute);
      const RunStages stages = split_stages(resolved, comm);  // one: the GPU runs no pipeline
      judge_against_reference(resolved, shards, groups, stages, comm, options.warmup_steps + options.steps, options,
                              result);
    }
    // MFU over this GPU's own peak: the scenario may name another GPU (or a CPU).
    result.trace = measured_trace(resolved, program, ran.measured, comm,
                                  fmt::format("{} (cuda), {}", device.info().name, describe(groups, "nccl")),
                                  dense_bf16_peak_flops(device.info().name));
    if (plain != nullptr) {
      const double attention = plain->attention_seconds();
      const int64_t steps_run = options.warmup_steps + static_cast<int64_t>(ran.measured.size());
      if (attention > 0 && steps_run > 0) {
        result.trace.mutable_metadata()->add_executor_notes(fmt::format(
            "attention ran as cuBLAS GEMMs a head at a time (the whole square, each score through HBM; not the "
            "FlashAttention kernel a prediction assumes): {} a step, inside the units' compute ops (CUDA events "
            "around each call, the mean of the {} steps run, warm-up included)",
            format_seconds(attention / static_cast<double>(steps_run)), steps_run));
      }
    }
    if (in_mesh) {
      result.trace.mutable_metadata()->add_executor_notes(fmt::format(
          "under tp {}, cp {} and ep {} the GPU keeps every unit's activations in the mesh workload's own memory "
          "({}, held beside the arena; under ep the experts' rows for as many as every token routed to a rank), as "
          "the host workload does; the Program's activation buffers are allocated but not written",
          tp, cp, ep, format_bytes(static_cast<double>(config.private_bytes))));
    }
    return result;
  } catch (...) {
    // Stop NCCL before the arena and communicators are torn down: peers may
    // still be inside collectives this rank will never join.
    if (comm.size() > 1) collectives.abort();
    throw;
  }
}

}  // namespace ragged::backend::gpu
