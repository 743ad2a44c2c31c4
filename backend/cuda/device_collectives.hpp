#pragma once
// The executor's collectives on device buffers: asynchronous NCCL calls on
// the stream of the Program op that issues them, in the buffer's element
// type. Each Program stream that carries collectives (all-gather,
// reduce-scatter, all-reduce) has its own NCCL communicator, split from one
// world communicator: operations on one communicator run one after another,
// so a single communicator would serialise the prefetching all-gather
// behind the reduce-scatter. Every rank issues each stream's collectives in
// the Program's order, so the communicators never disagree. Under HSDP the
// all-gather and reduce-scatter communicators span the rank's shard group
// (consecutive ranks, as backend/rank_groups.hpp numbers them) and the
// all-reduce one its replicas.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <array>
#include <cstdint>

#include "backend/cuda/gpu_workload.hpp"
#include "planner/program.hpp"

namespace ragged::backend::gpu {

class DeviceCollectives {
 public:
  // Joins the NCCL world (init_nccl_world) on the current device, in shard
  // groups of `shard_ranks` (the world when it is the world's size).
  explicit DeviceCollectives(int64_t shard_ranks);
  ~DeviceCollectives();
  DeviceCollectives(const DeviceCollectives&) = delete;
  DeviceCollectives& operator=(const DeviceCollectives&) = delete;

  // Ends every NCCL operation of this rank at once (ncclCommAbort), so that a
  // rank failing alone does not leave its device waiting on peers while it
  // unwinds; the communicators are gone afterwards.
  void abort() noexcept;

  int rank() const { return rank_; }  // in the world
  int size() const { return size_; }
  int shard_rank() const { return shard_rank_; }
  int shard_size() const { return shard_size_; }

  // In place as NCCL documents it: the all-gather's input is this rank's
  // slot buffer + shard_rank() * count, the reduce-scatter's output that
  // slot. The all-reduce sums `count` elements at `buffer` over the replicas.
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
  int shard_rank_ = 0;
  int shard_size_ = 1;
};

}  // namespace ragged::backend::gpu
