#pragma once
// Shared by tests/ops/shard_*_test.cpp: enumerate one op's strategies on a
// mesh given in text, and look strategies up by their axis assignment.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "ops/builder.hpp"
#include "planner/ops/sharding.hpp"

namespace planner::ops::testing {

struct Sharded {
  layout::DeviceMesh mesh;
  OpSharding op;
  const Strategy& by(std::string_view a) const {
    for (const auto& s : op.strategies)
      if (to_string(s.assignment) == a) return s;
    FAIL("no strategy '" << a << "'");
    return op.strategies.front();
  }
  bool has(std::string_view a) const {
    return std::any_of(op.strategies.begin(), op.strategies.end(), [&](const Strategy& s) { return to_string(s.assignment) == a; });
  }
  std::string text(const std::optional<layout::TensorLayout>& l) const { return layout::to_string(*l, mesh); }
  std::vector<std::string> assignments() const {
    std::vector<std::string> v;
    for (const auto& s : op.strategies) v.push_back(to_string(s.assignment));
    return v;
  }
};

inline Sharded shard(const Builder& b, graph::OpId id, const char* mesh, ShardingOptions o = {}) {
  auto m = layout::DeviceMesh::parse(mesh).value();
  auto op = enumerate_strategies(op_spec(b.g, id), b.g, m, o, dim_kinds(b.g));
  return Sharded{m, std::move(op)};
}

inline ShardingOptions any_role(int axes) {
  ShardingOptions o;
  o.roles.assign(static_cast<std::size_t>(axes), AxisRole::any);
  return o;
}

}  // namespace planner::ops::testing
