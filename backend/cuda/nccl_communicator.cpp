// The NCCL communicator (nccl_communicator.hpp). In-place collectives as NCCL
// documents them: all-gather with sendbuff = buffer + rank * count and
// recvbuff = buffer; reduce-scatter with sendbuff = buffer and recvbuff =
// buffer + rank * count. All-to-all is a group of ncclSend/ncclRecv, one
// pair per peer. Every NCCL, CUDA and MPI call is checked.
//
// MPI only carries the NCCL unique id from rank 0 to the others
// (init_nccl_world) and ends the job in abort(); <mpi.h> is included in this
// file alone.

#include "backend/cuda/nccl_communicator.hpp"

#include <fmt/format.h>
#include <nccl.h>

#include <cstdlib>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/kernels.hpp"
#include "common/errors.hpp"

#ifdef RAGGED_HAVE_MPI
#include "backend/mpi_check.hpp"
#endif

namespace ragged::backend::gpu {
namespace {

// An NCCL group that is always closed, also when a call inside it throws.
class NcclGroup {
 public:
  NcclGroup() { NCCL_CHECK(ncclGroupStart()); }
  ~NcclGroup() {
    if (open_) ncclGroupEnd();  // no throwing from a destructor
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
  void end() {
    open_ = false;
    NCCL_CHECK(ncclGroupEnd());
  }

 private:
  bool open_ = true;
};

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(cudaStream_t stream) : stream_(stream) {
    const NcclWorld world = init_nccl_world();
    comm_ = world.comm;
    rank_ = world.rank;
    size_ = world.size;
    under_mpi_ = world.under_mpi;
    try {
      CUDA_CHECK(cudaMalloc(&scalar_, sizeof(double)));
    } catch (...) {
      release();
      throw;
    }
  }
  // Takes ownership of `comm`, a communicator ncclCommSplit made.
  NcclCommunicator(ncclComm_t comm, cudaStream_t stream, bool under_mpi)
      : stream_(stream), comm_(comm), under_mpi_(under_mpi) {
    try {
      NCCL_CHECK(ncclCommUserRank(comm_, &rank_));
      NCCL_CHECK(ncclCommCount(comm_, &size_));
      CUDA_CHECK(cudaMalloc(&scalar_, sizeof(double)));
    } catch (...) {
      release();
      throw;
    }
  }
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;
  ~NcclCommunicator() override { release(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "nccl"; }

  void all_gather_in_place(float* buffer, int64_t count) override {
    RAGGED_ASSERT(count >= 0, "all_gather_in_place: negative count");
    if (count == 0) return;
    NCCL_CHECK(ncclAllGather(buffer + rank_ * count, buffer, static_cast<size_t>(count), ncclFloat, comm_, stream_));
    synchronize();
  }

  void reduce_scatter_in_place(float* buffer, int64_t count) override {
    RAGGED_ASSERT(count >= 0, "reduce_scatter_in_place: negative count");
    if (count == 0) return;
    if (ordered_reductions()) {
      ordered_reduce_scatter(buffer, count);
      return;
    }
    NCCL_CHECK(ncclReduceScatter(buffer, buffer + rank_ * count, static_cast<size_t>(count), ncclFloat, ncclSum, comm_,
                                 stream_));
    synchronize();
  }

  void all_reduce_in_place(float* buffer, int64_t count) override {
    RAGGED_ASSERT(count >= 0, "all_reduce_in_place: negative count");
    if (count == 0) return;
    if (ordered_reductions()) {
      // Every rank's buffer everywhere, summed in rank order from 0.
      float* slots = scratch(static_cast<size_t>(size_) * static_cast<size_t>(count));
      NCCL_CHECK(ncclAllGather(buffer, slots, static_cast<size_t>(count), ncclFloat, comm_, stream_));
      sum_slots_in_order(buffer, slots, size_, count, stream_);
    } else {
      NCCL_CHECK(ncclAllReduce(buffer, buffer, static_cast<size_t>(count), ncclFloat, ncclSum, comm_, stream_));
    }
    synchronize();
  }

  std::unique_ptr<Communicator> split(int color, int key) override {
    ncclComm_t part = nullptr;
    NCCL_CHECK(ncclCommSplit(comm_, color, key, &part, nullptr));
    auto out = std::make_unique<NcclCommunicator>(part, stream_, under_mpi_);
    out->set_ordered_reductions(ordered_reductions());
    return out;
  }

  // `send` and `recv` must not overlap (as for MPI_Alltoallv).
  void all_to_all_v(const float* send, std::span<const int64_t> send_counts, std::span<const int64_t> send_displs,
                    float* recv, std::span<const int64_t> recv_counts, std::span<const int64_t> recv_displs) override {
    check_all_to_all_v(size_, send_counts, send_displs, recv_counts, recv_displs);
    const auto peers = static_cast<size_t>(size_);
    const auto self = static_cast<size_t>(rank_);
    RAGGED_ASSERT(send_counts[self] == recv_counts[self], "all_to_all_v: a rank receives from itself what it sends");
    if (send_counts[self] > 0) {
      CUDA_CHECK(cudaMemcpyAsync(recv + recv_displs[self], send + send_displs[self],
                                 static_cast<size_t>(send_counts[self]) * sizeof(float), cudaMemcpyDeviceToDevice,
                                 stream_));
    }
    if (size_ > 1) {
      NcclGroup group;
      for (size_t p = 0; p < peers; ++p) {
        if (p == self) continue;
        const int peer = static_cast<int>(p);
        if (send_counts[p] > 0) {
          NCCL_CHECK(
              ncclSend(send + send_displs[p], static_cast<size_t>(send_counts[p]), ncclFloat, peer, comm_, stream_));
        }
        if (recv_counts[p] > 0) {
          NCCL_CHECK(
              ncclRecv(recv + recv_displs[p], static_cast<size_t>(recv_counts[p]), ncclFloat, peer, comm_, stream_));
        }
      }
      group.end();
    }
    synchronize();
  }

  void barrier() override {
    CUDA_CHECK(cudaMemsetAsync(scalar_, 0, sizeof(double), stream_));
    NCCL_CHECK(ncclAllReduce(scalar_, scalar_, 1, ncclDouble, ncclSum, comm_, stream_));
    synchronize();
  }

  void abort(int exit_code) override {
    if (comm_ != nullptr) ncclCommAbort(comm_);  // the job is ending: NCCL's own errors no longer matter
    comm_ = nullptr;
#ifdef RAGGED_HAVE_MPI
    if (under_mpi_) MPI_Abort(MPI_COMM_WORLD, exit_code);
#endif
    static_cast<void>(exit_code);  // one rank: nobody else to stop
  }

  double sum(double value) override {
    CUDA_CHECK(cudaMemcpyAsync(scalar_, &value, sizeof(double), cudaMemcpyHostToDevice, stream_));
    NCCL_CHECK(ncclAllReduce(scalar_, scalar_, 1, ncclDouble, ncclSum, comm_, stream_));
    CUDA_CHECK(cudaMemcpyAsync(&value, scalar_, sizeof(double), cudaMemcpyDeviceToHost, stream_));
    synchronize();
    return value;
  }

 private:
  void synchronize() { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

  // Every rank's slot rank() comes here (an all-to-all), then the slots are
  // summed in rank order from 0, as the host reference sums them.
  void ordered_reduce_scatter(float* buffer, int64_t count) {
    float* slots = scratch(static_cast<size_t>(size_) * static_cast<size_t>(count));
    const size_t bytes = static_cast<size_t>(count) * sizeof(float);
    CUDA_CHECK(
        cudaMemcpyAsync(slots + rank_ * count, buffer + rank_ * count, bytes, cudaMemcpyDeviceToDevice, stream_));
    if (size_ > 1) {
      NcclGroup group;
      for (int peer = 0; peer < size_; ++peer) {
        if (peer == rank_) continue;
        NCCL_CHECK(ncclSend(buffer + peer * count, static_cast<size_t>(count), ncclFloat, peer, comm_, stream_));
        NCCL_CHECK(ncclRecv(slots + peer * count, static_cast<size_t>(count), ncclFloat, peer, comm_, stream_));
      }
      group.end();
    }
    sum_slots_in_order(buffer + rank_ * count, slots, size_, count, stream_);
    synchronize();
  }

  // A device buffer of at least `elements` floats, kept between calls (every
  // call synchronises, so a smaller one is never in use when it is replaced).
  float* scratch(size_t elements) {
    if (elements > scratch_elements_) {
      if (scratch_ != nullptr) CUDA_CHECK(cudaFree(scratch_));
      scratch_ = nullptr;
      scratch_elements_ = 0;
      CUDA_CHECK(cudaMalloc(&scratch_, elements * sizeof(float)));
      scratch_elements_ = elements;
    }
    return scratch_;
  }

  void release() noexcept {
    if (comm_ != nullptr) ncclCommDestroy(comm_);  // no throwing from a destructor
    comm_ = nullptr;
    if (scalar_ != nullptr) cudaFree(scalar_);
    scalar_ = nullptr;
    if (scratch_ != nullptr) cudaFree(scratch_);
    scratch_ = nullptr;
  }

  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  double* scalar_ = nullptr;  // sum() and barrier()
  float* scratch_ = nullptr;  // ordered reductions
  size_t scratch_elements_ = 0;
  bool under_mpi_ = false;
};

}  // namespace

NcclWorld init_nccl_world(ncclConfig_t* config) {
  NcclWorld world;
  ncclUniqueId id{};
  if (launched_by_mpi()) {
#ifdef RAGGED_HAVE_MPI
    ensure_mpi_initialized();
    world.under_mpi = true;
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world.rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world.size));
    if (world.rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_CHECK(MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, MPI_COMM_WORLD));
#else
    throw InputError(
        "this process was launched by MPI with several ranks, but this build has no MPI to share the NCCL id: "
        "install libopenmpi-dev and rebuild");
#endif
  } else {
    NCCL_CHECK(ncclGetUniqueId(&id));
  }
  if (config == nullptr) {
    NCCL_CHECK(ncclCommInitRank(&world.comm, world.size, id, world.rank));
  } else {
    const ncclResult_t started = ncclCommInitRankConfig(&world.comm, world.size, id, world.rank, config);
    if (started != ncclInProgress) NCCL_CHECK(started);
  }
  return world;
}

std::unique_ptr<Communicator> make_nccl_communicator(cudaStream_t stream) {
  return std::make_unique<NcclCommunicator>(stream);
}

}  // namespace ragged::backend::gpu
