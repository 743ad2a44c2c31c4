list(APPEND RAGGED_BACKEND_SRCS
  ${CMAKE_CURRENT_LIST_DIR}/synthetic.cpp
  ${CMAKE_CURRENT_LIST_DIR}/workload.cpp
  ${CMAKE_CURRENT_LIST_DIR}/workload_attention.cpp
  ${CMAKE_CURRENT_LIST_DIR}/workload_block.cpp
  ${CMAKE_CURRENT_LIST_DIR}/workload_gemm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/workload_glu.cpp
  ${CMAKE_CURRENT_LIST_DIR}/workload_head.cpp
  ${CMAKE_CURRENT_LIST_DIR}/workload_layout.cpp
  ${CMAKE_CURRENT_LIST_DIR}/workload_mla.cpp
  ${CMAKE_CURRENT_LIST_DIR}/workload_moe.cpp
  ${CMAKE_CURRENT_LIST_DIR}/context_chunks.cpp
  ${CMAKE_CURRENT_LIST_DIR}/workload_cp.cpp
  ${CMAKE_CURRENT_LIST_DIR}/workload_ep.cpp
  ${CMAKE_CURRENT_LIST_DIR}/expert_rows.cpp
  ${CMAKE_CURRENT_LIST_DIR}/workload_tp.cpp
  ${CMAKE_CURRENT_LIST_DIR}/mesh_step.cpp)
