#include "backend/mpi_thread_level.hpp"

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged::backend {

MpiThreadLevel needed_mpi_thread_level(MpiThreadUse use) {
  switch (use) {
    case MpiThreadUse::kCommunicators:
      return MpiThreadLevel::kFunneled;
    case MpiThreadUse::kWatchdog:
      return MpiThreadLevel::kMultiple;
  }
  RAGGED_ASSERT(false, "unknown MpiThreadUse");
  return MpiThreadLevel::kMultiple;
}

std::string_view mpi_thread_level_name(MpiThreadLevel level) {
  switch (level) {
    case MpiThreadLevel::kSingle:
      return "MPI_THREAD_SINGLE";
    case MpiThreadLevel::kFunneled:
      return "MPI_THREAD_FUNNELED";
    case MpiThreadLevel::kSerialized:
      return "MPI_THREAD_SERIALIZED";
    case MpiThreadLevel::kMultiple:
      return "MPI_THREAD_MULTIPLE";
  }
  RAGGED_ASSERT(false, "unknown MpiThreadLevel");
  return "?";
}

std::string mpi_thread_level_problem(MpiThreadLevel provided, MpiThreadUse use) {
  const MpiThreadLevel needed = needed_mpi_thread_level(use);
  if (provided >= needed) return {};
  // What every fix starts with: an MPI library that supports threads.
  constexpr std::string_view kThreadedMpi =
      "use an MPI library built with thread support (Open MPI 3.0 or later and MPICH as packaged, e.g. Debian's "
      "libopenmpi-dev, provide it; `ompi_info | grep -i 'thread support'` must show MPI_THREAD_MULTIPLE: yes) and "
      "rebuild Ragged against it";
  switch (use) {
    case MpiThreadUse::kCommunicators:
      return fmt::format(
          "the MPI library provides only {} but Ragged's communicators need {} (Ragged runs other threads, "
          "OpenBLAS's and the task farm's workers, beside the thread that calls MPI): {}",
          mpi_thread_level_name(provided), mpi_thread_level_name(needed), kThreadedMpi);
    case MpiThreadUse::kWatchdog:
      return fmt::format(
          "the collective watchdog (--collective-timeout) sends heartbeats from its own thread while the run waits "
          "in a collective, which needs {}, but the MPI library provides only {}: {}, or run without the watchdog "
          "(--collective-timeout 0: a lost rank then hangs the job instead of ending it)",
          mpi_thread_level_name(needed), mpi_thread_level_name(provided), kThreadedMpi);
  }
  RAGGED_ASSERT(false, "unknown MpiThreadUse");
  return {};
}

void check_mpi_thread_level(MpiThreadLevel provided, MpiThreadUse use) {
  std::string problem = mpi_thread_level_problem(provided, use);
  if (!problem.empty()) throw InputError(problem);
}

}  // namespace ragged::backend
