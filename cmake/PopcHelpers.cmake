# add_subdirectory only for folders that already have a CMakeLists.txt, so the
# tree configures while parts are being built up.
function(popc_add_subdirs)
  foreach(dir ${ARGN})
    if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/CMakeLists.txt)
      add_subdirectory(${dir})
    endif()
  endforeach()
endfunction()

# popc_unit_test(NAME sources... LIBS libs...): a Catch2 test binary registered with ctest
# under the label "unit".
function(popc_unit_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE Catch2::Catch2 popc_test_main ${ARG_LIBS})
  popc_discover_unit_tests(${name})
endfunction()

# Registers a Catch2 binary's test cases with ctest (label "unit"). `-w NoTests` makes a
# filter that matches nothing fail instead of passing quietly, and the binary joins the
# list that unit.registered_tests checks (no name ctest would split, one entry per case).
function(popc_discover_unit_tests name)
  catch_discover_tests(${name} EXTRA_ARGS -w NoTests PROPERTIES LABELS unit
    ENVIRONMENT "POPC_PYTHON=${POPC_PYTHON}")
  set_property(GLOBAL APPEND PROPERTY POPC_UNIT_TEST_BINARIES $<TARGET_FILE:${name}>)
endfunction()
