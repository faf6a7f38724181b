#include <catch2/catch.hpp>
#include <iostream>
#include "estimate/estimate_fixtures.hpp"
using namespace estimate_test;
TEST_CASE("explore", "[.explore]") {
  auto g = mlp(8, 8000, 10000, 10);
  for (int z : {0, 3}) {
    FakeCostModel fake;
    auto c = config_for(2, 1, 1, 4, 8);
    c.zero = z;
    auto e = run(g, fake, c);
    std::cout << "zero" << z << " step=" << e.step_time.value << " compute=" << e.compute.value << " zero3=" << e.zero3_exposed.value << " chunk zero3=" << e.chunks[0].zero3_exposed.value << " dp_exp=" << e.dp_exposed.value << " dp_total=" << e.dp_total.value << " opt=" << e.optimizer.value << "\n";
    double ag = 0, rs = 0;
    for (auto& call : fake.calls()) { if (call.kind == cluster::Collective::all_gather) ag += call.bytes.value/1e9; if (call.kind == cluster::Collective::reduce_scatter) rs += call.bytes.value/1e9; }
    std::cout << "  all-gather total " << ag << " reduce-scatter total " << rs << "\n";
  }
  auto gg = small_gpt(4);
  FakeCostModel f2; f2.seconds_per_byte = 1e-6;
  auto c = config_for(2, 1, 1, 4); c.zero = 3;
  auto e = run(gg, f2, c);
  std::cout << "gpt zero3 chunk f=" << e.chunks[0].forward_compute.value << " b=" << e.chunks[0].backward_compute.value << " zero3/mb=" << e.chunks[0].zero3_exposed.value << " step=" << e.step_time.value << "\n";
  double ag = 0, rs = 0;
  for (auto& call : f2.calls()) { if (call.kind == cluster::Collective::all_gather) ag += call.bytes.value*1e-6; if (call.kind == cluster::Collective::reduce_scatter) rs += call.bytes.value*1e-6; }
  std::cout << "  all-gather total " << ag << " reduce-scatter total " << rs << "\n";
}
