#include "planner/checkpoint_cost.hpp"

#include <algorithm>

#include "planner/memory_breakdown.hpp"
#include "planner/program_builder.hpp"
#include "planner/scenario_plan.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::planner {
namespace {

struct StorageTime {
  double seconds = 0;
  bool aggregate_bound = false;
};

// Every node moves an equal part of `bytes` at its own rate; the storage
// system as a whole caps the sum.
StorageTime storage_time(double bytes, const ClusterShape& cluster, const GoodputSettings& settings) {
  const double per_node = bytes / static_cast<double>(cluster.nodes()) / settings.storage_bytes_per_s_per_node;
  const double aggregate = bytes / settings.storage_aggregate_bytes_per_s;
  return {std::max(per_node, aggregate), aggregate > per_node};
}

}  // namespace

GoodputSettings goodput_settings(const scenarios::Goodput& goodput) {
  GoodputSettings s;
  s.interruptions_per_gpu_hour = goodput.interruptions_per_gpu_hour();
  s.storage_bytes_per_s_per_node = goodput.storage_gbytes_per_s_per_node() * 1e9;
  s.storage_aggregate_bytes_per_s = goodput.storage_aggregate_tbytes_per_s() * 1e12;
  s.async_checkpoint = goodput.async_checkpoint();
  s.host_copy_bytes_per_s = goodput.host_copy_gbytes_per_s() * 1e9;
  s.relaunch_s = goodput.restart_minutes() * 60;
  s.checkpoint_interval_s = goodput.checkpoint_interval_minutes() * 60;
  s.train_tokens = goodput.train_tokens();
  return s;
}

ClusterShape cluster_shape(const scenarios::Scenario& scenario) {
  const scenarios::Training& t = scenario.training();
  return {scenarios::total_gpus(scenario), scenario.cluster().gpus_per_node(),
          int64_t{t.shard_group_size()} * std::max(1, t.mesh().tp())};
}

int64_t checkpoint_bytes_per_gpu(const PersistentMemory& persistent) {
  return persistent.master_params + persistent.optimizer_states;
}

int64_t checkpoint_bytes_per_gpu(const ResolvedScenario& resolved) {
  const Plan plan = plan_scenario(resolved);
  const Program program = build_program(program_inputs(resolved, plan));
  return checkpoint_bytes_per_gpu(memory_breakdown(program).persistent);
}

CheckpointCost checkpoint_cost(int64_t bytes_per_gpu, const ClusterShape& cluster, const GoodputSettings& settings) {
  CheckpointCost cost;
  cost.bytes_per_gpu = bytes_per_gpu;
  const double per_gpu = static_cast<double>(bytes_per_gpu);
  // PyTorch DCP saves a tensor replicated over HSDP's replicas once, from
  // the replica with the least planned so far (dedup_save_plans), so the
  // write is one copy spread over every node; a restart loads every copy.
  cost.total_bytes = per_gpu * static_cast<double>(cluster.shard_group);
  const StorageTime write = storage_time(cost.total_bytes, cluster, settings);
  cost.write_s = write.seconds;
  cost.aggregate_bound = write.aggregate_bound;
  cost.load_s = storage_time(per_gpu * static_cast<double>(cluster.gpus), cluster, settings).seconds;
  cost.snapshot_s = per_gpu / settings.host_copy_bytes_per_s;
  cost.pause_s = settings.async_checkpoint ? cost.snapshot_s : cost.write_s;
  return cost;
}

}  // namespace ragged::planner
