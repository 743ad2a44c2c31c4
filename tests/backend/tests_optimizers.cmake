list(APPEND RAGGED_BACKEND_TEST_SRCS
  ${CMAKE_CURRENT_LIST_DIR}/optimizer_adamw_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/optimizer_adam8bit_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/optimizer_adam8bit_tiles_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/optimizer_muon_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/optimizer_shampoo_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/optimizer_sgd_test.cpp)
