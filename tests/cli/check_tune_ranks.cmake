# `mpirun -np N ragged tune ... --json` answers exactly as one process does:
# runs REFERENCE (no mpirun) and COMMAND (under mpirun), takes each one's
# JSON, drops "run" (wall time, workers, cache hits: this run's, not the
# answer) and requires the rest to be identical: every candidate's verdict
# and figures, the ranking, the front, the winner.
# Usage: cmake -DREFERENCE="a|b" -DCOMMAND="mpirun|-np|3|a|b" -P check_tune_ranks.cmake
# (each command's words joined by '|', which add_test passes through intact)
cmake_minimum_required(VERSION 3.19)  # string(JSON)
include(${CMAKE_CURRENT_LIST_DIR}/../json_on_stdout.cmake)

function(answer_of words out_var)
  string(REPLACE "|" ";" command "${words}")
  execute_process(COMMAND ${command} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "exit ${code}: ${command}\n${err}\n${out}")
  endif()
  ragged_json_on_stdout(json "${out}" "${command}")
  string(JSON workers GET "${json}" run workers)
  string(JSON candidates LENGTH "${json}" candidates)
  message("${candidates} candidates on ${workers} workers: ${command}")
  string(JSON json REMOVE "${json}" run)
  set(${out_var} "${json}" PARENT_SCOPE)
endfunction()

answer_of("${REFERENCE}" reference)
answer_of("${COMMAND}" distributed)
if(NOT reference STREQUAL distributed)
  file(WRITE tune_reference.json "${reference}")
  file(WRITE tune_distributed.json "${distributed}")
  message(FATAL_ERROR "the answers differ: see tune_reference.json and tune_distributed.json in ${CMAKE_CURRENT_BINARY_DIR}")
endif()
message("same answer")
