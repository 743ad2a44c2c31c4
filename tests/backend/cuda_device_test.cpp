// CudaDevice on a GPU: the arena carved from one cudaMalloc, named streams,
// events that order and time work, the cuBLAS handle. Skips without a GPU.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/kernels.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu {
namespace {

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda_device_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  }
};

TEST_F(CudaDeviceTest, ArenaCarvesOneAllocation) {
  CudaDevice device(0, 1 << 20);
  DeviceArena& arena = device.arena();
  ASSERT_NE(arena.base(), nullptr);
  float* a = arena.allocate_array<float>(1000);
  float* b = arena.allocate_array<float>(3);
  uint16_t* c = arena.allocate_array<uint16_t>(5);
  EXPECT_EQ(reinterpret_cast<std::byte*>(a), arena.base());
  EXPECT_EQ(reinterpret_cast<std::byte*>(b), arena.base() + 4096);  // 4000 bytes, aligned up to 256
  EXPECT_EQ(reinterpret_cast<std::byte*>(c), arena.base() + 4096 + 256);
  EXPECT_EQ(arena.used(), 4096u + 256 + 10);
  EXPECT_THROW(arena.allocate(1 << 20), InputError);
  arena.reset();
  EXPECT_EQ(arena.allocate_array<float>(1), a);
  EXPECT_EQ(arena.high_water_mark(), 4096u + 256 + 10);

  // The carved memory is real device memory: write and read it back.
  const cudaStream_t stream = device.stream(StreamKind::compute);
  fill(b, 3, 2.5f, stream);
  std::vector<float> host(3);
  CUDA_CHECK(cudaMemcpyAsync(host.data(), b, sizeof(float) * 3, cudaMemcpyDeviceToHost, stream));
  device.synchronize(StreamKind::compute);
  EXPECT_EQ(host, (std::vector<float>{2.5f, 2.5f, 2.5f}));
}

TEST_F(CudaDeviceTest, ReportsMemoryAndProperties) {
  CudaDevice device(0, 0);
  const MemoryInfo memory = device.memory_info();
  EXPECT_GT(memory.total_bytes, 0u);
  EXPECT_LE(memory.free_bytes, memory.total_bytes);
  EXPECT_FALSE(device.info().name.empty());
  EXPECT_GT(device.info().multiprocessors, 0);
  EXPECT_NE(device.cublas(), nullptr);
}

TEST_F(CudaDeviceTest, StreamsAreDistinctAndNamed) {
  CudaDevice device(0, 0);
  for (int i = 0; i < kStreamKinds; ++i) {
    for (int j = i + 1; j < kStreamKinds; ++j) {
      EXPECT_NE(device.stream(static_cast<StreamKind>(i)), device.stream(static_cast<StreamKind>(j)));
    }
  }
  EXPECT_EQ(stream_name(StreamKind::all_gather), "all-gather");
  EXPECT_EQ(stream_name(StreamKind::reduce_scatter), "reduce-scatter");
}

TEST_F(CudaDeviceTest, EventsOrderStreamsAndTime) {
  CudaDevice device(0, 96 << 20);
  const int64_t n = 8 << 20;
  float* x = device.arena().allocate_array<float>(n);
  float* y = device.arena().allocate_array<float>(n);
  const cudaStream_t compute = device.stream(StreamKind::compute);
  const cudaStream_t gather = device.stream(StreamKind::all_gather);
  CudaEvent start, end, ready(false);
  start.record(compute);
  fill(x, n, 3.0f, compute);
  end.record(compute);
  device.order(StreamKind::compute, StreamKind::all_gather, ready);
  copy(y, x, n, gather);  // must see the fill
  device.synchronize(StreamKind::all_gather);
  end.synchronize();
  EXPECT_GT(elapsed_seconds(start, end), 0.0);
  std::vector<float> host(static_cast<size_t>(n));
  CUDA_CHECK(cudaMemcpy(host.data(), y, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT_EQ(host.front(), 3.0f);
  EXPECT_EQ(host.back(), 3.0f);
}

TEST_F(CudaDeviceTest, FailedCallsNameFileLineAndCall) {
  CudaDevice device(0, 1 << 20);
  void* pointer = nullptr;
  try {
    CUDA_CHECK(cudaMalloc(&pointer, std::size_t{1} << 62));  // far more than any GPU has
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("cuda_device_test.cpp:"), std::string::npos) << message;
    EXPECT_NE(message.find("cudaMalloc(&pointer"), std::string::npos) << message;
    EXPECT_NE(message.find("failed:"), std::string::npos) << message;
  }
  CUDA_CHECK(cudaGetLastError());  // the failure was read when it was reported: nothing pending
  // and the next launch check is clean.
  fill(device.arena().allocate_array<float>(16), 16, 1.0f, device.stream(StreamKind::compute));
  device.synchronize(StreamKind::compute);
}

}  // namespace
}  // namespace ragged::backend::gpu
