list(APPEND RAGGED_BACKEND_SRCS
  ${CMAKE_CURRENT_LIST_DIR}/build_info.cpp
  ${CMAKE_CURRENT_LIST_DIR}/unit_shard.cpp
  ${CMAKE_CURRENT_LIST_DIR}/host_optimizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/program_walk.cpp
  ${CMAKE_CURRENT_LIST_DIR}/host_executor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/reference.cpp
  ${CMAKE_CURRENT_LIST_DIR}/reference_tp.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tensor_pieces.cpp
  ${CMAKE_CURRENT_LIST_DIR}/expert_pieces.cpp
  ${CMAKE_CURRENT_LIST_DIR}/finite_check.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run_trace.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run_support.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run_stages.cpp
  ${CMAKE_CURRENT_LIST_DIR}/step_loop.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run.cpp)
