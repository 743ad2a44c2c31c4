#pragma once
// One GPU of a run: its arena, its named streams, a cuBLAS handle, and CUDA
// events to order and time work across streams. The Program's streams map
// one to one onto CUDA streams; a dependency across streams is an event
// recorded on one and waited on by the other.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "backend/cuda/device_arena.hpp"

namespace ragged::backend::gpu {

// The mesh's streams carry a rank's tp and cp exchanges (docs/MESH.md).
enum class StreamKind {
  compute,
  all_gather,
  reduce_scatter,
  all_reduce,
  tensor_parallel,
  context_parallel,
  expert_parallel
};
inline constexpr int kStreamKinds = 7;
std::string_view stream_name(StreamKind kind);  // "compute", "all-gather", ...

struct MemoryInfo {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
};

// A CUDA event, destroyed with its owner. Timing events measure; others
// only order work (cheaper to record and wait on).
class CudaEvent {
 public:
  explicit CudaEvent(bool timing = true);
  ~CudaEvent();
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  void record(cudaStream_t stream);
  // Work issued to `stream` after this call waits for the recorded work.
  void wait_on(cudaStream_t stream) const;
  void synchronize() const;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Seconds between two recorded timing events (the end must have completed;
// call end.synchronize() first).
double elapsed_seconds(const CudaEvent& start, const CudaEvent& end);

struct DeviceInfo {
  int ordinal = 0;
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;
  std::size_t l2_bytes = 0;
  std::size_t total_memory_bytes = 0;
  // Theoretical DRAM bandwidth from the memory clock and bus width (0 when
  // the device does not report them).
  double dram_bytes_per_s = 0;
};

// Properties of device `ordinal`; throws InternalError when it does not exist.
DeviceInfo query_device(int ordinal);

// Free and total memory of device `ordinal` (makes it the current device).
MemoryInfo device_memory(int ordinal);

// The device a rank should use: its node-local rank (from the MPI launcher's
// environment: OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID)
// modulo the visible devices, 0 without a launcher.
int default_device_ordinal();

class CudaDevice {
 public:
  // Makes `ordinal` the current device of this thread and allocates an
  // arena of `arena_bytes`.
  CudaDevice(int ordinal, std::size_t arena_bytes);
  ~CudaDevice();
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  const DeviceInfo& info() const { return info_; }
  DeviceArena& arena() { return *arena_; }
  // cudaMemGetInfo of the current device.
  MemoryInfo memory_info() const;

  cudaStream_t stream(StreamKind kind) const { return streams_[static_cast<std::size_t>(kind)]; }
  cublasHandle_t cublas() const { return cublas_; }

  // `waiter` runs what is issued to it next only after the work issued to
  // `producer` so far: an event recorded on one, waited on by the other.
  void order(StreamKind producer, StreamKind waiter, CudaEvent& event);
  void synchronize(StreamKind kind) const;
  void synchronize() const;  // the whole device

 private:
  void release() noexcept;

  DeviceInfo info_;
  std::array<cudaStream_t, kStreamKinds> streams_{};
  cublasHandle_t cublas_ = nullptr;
  std::unique_ptr<DeviceArena> arena_;
};

}  // namespace ragged::backend::gpu
