list(APPEND RAGGED_BACKEND_TEST_SRCS
  ${CMAKE_CURRENT_LIST_DIR}/context_chunks_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/workload_core_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/workload_gradient_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/workload_synthetic_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/workload_training_test.cpp)
