// The Catch2 main of every test binary, compiled once (planner_catch_main;
// Catch2 2.13 ships no Catch2WithMain).
// Nothing here initialises MPI or CUDA: catch_discover_tests runs the
// binaries at build time just to list their tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
