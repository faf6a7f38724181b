#pragma once
// Shared by the cluster tests: where the bundled profiles are, and a loader
// that fails the test with the reader's message.

#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "planner/cluster/collective.hpp"
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

/// A constant efficiency table (the hand-worked collective tests).
inline planner::cluster::CollectiveTable flat(double e) {
  return planner::cluster::CollectiveTable{planner::cluster::EfficiencyTable{{{1, e}}, "message_bytes"}, 2,
                                           planner::Bytes(0)};
}

/// A level inside the node: groups of `group` devices at GBps each.
inline planner::cluster::Level intra(const char* name, int group, double GBps, double alpha_us, double e) {
  planner::cluster::Level l;
  l.name = name;
  l.devices_per_group = group;
  l.bandwidth = planner::BytesPerSecond(GBps * 1e9);
  l.latency = planner::Seconds(alpha_us * 1e-6);
  l.ring = flat(e);
  return l;
}

/// DGX-like: 8 GPUs at 300 GB/s (e = 0.8, so busbw 240 GB/s), alpha 2.5 us;
/// 8 NICs of 25 GB/s (e = 0.96, tree 0.864), alpha 4 us.
inline planner::cluster::Interconnect dgx() {
  using namespace planner::cluster;
  Level x;
  x.name = "ib";
  x.inter_node = true;
  x.nics_per_node = 8;
  x.nic_bandwidth = planner::BytesPerSecond(25e9);
  x.latency = planner::Seconds(4e-6);
  x.ring = flat(0.96);
  x.tree = flat(0.864);
  return Interconnect{{intra("nvlink", 8, 300, 2.5, 0.8), x}};
}

/// Seconds of collective `c` on `net`; fails the test on an error.
inline double seconds(const planner::cluster::Interconnect& net, planner::core::Collective c, double bytes, int ranks,
                      int per_node) {
  auto r = planner::cluster::collective_time(net, c, planner::Bytes(bytes), planner::cluster::Placement{ranks, per_node});
  if (!r.ok()) FAIL(r.error().message);
  return r->time.value;
}

}  // namespace cluster_test
