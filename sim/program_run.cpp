#include "sim/program_run.hpp"

#include <simgrid/s4u.hpp>

namespace ragged::sim {

namespace sg4 = simgrid::s4u;

namespace {

// The persistent state lives through the step: allocate it first, on the
// default stream, which the training loop's compute stream is.
void allocate_persistent(const planner::PersistentMemory& m, CachingAllocator& allocator) {
  int64_t id = -1;
  for (int64_t bytes : {m.master_params, m.compute_params, m.gradients, m.optimizer_states, m.gathered_small_params}) {
    if (bytes > 0) allocator.allocate(id, {bytes}, static_cast<int>(planner::Stream::kCompute));
    --id;
  }
}

}  // namespace

ProgramRun run_program(const planner::Program& program, const ComputeModel& compute, const ProgramRunOptions& options) {
  AllocatorOptions allocator_options;
  allocator_options.capacity = options.capacity;
  allocator_options.expandable_segments = options.expandable_segments;
  CachingAllocator allocator(allocator_options);
  allocate_persistent(program.persistent, allocator);

  int argc = 1;
  char name[] = "ragged";
  char* argv[] = {name, nullptr};
  sg4::Engine engine(&argc, argv);
  configure_engine();
  CollectiveEngine network(options.cluster, options.mode, program.shard_ranks, program.replicate_ranks);
  Mechanisms mechanisms;
  mechanisms.host = options.host;
  if (options.share_gpu && compute.spec().sms > 0) {
    const GpuComputeSpec& gpu = compute.spec();
    mechanisms.gpu = {gpu.sms, compute.memory_bytes_per_s()};
    network.set_nccl_ctas(gpu.nccl_ctas_intra_node, gpu.nccl_ctas_inter_node);
  }
  Executor executor(program, compute, network, allocator, options.free_policy, mechanisms);
  if (options.progress) executor.on_progress(options.progress);
  executor.spawn(network.platform_host());
  engine.run();

  ProgramRun run;
  run.timings = executor.timings();
  run.memory = executor.memory();
  run.step_seconds = executor.step_seconds();
  run.exposed_seconds = executor.exposed_seconds();
  run.peak_allocated = allocator.peak_allocated();
  run.peak_reserved = allocator.peak_reserved();
  run.peak_state_and_buffers = executor.peak_state_and_buffers();
  // OOM only when a request failed after the cache was released: a peak of
  // reserved memory that a release and retry kept under capacity is a
  // slowdown (flush_seconds), not an OOM.
  run.out_of_memory = allocator.out_of_memory();
  run.allocator_flushes = executor.flushes();
  run.allocator_flush_seconds = executor.flush_seconds();
  run.flows = network.flows_started();
  run.simulated_nodes = network.simulated_nodes();
  return run;
}

}  // namespace ragged::sim
