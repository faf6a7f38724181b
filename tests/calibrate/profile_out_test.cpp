// Calibrated profiles: synthetic CPU measurements and the hand-made
// nccl-tests sample give profiles the reader accepts and the cost model
// uses to reproduce what was measured.

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "planner/calibrate/profile_out.hpp"
#include "planner/cluster/collective.hpp"
#include "planner/core/io.hpp"

using namespace planner;
using namespace planner::calibrate;
using core::Collective;

namespace {

std::string read(const std::string& rel) {
  auto t = io::read_file(std::string(PLANNER_SOURCE_DIR) + "/" + rel);
  REQUIRE(t.ok());
  return *t;
}

BaseProfile a100() {
  BaseProfile b;
  b.text = read("cost_profiles/a100-sxm4-80gb.json");
  auto p = cluster::parse_profile(b.text, "a100-sxm4-80gb.json");
  REQUIRE(p.ok());
  b.parsed = *p;
  return b;
}

Provenance prov() { return Provenance{{{"date", "2026-01-01T00:00:00Z"}, {"host", "testhost"}}}; }

/// Measurements made from known parameters: sgemm at 50 GFLOP/s with
/// e(F) = F / (F + 2e6) (t = F/50e9 + 40 us), triad at 10 GB/s with a
/// 1 us call cost, collectives on 2 ranks with alpha 3 us (all_to_all 8 us)
/// at 4 GB/s bus bandwidth.
CpuMeasurements synthetic() {
  CpuMeasurements m;
  m.ranks = 2;
  for (int n : {16, 32, 64, 128, 256}) {
    const double f = 2.0 * n * n * n;
    m.gemm_sizes.push_back(n);
    m.gemm.push_back({f, Seconds(f / 50e9 + 40e-6)});
  }
  m.skinny_n = 256;
  for (int d : {1, 4, 16, 64, 256}) {
    const double f = 2.0 * d * 256 * 256;
    m.skinny_dims.push_back(d);
    m.skinny.push_back({f, Seconds(f / 50e9 + 40e-6)});
  }
  m.aligned_n = 256;
  m.aligned = {2.0 * 256 * 256 * 256, Seconds(2.0 * 256 * 256 * 256 / 50e9)};
  m.misaligned = {2.0 * 255 * 255 * 255, Seconds(2.0 * 255 * 255 * 255 / 40e9)};
  for (double b : {24e3, 24e5, 24e7}) m.triad.push_back({b, Seconds(b / 10e9 + 1e-6)});
  for (Collective c : kCalibratedCollectives) {
    const CollectiveShape sh = collective_shape(c, 2);
    const double alpha = c == Collective::all_to_all ? 8e-6 : 3e-6;
    for (double s : {65536.0, 1048576.0, 16777216.0})
      m.collectives[static_cast<std::size_t>(c)].push_back({s, Seconds(sh.steps * alpha + sh.factor * s / 4e9)});
  }
  m.startup_resident = Bytes(50e6);
  m.communicator_resident = Bytes(8e6);
  m.host = "testhost";
  m.cpu_model = "Test CPU @ 3.0GHz";
  m.openblas_config = "OpenBLAS 0.3.21";
  m.openblas_threads = 1;
  m.host_memory = Bytes(16e9);
  return m;
}

}  // namespace

TEST_CASE("cpu_profile: a loadable profile that reproduces the measurements", "[calibrate][profile]") {
  auto w = cpu_profile(synthetic(), prov(), "cpu-test", std::nullopt);
  if (!w) FAIL(w.error().message);
  const auto& p = w->parsed;
  CHECK(p.name == "cpu-test");
  // Peak = best rate: n = 256, F = 33554432, t = F/50e9 + 40 us = 711.1 us -> 47.19 GFLOP/s.
  const double f256 = 2.0 * 256 * 256 * 256;
  REQUIRE(p.device.peak_by_precision[0]);
  CHECK(p.device.peak_by_precision[0]->value == Approx(f256 / (f256 / 50e9 + 40e-6)).epsilon(1e-5));
  CHECK_FALSE(p.device.peak_by_precision[3]);  // no bf16 on a CPU sgemm profile
  // Triad peak at 24e7 B: 24e7 / (0.024 + 1e-6) = 9.9996 GB/s.
  CHECK(p.device.hbm_bandwidth.value == Approx(24e7 / (24e7 / 10e9 + 1e-6)).epsilon(1e-3));
  // 16e9 B of host memory over 2 ranks.
  CHECK(p.device.visible_memory.value == Approx(8e9).epsilon(1e-3));
  // Misaligned: 40 / 50 GFLOP/s.
  CHECK(p.device.gemm_misaligned_factor == Approx(0.8));
  // The rank-to-rank level: 2 devices, B = 4 GB/s, all_reduce latency 3 us.
  const auto& shm = p.interconnect.levels[0];
  CHECK(shm.devices_per_group == 2);
  CHECK(shm.bandwidth.value == Approx(4e9).epsilon(1e-4));
  CHECK(shm.latency.value == Approx(3e-6).epsilon(1e-3));
  CHECK(shm.latency_for(Collective::all_to_all).value == Approx(8e-6).epsilon(1e-3));
  // Every collective reproduced by the written (rounded) profile.
  for (const auto& c : w->checks) {
    INFO(c.what);
    // sgemm: squares and skinny shapes share the tables and are
    // interpolated between rows, so the joint fit is close, not exact.
    CHECK(c.max_error < (c.what.rfind("sgemm", 0) == 0 ? 0.1 : 2e-3));
    CHECK(c.capped == 0);
  }
  CHECK(w->checks.size() == 7);  // sgemm, triad, 5 collectives
  // Sources say how each number was measured; provenance is kept.
  CHECK(p.sources.at("device.peak_tflops.fp32").find("measured by planner calibrate") == 0);
  CHECK(p.sources.at("interconnect.levels[1].nic_GBps").find("estimate, not measured") == 0);
  auto j = nlohmann::json::parse(w->text);
  CHECK(j["provenance"]["host"] == "testhost");
}

TEST_CASE("cpu_profile: each memory-bound op type's and class's kernels as a table of their rate, a row per batch",
          "[calibrate][profile]") {
  using K = ClassKernelSample;
  auto m = synthetic();
  // hbm_GBps: the triad's best rate, 24e7 B in 0.024 s + 1 us.
  const double peak = 24e7 / (24e7 / 10e9 + 1e-6);
  m.exp_per_element = m.erf_per_element = Seconds(1e-9);  // 1e9 exps and 1e9 erfs per second
  // A norm at batch 2: forward 1e6 B in 1 ms, backward 2e6 B in 1 ms: a row
  // at the mean pass, 1.5e6 B, of 3e6 B / 2 ms = 1.5e9 B/s. At batch 8:
  // 4e6 B in 2 ms and 8e6 B in 4 ms: 6e6 B, 2e9 B/s.
  m.class_kernels.push_back(K{.op_class = "normalization", .op_type = "LayerNormalization", .op = "LayerNormalization [x]",
                              .batch = 2, .forward_bytes = Bytes(1e6), .backward_bytes = Bytes(2e6),
                              .forward = Seconds(1e-3), .backward = Seconds(1e-3)});
  m.class_kernels.push_back(K{.op_class = "normalization", .op_type = "LayerNormalization", .op = "LayerNormalization [X]",
                              .batch = 8, .forward_bytes = Bytes(4e6), .backward_bytes = Bytes(8e6),
                              .forward = Seconds(2e-3), .backward = Seconds(4e-3)});
  // Two softmax kernels at batch 2, forward only: Softmax 4e6 B and 1e6
  // exps (1 ms) in 3 ms: 4e6 B / 2 ms = 2e9 B/s; LogSoftmax 4e6 B in 1 ms:
  // 4e9 B/s. Their class: 8e6 B / 3 ms = 2.6667e9 B/s at 4e6 B a pass.
  m.class_kernels.push_back(K{.op_class = "softmax", .op_type = "Softmax", .op = "Softmax [y]", .batch = 2,
                              .forward_bytes = Bytes(4e6), .forward_special = 1e6, .forward = Seconds(3e-3)});
  m.class_kernels.push_back(K{.op_class = "softmax", .op_type = "LogSoftmax", .op = "LogSoftmax [y]", .batch = 2,
                              .forward_bytes = Bytes(4e6), .forward = Seconds(1e-3)});
  // An erf's evaluations at the erf rate: 2e6 B and 1e6 erfs (1 ms) in 2 ms:
  // 2e6 B / 1 ms = 2e9 B/s.
  m.class_kernels.push_back(K{.op_class = "elementwise", .op_type = "Erf", .op = "Erf [z]", .batch = 2,
                              .forward_bytes = Bytes(2e6), .forward_erf = 1e6, .forward = Seconds(2e-3)});
  // An op the rules give no bytes says nothing about its class or type.
  m.class_kernels.push_back(K{.op_class = "data_movement", .op_type = "Reshape", .op = "Reshape [w]", .batch = 2,
                              .forward = Seconds(1e-3)});
  auto w = cpu_profile(m, prov(), "cpu-test", std::nullopt);
  if (!w) FAIL(w.error().message);
  const auto& c = w->parsed.device.memory_bound_class_efficiency;
  const auto& t = w->parsed.device.memory_bound_op_efficiency;
  REQUIRE(c.size() == 3);
  REQUIRE(t.size() == 4);
  for (const auto* norm : {&c.at("normalization").rows, &t.at("LayerNormalization").rows}) {
    REQUIRE(norm->size() == 2);
    CHECK((*norm)[0].x == 1.5e6);
    CHECK((*norm)[0].y == Approx(1.5e9 / peak).epsilon(1e-3));
    CHECK((*norm)[1].x == 6e6);
    CHECK((*norm)[1].y == Approx(2e9 / peak).epsilon(1e-3));
  }
  REQUIRE(c.at("softmax").rows.size() == 1);
  CHECK(c.at("softmax").rows[0].x == 4e6);
  CHECK(c.at("softmax").rows[0].y == Approx(8e6 / 3e-3 / peak).epsilon(1e-3));
  CHECK(t.at("Softmax").rows[0].y == Approx(2e9 / peak).epsilon(1e-3));
  CHECK(t.at("LogSoftmax").rows[0].y == Approx(4e9 / peak).epsilon(1e-3));
  CHECK(t.at("Erf").rows[0].y == Approx(2e9 / peak).epsilon(1e-3));
  CHECK(c.at("elementwise").rows[0].y == Approx(2e9 / peak).epsilon(1e-3));
  CHECK(!t.contains("Reshape"));
  CHECK(w->parsed.sources.at("device.memory_bound_class_efficiency.softmax").find("LogSoftmax [y]") !=
        std::string::npos);
  CHECK(w->parsed.sources.at("device.memory_bound_op_efficiency.Softmax").find("Softmax [y]") != std::string::npos);
  // Without samples (the synthetic sweep), no key: every op streams.
  auto plain = cpu_profile(synthetic(), prov(), "cpu-test", std::nullopt);
  REQUIRE(plain.ok());
  CHECK(plain->parsed.device.memory_bound_class_efficiency.empty());
  CHECK(plain->parsed.device.memory_bound_op_efficiency.empty());
}

TEST_CASE("cpu_profile with a base takes the base's network level", "[calibrate][profile]") {
  auto w = cpu_profile(synthetic(), prov(), "cpu-net", a100());
  if (!w) FAIL(w.error().message);
  const auto& x = w->parsed.interconnect.inter_node();
  CHECK(x.name == "infiniband");
  CHECK(x.nics_per_node == 8);
  CHECK(w->parsed.sources.at("interconnect.levels[1].nic_GBps") == "InfiniBand HDR: 200 Gb/s per port = 25 GB/s per direction");
}

TEST_CASE("cpu_profile with one rank has no collective and says so", "[calibrate][profile]") {
  auto m = synthetic();
  m.ranks = 1;
  for (auto& c : m.collectives) c.clear();
  auto w = cpu_profile(m, prov(), "cpu-one", std::nullopt);
  if (!w) FAIL(w.error().message);
  CHECK(w->parsed.interconnect.levels[0].devices_per_group == 1);
  CHECK(w->parsed.sources.at("interconnect.levels[0].bandwidth_GBps").find("estimate, not measured: one rank") == 0);
}

TEST_CASE("cpu_profile rejects a name the reader would reject", "[calibrate][profile]") {
  auto w = cpu_profile(synthetic(), prov(), "CPU Test", std::nullopt);
  REQUIRE_FALSE(w);
  CHECK(w.error().message.find("may use only lowercase letters") != std::string::npos);
}

TEST_CASE("nccl_profile: the sample refits NVLink and InfiniBand of the A100 profile", "[calibrate][profile][nccl]") {
  auto runs = parse_nccl_tests(read("tests/calibrate/data/nccl_tests_dgx_a100.txt"), "sample.txt");
  REQUIRE(runs);
  auto w = nccl_profile(a100(), *runs, prov(), "a100-fitted", "sample.txt");
  if (!w) FAIL(w.error().message);
  const auto& p = w->parsed;
  const auto& nv = p.interconnect.levels[0];
  // The single-node runs fit NVLink exactly (one stage): every collective
  // reproduced within the 4-digit rounding of the tables.
  CHECK_FALSE(nv.nvls);
  for (Collective c : {Collective::all_gather, Collective::reduce_scatter, Collective::all_to_all, Collective::broadcast})
    CHECK(nv.per_collective[static_cast<std::size_t>(c)]);
  REQUIRE(w->checks.size() == 6);
  for (const auto& c : w->checks) {
    INFO(c.what);
    CHECK(c.max_error < 2e-3);
    CHECK(c.capped == 0);
  }
  // The device part is the base's, sources verbatim.
  CHECK(p.device.hbm_bandwidth.value == Approx(2039e9));
  CHECK(p.sources.at("device.hbm_GBps") == a100().parsed.sources.at("device.hbm_GBps"));
  CHECK(p.sources.at("interconnect.levels[0].efficiency.ring").find("measured by nccl-tests (sample.txt)") == 0);
  // All-to-all latency: the sample's model has 9 us per (single) step, but
  // e(S) = E S/(S + S_half) adds a constant 0.875 * 4e6 / (300e9 * 0.55) =
  // 21.2 us at small sizes that no fit can tell from latency; the fit lies
  // between 9 us and 0.99 x the smallest time (30.22 us).
  CHECK(nv.latency_for(Collective::all_to_all).value >= 9e-6);
  CHECK(nv.latency_for(Collective::all_to_all).value <= 0.99 * 30.22e-6 + 1e-12);
}

TEST_CASE("nccl_profile refuses ranks per host above the base's node", "[calibrate][profile][nccl]") {
  std::string text = "# Collective test starting: all_reduce_perf\n# nThread 1\n";
  for (int r = 0; r < 16; ++r) text += "#  Rank " + std::to_string(r) + " Group 0 Pid 1 on big device 0 [0x1] GPU\n";
  text += "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong\n"
          "   1048576  262144  float  sum  -1  100.0  10.49  19.66  0  100.0  10.49  19.66  0\n";
  auto runs = parse_nccl_tests(text, "big.txt");
  REQUIRE(runs);
  auto w = nccl_profile(a100(), *runs, prov(), "x", "big.txt");
  REQUIRE_FALSE(w);
  CHECK(w.error().message == "big.txt:2: 16 ranks per host, but base profile 'a100-sxm4-80gb' has 8 devices per node");
}
