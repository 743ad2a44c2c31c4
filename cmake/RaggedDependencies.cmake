# Every third-party dependency is found here, once. Debian packages provide
# them all (scripts/install-deps); optional ones are detected automatically.

find_package(Protobuf REQUIRED)
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json REQUIRED)
# The config importers (importers/): torchtitan's TOML through toml++,
# llm-foundry's YAML through yaml-cpp.
find_package(tomlplusplus QUIET)
find_package(yaml-cpp QUIET)
if(NOT tomlplusplus_FOUND OR NOT yaml-cpp_FOUND)
  set(_missing)
  if(NOT tomlplusplus_FOUND)
    list(APPEND _missing "toml++ (libtomlplusplus-dev)")
  endif()
  if(NOT yaml-cpp_FOUND)
    list(APPEND _missing "yaml-cpp (libyaml-cpp-dev)")
  endif()
  string(REPLACE ";" " and " _missing "${_missing}")
  message(FATAL_ERROR "`ragged scenario import` needs ${_missing}: run scripts/install-deps, which installs the "
                      "Debian packages libtomlplusplus-dev and libyaml-cpp-dev")
endif()
# SimGrid ships no CMake package in Debian: pkg-config (../shared/reference/simgrid.md).
find_package(PkgConfig REQUIRED)
pkg_check_modules(SIMGRID REQUIRED IMPORTED_TARGET simgrid)
# The host backend's GEMMs (Debian's libopenblas-dev).
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)

if(RAGGED_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
if(RAGGED_BENCH)
  find_package(benchmark REQUIRED)
endif()

# CUDA and NCCL: optional, detected automatically (CUDA 13 and NCCL live under
# /usr/local/cuda on our machines). -DRAGGED_CUDA=OFF builds everything else;
# -DRAGGED_CUDA=ON makes a missing toolkit an error.
set(RAGGED_CUDA AUTO CACHE STRING "Build the CUDA/NCCL backend: AUTO, ON or OFF")
set_property(CACHE RAGGED_CUDA PROPERTY STRINGS AUTO ON OFF)
set(RAGGED_HAVE_CUDA OFF)
if(NOT RAGGED_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  find_package(CUDAToolkit QUIET)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(RAGGED_HAVE_CUDA ON)
    add_library(ragged_nccl INTERFACE)
    target_include_directories(ragged_nccl INTERFACE ${NCCL_INCLUDE_DIR})
    target_link_libraries(ragged_nccl INTERFACE ${NCCL_LIBRARY})
    add_library(ragged::nccl ALIAS ragged_nccl)
  elseif(RAGGED_CUDA STREQUAL "ON")
    message(FATAL_ERROR "RAGGED_CUDA=ON but no CUDA toolkit with NCCL was found "
                        "(nvcc: '${CMAKE_CUDA_COMPILER}', nccl.h: '${NCCL_INCLUDE_DIR}', libnccl: '${NCCL_LIBRARY}')")
  endif()
endif()

# MPI (OpenMPI) launches multi-process runs; optional, installed by scripts/install-deps.
option(RAGGED_MPI "Build the MPI communicator if MPI is found" ON)
set(RAGGED_HAVE_MPI OFF)
if(RAGGED_MPI)
  find_package(MPI QUIET COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    set(RAGGED_HAVE_MPI ON)
  endif()
endif()
message(STATUS "Ragged: CUDA/NCCL backend ${RAGGED_HAVE_CUDA}, MPI ${RAGGED_HAVE_MPI}")
