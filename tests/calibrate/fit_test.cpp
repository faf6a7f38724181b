// Calibration fits recover the parameters that made synthetic measurements.

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "planner/calibrate/fit.hpp"
#include "planner/cluster/collective.hpp"

using namespace planner;
using namespace planner::calibrate;
using core::Collective;

namespace {

/// One intra-node level of `n` devices at `gbps` with latency `alpha_us`,
/// ring table constant 1, and an inter-node level (unused by placements on
/// one node).
cluster::Interconnect one_node(int n, double gbps, double alpha_us) {
  cluster::Interconnect net;
  cluster::Level l;
  l.name = "link";
  l.devices_per_group = n;
  l.bandwidth = BytesPerSecond(gbps * 1e9);
  l.latency = Seconds(alpha_us * 1e-6);
  l.ring.efficiency = cluster::EfficiencyTable{{{1, 1}}, "message_bytes"};
  net.levels.push_back(l);
  cluster::Level x;
  x.name = "net";
  x.inter_node = true;
  x.nics_per_node = 1;
  x.nic_bandwidth = BytesPerSecond(10e9);
  x.latency = Seconds(5e-6);
  x.ring.efficiency = cluster::EfficiencyTable{{{1, 1}}, "message_bytes"};
  net.levels.push_back(x);
  return net;
}

}  // namespace

TEST_CASE("fit_line recovers intercept and slope of an exact line", "[calibrate]") {
  // t = 5 us + S / (10 GB/s): slope 1e-10 s per byte.
  std::vector<Sample> s;
  for (double x : {1e3, 1e5, 1e7, 1e9}) s.push_back({x, Seconds(5e-6 + x / 10e9)});
  auto f = fit_line(s);
  REQUIRE(f);
  CHECK(f->intercept.value == Approx(5e-6).epsilon(1e-9));
  CHECK(f->slope == Approx(1e-10).epsilon(1e-9));
}

TEST_CASE("fit_line rejects one size and non-positive times", "[calibrate]") {
  std::vector<Sample> same{{1e3, Seconds(1e-6)}, {1e3, Seconds(2e-6)}};
  CHECK_FALSE(fit_line(same));
  std::vector<Sample> zero{{1e3, Seconds(0)}, {2e3, Seconds(1e-6)}};
  auto f = fit_line(zero);
  REQUIRE_FALSE(f);
  CHECK(f.error().message.find("not finite and positive") != std::string::npos);
}

TEST_CASE("rate_table: peak is the best rate, rows are rate / peak", "[calibrate]") {
  // 1e6 FLOP in 1e-4 s = 1e10/s; 1e8 in 2e-3 s = 5e10/s (peak); 1e9 in 2.5e-2 s = 4e10/s.
  std::vector<Sample> s{{1e8, Seconds(2e-3)}, {1e6, Seconds(1e-4)}, {1e9, Seconds(2.5e-2)}, {1e6, Seconds(2e-4)}};
  auto t = rate_table(s);
  REQUIRE(t);
  CHECK(t->peak == Approx(5e10));
  REQUIRE(t->rows.size() == 3);  // the duplicate 1e6 keeps its faster time
  CHECK(t->rows[0].x == 1e6);
  CHECK(t->rows[0].y == Approx(0.2));  // 1e10 / 5e10
  CHECK(t->rows[1].y == Approx(1.0));
  CHECK(t->rows[2].y == Approx(0.8));  // 4e10 / 5e10
}

TEST_CASE("collective_shape follows the ring formulas", "[calibrate]") {
  // n = 4: all_reduce 2*3/4 = 1.5 and 6 steps; all_gather 0.75, 3; all_to_all 0.75, 1; broadcast 1, 3.
  CHECK(collective_shape(Collective::all_reduce, 4).factor == Approx(1.5));
  CHECK(collective_shape(Collective::all_reduce, 4).steps == 6);
  CHECK(collective_shape(Collective::all_gather, 4).factor == Approx(0.75));
  CHECK(collective_shape(Collective::reduce_scatter, 4).steps == 3);
  CHECK(collective_shape(Collective::all_to_all, 4).steps == 1);
  CHECK(collective_shape(Collective::broadcast, 4).factor == 1);
  CHECK(collective_shape(Collective::broadcast, 4).steps == 3);
}

TEST_CASE("fit_latency and best_bus_bandwidth recover alpha and B", "[calibrate]") {
  // all_reduce on 4 ranks, alpha = 2 us, B = 20 GB/s, e = 1:
  // t = 6 * 2 us + 1.5 * S / 20e9.
  std::vector<Sample> s;
  for (double x : {4096.0, 65536.0, 1048576.0, 16777216.0}) s.push_back({x, Seconds(12e-6 + 1.5 * x / 20e9)});
  auto a = fit_latency(Collective::all_reduce, 4, s);
  REQUIRE(a);
  CHECK(a->value == Approx(2e-6).epsilon(1e-6));
  CHECK(best_bus_bandwidth(Collective::all_reduce, 4, *a, s) == Approx(20e9).epsilon(1e-6));
  // all_to_all: one step. t = 9 us + 0.75 S / 20e9 -> alpha 9 us.
  std::vector<Sample> t;
  for (double x : {4096.0, 1048576.0}) t.push_back({x, Seconds(9e-6 + 0.75 * x / 20e9)});
  auto b = fit_latency(Collective::all_to_all, 4, t);
  REQUIRE(b);
  CHECK(b->value == Approx(9e-6).epsilon(1e-6));
}

TEST_CASE("fit_latency clamps so every sample keeps a bandwidth term", "[calibrate]") {
  // Two points with a steep small-size time would put the intercept above the
  // first time: 10 us at 1 KB, 11 us at 1 MB -> intercept ~10 us; clamp 0.99 * 10 us / 2 steps (n = 2).
  std::vector<Sample> s{{1024, Seconds(10e-6)}, {1048576, Seconds(11e-6)}};
  auto a = fit_latency(Collective::all_reduce, 2, s);
  REQUIRE(a);
  CHECK(a->value == Approx(0.99 * 10e-6 / 2));
}

TEST_CASE("solve_table recovers a known efficiency table through the cost model", "[calibrate]") {
  // 4 ranks on one node at 20 GB/s, alpha 2 us; the true all_to_all table
  // has its own latency 7 us and e = 0.1, 0.5, 0.9 at 1e3, 1e6, 1e8 bytes:
  // t = 7 us + 0.75 * S / (20e9 * e).
  auto net = one_node(4, 20, 2);
  cluster::EfficiencyTable truth{{{1e3, 0.1}, {1e6, 0.5}, {1e8, 0.9}}, "message_bytes"};
  set_table(net.levels[0], Collective::all_to_all, truth, Seconds(7e-6));
  std::vector<Sample> s;
  for (const auto& r : truth.rows) s.push_back({r.x, Seconds(7e-6 + 0.75 * r.x / (20e9 * r.y))});
  auto solved = solve_table(net, 0, Collective::all_to_all, {4, 4}, s);
  REQUIRE(solved);
  REQUIRE(solved->rows.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(solved->rows[i].y == Approx(truth.rows[i].y).epsilon(1e-9));
  CHECK(solved->capped == 0);

  // all_reduce solves the ring table: t = 6 * 2 us + 1.5 S / (20e9 e).
  std::vector<Sample> ar;
  for (const auto& r : truth.rows) ar.push_back({r.x, Seconds(12e-6 + 1.5 * r.x / (20e9 * r.y))});
  auto ring = solve_table(net, 0, Collective::all_reduce, {4, 4}, ar);
  REQUIRE(ring);
  for (std::size_t i = 0; i < 3; ++i) CHECK(ring->rows[i].y == Approx(truth.rows[i].y).epsilon(1e-9));

  // A time below what e = 1 allows is capped: at 1e8 B, 0.75e8/20e9 = 3.75 ms > 1 ms.
  std::vector<Sample> fast{{1e8, Seconds(1e-3)}};
  auto capped = solve_table(net, 0, Collective::all_to_all, {4, 4}, fast);
  REQUIRE(capped);
  CHECK(capped->rows[0].y == 1.0);
  CHECK(capped->capped == 1);
}

TEST_CASE("solve_table refuses an all_reduce fit over a level with tree/nvls", "[calibrate]") {
  auto net = one_node(4, 20, 2);
  net.levels[0].nvls = cluster::CollectiveTable{{{{1, 0.5}}, "message_bytes"}, 2, Bytes(0)};
  std::vector<Sample> s{{1e6, Seconds(1e-4)}};
  CHECK_FALSE(solve_table(net, 0, Collective::all_reduce, {4, 4}, s));
}

TEST_CASE("fit_gemm recovers peak and tables that made the times", "[calibrate]") {
  // Peak 100 GFLOP/s. Efficiency table e(F) = 0.2, 0.6, 1 at the cubes
  // n = 64, 128, 256 (F = 2n^3 = 524288, 4194304, 33554432); skinny factor
  // s(d) = 0.1, 0.2, 1 at d = 4, 16, 64 with N = 256 (s = 1 from 64 up).
  // t = F / (peak e(F) s(min dim)) for cubes and [d x 256] x [256 x 256].
  const double peak = 100e9;
  cluster::EfficiencyTable e{{{524288, 0.2}, {4194304, 0.6}, {33554432, 1.0}}, "flops"};
  cluster::EfficiencyTable sk{{{4, 0.1}, {16, 0.2}, {64, 1.0}}, "min_dim"};
  auto time = [&](int m, int n, int k) {
    const double f = 2.0 * m * n * k;
    return Seconds(f / (peak * e.interpolate(f) * sk.interpolate(std::min({m, n, k}))));
  };
  std::vector<GemmSample> square, skinny;
  for (int n : {64, 128, 256}) square.push_back({n, n, n, time(n, n, n)});
  for (int d : {4, 16, 64}) skinny.push_back({d, 256, 256, time(d, 256, 256)});
  auto g = fit_gemm(square, skinny);
  REQUIRE(g);
  CHECK(g->peak == Approx(peak));
  CHECK(g->max_error < 1e-9);
  // The envelope: the cubes and [64 x 256] x [256 x 256] (F = 8388608, on
  // the cubes' log-linear segment: 0.6 + 0.4 * log(2)/log(8) = 0.7333).
  // d = 4 (F = 524288, the n = 64 cube's) reaches 0.1 of it; d = 16
  // (F = 2097152, table 0.2 + 0.4 * 2/3 = 0.4667) 0.2 of it.
  REQUIRE(g->efficiency.size() == 4);
  CHECK(g->efficiency[0].y == Approx(0.2));
  CHECK(g->efficiency[2].x == 8388608);
  CHECK(g->efficiency[2].y == Approx(0.6 + 0.4 / 3));
  CHECK(g->efficiency[3].y == Approx(1.0));
  REQUIRE(g->skinny.size() == 5);  // d = 4, 16, 64, 128, 256
  CHECK(g->skinny[0].y == Approx(0.1));
  CHECK(g->skinny[1].y == Approx(0.2));
  CHECK(g->skinny[2].y == Approx(1.0));  // d = 64: the cube and [64 x 256] x [256 x 256] both at s = 1
}

TEST_CASE("fit_gemm: a skinny product faster than the cube of its FLOPs raises the envelope", "[calibrate]") {
  // Cube 64 (F = 524288) at 20 GFLOP/s; [8 x 256] x [256 x 256] (F = 1048576)
  // at 50 GFLOP/s (peak); cube 128 (F = 4194304) at 40 GFLOP/s.
  // Envelope: 0.4 at 524288, 1.0 at 1048576; the cube 128 falls below it
  // (table(4194304) = 1, clamped), so s(128) = 0.8 and the model gives it
  // back: 4194304 / (50e9 * 1 * 0.8) = 104.86 us, as measured.
  std::vector<GemmSample> square{{64, 64, 64, Seconds(524288 / 20e9)}, {128, 128, 128, Seconds(4194304 / 40e9)}};
  std::vector<GemmSample> skinny{{8, 256, 256, Seconds(1048576 / 50e9)}};
  auto g = fit_gemm(square, skinny);
  REQUIRE(g);
  CHECK(g->peak == Approx(50e9));
  REQUIRE(g->efficiency.size() == 2);
  CHECK(g->efficiency[0].y == Approx(0.4));
  CHECK(g->efficiency[1].y == Approx(1.0));
  REQUIRE(g->skinny.size() == 3);  // d = 8, 64, 128
  CHECK(g->skinny[2].y == Approx(0.8));
  CHECK(g->max_error < 1e-9);
}

TEST_CASE("fit_gemm rejects a non-square 'square' sample", "[calibrate]") {
  std::vector<GemmSample> square{{16, 32, 16, Seconds(1e-6)}};
  CHECK_FALSE(fit_gemm(square, {}));
}
