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

DeviceCollectives::DeviceCollectives(int64_t shard_ranks, double timeout_s, LostHandler on_lost, int64_t tp, int64_t cp,
                                     int64_t ep)
    : timeout_s_(timeout_s), on_lost_(std::move(on_lost)) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const NcclWorld world = init_nccl_world(&config);
  world_ = world.comm;
  rank_ = world.rank;
  size_ = world.size;
  try {
    settle(world_, ncclInProgress, "ncclCommInitRankConfig", __FILE__, __LINE__);
    if (shard_ranks < 1 || tp < 1 || cp < 1 || ep < 1 || size_ % (shard_ranks * tp) != 0 || shard_ranks % cp != 0 ||
        shard_ranks % ep != 0) {
      throw InputError(
          fmt::format("training.shard_group_size: {} (with tp {}, cp {}, ep {}) does not divide the {} "
                      "NCCL ranks",
                      shard_ranks, tp, cp, ep, size_));
    }
    shard_size_ = static_cast<int>(shard_ranks);
    const GroupColors colors = group_colors(rank_, run_mesh(size_, shard_ranks, tp, cp, ep));
    // key = rank: every communicator numbers its ranks in world order. A
    // split inherits the world's non-blocking configuration.
    const auto split = [&](int color, ncclComm_t& part, int& group_rank) {
      settle(world_, ncclCommSplit(world_, color, rank_, &part, nullptr), "ncclCommSplit", __FILE__, __LINE__);
      settle(part, ncclInProgress, "ncclCommSplit", __FILE__, __LINE__);
      NCCL_CHECK(ncclCommUserRank(part, &group_rank));
    };
    const auto split_stream = [&](planner::Stream stream, int color) {
      split(color, per_stream_[index_of(stream)], group_rank_[index_of(stream)]);
    };
    split_stream(planner::Stream::kAllGather, colors.shard);
    split_stream(planner::Stream::kReduceScatter, colors.shard);
    split_stream(planner::Stream::kAllReduce, colors.replicas);
    // Every rank splits alike (ncclCommSplit is collective over the world).
    if (tp > 1) split_stream(planner::Stream::kTensorParallel, colors.tensor);
    if (cp > 1) split_stream(planner::Stream::kContextParallel, colors.context);
    if (ep > 1) {
      split_stream(planner::Stream::kExpertParallel, colors.expert);
      for (planner::Stream on : {planner::Stream::kAllGather, planner::Stream::kReduceScatter}) {
        split(colors.expert_shard, expert_shard_[expert_index(on)], expert_shard_rank_[expert_index(on)]);
      }
    }
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
  for (ncclComm_t& c : expert_shard_) {
    if (c != nullptr) ncclCommDestroy(c);
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
  for (ncclComm_t& c : expert_shard_) {
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
  std::vector<ncclComm_t> comms;
  {
    const std::lock_guard lock(mutex_);
    if (aborted_) {
      *error = "the NCCL communicators were aborted";
      return CommStatus::kFailed;
    }
    comms.assign(per_stream_.begin(), per_stream_.end());
    comms[0] = world_;  // index 0 is the compute stream, which has no communicator
    comms.insert(comms.end(), expert_shard_.begin(), expert_shard_.end());
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

namespace {

bool of_expert_shards(planner::Stream on, planner::Group group) {
  if (group != planner::Group::kExpertShard) return false;
  RAGGED_ASSERT(on == planner::Stream::kAllGather || on == planner::Stream::kReduceScatter,
                "the expert shard group gathers and reduce-scatters only");
  return true;
}

}  // namespace

int DeviceCollectives::rank_in(planner::Stream on, planner::Group group) const {
  return of_expert_shards(on, group) ? expert_shard_rank_[expert_index(on)] : group_rank_[index_of(on)];
}

ncclComm_t DeviceCollectives::comm(planner::Stream on, planner::Group group) const {
  ncclComm_t c = of_expert_shards(on, group) ? expert_shard_[expert_index(on)] : per_stream_[index_of(on)];
  RAGGED_ASSERT(c != nullptr, fmt::format("no NCCL communicator for the {} stream of the {} group",
                                          planner::stream_name(on), planner::group_name(group)));
  return c;
}

void DeviceCollectives::all_gather_in_place(void* buffer, int64_t count, ElementType type, planner::Stream on,
                                            cudaStream_t stream, planner::Group group) {
  RAGGED_ASSERT(count >= 0, "all_gather_in_place: negative count");
  if (count == 0) return;
  const ncclComm_t c = comm(on, group);
  settle(c,
         ncclAllGather(advance(buffer, rank_in(on, group) * count, type), buffer, static_cast<size_t>(count),
                       nccl_type(type), c, stream),
         "ncclAllGather", __FILE__, __LINE__);
}

void DeviceCollectives::reduce_scatter_in_place(void* buffer, int64_t count, ElementType type, planner::Stream on,
                                                cudaStream_t stream, planner::Group group) {
  RAGGED_ASSERT(count >= 0, "reduce_scatter_in_place: negative count");
  if (count == 0) return;
  const ncclComm_t c = comm(on, group);
  settle(c,
         ncclReduceScatter(buffer, advance(buffer, rank_in(on, group) * count, type), static_cast<size_t>(count),
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

void DeviceCollectives::exchange_rows(const void* send, void* receive, int64_t row_elements, ElementType type,
                                      const std::vector<RowBlock>& sends, const std::vector<RowBlock>& receives,
                                      planner::Stream on, cudaStream_t stream) {
  const ncclComm_t c = comm(on);
  const int64_t row_bytes = row_elements * element_bytes(type);
  // A non-blocking communicator may answer ncclInProgress at the group's end only.
  NCCL_CHECK(ncclGroupStart());
  for (const RowBlock& b : sends) {
    if (b.rows == 0) continue;
    NCCL_CHECK(ncclSend(static_cast<const std::byte*>(send) + b.first * row_bytes,
                        static_cast<size_t>(b.rows * row_elements), nccl_type(type), b.peer, c, stream));
  }
  for (const RowBlock& b : receives) {
    if (b.rows == 0) continue;
    NCCL_CHECK(ncclRecv(static_cast<std::byte*>(receive) + b.first * row_bytes,
                        static_cast<size_t>(b.rows * row_elements), nccl_type(type), b.peer, c, stream));
  }
  settle(c, ncclGroupEnd(), "ncclGroupEnd(ncclSend/ncclRecv)", __FILE__, __LINE__);
}

}  // namespace ragged::backend::gpu
