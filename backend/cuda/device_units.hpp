#pragma once
// Every unit's persistent state on the GPU, carved once from the device's
// arena: the fp32 master shard (uploaded from the host's UnitShard, which
// initialised it from the seed), the fp32 gradient shard and the optimizer's
// state (zero): AdamW's two moments over the shard, or for 8-bit Adam the
// int8/uint8 codes over the shard, fp32 scales per tile, the tile table
// (adam8bit_layout.hpp) and fp32 moments for the views AdamW updates only;
// and the tables the executor's copies and memsets need.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "backend/cuda/adam8bit_kernels.hpp"
#include "backend/cuda/adam8bit_layout.hpp"
#include "backend/cuda/device_arena.hpp"
#include "backend/cuda/device_layout.hpp"
#include "backend/optimizer_math.hpp"
#include "backend/unit_shard.hpp"
#include "planner/arena_plan.hpp"
#include "planner/program.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::backend::gpu {

struct DeviceUnit {
  float* master = nullptr;  // shard_size elements each
  float* grad = nullptr;
  float* m = nullptr;  // shard_size elements, or the packed AdamW ranges with 8-bit Adam; SGD's momentum
  float* v = nullptr;  // null for SGD (and m too without momentum)
  // ZeRO-3's small parameters, kept gathered ([m][chunk] per tensor, in
  // slot order, four bytes an element whatever the parameter dtype); null
  // when the unit has none.
  std::byte* persistent = nullptr;
  // 8-bit Adam: its state, the device tile table and, host side, the AdamW ranges.
  bool adam8bit = false;
  Adam8bitState adam8bit_state;
  const Adam8bitTile* tiles = nullptr;
  int64_t tile_count = 0;
  std::vector<AdamWRange> adamw;
  // Rank-major layouts: copy_out_runs() and reversed() on the device.
  const PieceRun* copy_out = nullptr;
  const PieceRun* pack = nullptr;
  int pieces = 0;
  std::vector<std::pair<int64_t, int64_t>> padding;  // gathered_padding(), host side
  // `grad` is the step arena's kGradShards buffer while the Program holds it
  // (StepMemory::grads_in_arena), null otherwise.
  bool grad_in_arena = false;
};

// The step arena and where each unit's gradient shard lives. A Program that
// allocates gradient shards each step (kGradShards: FSDP2 and the strategies
// like it, from the unit's first reduction to the free after the optimizer,
// as PyTorch's zero_grad leaves them) can have them carved from the arena at
// the Program's offsets, the GPU's fp32 accumulator each; packed among the
// backward's buffers they fragment the arena, so the executor takes that
// layout only when it holds less than keeping every shard with its unit for
// the whole run (the first H200 run: +18.9% over the Program's peak for the
// tiny Llama under FSDP2, that way).
struct StepMemory {
  planner::ArenaPlan arena;
  std::vector<bool> grads_in_arena;  // per unit
};
StepMemory device_step_memory(const planner::Program& program, const std::vector<UnitShard>& shards,
                              const scenarios::Optimizer& optimizer);

// What make_device_units carves, alignment included (no gradient for the
// units `grads_in_arena` names).
int64_t device_units_bytes(const std::vector<UnitShard>& shards, const scenarios::Optimizer& optimizer,
                           const std::vector<bool>& grads_in_arena = {});

// Uploads on `stream` and waits for it (the host shards may go away). A unit
// `grads_in_arena` names gets its `grad` when the step allocates it.
std::vector<DeviceUnit> make_device_units(const std::vector<UnitShard>& shards, const scenarios::Optimizer& optimizer,
                                          DeviceArena& arena, cudaStream_t stream,
                                          const std::vector<bool>& grads_in_arena = {});

// 8-bit Adam's step on a unit whose `adam8bit` is set: AdamW on the views of
// the tensors it does not quantise (their moments packed), the tile kernel on
// the rest; shard padding is left alone, as on the host (HostOptimizer).
void adam8bit_update(const DeviceUnit& unit, int64_t step, const AdamWParams& p, cudaStream_t stream);

// The device master shards back into the host shards (waits for `stream`).
void download_masters(const std::vector<DeviceUnit>& units, std::vector<UnitShard>& shards, cudaStream_t stream);

// Counts the NaN and infinite elements of every unit's master shard on the
// device (waits for `stream`), so that a step whose parameters are finite,
// the usual case, moves nothing to the host: downloading a 2.8B-parameter
// model's masters and scanning them on one core cost seconds a step.
class MasterFiniteScan {
 public:
  MasterFiniteScan();
  ~MasterFiniteScan();
  MasterFiniteScan(const MasterFiniteScan&) = delete;
  MasterFiniteScan& operator=(const MasterFiniteScan&) = delete;
  int64_t non_finite(const std::vector<DeviceUnit>& units, const std::vector<UnitShard>& shards, cudaStream_t stream);

 private:
  unsigned long long* count_ = nullptr;  // one device counter
};

}  // namespace ragged::backend::gpu
