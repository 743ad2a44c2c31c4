# CUDA backend tests (backend/cuda/), built only with RAGGED_HAVE_CUDA, in their
# own executable test_cuda, label "cuda": ctest -L cuda. (Named "cuda" because
# ragged_add_test labels each test with the executable's name; its LABELS
# argument currently loses extra labels in gtest_discover_tests.) Tests that
# need a GPU skip with the reason when none is visible (no driver, no device);
# the host references of gpu-validate, the arena's carving and the
# calibration file are tested on every machine (that has the toolkit).
if(NOT RAGGED_HAVE_CUDA)
  return()
endif()
ragged_add_test(cuda
  SRCS
    ${CMAKE_CURRENT_LIST_DIR}/cuda_reference_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_attention_gemm_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_arena_parity_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_device_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_kernels_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_nccl_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_workload_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_mesh_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_context_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_expert_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_layout_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_adam8bit_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_contention_test.cpp
  DEPS ragged::backend_cuda ragged::sim_models)
