#include "backend/cuda/device_units.hpp"

#include "backend/cuda/cuda_check.hpp"

namespace ragged::backend::gpu {
namespace {

int64_t aligned(int64_t bytes) {
  const auto alignment = static_cast<int64_t>(BumpAllocator::kDefaultAlignment);
  return (bytes + alignment - 1) / alignment * alignment;
}

}  // namespace

int64_t device_units_bytes(const std::vector<UnitShard>& shards) {
  int64_t total = 0;
  for (const UnitShard& s : shards) {
    total += 4 * aligned(s.shard_size() * static_cast<int64_t>(sizeof(float)));
    const auto runs = static_cast<int64_t>(copy_out_runs(s).size());
    if (runs > 0) total += 2 * aligned(runs * static_cast<int64_t>(sizeof(PieceRun)));
  }
  return total;
}

std::vector<DeviceUnit> make_device_units(const std::vector<UnitShard>& shards, DeviceArena& arena,
                                          cudaStream_t stream) {
  std::vector<DeviceUnit> units;
  units.reserve(shards.size());
  std::vector<std::vector<PieceRun>> tables;  // kept alive until the uploads finish
  for (const UnitShard& s : shards) {
    DeviceUnit d;
    const int64_t n = s.shard_size();
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    d.master = arena.allocate_array<float>(n);
    d.grad = arena.allocate_array<float>(n);
    d.m = arena.allocate_array<float>(n);
    d.v = arena.allocate_array<float>(n);
    CUDA_CHECK(cudaMemcpyAsync(d.master, s.master().data(), bytes, cudaMemcpyHostToDevice, stream));
    for (float* zero : {d.grad, d.m, d.v}) CUDA_CHECK(cudaMemsetAsync(zero, 0, bytes, stream));
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

void download_masters(const std::vector<DeviceUnit>& units, std::vector<UnitShard>& shards, cudaStream_t stream) {
  for (size_t u = 0; u < units.size(); ++u) {
    std::vector<float>& master = shards[u].master();
    CUDA_CHECK(cudaMemcpyAsync(master.data(), units[u].master, master.size() * sizeof(float), cudaMemcpyDeviceToHost,
                               stream));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace ragged::backend::gpu
