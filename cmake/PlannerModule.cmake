# planner_add_module(NAME SOURCES ... DEPS ...)
# One library target per module: planner_<NAME>, sources under src/<NAME>/,
# public headers under include/planner/<NAME>/.
function(planner_add_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(planner_${name} STATIC ${ARG_SOURCES})
  target_include_directories(planner_${name} PUBLIC ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(planner_${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
  target_link_libraries(planner_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  # Sanitizer builds: the hot modules at -O1 (CMakeLists.txt, PLANNER_SANITIZE).
  if(PLANNER_SANITIZE AND name IN_LIST PLANNER_SANITIZE_O1_MODULES)
    target_compile_options(planner_${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O1>)
  endif()
  add_library(planner::${name} ALIAS planner_${name})
endfunction()

# planner_add_test(NAME SOURCES ... DEPS ... [TEST_SPEC spec]): one Catch2
# binary per module, registered with catch_discover_tests (only the tests
# TEST_SPEC selects, when given).
function(planner_add_test name)
  cmake_parse_arguments(ARG "NEEDS_CLI" "TEST_SPEC" "SOURCES;DEPS" ${ARGN})
  # Catch2's main is compiled once for every test binary (its heaviest part).
  if(NOT TARGET planner_catch_main)
    add_library(planner_catch_main STATIC ${PROJECT_SOURCE_DIR}/tests/catch_main.cpp)
    target_link_libraries(planner_catch_main PUBLIC Catch2::Catch2)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} planner_catch_main Catch2::Catch2)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_compile_definitions(${name} PRIVATE
    PLANNER_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    PLANNER_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared")
  # --warn NoTests: a test whose name filter matches no test case fails
  # (Catch2 exits 0 otherwise): a ';' in a TEST_CASE name splits the name
  # ctest passes, and such a case silently never ran.
  # Only CLI tests need the planner binary; module tests must not wait for it.
  if(ARG_NEEDS_CLI)
    catch_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_BINARY_DIR} EXTRA_ARGS --warn NoTests
                         PROPERTIES ENVIRONMENT "PLANNER_BIN=$<TARGET_FILE:planner>")
    add_dependencies(${name} planner)
  elseif(ARG_TEST_SPEC)  # e.g. "~[gpu]": register only the tests it selects
    catch_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_BINARY_DIR} EXTRA_ARGS --warn NoTests TEST_SPEC ${ARG_TEST_SPEC})
  else()
    catch_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_BINARY_DIR} EXTRA_ARGS --warn NoTests)
  endif()
endfunction()
