# ragged_json_on_stdout(OUT TEXT WHAT): the JSON object in a command's
# stdout. mpirun may print banners around rank 0's JSON: the object is taken
# from the first '{' to the last '}'. No object is a fatal error naming WHAT.
# Included by the test scripts that read `--json` output under mpirun.
function(ragged_json_on_stdout out_var text what)
  string(FIND "${text}" "{" first)
  string(FIND "${text}" "}" last REVERSE)
  if(first EQUAL -1 OR last EQUAL -1)
    message(FATAL_ERROR "no JSON on stdout (${what}):\n${text}")
  endif()
  math(EXPR length "${last} - ${first} + 1")
  string(SUBSTRING "${text}" ${first} ${length} json)
  set(${out_var} "${json}" PARENT_SCOPE)
endfunction()
