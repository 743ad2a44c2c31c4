#pragma once
// The executor's collectives on device buffers: asynchronous NCCL calls on
// the stream of the Program op that issues them, in the buffer's element
// type. Each Program stream that carries collectives (all-gather,
// reduce-scatter, all-reduce) has its own NCCL communicator, split from one
// world communicator: operations on one communicator run one after another,
// so a single communicator would serialise the prefetching all-gather
// behind the reduce-scatter. Every rank issues each stream's collectives in
// the Program's order, so the communicators never disagree. The groups are
// the host's (backend/group_colors.hpp): the all-gather and reduce-scatter
// communicators span the rank's shard group, the all-reduce one its
// replicas, and under a mesh the tensor-parallel stream's its tp group (its
// exchanges of hidden states and the uncut weights' all-reduce), the
// context-parallel stream's its cp group and the expert-parallel stream's
// its ep group; the routed experts' units gather and reduce over their
// expert shard group (planner::Group::kExpertShard), through communicators
// of their own on the all-gather and reduce-scatter streams.
//
// The communicators are non-blocking (ncclConfig_t::blocking = 0), so that
// no NCCL call can hold the host while a peer is lost: a call that returns
// ncclInProgress is waited for with the collective watchdog's loop
// (collective_wait.hpp) for at most the timeout, and status() and abort()
// let the watchdog thread (collective_watcher.hpp) poll and end them.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <array>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "backend/collective_wait.hpp"
#include "backend/cuda/gpu_workload.hpp"
#include "backend/expert_rows.hpp"
#include "planner/program.hpp"

namespace ragged::backend::gpu {

class DeviceCollectives {
 public:
  // Receives the line naming a call that a lost peer held past the timeout
  // (after abort()); ends the job in real runs. If it returns, the call throws.
  using LostHandler = std::function<void(const std::string& line)>;

  // Joins the NCCL world (init_nccl_world) on the current device, in shard
  // groups of `shard_ranks` (the world when it is the world's size; with tp
  // or cp their groups too, as run_mesh places them). A call waits at most
  // `timeout_s` for NCCL (0: as long as it takes).
  DeviceCollectives(int64_t shard_ranks, double timeout_s, LostHandler on_lost, int64_t tp = 1, int64_t cp = 1,
                    int64_t ep = 1);
  ~DeviceCollectives();
  DeviceCollectives(const DeviceCollectives&) = delete;
  DeviceCollectives& operator=(const DeviceCollectives&) = delete;

  // Ends every NCCL operation of this rank at once (ncclCommAbort), so that a
  // rank failing alone does not leave its device waiting on peers while it
  // unwinds; the communicators are gone afterwards. Safe from another thread.
  void abort() noexcept;
  // What ncclCommGetAsyncError says of every communicator: kFailed (naming
  // NCCL's error) if one failed or they were aborted, kInProgress otherwise.
  // Safe from another thread.
  CommStatus status(std::string* error) const;

  int rank() const { return rank_; }  // in the world
  int size() const { return size_; }
  int shard_rank() const { return rank_in(planner::Stream::kAllGather); }
  int shard_size() const { return shard_size_; }
  // This rank's place in the group of the communicator of stream `on` (of
  // `group`: the shard group's, or the expert shard group's).
  int rank_in(planner::Stream on, planner::Group group = planner::Group::kShard) const;

  // In place as NCCL documents it: the all-gather's input is this rank's
  // slot buffer + rank_in(on) * count, the reduce-scatter's output that
  // slot. The all-reduce sums `count` elements at `buffer` over the group
  // of stream `on` (the replicas, or the tp group).
  void all_gather_in_place(void* buffer, int64_t count, ElementType type, planner::Stream on, cudaStream_t stream,
                           planner::Group group = planner::Group::kShard);
  void reduce_scatter_in_place(void* buffer, int64_t count, ElementType type, planner::Stream on, cudaStream_t stream,
                               planner::Group group = planner::Group::kShard);
  void all_reduce_in_place(void* buffer, int64_t count, ElementType type, planner::Stream on, cudaStream_t stream);
  // An all-to-all of uneven blocks over the group of stream `on` (the ep
  // group): one ncclSend per block of `sends` (rows from `send`, to its
  // peer, itself included) and one ncclRecv per block of `receives`, in one
  // NCCL group; between two ranks the blocks match in the order listed.
  // Empty blocks move nothing.
  void exchange_rows(const void* send, void* receive, int64_t row_elements, ElementType type,
                     const std::vector<RowBlock>& sends, const std::vector<RowBlock>& receives, planner::Stream on,
                     cudaStream_t stream);

 private:
  static size_t index_of(planner::Stream stream) { return static_cast<size_t>(stream); }
  ncclComm_t comm(planner::Stream on, planner::Group group = planner::Group::kShard) const;
  static size_t expert_index(planner::Stream on) { return on == planner::Stream::kAllGather ? 0 : 1; }
  // Waits until `comm` finished the call that returned `result` (a
  // non-blocking communicator's ncclInProgress); throws NCCL's error.
  void settle(ncclComm_t comm, ncclResult_t result, const char* call, const char* file, int line);
  void release() noexcept;
  // ncclCommGetAsyncError of `comm`, or ncclInvalidUsage once aborted.
  ncclResult_t async_state(ncclComm_t comm) const;

  double timeout_s_ = 0;
  LostHandler on_lost_;
  mutable std::mutex mutex_;  // abort() against the watchdog thread's status()
  bool aborted_ = false;
  ncclComm_t world_ = nullptr;
  std::array<ncclComm_t, planner::kStreams> per_stream_{};  // indexed by planner::Stream
  std::array<int, planner::kStreams> group_rank_{};          // this rank's place in each
  // Expert parallelism: the expert shard group's all-gather and reduce-scatter communicators.
  std::array<ncclComm_t, 2> expert_shard_{};
  std::array<int, 2> expert_shard_rank_{};
  int rank_ = 0;
  int size_ = 1;
  int shard_size_ = 1;
};

}  // namespace ragged::backend::gpu
