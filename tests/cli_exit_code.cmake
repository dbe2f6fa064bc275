# Runs spmvc with ARGS and checks its exit code and what it printed (cmake -P, from ctest; see
# spmvc_cli_exit in tests/CMakeLists.txt). PASS_REGULAR_EXPRESSION alone cannot see the exit code.
#   SPMVC     the binary
#   ARGS      its arguments, joined by "|" (a ";" list would not survive add_test)
#   EXPECTED  the exit code README documents for the case
#   PATTERN   a regex that stdout + stderr must match (optional)
#   BUDGET    SPMVC_MEMORY_BUDGET for the run (optional)
string(REPLACE "|" ";" args "${ARGS}")
if(DEFINED BUDGET)
  set(ENV{SPMVC_MEMORY_BUDGET} "${BUDGET}")
endif()
execute_process(COMMAND "${SPMVC}" ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 120)
set(all "${out}${err}")
if(NOT rc STREQUAL "${EXPECTED}")
  message(FATAL_ERROR "spmvc ${args}: exit code ${rc}, expected ${EXPECTED}\n${all}")
endif()
if(DEFINED PATTERN AND NOT all MATCHES "${PATTERN}")
  message(FATAL_ERROR "spmvc ${args}: output does not match '${PATTERN}'\n${all}")
endif()
message(STATUS "spmvc ${args}: exit ${rc}\n${all}")
