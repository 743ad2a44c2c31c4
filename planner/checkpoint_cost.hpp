#pragma once
// What one checkpoint costs: the bytes of training state each GPU saves (its
// master-weight shard and optimizer-state shard, the persistent memory the
// planner already counts), the time to write them to storage and to read
// them back at a restart, and how long training pauses for it. The model and
// its sources: docs/SIMULATOR.md section 9.

#include <cstdint>

#include "planner/program.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::planner {

// The cluster as the checkpoint sees it.
struct ClusterShape {
  int64_t gpus = 1;
  int64_t gpus_per_node = 1;
  // GPUs holding one copy of the state: the shard group times the mesh's tp
  // (all of them without HSDP).
  int64_t shard_group = 1;

  int64_t nodes() const { return gpus / gpus_per_node; }
  int64_t replicas() const { return gpus / shard_group; }
};

// scenario.goodput in the model's units (seconds, bytes per second).
struct GoodputSettings {
  double interruptions_per_gpu_hour = 0;
  double storage_bytes_per_s_per_node = 0;
  double storage_aggregate_bytes_per_s = 0;
  bool async_checkpoint = false;
  double host_copy_bytes_per_s = 0;  // per GPU
  double relaunch_s = 0;             // detection and relaunch, before the load
  double checkpoint_interval_s = 0;  // 0: the optimum
  double train_tokens = 0;           // 0: days to train not asked
};

GoodputSettings goodput_settings(const scenarios::Goodput& goodput);
ClusterShape cluster_shape(const scenarios::Scenario& scenario);

struct CheckpointCost {
  int64_t bytes_per_gpu = 0;  // master weights + optimizer states of one rank
  double total_bytes = 0;     // one copy of the state: HSDP's replicas are written once
  double write_s = 0;         // the copy to storage
  bool aggregate_bound = false;  // the storage system's cap, not the nodes' own rate, sets write_s
  double load_s = 0;          // every replica reads its copy back at a restart
  double snapshot_s = 0;      // GPU to host memory (asynchronous checkpoints)
  double pause_s = 0;         // training stops this long per checkpoint: write_s, or snapshot_s when asynchronous
};

// What a checkpoint holds of a rank's persistent memory: the master weights
// and the optimizer states. The gradients are rebuilt by the next step, the
// compute-dtype shard and the unsharded small parameters from the master.
int64_t checkpoint_bytes_per_gpu(const PersistentMemory& persistent);

// The same for the scenario's rank 0, read off its Program's memory breakdown.
int64_t checkpoint_bytes_per_gpu(const ResolvedScenario& resolved);

CheckpointCost checkpoint_cost(int64_t bytes_per_gpu, const ClusterShape& cluster, const GoodputSettings& settings);

}  // namespace ragged::planner
