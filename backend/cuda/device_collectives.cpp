#include "backend/cuda/device_collectives.hpp"

#include <fmt/format.h>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/nccl_communicator.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu {
namespace {

ncclDataType_t nccl_type(ElementType type) { return type == ElementType::bf16 ? ncclBfloat16 : ncclFloat32; }

size_t index_of(planner::Stream stream) { return static_cast<size_t>(stream); }

// The pointer `elements` elements of `type` past `base`.
void* advance(void* base, int64_t elements, ElementType type) {
  return static_cast<std::byte*>(base) + elements * element_bytes(type);
}

}  // namespace

DeviceCollectives::DeviceCollectives(int64_t shard_ranks) {
  const NcclWorld world = init_nccl_world();
  world_ = world.comm;
  rank_ = world.rank;
  size_ = world.size;
  try {
    if (shard_ranks < 1 || size_ % shard_ranks != 0) {
      throw InputError(fmt::format("training.shard_group_size: {} does not divide the {} NCCL ranks", shard_ranks, size_));
    }
    shard_size_ = static_cast<int>(shard_ranks);
    shard_rank_ = rank_ % shard_size_;
    // key = rank: every communicator numbers its ranks in world order.
    const int shard_group = rank_ / shard_size_, replica_group = shard_rank_;
    NCCL_CHECK(ncclCommSplit(world_, shard_group, rank_, &per_stream_[index_of(planner::Stream::kAllGather)], nullptr));
    NCCL_CHECK(
        ncclCommSplit(world_, shard_group, rank_, &per_stream_[index_of(planner::Stream::kReduceScatter)], nullptr));
    NCCL_CHECK(
        ncclCommSplit(world_, replica_group, rank_, &per_stream_[index_of(planner::Stream::kAllReduce)], nullptr));
  } catch (...) {
    for (ncclComm_t& c : per_stream_) {
      if (c != nullptr) ncclCommDestroy(c);
    }
    ncclCommDestroy(world_);
    throw;
  }
}

DeviceCollectives::~DeviceCollectives() {
  for (ncclComm_t c : per_stream_) {
    if (c != nullptr) ncclCommDestroy(c);  // no throwing from a destructor
  }
  if (world_ != nullptr) ncclCommDestroy(world_);
}

void DeviceCollectives::abort() noexcept {
  for (ncclComm_t& c : per_stream_) {
    if (c != nullptr) ncclCommAbort(c);
    c = nullptr;
  }
  if (world_ != nullptr) ncclCommAbort(world_);
  world_ = nullptr;
}

ncclComm_t DeviceCollectives::comm(planner::Stream on) const {
  ncclComm_t c = per_stream_[index_of(on)];
  RAGGED_ASSERT(c != nullptr, fmt::format("no NCCL communicator for the {} stream", planner::stream_name(on)));
  return c;
}

void DeviceCollectives::all_gather_in_place(void* buffer, int64_t count, ElementType type, planner::Stream on,
                                            cudaStream_t stream) {
  RAGGED_ASSERT(count >= 0, "all_gather_in_place: negative count");
  if (count == 0) return;
  NCCL_CHECK(ncclAllGather(advance(buffer, shard_rank_ * count, type), buffer, static_cast<size_t>(count), nccl_type(type),
                           comm(on), stream));
}

void DeviceCollectives::reduce_scatter_in_place(void* buffer, int64_t count, ElementType type, planner::Stream on,
                                                cudaStream_t stream) {
  RAGGED_ASSERT(count >= 0, "reduce_scatter_in_place: negative count");
  if (count == 0) return;
  NCCL_CHECK(ncclReduceScatter(buffer, advance(buffer, shard_rank_ * count, type), static_cast<size_t>(count),
                               nccl_type(type), ncclSum, comm(on), stream));
}

void DeviceCollectives::all_reduce_in_place(void* buffer, int64_t count, ElementType type, planner::Stream on,
                                            cudaStream_t stream) {
  RAGGED_ASSERT(count >= 0, "all_reduce_in_place: negative count");
  if (count == 0) return;
  NCCL_CHECK(ncclAllReduce(buffer, buffer, static_cast<size_t>(count), nccl_type(type), ncclSum, comm(on), stream));
}

}  // namespace ragged::backend::gpu
