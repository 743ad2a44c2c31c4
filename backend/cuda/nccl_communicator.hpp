#pragma once
// The NCCL communicator: backend::Communicator on device buffers (fp32
// device pointers; counts in elements). One rank per process and GPU: under
// an MPI launch (mpirun -np N, launched_by_mpi()) the group is MPI's world,
// rank 0 creates the NCCL unique id and MPI broadcasts it; otherwise the
// group is this process alone. The communicator uses the current CUDA device
// (CudaDevice selects it; default_device_ordinal() picks one per local rank).
//
// Every collective is enqueued on the stream given at construction and the
// call synchronises that stream before returning, so buffers are ready when
// it returns (simple and correct; overlap across streams comes later).

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>

#include "backend/communicator.hpp"

namespace ragged::backend::gpu {

// This process's place in the NCCL world and a communicator over it: MPI's
// world under an MPI launch (rank 0 makes the unique id, MPI broadcasts it),
// else this process alone. The caller destroys `comm`. With a `config`
// (ncclCommInitRankConfig) that makes the communicator non-blocking, it may
// return while NCCL still sets it up (ncclCommGetAsyncError says
// ncclInProgress): the caller waits for it.
struct NcclWorld {
  ncclComm_t comm = nullptr;
  int rank = 0;
  int size = 1;
  bool under_mpi = false;
};
NcclWorld init_nccl_world(ncclConfig_t* config = nullptr);

// Throws InputError when an MPI launch meets a build without MPI, and
// InternalError (file:line and NCCL's reason) when NCCL fails to start.
std::unique_ptr<Communicator> make_nccl_communicator(cudaStream_t stream);

}  // namespace ragged::backend::gpu
