#pragma once
// The GPU workload test's harness: parameters uploaded in the configured
// dtype, one micro-batch forward and backward with each unit's buffers as
// small as a checkpointing mode allows, gradients read back as floats, and
// the host workload's result on the same parameters and batch.

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/gpu_workload.hpp"
#include "backend/cuda/host_reference.hpp"
#include "tests/backend/workload_test_helpers.hpp"

namespace ragged::backend::gpu::gpu_test {

using backend::test_util::ModelStore;
using models::Checkpointing;

using Floats = std::vector<std::vector<std::vector<float>>>;  // [unit][tensor][element]

struct Result {
  double loss = 0;
  Floats grads;
};

class GpuWorkloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda_device_available(&why)) GTEST_SKIP() << "no GPU: " << why;
    device_ = std::make_unique<CudaDevice>(0, size_t{1} << 30);
    stream_ = device_->stream(StreamKind::compute);
  }

  void* upload(const std::vector<float>& values, ElementType type) {
    void* out = device_->arena().allocate(values.size() * static_cast<size_t>(element_bytes(type)));
    if (type == ElementType::f32) {
      CUDA_CHECK(cudaMemcpy(out, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice));
    } else {
      std::vector<uint16_t> bits(values.size());
      for (size_t i = 0; i < values.size(); ++i) bits[i] = bf16_from_float(values[i]);
      CUDA_CHECK(cudaMemcpy(out, bits.data(), bits.size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
    }
    return out;
  }

  std::vector<float> download(const void* device, size_t count, ElementType type) {
    std::vector<float> out(count);
    if (type == ElementType::f32) {
      CUDA_CHECK(cudaMemcpy(out.data(), device, count * sizeof(float), cudaMemcpyDeviceToHost));
      return out;
    }
    std::vector<uint16_t> bits(count);
    CUDA_CHECK(cudaMemcpy(bits.data(), device, count * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; ++i) out[i] = float_from_bf16(bits[i]);
    return out;
  }

  // One micro-batch forward and backward, each unit's activation buffer and
  // workspace as small as `mode` allows. Parameters uploaded once per call.
  Result run(const ModelStore& store, GpuWorkload& work, const GpuWorkloadConfig& config, const Batch& batch,
             Checkpointing mode) {
    const models::ModelSpec& model = store.model;
    const int units = store.units();
    std::vector<std::vector<const void*>> params(static_cast<size_t>(units));
    std::vector<std::vector<void*>> grads(static_cast<size_t>(units));
    std::vector<std::byte*> saved(static_cast<size_t>(units));
    for (int u = 0; u < units; ++u) {
      for (const std::vector<float>& tensor : store.params[static_cast<size_t>(u)]) {
        params[static_cast<size_t>(u)].push_back(upload(tensor, config.params));
        grads[static_cast<size_t>(u)].push_back(
            device_->arena().allocate(tensor.size() * static_cast<size_t>(element_bytes(config.grads))));
      }
    }
    work.set_batch(batch);
    for (int u = 0; u < units; ++u) {
      const int64_t kept = gpu_unit_bytes(model, config, u).kept(mode);
      saved[static_cast<size_t>(u)] = static_cast<std::byte*>(device_->arena().allocate(static_cast<size_t>(kept)));
      work.forward(u, params[static_cast<size_t>(u)], saved[static_cast<size_t>(u)], kept);
    }
    for (int u = units - 1; u >= 0; --u) {
      const GpuUnitBytes need = gpu_unit_bytes(model, config, u);
      const int64_t bytes = need.rebuilt(mode) + need.workspace;
      void* workspace = device_->arena().allocate(static_cast<size_t>(bytes));
      work.recompute(u, params[static_cast<size_t>(u)], workspace, bytes);
      work.backward(u, params[static_cast<size_t>(u)], grads[static_cast<size_t>(u)], workspace, bytes);
    }
    return result_of(store, work.take_mean_loss(), grads, config.grads);
  }

  // The loss and every unit's gradients, read back as floats.
  Result result_of(const ModelStore& store, double loss, const std::vector<std::vector<void*>>& grads,
                   ElementType type) {
    Result result;
    result.loss = loss;
    for (size_t u = 0; u < grads.size(); ++u) {
      result.grads.emplace_back();
      for (size_t i = 0; i < grads[u].size(); ++i) {
        result.grads.back().push_back(download(grads[u][i], store.params[u][i].size(), type));
      }
    }
    return result;
  }

  Result run(const ModelStore& store, const GpuWorkloadConfig& config, const Batch& batch) {
    device_->arena().reset();
    GpuWorkload work(store.model, config, device_->cublas(), stream_, device_->arena());
    return run(store, work, config, batch, Checkpointing::kNone);
  }

  std::unique_ptr<CudaDevice> device_;
  cudaStream_t stream_ = nullptr;
};

inline Result host_result(ModelStore& store, const Batch& batch) {
  HostWorkload host(store.model, batch.sequences, batch.seq_len);
  store.zero_grads();
  host.set_batch(batch);
  Result result;
  result.loss = store.forward(host);
  store.backward(host);
  result.grads = store.grads;
  return result;
}

inline double relative_error(const std::vector<float>& gpu, const std::vector<float>& host) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < host.size(); ++i) {
    diff += std::pow(static_cast<double>(gpu[i]) - host[i], 2);
    norm += std::pow(static_cast<double>(host[i]), 2);
  }
  return norm == 0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

// Every gradient of `got` against `want`: bit for bit when `tolerance` is 0,
// else within that relative_error per tensor.
inline void expect_gradients(const Result& got, const Result& want, const models::ModelSpec& model, double tolerance) {
  for (size_t u = 0; u < want.grads.size(); ++u) {
    for (size_t i = 0; i < want.grads[u].size(); ++i) {
      if (tolerance == 0) {
        EXPECT_EQ(got.grads[u][i], want.grads[u][i]) << model.units[u].tensors[i].name;
      } else {
        EXPECT_LE(relative_error(got.grads[u][i], want.grads[u][i]), tolerance) << model.units[u].tensors[i].name;
      }
    }
  }
}

}  // namespace ragged::backend::gpu::gpu_test
