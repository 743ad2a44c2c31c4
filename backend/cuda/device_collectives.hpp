#pragma once
// The executor's collectives on device buffers: asynchronous NCCL calls on
// the stream of the Program op that issues them, in the buffer's element
// type. Each Program stream that carries collectives (all-gather,
// reduce-scatter, all-reduce) has its own NCCL communicator, split from one
// world communicator: operations on one communicator run one after another,
// so a single communicator would serialise the prefetching all-gather
// behind the reduce-scatter. Every rank issues each stream's collectives in
// the Program's order, so the communicators never disagree.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <array>
#include <cstdint>

#include "backend/cuda/gpu_workload.hpp"
#include "planner/program.hpp"

namespace ragged::backend::gpu {

class DeviceCollectives {
 public:
  // Joins the NCCL world (init_nccl_world) on the current device.
  DeviceCollectives();
  ~DeviceCollectives();
  DeviceCollectives(const DeviceCollectives&) = delete;
  DeviceCollectives& operator=(const DeviceCollectives&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // In place as NCCL documents it: the all-gather's input is this rank's
  // slot buffer + rank * count, the reduce-scatter's output that slot.
  void all_gather_in_place(void* buffer, int64_t count, ElementType type, planner::Stream on, cudaStream_t stream);
  void reduce_scatter_in_place(void* buffer, int64_t count, ElementType type, planner::Stream on,
                               cudaStream_t stream);
  void all_reduce_in_place(void* buffer, int64_t count, ElementType type, planner::Stream on, cudaStream_t stream);

 private:
  ncclComm_t comm(planner::Stream on) const;

  ncclComm_t world_ = nullptr;
  std::array<ncclComm_t, 4> per_stream_{};  // indexed by planner::Stream
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace ragged::backend::gpu
