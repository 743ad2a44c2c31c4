#pragma once
// A GPU test fixture: skips (saying why) where no GPU is visible, otherwise
// gives each test a device with a 256 MiB arena, its compute stream, and
// copies to and from the device on that stream.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_device.hpp"

namespace ragged::backend::gpu::test {

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda_device_available(&why)) GTEST_SKIP() << "no GPU: " << why;
    device_ = std::make_unique<CudaDevice>(0, 256 << 20);
    stream_ = device_->stream(StreamKind::compute);
  }

  template <typename T>
  T* to_device(const std::vector<T>& host) {
    T* device = device_->arena().allocate_array<T>(static_cast<int64_t>(host.size()));
    CUDA_CHECK(cudaMemcpyAsync(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, stream_));
    return device;
  }

  template <typename T>
  std::vector<T> to_host(const T* device, size_t n) {
    std::vector<T> host(n);
    CUDA_CHECK(cudaMemcpyAsync(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    return host;
  }

  std::unique_ptr<CudaDevice> device_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace ragged::backend::gpu::test
