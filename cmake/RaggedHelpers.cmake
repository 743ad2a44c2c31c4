# Small helpers so that every module folder declares its target the same way.
# Sources are always listed explicitly.

function(ragged_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                                           -Wnon-virtual-dtor -Wimplicit-fallthrough)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    # GCC 12 reports false -Wrestrict on std::string concatenation at -O3 (GCC bug 105329).
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(RAGGED_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# Test executables compile at -O1 in a Release build: their own code (fixtures,
# assertions, GoogleTest's and QtTest's macros) runs briefly, while -O3 makes
# it about 30% slower to compile; the libraries they test keep the build
# type's optimisation, so what is tested is what ships.
function(ragged_set_test_optimisation target)
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:-O1>)
endfunction()

# ragged_add_library(NAME SRCS a.cpp b.cpp DEPS ragged::x fmt::fmt [PRIVATE_DEPS ...])
# Creates the static library ragged_NAME with the alias ragged::NAME. Headers are
# included by module path ("models/model_spec.hpp") from the source root.
function(ragged_add_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(ragged_${name} STATIC ${ARG_SRCS})
  add_library(ragged::${name} ALIAS ragged_${name})
  target_include_directories(ragged_${name} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  target_link_libraries(ragged_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  ragged_set_warnings(ragged_${name})
  if(RAGGED_UNITY_BUILD)
    set_target_properties(ragged_${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${RAGGED_UNITY_BATCH})
  endif()
endfunction()

# ragged_add_test(NAME SRCS a_test.cpp DEPS ragged::x [LABELS l1 l2])
# One GoogleTest executable per module; every TEST becomes its own CTest entry.
function(ragged_add_test name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(test_${name} ${ARG_SRCS})
  target_link_libraries(test_${name} PRIVATE ${ARG_DEPS} GTest::gtest ragged_test_main)
  target_compile_definitions(test_${name} PRIVATE
    RAGGED_SOURCE_DIR="${PROJECT_SOURCE_DIR}" RAGGED_BINARY_DIR="${PROJECT_BINARY_DIR}")
  ragged_set_warnings(test_${name})
  ragged_set_test_optimisation(test_${name})
  if(RAGGED_UNITY_BUILD)
    set_target_properties(test_${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${RAGGED_UNITY_BATCH})
  endif()
  gtest_discover_tests(test_${name}
    WORKING_DIRECTORY ${PROJECT_BINARY_DIR}
    PROPERTIES LABELS "${name};${ARG_LABELS}"
    DISCOVERY_TIMEOUT 60)
endfunction()

# ragged_start_early(TESTS t1 t2 ...): the folder's longest tests, by name
# (an add_test name, or GoogleTest's Suite.Case), start first under `ctest -j`.
# A clean build has no timing history (Testing/Temporary/CTestCostData.txt),
# so ctest would run them in declaration order, and one declared near the end
# would run alone while the other cores sit idle. Call it after the folder's
# add_test calls. GoogleTest's cases exist only once ctest has listed them, so
# theirs is set from a file ctest reads after the folder's discovered tests.
function(ragged_start_early)
  cmake_parse_arguments(ARG "" "" "TESTS" ${ARGN})
  set(_lines "")
  foreach(_test ${ARG_TESTS})
    if(TEST ${_test})
      set_tests_properties(${_test} PROPERTIES COST 1000)
    else()
      string(APPEND _lines "set_tests_properties(\"${_test}\" PROPERTIES COST 1000)\n")
    endif()
  endforeach()
  if(_lines)
    set(_file ${CMAKE_CURRENT_BINARY_DIR}/start_early.cmake)
    file(WRITE ${_file} "${_lines}")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${_file})
  endif()
endfunction()

# ragged_add_proto(NAME PROTOS a.proto DEPS ...): a library of generated protobuf code.
# Generated headers are included as "<folder>/<file>.pb.h".
function(ragged_add_proto name)
  cmake_parse_arguments(ARG "" "" "PROTOS;DEPS" ${ARGN})
  set(_srcs)
  foreach(proto ${ARG_PROTOS})
    get_filename_component(_abs ${proto} ABSOLUTE)
    file(RELATIVE_PATH _rel ${PROJECT_SOURCE_DIR} ${_abs})
    string(REGEX REPLACE "\\.proto$" "" _stem ${_rel})
    set(_cc ${PROJECT_BINARY_DIR}/${_stem}.pb.cc)
    set(_h ${PROJECT_BINARY_DIR}/${_stem}.pb.h)
    add_custom_command(
      OUTPUT ${_cc} ${_h}
      COMMAND protobuf::protoc --cpp_out=${PROJECT_BINARY_DIR} -I ${PROJECT_SOURCE_DIR} ${_abs}
      DEPENDS ${_abs} protobuf::protoc
      COMMENT "protoc ${_rel}")
    list(APPEND _srcs ${_cc})
  endforeach()
  add_library(ragged_${name} STATIC ${_srcs})
  add_library(ragged::${name} ALIAS ragged_${name})
  target_include_directories(ragged_${name} PUBLIC ${PROJECT_BINARY_DIR})
  target_link_libraries(ragged_${name} PUBLIC protobuf::libprotobuf ${ARG_DEPS})
endfunction()

# ragged_embed_files(OUTPUT file.cpp NAMESPACE ns FILES a b): compiles text files
# into a C++ table {name, contents} so the binary carries them (shipped scenarios).
function(ragged_embed_files)
  cmake_parse_arguments(ARG "" "OUTPUT;NAMESPACE" "FILES" ${ARGN})
  set(_abs_files)
  foreach(f ${ARG_FILES})
    get_filename_component(_a ${f} ABSOLUTE)
    list(APPEND _abs_files ${_a})
  endforeach()
  string(REPLACE ";" "|" _file_arg "${_abs_files}")
  add_custom_command(
    OUTPUT ${ARG_OUTPUT}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${ARG_OUTPUT} -DNAMESPACE=${ARG_NAMESPACE}
            "-DFILES=${_file_arg}" -P ${PROJECT_SOURCE_DIR}/cmake/EmbedFiles.cmake
    VERBATIM
    DEPENDS ${_abs_files} ${PROJECT_SOURCE_DIR}/cmake/EmbedFiles.cmake
    COMMENT "Embedding ${ARG_NAMESPACE} files")
endfunction()

# Under `make sanitize`, this folder's tests launched by mpirun (label mpi)
# keep AddressSanitizer and UBSan but not LeakSanitizer: Open MPI unloads its
# components (dlclose) at MPI_Finalize, so the allocations they keep until
# exit are reported from "<unknown module>", where no suppression can name
# them (docs/results/fuzz.md). Call it after the folder's add_test calls:
# get_test_property sees the calling folder's tests only.
function(ragged_mpi_tests_without_leak_check)
  if(NOT RAGGED_SANITIZE)
    return()
  endif()
  get_directory_property(_ragged_tests TESTS)
  foreach(_test ${_ragged_tests})
    get_test_property(${_test} LABELS _labels)
    if(_labels MATCHES "mpi")
      set_property(TEST ${_test} APPEND PROPERTY ENVIRONMENT
                   "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1")
    endif()
  endforeach()
endfunction()
