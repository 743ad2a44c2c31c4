# Communicator tests. The local communicator and the verifiable-collective
# checks join the backend's GoogleTest executable; the MPI communicator has
# its own executable, test_backend_mpi (GoogleTest with an MPI-aware main,
# mpi_test_main.cpp), run by CTest under mpirun for 1 to 5 ranks, uneven
# group sizes included. Label "mpi": ctest -L mpi. It also runs Shampoo
# sharded with settings the CLI cannot give (small blocks, stale roots), and
# the task farm `ragged tune` distributes candidates with.
list(APPEND RAGGED_BACKEND_TEST_SRCS
  ${CMAKE_CURRENT_LIST_DIR}/communicator_local_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/communicator_check_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/collective_wait_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/collective_watcher_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/exit_deadline_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/mpi_thread_level_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/worker_clock_test.cpp)

if(RAGGED_HAVE_MPI AND MPIEXEC_EXECUTABLE)
  add_executable(test_backend_mpi
    ${CMAKE_CURRENT_LIST_DIR}/mpi_test_main.cpp
    ${CMAKE_CURRENT_LIST_DIR}/communicator_mpi_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/rank_groups_mpi_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/shampoo_run_mpi_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/task_farm_mpi_test.cpp)
  target_link_libraries(test_backend_mpi PRIVATE ragged::backend MPI::MPI_CXX GTest::gtest)
  ragged_set_warnings(test_backend_mpi)
  ragged_set_test_optimisation(test_backend_mpi)

  # Open MPI refuses more ranks than cores without --oversubscribe (CI has
  # 2 cores and runs 5 ranks); MPICH's mpiexec has no such flag or limit.
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version
    OUTPUT_VARIABLE _ragged_mpiexec_version ERROR_QUIET TIMEOUT 20)
  set(_ragged_mpi_flags)
  if(_ragged_mpiexec_version MATCHES "Open MPI|OpenRTE")
    set(_ragged_mpi_flags --oversubscribe)
  endif()
  foreach(_np 1 2 3 4 5)
    add_test(NAME backend.mpi.np${_np}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${_np} ${_ragged_mpi_flags} ${MPIEXEC_PREFLAGS}
              $<TARGET_FILE:test_backend_mpi> ${MPIEXEC_POSTFLAGS}
      WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
    # Open MPI refuses to run as root (CI does) unless both variables are set;
    # they change nothing for other users. One MPI job at a time: oversubscribed
    # ranks of two jobs would starve each other.
    set_tests_properties(backend.mpi.np${_np} PROPERTIES
      LABELS "backend;mpi"
      ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OPENBLAS_NUM_THREADS=1;GTEST_COLOR=no"
      PROCESSORS ${_np}
      RESOURCE_LOCK ragged_mpi
      TIMEOUT 60)
  endforeach()
elseif(RAGGED_HAVE_MPI)
  message(STATUS "Ragged: MPI found but no mpiexec: the MPI communicator tests are not registered")
endif()
