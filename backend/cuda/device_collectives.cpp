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

DeviceCollectives::DeviceCollectives() {
  const NcclWorld world = init_nccl_world();
  world_ = world.comm;
  rank_ = world.rank;
  size_ = world.size;
  try {
    for (planner::Stream s : {planner::Stream::kAllGather, planner::Stream::kReduceScatter, planner::Stream::kAllReduce}) {
      // Same color everywhere, key = rank: every communicator spans the world in rank order.
      NCCL_CHECK(ncclCommSplit(world_, 0, rank_, &per_stream_[index_of(s)], nullptr));
    }
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

ncclComm_t DeviceCollectives::comm(planner::Stream on) const {
  ncclComm_t c = per_stream_[index_of(on)];
  RAGGED_ASSERT(c != nullptr, fmt::format("no NCCL communicator for the {} stream", planner::stream_name(on)));
  return c;
}

void DeviceCollectives::all_gather_in_place(void* buffer, int64_t count, ElementType type, planner::Stream on,
                                            cudaStream_t stream) {
  RAGGED_ASSERT(count >= 0, "all_gather_in_place: negative count");
  if (count == 0) return;
  NCCL_CHECK(ncclAllGather(advance(buffer, rank_ * count, type), buffer, static_cast<size_t>(count), nccl_type(type),
                           comm(on), stream));
}

void DeviceCollectives::reduce_scatter_in_place(void* buffer, int64_t count, ElementType type, planner::Stream on,
                                                cudaStream_t stream) {
  RAGGED_ASSERT(count >= 0, "reduce_scatter_in_place: negative count");
  if (count == 0) return;
  NCCL_CHECK(ncclReduceScatter(buffer, advance(buffer, rank_ * count, type), static_cast<size_t>(count),
                               nccl_type(type), ncclSum, comm(on), stream));
}

void DeviceCollectives::all_reduce_in_place(void* buffer, int64_t count, ElementType type, planner::Stream on,
                                            cudaStream_t stream) {
  RAGGED_ASSERT(count >= 0, "all_reduce_in_place: negative count");
  if (count == 0) return;
  NCCL_CHECK(ncclAllReduce(buffer, buffer, static_cast<size_t>(count), nccl_type(type), ncclSum, comm(on), stream));
}

}  // namespace ragged::backend::gpu
