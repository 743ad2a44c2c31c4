#pragma once
// What Ragged needs of MPI's thread support, checked against what the library
// provides (MPI_Init_thread's `provided`, or MPI_Query_thread when someone
// else initialised MPI). Plain code without MPI types, so that every level is
// tested in any build.
//
// Ragged's MPI calls come from one thread, the one that made the
// communicators (the command's main thread): MPI_THREAD_FUNNELED. The
// collective watchdog (`ragged run --collective-timeout`, on by default)
// sends and probes heartbeats from its own thread while the run's thread
// sits in a collective: MPI_THREAD_MULTIPLE. The MPI task farm of `ragged
// tune` calls MPI only from the thread that maps or serves (its workers do
// not), so it needs no more than the communicators.

#include <string>
#include <string_view>

namespace ragged::backend {

// MPI's levels, in MPI's order (MPI_THREAD_SINGLE < ... < MPI_THREAD_MULTIPLE).
enum class MpiThreadLevel { kSingle, kFunneled, kSerialized, kMultiple };

// What needs MPI threads, and so which level.
enum class MpiThreadUse {
  kCommunicators,  // every MPI call from one thread: kFunneled
  kWatchdog,       // heartbeats from the watchdog's thread: kMultiple
};

MpiThreadLevel needed_mpi_thread_level(MpiThreadUse use);

// "MPI_THREAD_SINGLE", ... "MPI_THREAD_MULTIPLE".
std::string_view mpi_thread_level_name(MpiThreadLevel level);

// Empty when `provided` is enough for `use`; otherwise the message of the
// InputError to throw: what needs which level, what the MPI library gives,
// and how to fix it (an MPI built with thread support; for the watchdog,
// also running without it).
std::string mpi_thread_level_problem(MpiThreadLevel provided, MpiThreadUse use);

// Throws InputError(mpi_thread_level_problem(provided, use)) when it is not empty.
void check_mpi_thread_level(MpiThreadLevel provided, MpiThreadUse use);

}  // namespace ragged::backend
