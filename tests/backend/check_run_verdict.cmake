# Runs `ragged run ... --json` (the COMMAND list, under mpirun) and asserts
# its verdict from the JSON, not from the exit code alone:
#   EXPECT=pass  exit 0; "passed" true, no failures; every loss a finite
#                number; no NaN found; collectives verified with 0 wrong
#                elements; the reference checked, bitwise, 0 differing and 0
#                non-finite elements; replicas equal.
#   EXPECT=tolerance  the same, but the reference within its stated
#                tolerance (normal reductions sum in MPI's order): not
#                bitwise, and the run says so.
#   EXPECT=nan   exit 3; "passed" false; "non_finite" names NAN_TENSOR at
#                step NAN_STEP.
# Usage: cmake -DEXPECT=pass [-DNAN_TENSOR=t -DNAN_STEP=2] -DCOMMAND="a|b|c" -P check_run_verdict.cmake
# (the command's words joined by '|', which add_test passes through intact)
cmake_minimum_required(VERSION 3.19)  # string(JSON)
string(REPLACE "|" ";" COMMAND "${COMMAND}")

execute_process(COMMAND ${COMMAND} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${err}")

include(${CMAKE_CURRENT_LIST_DIR}/../json_on_stdout.cmake)
ragged_json_on_stdout(json "${out}" "exit ${code}")

function(expect_field key expected)
  string(JSON value ERROR_VARIABLE missing GET "${json}" ${key})
  if(missing)
    message(FATAL_ERROR "the JSON has no '${key}': ${missing}")
  endif()
  if(NOT "${value}" STREQUAL "${expected}")
    message(FATAL_ERROR "'${key}' is '${value}', expected '${expected}'\n${json}")
  endif()
endfunction()

if(EXPECT STREQUAL "pass" OR EXPECT STREQUAL "tolerance")
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "exit ${code}, expected 0\n${out}")
  endif()
  expect_field(passed ON)
  expect_field(non_finite "")
  expect_field(collective_errors 0)
  expect_field(reference_checked ON)
  if(EXPECT STREQUAL "pass")
    expect_field(reference_bitwise ON)
    expect_field(reference_differing 0)
  else()
    expect_field(reference_bitwise OFF)
    string(JSON error GET "${json}" reference_error)
    string(JSON tolerance GET "${json}" reference_tolerance)
    message("reference: relative error ${error} within the tolerance ${tolerance}")
  endif()
  expect_field(reference_non_finite 0)
  expect_field(reference_ok ON)
  expect_field(replica_differing 0)
  string(JSON failures LENGTH "${json}" failures)
  if(NOT failures EQUAL 0)
    message(FATAL_ERROR "failures listed:\n${json}")
  endif()
  string(JSON steps LENGTH "${json}" losses)
  if(steps EQUAL 0)
    message(FATAL_ERROR "no losses")
  endif()
  math(EXPR last_step "${steps} - 1")
  foreach(i RANGE ${last_step})
    string(JSON type TYPE "${json}" losses ${i})
    string(JSON loss GET "${json}" losses ${i})
    # nlohmann-json writes NaN and infinity as null.
    if(NOT type STREQUAL "NUMBER")
      message(FATAL_ERROR "loss of step ${i} is ${type} '${loss}', not a finite number")
    endif()
  endforeach()
  if(EXPECT STREQUAL "pass")
    message("verdict: passed, ${steps} finite losses, reference bitwise equal")
  else()
    message("verdict: passed, ${steps} finite losses, reference within its tolerance")
  endif()
elseif(EXPECT STREQUAL "nan")
  if(NOT code EQUAL 3)
    message(FATAL_ERROR "exit ${code}, expected 3 (a check failed)\n${out}")
  endif()
  expect_field(passed OFF)
  string(JSON finding GET "${json}" non_finite)
  if(NOT finding MATCHES "^step ${NAN_STEP}, rank [0-9]+: the parameter of ${NAN_TENSOR} \\[[0-9]+\\] is nan$")
    message(FATAL_ERROR "non_finite is '${finding}', expected the parameter ${NAN_TENSOR} at step ${NAN_STEP}")
  endif()
  message("verdict: failed as it must: ${finding}")
else()
  message(FATAL_ERROR "EXPECT must be pass or nan")
endif()
