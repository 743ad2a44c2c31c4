#pragma once
// Every unit's persistent state on the GPU, carved once from the device's
// arena: the fp32 master shard (uploaded from the host's UnitShard, which
// initialised it from the seed), the fp32 gradient shard and AdamW's two
// moments (zero), and the tables the executor's copies and memsets need.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "backend/cuda/device_arena.hpp"
#include "backend/cuda/device_layout.hpp"
#include "backend/unit_shard.hpp"

namespace ragged::backend::gpu {

struct DeviceUnit {
  float* master = nullptr;  // shard_size elements each
  float* grad = nullptr;
  float* m = nullptr;
  float* v = nullptr;
  // Rank-major layouts: copy_out_runs() and reversed() on the device.
  const PieceRun* copy_out = nullptr;
  const PieceRun* pack = nullptr;
  int pieces = 0;
  std::vector<std::pair<int64_t, int64_t>> padding;  // gathered_padding(), host side
};

// What make_device_units carves, alignment included.
int64_t device_units_bytes(const std::vector<UnitShard>& shards);

// Uploads on `stream` and waits for it (the host shards may go away).
std::vector<DeviceUnit> make_device_units(const std::vector<UnitShard>& shards, DeviceArena& arena,
                                          cudaStream_t stream);

// The device master shards back into the host shards (waits for `stream`).
void download_masters(const std::vector<DeviceUnit>& units, std::vector<UnitShard>& shards, cudaStream_t stream);

}  // namespace ragged::backend::gpu
