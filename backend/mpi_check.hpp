#pragma once
// Checking MPI calls, NCCL style: every MPI call of the backend goes through
// MPI_CHECK, which turns a failure into an InternalError naming file:line, the
// call as written and MPI's own error string. Library code never aborts: the
// communicators set MPI_ERRORS_RETURN on their (duplicated) communicator so
// that MPI returns the error instead of killing the job.
//
// Include only from code built with MPI (RAGGED_HAVE_MPI); MPI types never
// leave backend/.

#include <mpi.h>

#include <cstdint>

#include "backend/mpi_thread_level.hpp"

namespace ragged::backend {

// Throws InternalError("<file>:<line>: <call> failed: <MPI_Error_string(code)>").
[[noreturn]] void throw_mpi_error(const char* call, const char* file, int line, int code);

// Initialises MPI on first use (asking for MPI_THREAD_MULTIPLE); whoever
// initialises it also finalises it at exit. InternalError when MPI was already
// finalised; InputError when the library's thread support is below what every
// communicator needs (MpiThreadUse::kCommunicators, backend/mpi_thread_level.hpp).
void ensure_mpi_initialized();

// The thread support the MPI library provides (MPI_Init_thread's `provided`,
// or MPI_Query_thread's when MPI was initialised by someone else). Calls
// ensure_mpi_initialized() first.
MpiThreadLevel provided_mpi_thread_level();

namespace mpi_detail {

// The most elements (per rank) that one MPI collective call carries. MPI
// counts are `int`; larger all-gathers use a derived datatype for the whole
// slot, larger reduce-scatters and all-reduces are split into calls of at
// most this many elements per rank. Defaults to INT_MAX; tests lower it to
// exercise the split paths with small buffers. Not for production use.
int64_t max_elements_per_call();
void set_max_elements_per_call(int64_t elements);

}  // namespace mpi_detail
}  // namespace ragged::backend

// Runs an MPI call and throws ragged::InternalError if it does not return
// MPI_SUCCESS. Example: MPI_CHECK(MPI_Barrier(comm_));
#define MPI_CHECK(call)                                                              \
  do {                                                                               \
    const int ragged_mpi_code_ = (call);                                             \
    if (ragged_mpi_code_ != MPI_SUCCESS)                                             \
      ::ragged::backend::throw_mpi_error(#call, __FILE__, __LINE__, ragged_mpi_code_); \
  } while (false)
