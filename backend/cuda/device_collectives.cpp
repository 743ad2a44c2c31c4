#include "backend/cuda/device_collectives.hpp"

#include <fmt/format.h>

#include <utility>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/nccl_communicator.hpp"
#include "backend/group_colors.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu {
namespace {

ncclDataType_t nccl_type(ElementType type) { return type == ElementType::bf16 ? ncclBfloat16 : ncclFloat32; }

// The pointer `elements` elements of `type` past `base`.
void* advance(void* base, int64_t elements, ElementType type) {
  return static_cast<std::byte*>(base) + elements * element_bytes(type);
}

}  // namespace

DeviceCollectives::DeviceCollectives(int64_t shard_ranks, double timeout_s, LostHandler on_lost, int64_t tp, int64_t cp)
    : timeout_s_(timeout_s), on_lost_(std::move(on_lost)) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const NcclWorld world = init_nccl_world(&config);
  world_ = world.comm;
  rank_ = world.rank;
  size_ = world.size;
  try {
    settle(world_, ncclInProgress, "ncclCommInitRankConfig", __FILE__, __LINE__);
    if (shard_ranks < 1 || tp < 1 || cp < 1 || size_ % (shard_ranks * tp) != 0 || shard_ranks % cp != 0) {
      throw InputError(fmt::format("training.shard_group_size: {} (with tp {}, cp {}) does not divide the {} NCCL ranks",
                                   shard_ranks, tp, cp, size_));
    }
    shard_size_ = static_cast<int>(shard_ranks);
    const GroupColors colors = group_colors(rank_, run_mesh(size_, shard_ranks, tp, cp));
    // key = rank: every communicator numbers its ranks in world order. A
    // split inherits the world's non-blocking configuration.
    const auto split = [&](planner::Stream stream, int color) {
      ncclComm_t& part = per_stream_[index_of(stream)];
      settle(world_, ncclCommSplit(world_, color, rank_, &part, nullptr), "ncclCommSplit", __FILE__, __LINE__);
      settle(part, ncclInProgress, "ncclCommSplit", __FILE__, __LINE__);
      NCCL_CHECK(ncclCommUserRank(part, &group_rank_[index_of(stream)]));
    };
    split(planner::Stream::kAllGather, colors.shard);
    split(planner::Stream::kReduceScatter, colors.shard);
    split(planner::Stream::kAllReduce, colors.replicas);
    // Every rank splits alike (ncclCommSplit is collective over the world).
    if (tp > 1) split(planner::Stream::kTensorParallel, colors.tensor);
    if (cp > 1) split(planner::Stream::kContextParallel, colors.context);
  } catch (...) {
    release();
    throw;
  }
}

DeviceCollectives::~DeviceCollectives() { release(); }

void DeviceCollectives::release() noexcept {
  const std::lock_guard lock(mutex_);
  for (ncclComm_t& c : per_stream_) {
    if (c != nullptr) ncclCommDestroy(c);  // no throwing from a destructor
    c = nullptr;
  }
  if (world_ != nullptr) ncclCommDestroy(world_);
  world_ = nullptr;
}

void DeviceCollectives::abort() noexcept {
  const std::lock_guard lock(mutex_);
  aborted_ = true;
  for (ncclComm_t& c : per_stream_) {
    if (c != nullptr) ncclCommAbort(c);
    c = nullptr;
  }
  if (world_ != nullptr) ncclCommAbort(world_);
  world_ = nullptr;
}

ncclResult_t DeviceCollectives::async_state(ncclComm_t comm) const {
  const std::lock_guard lock(mutex_);
  if (aborted_ || comm == nullptr) return ncclInvalidUsage;
  ncclResult_t state = ncclSuccess;
  const ncclResult_t asked = ncclCommGetAsyncError(comm, &state);
  return asked == ncclSuccess ? state : asked;
}

CommStatus DeviceCollectives::status(std::string* error) const {
  std::array<ncclComm_t, planner::kStreams> comms{};
  {
    const std::lock_guard lock(mutex_);
    if (aborted_) {
      *error = "the NCCL communicators were aborted";
      return CommStatus::kFailed;
    }
    comms = per_stream_;
    comms[0] = world_;  // index 0 is the compute stream, which has no communicator
  }
  for (ncclComm_t c : comms) {
    if (c == nullptr) continue;
    const ncclResult_t state = async_state(c);
    if (state != ncclSuccess && state != ncclInProgress) {
      *error = ncclGetErrorString(state);
      return CommStatus::kFailed;
    }
  }
  return CommStatus::kInProgress;
}

void DeviceCollectives::settle(ncclComm_t comm, ncclResult_t result, const char* call, const char* file, int line) {
  if (result != ncclSuccess && result != ncclInProgress) throw_nccl_error(call, file, line, static_cast<int>(result));
  const CollectiveProbe probe{[&] { return async_state(comm) == ncclSuccess; },
                              [this](std::string* error) { return status(error); }, [this] { abort(); }};
  const WaitResult waited = wait_for_collective(probe, timeout_s_, system_wait_clock());
  if (waited.outcome == WaitOutcome::kCompleted) return;
  std::string name(call);
  name = "NCCL's " + name.substr(0, name.find('('));
  const std::string message = lost_collective_message(waited, rank_, name, timeout_s_);
  if (on_lost_) on_lost_(message);
  throw InternalError(message);
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
  const ncclComm_t c = comm(on);
  settle(c,
         ncclAllGather(advance(buffer, rank_in(on) * count, type), buffer, static_cast<size_t>(count), nccl_type(type),
                       c, stream),
         "ncclAllGather", __FILE__, __LINE__);
}

void DeviceCollectives::reduce_scatter_in_place(void* buffer, int64_t count, ElementType type, planner::Stream on,
                                                cudaStream_t stream) {
  RAGGED_ASSERT(count >= 0, "reduce_scatter_in_place: negative count");
  if (count == 0) return;
  const ncclComm_t c = comm(on);
  settle(c,
         ncclReduceScatter(buffer, advance(buffer, rank_in(on) * count, type), static_cast<size_t>(count),
                           nccl_type(type), ncclSum, c, stream),
         "ncclReduceScatter", __FILE__, __LINE__);
}

void DeviceCollectives::all_reduce_in_place(void* buffer, int64_t count, ElementType type, planner::Stream on,
                                            cudaStream_t stream) {
  RAGGED_ASSERT(count >= 0, "all_reduce_in_place: negative count");
  if (count == 0) return;
  const ncclComm_t c = comm(on);
  settle(c, ncclAllReduce(buffer, buffer, static_cast<size_t>(count), nccl_type(type), ncclSum, c, stream),
         "ncclAllReduce", __FILE__, __LINE__);
}

}  // namespace ragged::backend::gpu
