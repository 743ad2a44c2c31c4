#include "sim/program_run.hpp"

#include <algorithm>
#include <memory>

#include <simgrid/s4u.hpp>

#include "common/errors.hpp"

namespace ragged::sim {

namespace sg4 = simgrid::s4u;

namespace {

// The persistent state lives through the step: allocate it first, on the
// default stream, which the training loop's compute stream is.
void allocate_persistent(const planner::PersistentMemory& m, CachingAllocator& allocator) {
  int64_t id = -1;
  for (int64_t bytes : {m.master_params, m.compute_params, m.gradients, m.optimizer_states, m.gathered_small_params,
                        m.pipeline_receive_buffers}) {
    if (bytes > 0) allocator.allocate(id, {bytes}, static_cast<int>(planner::Stream::kCompute));
    --id;
  }
}

}  // namespace

ProgramRun run_program(const planner::Program& program, const ComputeModel& compute, const ProgramRunOptions& options) {
  return run_programs(std::vector<const planner::Program*>(options.ranks.size(), &program), compute, options);
}

ProgramRun run_programs(const std::vector<const planner::Program*>& programs, const ComputeModel& compute,
                        const ProgramRunOptions& options) {
  RAGGED_ASSERT(!options.ranks.empty() && programs.size() == options.ranks.size(), "a Program per simulated rank");
  const planner::Program& program = *programs.front();
  AllocatorOptions allocator_options;
  allocator_options.capacity = options.capacity;
  allocator_options.expandable_segments = options.expandable_segments;

  int argc = 1;
  char name[] = "ragged";
  char* argv[] = {name, nullptr};
  sg4::Engine engine(&argc, argv);
  configure_engine();
  Participants participants;
  participants.gpus.clear();
  for (const SimulatedRank& r : options.ranks) participants.gpus.push_back(r.rank);
  participants.health = options.health;
  // A Program of FSDP alone names its groups by their sizes.
  planner::Mesh mesh = program.mesh;
  if (mesh.fsdp_only()) {
    mesh.dp_shard = program.shard_ranks;
    mesh.dp_replicate = program.replicate_ranks;
  }
  CollectiveEngine network(options.cluster, options.mode, mesh, participants);
  Mechanisms mechanisms;
  mechanisms.host = options.host;
  if (options.share_gpu && compute.spec().sms > 0) {
    const GpuComputeSpec& gpu = compute.spec();
    mechanisms.gpu = {gpu.sms, compute.memory_bytes_per_s()};
    network.set_nccl_ctas(gpu.nccl_ctas_intra_node, gpu.nccl_ctas_inter_node);
  }
  // One compute model, allocator and executor per simulated rank: a slow
  // GPU's SM clock is a fraction of the healthy one (memory-bound work keeps
  // its rate).
  std::vector<ComputeModel> models;
  std::vector<std::unique_ptr<CachingAllocator>> allocators;
  std::vector<std::unique_ptr<Executor>> executors;
  models.reserve(options.ranks.size());
  for (size_t r = 0; r < options.ranks.size(); ++r) {
    const double rate = options.ranks[r].compute_rate;
    models.push_back(rate == 1.0 ? compute : compute.with_clock_factor(compute.spec().clock_factor * rate));
    allocators.push_back(std::make_unique<CachingAllocator>(allocator_options));
    allocate_persistent(programs[r]->persistent, *allocators.back());
    executors.push_back(std::make_unique<Executor>(*programs[r], models.back(), network, *allocators.back(),
                                                   options.free_policy, mechanisms, static_cast<int>(r)));
  }
  if (options.progress) executors.front()->on_progress(options.progress);
  for (size_t r = 0; r < executors.size(); ++r) executors[r]->spawn(network.platform_host(static_cast<int>(r)));
  engine.run();

  ProgramRun run;
  for (size_t r = 1; r < programs.size(); ++r) {
    if (programs[r] != programs.front() && allocators[r]->peak_reserved() > allocators[run.reported]->peak_reserved()) {
      run.reported = r;
    }
  }
  const Executor& executor = *executors[run.reported];
  const CachingAllocator& allocator = *allocators[run.reported];
  run.timings = executor.timings();
  run.memory = executor.memory();
  run.exposed_seconds = executor.exposed_seconds();
  run.pipeline_wait_seconds = executor.pipeline_wait_seconds();
  const bool differ = std::any_of(programs.begin(), programs.end(), [&](const auto* p) { return p != programs.front(); });
  for (size_t r = 0; r < executors.size(); ++r) {
    run.ranks.push_back({options.ranks[r], executors[r]->step_seconds(), executors[r]->exposed_seconds(),
                         executors[r]->pipeline_wait_seconds(), allocators[r]->peak_reserved(),
                         allocators[r]->peak_allocated()});
    run.step_seconds = std::max(run.step_seconds, executors[r]->step_seconds());
    if (differ) {
      run.rank_timings.push_back(executors[r]->timings());
      run.rank_memory.push_back(executors[r]->memory());
    }
  }
  run.peak_allocated = allocator.peak_allocated();
  run.peak_reserved = allocator.peak_reserved();
  run.peak_state_and_buffers = executor.peak_state_and_buffers();
  // OOM only when a request failed after the cache was released: a peak of
  // reserved memory that a release and retry kept under capacity is a
  // slowdown (flush_seconds), not an OOM.
  run.out_of_memory = std::any_of(allocators.begin(), allocators.end(), [](const auto& a) { return a->out_of_memory(); });
  run.allocator_flushes = executor.flushes();
  run.allocator_flush_seconds = executor.flush_seconds();
  run.flows = network.flows_started();
  run.simulated_nodes = network.simulated_nodes();
  run.collectives = network.records();
  return run;
}

}  // namespace ragged::sim
