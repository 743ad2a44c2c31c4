#include "backend/build_info.hpp"

namespace ragged::backend {

bool built_with_mpi() {
#ifdef RAGGED_HAVE_MPI
  return true;
#else
  return false;
#endif
}

bool built_with_cuda() {
#ifdef RAGGED_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::string build_info() {
  std::string info = "host (OpenBLAS)";
  if (built_with_mpi()) info += ", MPI";
  if (built_with_cuda()) info += ", CUDA/NCCL";
  return info;
}

}  // namespace ragged::backend
