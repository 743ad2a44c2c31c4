# The CUDA/NCCL backend: a separate static library, ragged_backend_cuda
# (ragged::backend_cuda), so that ragged::backend builds without CUDA; and
# ragged-gpu-validate, which checks the kernels on a GPU and writes the
# simulator's calibration (scripts/gpu-validate). Included from
# backend/CMakeLists.txt; does nothing unless RAGGED_HAVE_CUDA
# (cmake/RaggedDependencies.cmake found nvcc, the toolkit and NCCL). The .cu
# files (kernels) go through nvcc; the rest is host C++ against the CUDA
# runtime, cuBLAS and NCCL.
if(NOT RAGGED_HAVE_CUDA)
  return()  # back to backend/CMakeLists.txt: the backend builds without CUDA
endif()

enable_language(CUDA)
# The .cu files include the backend's C++20 headers: nvcc 12 or newer, in C++20.
if(CMAKE_CUDA_COMPILER_VERSION VERSION_LESS 12.0)
  message(FATAL_ERROR "the CUDA backend needs nvcc 12 or newer (C++20); found ${CMAKE_CUDA_COMPILER_VERSION}. "
                      "Configure with -DRAGGED_CUDA=OFF to build without it.")
endif()
# CMake 3.25 (Debian 12) knows nvcc's flags only up to C++17; nvcc 12+ takes
# -std=c++20. CUDA targets follow CXX_STANDARD (20) unless told otherwise.
if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_EXTENSIONS OFF)

set(_ragged_cuda_dir ${CMAKE_CURRENT_LIST_DIR}/cuda)
add_library(ragged_backend_cuda STATIC
  ${_ragged_cuda_dir}/cuda_check.cpp
  ${_ragged_cuda_dir}/device_arena.cpp
  ${_ragged_cuda_dir}/cuda_device.cpp
  ${_ragged_cuda_dir}/kernels.cu
  ${_ragged_cuda_dir}/gemm.cpp
  ${_ragged_cuda_dir}/nccl_communicator.cpp
  ${_ragged_cuda_dir}/host_reference.cpp
  ${_ragged_cuda_dir}/calibration.cpp
  ${_ragged_cuda_dir}/validate_cpu.cpp
  ${_ragged_cuda_dir}/validate_gpu_checks.cpp
  ${_ragged_cuda_dir}/validate_bench.cpp
  ${_ragged_cuda_dir}/contention_bench.cpp
  ${_ragged_cuda_dir}/contention_kernels.cu
  # The GPU workload (gpu_workload.hpp)
  ${_ragged_cuda_dir}/gpu_workload_bytes.cpp
  ${_ragged_cuda_dir}/gpu_workload.cpp
  ${_ragged_cuda_dir}/gpu_workload_block.cpp
  ${_ragged_cuda_dir}/gpu_workload_head.cpp
  ${_ragged_cuda_dir}/gpu_workload_moe.cpp
  ${_ragged_cuda_dir}/gpu_workload_moe_kernels.cu
  ${_ragged_cuda_dir}/workload_kernels.cu
  ${_ragged_cuda_dir}/workload_reductions.cu
  ${_ragged_cuda_dir}/attention_kernels.cu
  ${_ragged_cuda_dir}/attention_gemm.cpp
  ${_ragged_cuda_dir}/attention_rows.cu
  # One tensor-parallel rank's compute (gpu_workload_mesh.hpp)
  ${_ragged_cuda_dir}/gpu_mesh_plan.cpp
  ${_ragged_cuda_dir}/gpu_workload_mesh.cpp
  ${_ragged_cuda_dir}/gpu_workload_context.cpp
  ${_ragged_cuda_dir}/gpu_workload_experts.cpp
  ${_ragged_cuda_dir}/gpu_workload_mesh_experts.cpp
  ${_ragged_cuda_dir}/mesh_kernels.cu
  # The Program on the GPU (cuda_executor.hpp, cuda_run.hpp)
  ${_ragged_cuda_dir}/device_layout.cpp
  ${_ragged_cuda_dir}/adam8bit_layout.cpp
  ${_ragged_cuda_dir}/adam8bit_kernels.cu
  ${_ragged_cuda_dir}/device_units.cpp
  ${_ragged_cuda_dir}/device_collectives.cpp
  ${_ragged_cuda_dir}/executor_kernels.cu
  ${_ragged_cuda_dir}/cuda_executor.cpp
  ${_ragged_cuda_dir}/cuda_run.cpp
  )
add_library(ragged::backend_cuda ALIAS ragged_backend_cuda)
target_include_directories(ragged_backend_cuda PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
target_link_libraries(ragged_backend_cuda
  PUBLIC ragged::backend ragged::common CUDA::cudart CUDA::cublas ragged::nccl fmt::fmt
  PRIVATE nlohmann_json::nlohmann_json)
# Ampere and Hopper: machine code for sm_80 and sm_90, and PTX for newer GPUs.
set_target_properties(ragged_backend_cuda PROPERTIES CUDA_ARCHITECTURES "80;90" POSITION_INDEPENDENT_CODE ON)
if(RAGGED_HAVE_MPI)
  # Only nccl_communicator.cpp uses MPI (to share the NCCL unique id).
  target_link_libraries(ragged_backend_cuda PRIVATE MPI::MPI_CXX)
  set_source_files_properties(${_ragged_cuda_dir}/nccl_communicator.cpp PROPERTIES COMPILE_DEFINITIONS RAGGED_HAVE_MPI=1)
endif()

# Warnings: the project's for C++; for CUDA, the host compiler's through nvcc
# (nvcc rejects -Wall itself, and its generated host code is not -Wpedantic clean).
function(ragged_set_cuda_warnings target)
  ragged_set_warnings(${target})
  get_target_property(_options ${target} COMPILE_OPTIONS)
  set_property(TARGET ${target} PROPERTY COMPILE_OPTIONS)
  foreach(_option IN LISTS _options)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${_option}>)
  endforeach()
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
  if(RAGGED_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings>
                                             $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Werror>)
  endif()
endfunction()
ragged_set_cuda_warnings(ragged_backend_cuda)

# The validation tool, at build/ragged-gpu-validate. It must run on a GPU
# machine that has only CUDA's and NCCL's shared libraries besides the system:
# --as-needed drops the libraries it does not call (OpenBLAS, protobuf, ...)
# and $ORIGIN finds any it does need (libfmt) copied beside it
# (scripts/gpu-validate --bundle).
add_executable(ragged-gpu-validate
  ${_ragged_cuda_dir}/gpu_validate_main.cpp
  ${_ragged_cuda_dir}/gpu_validate_report.cpp)
target_link_libraries(ragged-gpu-validate PRIVATE ragged::backend_cuda ragged::scenarios CLI11::CLI11 fmt::fmt)
target_link_options(ragged-gpu-validate PRIVATE -Wl,--as-needed)
set_target_properties(ragged-gpu-validate PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}
  BUILD_RPATH "$ORIGIN;$ORIGIN/lib"
  BUILD_RPATH_USE_ORIGIN ON)
ragged_set_warnings(ragged-gpu-validate)
