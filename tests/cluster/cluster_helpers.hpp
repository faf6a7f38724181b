#pragma once
// Shared by the cluster tests: where the bundled profiles are, and a loader
// that fails the test with the reader's message.

#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "planner/cluster/profile.hpp"

#ifndef PLANNER_SOURCE_DIR
#error "compile the cluster tests with -DPLANNER_SOURCE_DIR='\"/path/to/repo\"'"
#endif

namespace cluster_test {

inline std::filesystem::path profiles_dir() { return std::filesystem::path(PLANNER_SOURCE_DIR) / "cost_profiles"; }

inline planner::cluster::ClusterProfile load(const std::string& name) {
  auto p = planner::cluster::load_profile(name, profiles_dir());
  if (!p.ok()) FAIL(p.error().message);
  return std::move(p).value();
}

}  // namespace cluster_test
