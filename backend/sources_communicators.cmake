# Communicators: local (one rank), MPI (host buffers; its file builds a
# fallback that explains how to get MPI when the build has none), the
# verifiable-collective checks, the MPI task farm, the start-up and exit deadlines:
# ragged_backend_comm, all that `ragged tune` under mpirun needs.
list(APPEND RAGGED_BACKEND_COMM_SRCS
  ${CMAKE_CURRENT_LIST_DIR}/communicator.cpp
  ${CMAKE_CURRENT_LIST_DIR}/communicator_local.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rank_groups.cpp
  ${CMAKE_CURRENT_LIST_DIR}/group_colors.cpp
  ${CMAKE_CURRENT_LIST_DIR}/communicator_mpi.cpp
  ${CMAKE_CURRENT_LIST_DIR}/mpi_thread_level.cpp
  ${CMAKE_CURRENT_LIST_DIR}/task_farm_mpi.cpp
  ${CMAKE_CURRENT_LIST_DIR}/worker_clock.cpp
  ${CMAKE_CURRENT_LIST_DIR}/watchdog_mpi.cpp
  ${CMAKE_CURRENT_LIST_DIR}/progress.cpp
  ${CMAKE_CURRENT_LIST_DIR}/collective_wait.cpp
  ${CMAKE_CURRENT_LIST_DIR}/collective_watcher.cpp
  ${CMAKE_CURRENT_LIST_DIR}/collective_check.cpp
  ${CMAKE_CURRENT_LIST_DIR}/startup_deadline.cpp
  ${CMAKE_CURRENT_LIST_DIR}/exit_deadline_mpi.cpp)
