// One GPU: arena, named streams, events, cuBLAS handle. Every call is checked
// (cuda_check.hpp); destructors release without throwing.

#include "backend/cuda/cuda_device.hpp"

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "backend/cuda/cuda_check.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu {

std::string_view stream_name(StreamKind kind) {
  switch (kind) {
    case StreamKind::compute:
      return "compute";
    case StreamKind::all_gather:
      return "all-gather";
    case StreamKind::reduce_scatter:
      return "reduce-scatter";
    case StreamKind::all_reduce:
      return "all-reduce";
    case StreamKind::tensor_parallel:
      return "tensor-parallel";
    case StreamKind::context_parallel:
      return "context-parallel";
    case StreamKind::expert_parallel:
      return "expert-parallel";
  }
  return "unknown";
}

CudaEvent::CudaEvent(bool timing) {
  CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}

CudaEvent::~CudaEvent() {
  if (event_ != nullptr) cudaEventDestroy(event_);
}

void CudaEvent::record(cudaStream_t stream) { CUDA_CHECK(cudaEventRecord(event_, stream)); }
void CudaEvent::wait_on(cudaStream_t stream) const { CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0)); }
void CudaEvent::synchronize() const { CUDA_CHECK(cudaEventSynchronize(event_)); }

double elapsed_seconds(const CudaEvent& start, const CudaEvent& end) {
  float milliseconds = 0;
  CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start.get(), end.get()));
  return static_cast<double>(milliseconds) * 1e-3;
}

DeviceInfo query_device(int ordinal) {
  DeviceInfo info;
  info.ordinal = ordinal;
  cudaDeviceProp properties{};
  CUDA_CHECK(cudaGetDeviceProperties(&properties, ordinal));
  info.name = properties.name;
  info.compute_major = properties.major;
  info.compute_minor = properties.minor;
  info.multiprocessors = properties.multiProcessorCount;
  info.l2_bytes = static_cast<std::size_t>(properties.l2CacheSize);
  info.total_memory_bytes = properties.totalGlobalMem;
  int memory_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&memory_khz, cudaDevAttrMemoryClockRate, ordinal) == cudaSuccess &&
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, ordinal) == cudaSuccess) {
    // Double data rate: two transfers per clock over the whole bus.
    info.dram_bytes_per_s = 2.0 * memory_khz * 1e3 * bus_bits / 8.0;
  } else {
    cudaGetLastError();  // an attribute a device does not report is not an error of the caller
  }
  return info;
}

int default_device_ordinal() {
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  if (count <= 0) throw InternalError("default_device_ordinal: no CUDA device");
  for (const char* variable : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    const char* text = std::getenv(variable);
    if (text == nullptr) continue;
    const std::string_view view(text);
    int local_rank = 0;
    const auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), local_rank);
    if (error == std::errc() && end == view.data() + view.size() && local_rank >= 0) return local_rank % count;
  }
  return 0;
}

CudaDevice::CudaDevice(int ordinal, std::size_t arena_bytes) {
  try {
    info_ = query_device(ordinal);
    CUDA_CHECK(cudaSetDevice(ordinal));
    for (cudaStream_t& stream : streams_) CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&cublas_));
    // No TF32 unless a GEMM asks for it by its compute type (gemm.hpp).
    CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
    CUBLAS_CHECK(cublasSetStream(cublas_, stream(StreamKind::compute)));
    arena_ = std::make_unique<DeviceArena>(arena_bytes);
  } catch (...) {
    release();
    throw;
  }
}

CudaDevice::~CudaDevice() { release(); }

void CudaDevice::release() noexcept {
  arena_.reset();
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  cublas_ = nullptr;
  for (cudaStream_t& stream : streams_) {
    if (stream != nullptr) cudaStreamDestroy(stream);
    stream = nullptr;
  }
}

MemoryInfo device_memory(int ordinal) {
  CUDA_CHECK(cudaSetDevice(ordinal));
  MemoryInfo memory;
  CUDA_CHECK(cudaMemGetInfo(&memory.free_bytes, &memory.total_bytes));
  return memory;
}

MemoryInfo CudaDevice::memory_info() const {
  MemoryInfo memory;
  CUDA_CHECK(cudaMemGetInfo(&memory.free_bytes, &memory.total_bytes));
  return memory;
}

void CudaDevice::order(StreamKind producer, StreamKind waiter, CudaEvent& event) {
  event.record(stream(producer));
  event.wait_on(stream(waiter));
}

void CudaDevice::synchronize(StreamKind kind) const { CUDA_CHECK(cudaStreamSynchronize(stream(kind))); }
void CudaDevice::synchronize() const { CUDA_CHECK(cudaDeviceSynchronize()); }

}  // namespace ragged::backend::gpu
