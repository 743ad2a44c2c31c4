list(APPEND RAGGED_BACKEND_SRCS
  ${CMAKE_CURRENT_LIST_DIR}/optimizer_adamw.cpp
  ${CMAKE_CURRENT_LIST_DIR}/optimizer_adam8bit.cpp
  ${CMAKE_CURRENT_LIST_DIR}/optimizer_muon.cpp
  ${CMAKE_CURRENT_LIST_DIR}/optimizer_shampoo.cpp
  ${CMAKE_CURRENT_LIST_DIR}/optimizer_sgd.cpp)
# The optimizers promise that a shard computes bit for bit what the whole tensor
# computes: no contraction of a*b+c into an FMA, which a compiler may apply to
# a vectorised loop body and not to its scalar remainder.
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  set_source_files_properties(
    ${CMAKE_CURRENT_LIST_DIR}/optimizer_adamw.cpp
    ${CMAKE_CURRENT_LIST_DIR}/optimizer_adam8bit.cpp
    ${CMAKE_CURRENT_LIST_DIR}/optimizer_muon.cpp
    ${CMAKE_CURRENT_LIST_DIR}/optimizer_shampoo.cpp
    ${CMAKE_CURRENT_LIST_DIR}/optimizer_sgd.cpp
    PROPERTIES COMPILE_OPTIONS -ffp-contract=off)
endif()
