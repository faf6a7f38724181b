// The key property of redistribute(): for EVERY pair of layouts of small
// meshes and shapes, replaying its steps as real collectives on integer
// arrays (tests/layout/sim.hpp) leaves every device with exactly the target
// layout's local block (partial groups summing to it), and every
// intermediate state matches the step's `result` layout.

#include <catch2/catch.hpp>

#include "enumerate.hpp"
#include "sim.hpp"

using namespace planner;
using namespace planner::layout;
using namespace planner::layout::testing;

namespace {

// Index of a step kind in Tally::by_kind: the collective's enumerator, the
// local slice last.
int kind_index(CommKind k) { return k ? static_cast<int>(*k) : static_cast<int>(core::kCollectiveCount); }

struct Tally {
  std::size_t pairs = 0;
  std::size_t steps = 0;
  std::size_t by_kind[7] = {};
};

// Runs the property over all pairs of valid layouts of `shape`; returns the
// tally so that the cases can assert the enumeration was not vacuous.
Tally check_all_pairs(const DeviceMesh& mesh, const std::vector<std::int64_t>& shape, core::DType dtype) {
  Tally t;
  auto layouts = valid_layouts(mesh, shape);
  Array global = iota_array(shape);
  for (const TensorLayout& from : layouts) {
    std::vector<Array> start = distribute(global, from, mesh);
    // The starting state is right, and partial groups really need reducing.
    REQUIRE(check(start, global, from, mesh).empty());
    for (const TensorLayout& to : layouts) {
      auto steps = redistribute(from, to, shape, dtype, mesh);
      std::vector<Array> dev = start;
      for (const CommStep& s : steps) {
        std::string err = apply(dev, s, mesh, dtype);
        if (err.empty()) err = check(dev, global, s.result, mesh);
        if (!err.empty() || !s.result.validate(shape, mesh).ok()) {
          INFO(to_string(mesh) << " " << to_string(from, mesh) << " -> " << to_string(to, mesh) << " at step "
                               << to_string(s, mesh) << ": " << err);
          REQUIRE(false);
        }
        ++t.by_kind[kind_index(s.kind)];
      }
      std::string err = check(dev, global, to, mesh);
      // Equal layouts need no step (unequal ones may differ only in axes of
      // size 1, which need none either).
      if (!err.empty() || (from == to && !steps.empty())) {
        INFO(to_string(mesh) << " " << to_string(from, mesh) << " -> " << to_string(to, mesh) << ": "
                             << (err.empty() ? "steps for equal layouts" : err));
        REQUIRE(false);
      }
      t.steps += steps.size();
      ++t.pairs;
    }
  }
  return t;
}

DeviceMesh mesh_of(std::string_view text) {
  auto m = DeviceMesh::parse(text);
  REQUIRE(m.ok());
  return *m;
}

}  // namespace

TEST_CASE("every pair of layouts reshards correctly on mesh(dp=2,tp=2)", "[layout][property]") {
  DeviceMesh mesh = mesh_of("mesh(dp=2,tp=2)");
  for (auto shape : std::vector<std::vector<std::int64_t>>{{4}, {4, 4}, {4, 2, 4}, {2, 2, 2}}) {
    Tally t = check_all_pairs(mesh, shape, core::DType::bf16);
    CAPTURE(shape.size(), t.pairs, t.steps);
    CHECK(t.pairs >= 100);  // rank 1: 10 layouts
  }
}

TEST_CASE("every pair of layouts reshards correctly on mesh(dp=2,cp=2,tp=2)", "[layout][property]") {
  DeviceMesh mesh = mesh_of("mesh(dp=2,cp=2,tp=2)");
  std::size_t pairs = 0;
  std::size_t by_kind[7] = {};
  for (auto shape : std::vector<std::vector<std::int64_t>>{{8}, {8, 4}, {2, 8, 4}}) {
    Tally t = check_all_pairs(mesh, shape, core::DType::f32);
    pairs += t.pairs;
    for (int k = 0; k < 7; ++k) by_kind[k] += t.by_kind[k];
  }
  CAPTURE(pairs);
  CHECK(pairs > 10000);
  // Every collective redistribution can produce was exercised.
  for (CommKind k : {CommKind(core::Collective::all_reduce), CommKind(core::Collective::all_gather),
                     CommKind(core::Collective::reduce_scatter), CommKind(core::Collective::all_to_all), kLocalSlice})
    CHECK(by_kind[kind_index(k)] > 0);
  CHECK(by_kind[kind_index(core::Collective::send_recv)] == 0);
  CHECK(by_kind[kind_index(core::Collective::broadcast)] == 0);
}

TEST_CASE("every pair reshards correctly on uneven and size-1 meshes", "[layout][property]") {
  // Sizes 2 and 3 make mixed-radix block order visible ([dp*tp] vs [tp*dp]).
  Tally t = check_all_pairs(mesh_of("mesh(dp=2,tp=3)"), {6, 6}, core::DType::f16);
  CHECK(t.pairs > 100);
  t = check_all_pairs(mesh_of("mesh(dp=3,tp=2)"), {12, 3}, core::DType::i32);
  CHECK(t.pairs > 50);
  // A size-1 axis moves no data: its role changes without a step.
  t = check_all_pairs(mesh_of("mesh(pp=1,dp=2,tp=2)"), {4, 4}, core::DType::f32);
  CHECK(t.pairs > 1000);
}

TEST_CASE("every pair reshards correctly on a four-axis mesh", "[layout][property]") {
  // 16 devices; dim 0 takes at most two axes and dim 1 one: 224 layouts.
  Tally t = check_all_pairs(mesh_of("mesh(pp=2,dp=2,cp=2,tp=2)"), {4, 2}, core::DType::f32);
  CHECK(t.pairs == 224 * 224);
}

TEST_CASE("layouts across nodes reshard like single-node ones", "[layout][property]") {
  // Topology does not change what moves, only what it costs later.
  Tally t = check_all_pairs(mesh_of("mesh(dp=2,tp=4;per_node=4)"), {8, 4}, core::DType::bf16);
  CHECK(t.pairs > 100);
}
