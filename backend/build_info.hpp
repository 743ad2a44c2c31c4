#pragma once
// What this build of the backend can run on.

#include <string>

namespace ragged::backend {

bool built_with_mpi();
bool built_with_cuda();
std::string build_info();  // "host (OpenBLAS), MPI, CUDA/NCCL"

}  // namespace ragged::backend
