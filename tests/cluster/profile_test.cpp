// Bundled profiles load; value-type helpers compute what the tables say;
// overrides and the profiles-folder search behave.

#include <cmath>
#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>

#include "cluster_helpers.hpp"
#include "planner/cluster/profile.hpp"

using namespace planner;
using namespace planner::cluster;
using Catch::Matchers::Contains;

TEST_CASE("every bundled profile loads and validates", "[cluster]") {
  auto names = list_profiles(cluster_test::profiles_dir());
  // The brief's list plus the calibration clusters that differ from DGX.
  for (const char* want : {"v100-sxm2-16gb", "v100-sxm2-32gb", "a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm5-80gb",
                           "h200-sxm-141gb", "ascend-910", "jean-zay-a100-80gb", "mosaicml-a100-40gb-roce",
                           "mosaicml-a100-80gb-roce", "p100-sxm2-16gb"}) {
    CAPTURE(want);
    CHECK(std::find(names.begin(), names.end(), want) != names.end());
  }
  for (const auto& name : names) {
    CAPTURE(name);
    auto p = load_profile(name, cluster_test::profiles_dir());
    REQUIRE(p.ok());
    CHECK(p->name == name);
    CHECK(p->devices_per_node == 8);
    CHECK(p->content_hash.size() == 16);
    CHECK(p->interconnect.levels.back().inter_node);
    CHECK(p->device.usable_memory() > Bytes(0));
    CHECK(p->sources.count("device.hbm_GBps") == 1);
    CHECK(p->sources.count("interconnect.levels[0].efficiency.ring") == 1);
    // Loading by path gives the same content.
    auto by_path = load_profile((cluster_test::profiles_dir() / (name + ".json")).string(), "/nonexistent");
    REQUIRE(by_path.ok());
    CHECK(by_path->content_hash == p->content_hash);
  }
}

TEST_CASE("EfficiencyTable interpolates in log space and clamps", "[cluster]") {
  EfficiencyTable t{{{1e3, 0.2}, {1e5, 0.6}, {1e6, 0.9}}, "bytes"};
  // x = 1e4 is half way between 1e3 and 1e5 in log10: 0.2 + 0.5 * (0.6 - 0.2) = 0.4
  CHECK(t.interpolate(1e4) == Approx(0.4));
  // x = 10^5.5: half way between 1e5 and 1e6: 0.6 + 0.5 * 0.3 = 0.75
  CHECK(t.interpolate(std::pow(10.0, 5.5)) == Approx(0.75));
  // x = 2e3: log(2e3/1e3)/log(1e5/1e3) = 0.30103/2 = 0.150515 -> 0.2 + 0.150515*0.4 = 0.260206
  CHECK(t.interpolate(2e3) == Approx(0.260206).epsilon(1e-5));
  CHECK(t.interpolate(1e3) == Approx(0.2));
  CHECK(t.interpolate(10) == Approx(0.2));    // clamped low
  CHECK(t.interpolate(0) == Approx(0.2));     // x <= 0 clamps low
  CHECK(t.interpolate(1e12) == Approx(0.9));  // clamped high
  EfficiencyTable one{{{5, 0.5}}, "flops"};
  CHECK(one.interpolate(1) == 0.5);
  CHECK(one.interpolate(1e9) == 0.5);
}

TEST_CASE("device helpers read the A100 80GB tables", "[cluster]") {
  auto p = cluster_test::load("a100-sxm4-80gb");
  const auto& d = p.device;
  REQUIRE(d.peak(core::Precision::bf16).ok());
  CHECK(d.peak(core::Precision::bf16)->value == Approx(312e12));
  CHECK(d.peak(core::Precision::tf32)->value == Approx(156e12));
  auto fp8 = d.peak(core::Precision::fp8);
  REQUIRE_FALSE(fp8.ok());
  CHECK_THAT(fp8.error().message, Contains("NVIDIA A100-SXM4-80GB") && Contains("fp8"));

  // 4096^3: F = 2*4096^3 = 1.37439e11 FLOPs, between rows 1e11 (0.8194) and
  // 1e12 (0.8289): t = log10(1.37439) = 0.138113 -> 0.8194 + 0.138113 * 0.0095
  // = 0.820712; min dim 4096 -> skinny 1.0; aligned -> no penalty.
  CHECK(d.gemm_efficiency(4096, 4096, 4096) == Approx(0.820712).epsilon(1e-5));
  // One odd dimension: x 0.69 (gemm_misaligned_factor).
  CHECK(d.gemm_efficiency(4095, 4096, 4096) == Approx(0.820712 * 0.69).epsilon(1e-3));
  // m = 32 tokens: skinny row 32 -> 0.375; F = 2*32*8192*8192 = 4.295e9 between
  // 3e9 (0.5798) and 1e10 (0.7349): t = log(4.295/3)/log(10/3) = 0.29805 ->
  // 0.5798 + 0.29805*0.1551 = 0.62603; x 0.375 = 0.234761
  CHECK(d.gemm_efficiency(32, 8192, 8192) == Approx(0.234761).epsilon(1e-4));
  // fp32 alignment is 16/4 = 4 elements: 4092 is fine for fp32, not for bf16.
  CHECK(d.gemm_efficiency(4092, 4096, 4096, core::Precision::fp32) > d.gemm_efficiency(4092, 4096, 4096));

  CHECK(d.achievable_hbm_bandwidth().value == Approx(2039e9 * 0.88));
  CHECK(d.memory_bound_efficiency(Bytes(1e8)) == Approx(0.7777));
  REQUIRE(d.attention_efficiency(2048, true).has_value());
  CHECK(*d.attention_efficiency(2048, true) == Approx(0.4968));
  CHECK(*d.attention_efficiency(16384, false) == Approx(0.6506));
  CHECK(d.usable_memory().value == Approx((79.21 - 0.9) * 1024.0 * 1024 * 1024));
  CHECK(d.launch_overhead.value == Approx(4e-6));
}

TEST_CASE("device specifics: fp8 factor on H100, no attention on V100", "[cluster]") {
  auto h = cluster_test::load("h100-sxm5-80gb");
  // fp8 multiplies by gemm_precision_factor.fp8 = 0.79 (in-training fit, refitted with the straggler term and a bf16 LM head); 8192^3 is aligned for fp8 (16 elements).
  CHECK(h.device.gemm_efficiency(8192, 8192, 8192, core::Precision::fp8) ==
        Approx(h.device.gemm_efficiency(8192, 8192, 8192) * 0.79));
  CHECK(h.device.peak(core::Precision::fp8)->value == Approx(1979e12));
  auto v = cluster_test::load("v100-sxm2-32gb");
  CHECK_FALSE(v.device.attention_efficiency(2048, true).has_value());
  CHECK_FALSE(v.device.peak(core::Precision::bf16).ok());
  auto a = cluster_test::load("ascend-910");
  CHECK(a.interconnect.levels.size() == 3);
  CHECK(a.interconnect.levels[0].devices_per_group == 4);
  CHECK_FALSE(a.device.peak(core::Precision::fp32).ok());
}

TEST_CASE("apply_overrides resizes nodes and NICs, and validates", "[cluster]") {
  auto p = cluster_test::load("a100-sxm4-80gb");
  auto four = apply_overrides(p, 4, std::nullopt);
  REQUIRE(four.ok());
  CHECK(four->devices_per_node == 4);
  CHECK(four->interconnect.levels[0].devices_per_group == 4);
  CHECK(four->content_hash != p.content_hash);
  CHECK(four->overrides == "gpus_per_node=4");

  // 4x HDR: 100 GB/s per node over the profile's 8 NICs = 12.5 GB/s each.
  auto hdr4 = apply_overrides(p, std::nullopt, 100.0);
  REQUIRE(hdr4.ok());
  CHECK(hdr4->interconnect.inter_node().nic_bandwidth.value == Approx(12.5e9));
  CHECK(hdr4->interconnect.inter_node().per_rank_bandwidth(8).value == Approx(12.5e9));
  CHECK(hdr4->overrides == "inter_node_GBps=100");

  auto both = apply_overrides(p, 16, 400.0);
  REQUIRE(both.ok());
  CHECK(both->overrides == "gpus_per_node=16, inter_node_GBps=400");
  CHECK(apply_overrides(p, std::nullopt, std::nullopt)->content_hash == p.content_hash);

  for (int bad : {0, -8, 5000}) {
    auto r = apply_overrides(p, bad, std::nullopt);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Contains("gpus_per_node"));
  }
  for (double bad : {0.0, -1.0, std::nan(""), HUGE_VAL}) {
    auto r = apply_overrides(p, std::nullopt, bad);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Contains("inter_node_GBps"));
  }
  // Ascend: HCCS groups of 4; 6 per node cannot be built from them, 2 can.
  auto asc = cluster_test::load("ascend-910");
  auto six = apply_overrides(asc, 6, std::nullopt);
  REQUIRE_FALSE(six.ok());
  CHECK_THAT(six.error().message, Contains("gpus_per_node") && Contains("hccs"));
  auto two = apply_overrides(asc, 2, std::nullopt);
  REQUIRE(two.ok());
  CHECK(two->interconnect.levels[0].devices_per_group == 2);
  CHECK(two->devices_per_node == 2);
}

TEST_CASE("load_profile errors name the file", "[cluster]") {
  auto missing = load_profile("no-such-gpu", cluster_test::profiles_dir());
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message, Contains("no-such-gpu") && Contains("a100-sxm4-80gb"));
  auto nofile = load_profile("/nonexistent/x.json", cluster_test::profiles_dir());
  REQUIRE_FALSE(nofile.ok());
  CHECK_THAT(nofile.error().message, Contains("/nonexistent/x.json"));
}

TEST_CASE("profiles folder search order", "[cluster]") {
  auto c = profiles_dir_candidates("/opt/x/build/dev/planner", "/env/profiles");
  REQUIRE(c.size() >= 3);
  CHECK(c[0] == std::filesystem::path("/env/profiles"));
  CHECK(c[1] == std::filesystem::path("/opt/x/build/cost_profiles"));
  CHECK(c[2] == std::filesystem::path("/opt/x/cost_profiles"));
  auto no_env = profiles_dir_candidates("/opt/x/build/dev/planner", "");
  CHECK(no_env[0] == std::filesystem::path("/opt/x/build/cost_profiles"));

  // A binary in <repo>/build/<preset>/ finds <repo>/cost_profiles.
  const char* saved = std::getenv("PLANNER_PROFILES");
  std::string keep = saved ? saved : "";
  ::unsetenv("PLANNER_PROFILES");
  auto exe = std::filesystem::path(PLANNER_SOURCE_DIR) / "build" / "some-preset" / "planner";
  auto dir = default_profiles_dir(exe.string().c_str());
  CHECK(std::filesystem::equivalent(dir, cluster_test::profiles_dir()));
  ::setenv("PLANNER_PROFILES", "/somewhere/else", 1);
  CHECK(default_profiles_dir(exe.string().c_str()) == std::filesystem::path("/somewhere/else"));
  if (saved) ::setenv("PLANNER_PROFILES", keep.c_str(), 1); else ::unsetenv("PLANNER_PROFILES");
}
