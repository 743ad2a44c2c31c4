// The NCCL communicator on one rank and one GPU (skipped without a GPU):
// every collective in place on device buffers. With one rank each collective
// leaves the buffer as it was, which is what NCCL's in-place forms promise.

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/host_reference.hpp"
#include "backend/cuda/kernels.hpp"
#include "backend/cuda/nccl_communicator.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu {
namespace {

class CudaNcclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda_device_available(&why)) GTEST_SKIP() << "no GPU: " << why;
    if (launched_by_mpi()) GTEST_SKIP() << "one-rank NCCL tests: run without mpirun";
    device_ = std::make_unique<CudaDevice>(0, 16 << 20);
    comm_ = make_nccl_communicator(device_->stream(StreamKind::all_gather));
  }

  float* upload(const std::vector<float>& host) {
    float* device = device_->arena().allocate_array<float>(static_cast<int64_t>(host.size()));
    CUDA_CHECK(cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
    return device;
  }

  std::vector<float> download(const float* device, size_t n) {
    std::vector<float> host(n);
    CUDA_CHECK(cudaMemcpy(host.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost));
    return host;
  }

  std::unique_ptr<CudaDevice> device_;
  std::unique_ptr<Communicator> comm_;
  std::mt19937_64 rng_{std::random_device{}()};
};

TEST_F(CudaNcclTest, IsOneRank) {
  EXPECT_EQ(comm_->rank(), 0);
  EXPECT_EQ(comm_->size(), 1);
  EXPECT_EQ(comm_->name(), "nccl");
  comm_->barrier();
  EXPECT_EQ(comm_->sum(2.5), 2.5);
}

TEST_F(CudaNcclTest, CollectivesInPlaceKeepTheSlot) {
  const std::vector<float> original = random_vector(4099, rng_);
  float* buffer = upload(original);
  comm_->all_gather_in_place(buffer, 4099);
  EXPECT_EQ(download(buffer, original.size()), original);
  comm_->reduce_scatter_in_place(buffer, 4099);
  EXPECT_EQ(download(buffer, original.size()), original);
  comm_->all_reduce_in_place(buffer, 4099);
  EXPECT_EQ(download(buffer, original.size()), original);
  comm_->set_ordered_reductions(true);
  comm_->reduce_scatter_in_place(buffer, 4099);
  EXPECT_EQ(download(buffer, original.size()), original);
  comm_->all_gather_in_place(nullptr, 0);  // empty slots need no buffer
  EXPECT_THROW(comm_->all_reduce_in_place(buffer, -1), InternalError);
}

TEST_F(CudaNcclTest, AllToAllCopiesWithDisplacements) {
  const std::vector<float> send = {9, 9, 1, 2, 3, 9};
  const float* dsend = upload(send);
  float* drecv = upload(std::vector<float>(5, 0.0f));
  const std::vector<int64_t> counts = {3}, send_displs = {2}, recv_displs = {1};
  comm_->all_to_all_v(dsend, counts, send_displs, drecv, counts, recv_displs);
  EXPECT_EQ(download(drecv, 5), (std::vector<float>{0, 1, 2, 3, 0}));
  const std::vector<int64_t> two = {2, 2};
  EXPECT_THROW(comm_->all_to_all_v(dsend, two, two, drecv, two, two), InternalError);
}

}  // namespace
}  // namespace ragged::backend::gpu
