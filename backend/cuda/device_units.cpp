#include "backend/cuda/device_units.hpp"

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/kernels.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu {
namespace {

int64_t aligned(int64_t bytes) {
  const auto alignment = static_cast<int64_t>(BumpAllocator::kDefaultAlignment);
  return (bytes + alignment - 1) / alignment * alignment;
}

template <typename T>
int64_t array_bytes(int64_t count) {
  return aligned(count * static_cast<int64_t>(sizeof(T)));
}

// Elements of the fp32 optimizer state a unit keeps in `m` and `v`: AdamW's
// moments over the whole shard (8-bit Adam: over its AdamW ranges), SGD's
// momentum buffer in `m` (none without momentum).
struct StateElements {
  int64_t m = 0, v = 0;
};
StateElements state_elements(const UnitShard& s, const scenarios::Optimizer& optimizer, const Adam8bitLayout* layout) {
  if (optimizer.has_sgd()) return {optimizer.sgd().momentum() > 0 ? s.shard_size() : 0, 0};
  const int64_t moments = layout != nullptr ? layout->adamw_elements : s.shard_size();
  return {moments, moments};
}

// Carves and zeroes 8-bit Adam's state of a unit, and uploads its tile table
// from `table` (which must outlive the upload).
void make_adam8bit_state(DeviceUnit& d, const UnitShard& s, const std::vector<Adam8bitTile>& table,
                         DeviceArena& arena, cudaStream_t stream) {
  const int64_t n = s.shard_size(), tiles = static_cast<int64_t>(table.size());
  Adam8bitState& st = d.adam8bit_state;
  st.m_codes = arena.allocate_array<int8_t>(n);
  st.v_codes = arena.allocate_array<uint8_t>(n);
  st.m_scales = arena.allocate_array<float>(tiles);
  st.v_scales = arena.allocate_array<float>(tiles);
  Adam8bitTile* device_table = arena.allocate_array<Adam8bitTile>(tiles);
  CUDA_CHECK(cudaMemsetAsync(st.m_codes, 0, static_cast<size_t>(n), stream));
  CUDA_CHECK(cudaMemsetAsync(st.v_codes, 0, static_cast<size_t>(n), stream));
  for (float* zero : {st.m_scales, st.v_scales}) {
    CUDA_CHECK(cudaMemsetAsync(zero, 0, static_cast<size_t>(tiles) * sizeof(float), stream));
  }
  CUDA_CHECK(cudaMemcpyAsync(device_table, table.data(), static_cast<size_t>(tiles) * sizeof(Adam8bitTile),
                             cudaMemcpyHostToDevice, stream));
  d.adam8bit = true;
  d.tiles = device_table;
  d.tile_count = tiles;
}

// ZeRO-3's small parameters, each gathered whole ([m][chunk]).
int64_t persistent_gathered_elements(const UnitShard& s) {
  int64_t elements = 0;
  for (int t : s.persistent_tensors()) elements += s.ranks() * s.group_shard_elements({t});
  return elements;
}

}  // namespace

StepMemory device_step_memory(const planner::Program& program, const std::vector<UnitShard>& shards,
                              const scenarios::Optimizer& optimizer) {
  StepMemory kept;  // every gradient shard with its unit
  kept.arena = planner::plan_arena(program, 256, planner::bytes_beside_unit_state);
  kept.grads_in_arena.assign(shards.size(), false);
  StepMemory carved;  // the per-step ones in the arena
  carved.grads_in_arena.assign(shards.size(), false);
  bool any = false;
  for (const planner::Buffer& b : program.buffers) {
    if (b.kind != planner::BufferKind::kGradShards) continue;
    carved.grads_in_arena.at(static_cast<size_t>(b.unit)) = true;
    any = true;
  }
  if (!any) return kept;
  carved.arena = planner::plan_arena(program, 256, [&shards](const planner::Buffer& b) {
    if (b.kind != planner::BufferKind::kGradShards) return b.bytes;
    return shards.at(static_cast<size_t>(b.unit)).shard_size() * static_cast<int64_t>(sizeof(float));
  });
  const int64_t keeping = device_units_bytes(shards, optimizer, kept.grads_in_arena) + kept.arena.bytes;
  const int64_t carving = device_units_bytes(shards, optimizer, carved.grads_in_arena) + carved.arena.bytes;
  return carving < keeping ? carved : kept;
}

int64_t device_units_bytes(const std::vector<UnitShard>& shards, const scenarios::Optimizer& optimizer,
                           const std::vector<bool>& grads_in_arena) {
  int64_t total = 0;
  for (size_t u = 0; u < shards.size(); ++u) {
    const UnitShard& s = shards[u];
    const int64_t n = s.shard_size();
    const bool own_grad = u >= grads_in_arena.size() || !grads_in_arena[u];
    total += (own_grad ? 2 : 1) * array_bytes<float>(n);  // master (and gradient)
    if (const int64_t kept = persistent_gathered_elements(s); kept > 0) total += array_bytes<float>(kept);
    if (optimizer.has_adam8bit()) {
      const Adam8bitLayout layout = adam8bit_layout(s, optimizer);
      const auto tiles = static_cast<int64_t>(layout.tiles.size());
      const StateElements state = state_elements(s, optimizer, &layout);
      total += array_bytes<float>(state.m) + array_bytes<float>(state.v);
      total += array_bytes<int8_t>(n) + array_bytes<uint8_t>(n);
      total += 2 * array_bytes<float>(tiles) + array_bytes<Adam8bitTile>(tiles);
    } else {
      const StateElements state = state_elements(s, optimizer, nullptr);
      total += array_bytes<float>(state.m) + array_bytes<float>(state.v);
    }
    const auto runs = static_cast<int64_t>(copy_out_runs(s).size());
    if (runs > 0) total += 2 * array_bytes<PieceRun>(runs);
  }
  return total;
}

std::vector<DeviceUnit> make_device_units(const std::vector<UnitShard>& shards, const scenarios::Optimizer& optimizer,
                                          DeviceArena& arena, cudaStream_t stream,
                                          const std::vector<bool>& grads_in_arena) {
  std::vector<DeviceUnit> units;
  units.reserve(shards.size());
  std::vector<std::vector<PieceRun>> tables;  // kept alive until the uploads finish
  std::vector<std::vector<Adam8bitTile>> tile_tables;
  for (size_t u = 0; u < shards.size(); ++u) {
    const UnitShard& s = shards[u];
    const bool own_grad = u >= grads_in_arena.size() || !grads_in_arena[u];
    DeviceUnit d;
    const int64_t n = s.shard_size();
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    Adam8bitLayout layout;
    if (optimizer.has_adam8bit()) layout = adam8bit_layout(s, optimizer);
    const StateElements state = state_elements(s, optimizer, optimizer.has_adam8bit() ? &layout : nullptr);
    d.master = arena.allocate_array<float>(n);
    if (own_grad) d.grad = arena.allocate_array<float>(n);
    if (state.m > 0) d.m = arena.allocate_array<float>(state.m);
    if (state.v > 0) d.v = arena.allocate_array<float>(state.v);
    if (const int64_t kept = persistent_gathered_elements(s); kept > 0) {
      d.persistent = reinterpret_cast<std::byte*>(arena.allocate_array<float>(kept));
    }
    CUDA_CHECK(cudaMemcpyAsync(d.master, s.master().data(), bytes, cudaMemcpyHostToDevice, stream));
    if (own_grad) CUDA_CHECK(cudaMemsetAsync(d.grad, 0, bytes, stream));
    d.grad_in_arena = !own_grad;
    if (state.m > 0) CUDA_CHECK(cudaMemsetAsync(d.m, 0, static_cast<size_t>(state.m) * sizeof(float), stream));
    if (state.v > 0) CUDA_CHECK(cudaMemsetAsync(d.v, 0, static_cast<size_t>(state.v) * sizeof(float), stream));
    if (optimizer.has_adam8bit()) {
      tile_tables.push_back(std::move(layout.tiles));
      make_adam8bit_state(d, s, tile_tables.back(), arena, stream);
      d.adamw = std::move(layout.adamw);
    }
    std::vector<PieceRun> runs = copy_out_runs(s);
    d.pieces = static_cast<int>(runs.size());
    if (!runs.empty()) {
      PieceRun* out = arena.allocate_array<PieceRun>(static_cast<int64_t>(runs.size()));
      PieceRun* back = arena.allocate_array<PieceRun>(static_cast<int64_t>(runs.size()));
      tables.push_back(runs);
      tables.push_back(reversed(std::move(runs)));
      const size_t table_bytes = tables.back().size() * sizeof(PieceRun);
      CUDA_CHECK(cudaMemcpyAsync(out, tables[tables.size() - 2].data(), table_bytes, cudaMemcpyHostToDevice, stream));
      CUDA_CHECK(cudaMemcpyAsync(back, tables.back().data(), table_bytes, cudaMemcpyHostToDevice, stream));
      d.copy_out = out;
      d.pack = back;
    }
    d.padding = gathered_padding(s);
    units.push_back(std::move(d));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return units;
}

void adam8bit_update(const DeviceUnit& unit, int64_t step, const AdamWParams& p, cudaStream_t stream) {
  RAGGED_ASSERT(unit.adam8bit, "adam8bit_update: the unit has no 8-bit Adam state");
  const detail::AdamWConstants constants(step, p);
  for (const AdamWRange& r : unit.adamw) {
    adamw_step(unit.master + r.shard_offset, unit.grad + r.shard_offset, unit.m + r.state_offset,
               unit.v + r.state_offset, r.elements, constants, stream);
  }
  adam8bit_step(unit.master, unit.grad, unit.adam8bit_state, unit.tiles, unit.tile_count, constants, stream);
}

MasterFiniteScan::MasterFiniteScan() { CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&count_), sizeof(*count_))); }

MasterFiniteScan::~MasterFiniteScan() { cudaFree(count_); }

int64_t MasterFiniteScan::non_finite(const std::vector<DeviceUnit>& units, const std::vector<UnitShard>& shards,
                                     cudaStream_t stream) {
  RAGGED_ASSERT(units.size() == shards.size(), "MasterFiniteScan: a device unit for every shard");
  CUDA_CHECK(cudaMemsetAsync(count_, 0, sizeof(*count_), stream));
  for (size_t u = 0; u < units.size(); ++u) {
    count_non_finite(units[u].master, static_cast<int64_t>(shards[u].master().size()), count_, stream);
  }
  unsigned long long count = 0;
  CUDA_CHECK(cudaMemcpyAsync(&count, count_, sizeof(count), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return static_cast<int64_t>(count);
}

void download_masters(const std::vector<DeviceUnit>& units, std::vector<UnitShard>& shards, cudaStream_t stream) {
  for (size_t u = 0; u < units.size(); ++u) {
    std::vector<float>& master = shards[u].master();
    CUDA_CHECK(cudaMemcpyAsync(master.data(), units[u].master, master.size() * sizeof(float), cudaMemcpyDeviceToHost,
                               stream));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace ragged::backend::gpu
