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
  catch_discover_tests(${name} PROPERTIES LABELS unit
    ENVIRONMENT "POPC_PYTHON=${POPC_PYTHON}")
endfunction()
