# Runs PROGRAM with ARGS ("|"-separated) and fails unless it exits 0 and its
# output contains every line of EXPECT ("|"-separated).
include(${CMAKE_CURRENT_LIST_DIR}/run_program.cmake)
string(REPLACE "|" ";" expect "${EXPECT}")
foreach(line IN LISTS expect)
  string(FIND "${out}" "${line}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "expected output line missing: '${line}'")
  endif()
endforeach()
