// profile_check FILE.json: loads a cost profile the way the planner will
// (cluster::load_profile) and reports the result like a planner subcommand:
// "ok: <name> (<hash>)" on stdout and exit 0, or one line
// "profile_check: error: <message>" on stderr and exit 2.
//
// It exists because no planner subcommand reads a profile yet; the profile
// cases of tests/bad_inputs/run.sh use it until `planner estimate --profile`
// does (then their `cmd` files switch to that).

#include <cstdio>
#include <exception>

#include <fmt/core.h>

#include "planner/cluster/profile.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "profile_check: error: usage: profile_check FILE.json\n");
    return 2;
  }
  try {
    auto p = planner::cluster::load_profile(argv[1], ".");
    if (!p) {
      fmt::print(stderr, "profile_check: error: {}\n", p.error().message);
      return 2;
    }
    fmt::print("ok: {} ({})\n", p->name, p->content_hash);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "profile_check: internal error: {}\n", e.what());
    return 3;
  }
}
