// The bundled profiles reproduce the calibration set's collective
// measurements (validation/published_runs.json "collectives") within 10%.
// Skipped with a warning when the calibration set is not next to the repo.

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cluster_helpers.hpp"
#include "planner/cluster/collective.hpp"
#include "planner/core/io.hpp"

using namespace planner;
using namespace planner::cluster;
using nlohmann::json;

namespace {

std::filesystem::path calibration_file() {
#ifdef PLANNER_SHARED_DIR
  return std::filesystem::path(PLANNER_SHARED_DIR) / "validation" / "published_runs.json";
#else
  return std::filesystem::path(PLANNER_SOURCE_DIR "/../shared/validation/published_runs.json");
#endif
}

const json* find_entry(const json& all, const std::string& id) {
  for (const auto& c : all["collectives"])
    if (c.value("id", "") == id) return &c;
  return nullptr;
}

struct Check {
  std::string what;
  double measured;   // GB/s as published
  double predicted;  // GB/s from the profile
};

double busbw_GBps(const Interconnect& net, core::Collective kind, double bytes, int ranks, int per_node) {
  auto r = collective_time(net, kind, Bytes(bytes), Placement{ranks, per_node});
  if (!r.ok()) FAIL(r.error().message);
  return bus_bandwidth(kind, Bytes(bytes), ranks, r->time).value / 1e9;
}

Interconnect without_nvls(Interconnect net) {
  for (auto& l : net.levels) l.nvls.reset();
  return net;
}

}  // namespace

TEST_CASE("profiles reproduce the calibration set's nccl-tests points within 10%", "[cluster][calibration]") {
  auto file = calibration_file();
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    WARN("calibration set not found at " << file.string() << "; skipping the collective calibration check");
    return;
  }
  auto text = io::read_file(file);
  REQUIRE(text.ok());
  json all = json::parse(*text);
  std::vector<Check> checks;
  auto entry = [&](const std::string& id) -> const json& {
    const json* e = find_entry(all, id);
    if (!e) FAIL("calibration set has no collectives entry '" << id << "'");
    return *e;
  };

  // 8x A100 NVSwitch all-reduce sweep (nccl-tests).
  for (const char* name : {"a100-sxm4-80gb", "a100-sxm4-40gb"}) {
    auto p = cluster_test::load(name);
    for (const auto& pt : entry("a100-node-allreduce-sweep")["points"]) {
      double s = pt["bytes"].get<double>();
      checks.push_back({std::string(name) + " a100 sweep " + std::to_string(static_cast<long long>(s)),
                        pt["busbw_gbs"].get<double>(), busbw_GBps(p.interconnect, core::Collective::all_reduce, s, 8, 8)});
    }
  }
  auto h200 = cluster_test::load("h200-sxm-141gb");
  auto h100 = cluster_test::load("h100-sxm5-80gb");
  // 8x H200 sweep: Ring/LL below 2 MiB, NVLS above (the model picks the faster).
  for (const auto& pt : entry("h200-node-allreduce-sweep-nvls")["points"]) {
    double s = pt["bytes"].get<double>();
    checks.push_back({"h200 sweep " + std::to_string(static_cast<long long>(s)), pt["busbw_gbs"].get<double>(),
                      busbw_GBps(h200.interconnect, core::Collective::all_reduce, s, 8, 8)});
  }
  // 16 GiB: NVLS all-reduce, ring all-reduce with NVLS disabled, ring AG and RS.
  for (const auto& pt : entry("h200-node-collectives-16GiB")["points"]) {
    double s = pt["bytes"].get<double>();
    std::string coll = pt["collective"], alg = pt["algorithm"];
    core::Collective kind = coll == "all_gather" ? core::Collective::all_gather
                      : coll == "reduce_scatter" ? core::Collective::reduce_scatter : core::Collective::all_reduce;
    bool ring_only = alg.find("Ring") != std::string::npos;
    auto net = ring_only ? without_nvls(h200.interconnect) : h200.interconnect;
    checks.push_back({"h200 16GiB " + coll + " " + alg, pt["busbw_gbs"].get<double>(), busbw_GBps(net, kind, s, 8, 8)});
  }
  // GPU-count sweep at 8 GiB: NVLS from 5 GPUs, and the same with NVLS off.
  for (const auto& pt : entry("h200-allreduce-gpucount-sweep-8GiB")["points"]) {
    int n = pt["num_gpus"].get<int>();
    double s = 8589934592.0;
    checks.push_back({"h200 " + std::to_string(n) + " GPUs", pt["busbw_gbs"].get<double>(),
                      busbw_GBps(h200.interconnect, core::Collective::all_reduce, s, n, n)});
    checks.push_back({"h200 " + std::to_string(n) + " GPUs NVLS off", pt["busbw_nvls_off_gbs"].get<double>(),
                      busbw_GBps(without_nvls(h200.interconnect), core::Collective::all_reduce, s, n, n)});
  }
  // H100 NVLS (points with a size).
  for (const auto& pt : entry("h100-node-allreduce-nvls")["points"]) {
    if (!pt["bytes"].is_number()) continue;
    checks.push_back({"h100 nvls", pt["busbw_gbs"].get<double>(),
                      busbw_GBps(h100.interconnect, core::Collective::all_reduce, pt["bytes"].get<double>(), 8, 8)});
  }
  // AWS p5en (H200, EFA 3200 Gb/s = 400 GB/s per node), 4 nodes, ring.
  {
    auto efa = apply_overrides(h200, std::nullopt, 400.0);
    REQUIRE(efa.ok());
    for (const auto& pt : entry("h200-4node-allreduce-efa")["points"]) {
      std::string alg = pt["algorithm"];
      if (alg.find("NVLSTree") != std::string::npos) continue;  // not modelled
      checks.push_back({"h200 4 nodes EFA " + alg, pt["busbw_gbs"].get<double>(),
                        busbw_GBps(efa->interconnect, core::Collective::all_reduce, pt["bytes"].get<double>(), 32, 8)});
    }
  }
  auto a100 = cluster_test::load("a100-sxm4-80gb");
  // DGX A100 multi-node (">2 nodes", "large"): 4 nodes, 8 GiB.
  checks.push_back({"dgx-a100 4 nodes ring", entry("dgx-a100-multinode-allreduce")["points"][0]["busbw_gbs"].get<double>(),
                    busbw_GBps(a100.interconnect, core::Collective::all_reduce, 8589934592.0, 32, 8)});
  // Per-NIC references: one rank per node sends through one NIC.
  checks.push_back({"HDR per NIC", entry("hdr-per-nic-reference")["points"][0]["per_nic_busbw_gbs"].get<double>(),
                    busbw_GBps(a100.interconnect, core::Collective::send_recv, 1073741824.0, 2, 1)});
  {
    const auto& range = entry("ndr-per-nic-reference")["points"][0]["per_nic_busbw_gbs_range"];
    double mid = (range[0].get<double>() + range[1].get<double>()) / 2;
    checks.push_back({"NDR per NIC", mid, busbw_GBps(h100.interconnect, core::Collective::send_recv, 1073741824.0, 2, 1)});
  }
  // 3 nodes of A100 40GB with only 4 HDR NICs (100 GB/s per node): nccl-tests
  // -b 8 -e 128M in 1 MiB steps, average and peak busbw.
  {
    auto four_hdr = apply_overrides(cluster_test::load("a100-sxm4-40gb"), std::nullopt, 100.0);
    REQUIRE(four_hdr.ok());
    const auto& pt = entry("a100-40gb-3node-4hdr-allreduce")["points"][0];
    double sum = 0, peak = 0;
    const int count = 128;
    for (int i = 0; i < count; ++i) {
      double b = busbw_GBps(four_hdr->interconnect, core::Collective::all_reduce, 8.0 + i * 1048576.0, 24, 8);
      sum += b;
      peak = std::max(peak, b);
    }
    checks.push_back({"3 nodes 4xHDR average", pt["avg_busbw_gbs"].get<double>(), sum / count});
    checks.push_back({"3 nodes 4xHDR peak", pt["peak_busbw_gbs"].get<double>(), peak});
  }
  // Not checked: h200-p2p-copy-nvbandwidth (copy-engine memcpy, no size given, not
  // NCCL) and megatron-1T-3072gpu-in-training-bw (in-training bisection figures).

  REQUIRE(checks.size() > 50);
  int bad = 0;
  for (const auto& c : checks) {
    double err = std::abs(c.predicted - c.measured) / c.measured;
    if (err > 0.10) {
      ++bad;
      UNSCOPED_INFO(c.what << ": measured " << c.measured << " GB/s, predicted " << c.predicted << " ("
                           << err * 100 << "%)");
    }
  }
  CHECK(bad == 0);
}
