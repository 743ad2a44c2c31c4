#pragma once
// The MPI watchdog's factory, for the MPI communicator (MPI types never leave
// backend/; include only where RAGGED_HAVE_MPI).

#include <mpi.h>

#include <memory>

#include "backend/watchdog.hpp"

namespace ragged::backend {

// Duplicates `group` (a collective call) and starts the watchdog's thread.
std::unique_ptr<Watchdog> make_mpi_watchdog(MPI_Comm group, double timeout_s);

}  // namespace ragged::backend
