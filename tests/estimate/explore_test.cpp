#include <catch2/catch.hpp>
#include <iostream>
#include "estimate/estimate_fixtures.hpp"
#include "../src/estimate/internal.hpp"
using namespace estimate_test;
TEST_CASE("explore", "[.explore]") {
  FakeCostModel fake;
  fake.flops_per_s = 1e9;
  auto g = gpt(2, 16, 64, 4, 256, 128, 4);
  auto L = estimate::detail::build_layout(g, fake, config_for(1, 2, 1, 4)).value();
  for (const auto& pc : search::planned_comms(L.lowered, g, L.choice))
    std::cout << pc.where << " kind=" << layout::collective_kind_name(pc.step.kind) << " bytes=" << pc.step.bytes.value << " count=" << pc.count << " bwd=" << pc.backward << " src=" << (int)pc.source << " inst=" << L.lowered.nodes[pc.node].instances.size() << "\n";
}
