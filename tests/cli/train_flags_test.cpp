// The defaults of --precision and --attention follow the profile's device
// ("auto"): bf16 / flash on an A100, fp16 on a V100 (no bf16 peak) with
// unfused attention (no fused-attention kernel), fp32 / unfused on a device
// with an fp32 peak only (a `planner calibrate --backend cpu` profile).

#include <catch2/catch.hpp>

#include "planner/cli/train_flags.hpp"

using namespace planner;
using planner::cli::device_defaults;

namespace {

cluster::ClusterProfile bundled(const char* name) {
  auto p = cluster::load_profile(name, std::string(PLANNER_SOURCE_DIR) + "/cost_profiles");
  REQUIRE(p.ok());
  return std::move(p).value();
}

}  // namespace

TEST_CASE("auto precision and attention follow the device's tables", "[cli][defaults]") {
  const auto a100 = bundled("a100-sxm4-80gb");
  auto d = device_defaults(a100.device, "auto");
  CHECK(d.precision == "bf16");
  CHECK(d.attention == "flash");
  CHECK(d.precision_note.empty());
  CHECK(d.attention_note.empty());

  // A precision the user gave is kept; fp32 rules out flash attention.
  d = device_defaults(a100.device, "fp32");
  CHECK(d.precision == "fp32");
  CHECK(d.attention == "unfused");
  CHECK(d.precision_note.empty());
  CHECK(d.attention_note == "attention unfused: flash attention needs 16-bit or fp8, the precision is fp32");

  const auto v100 = bundled("v100-sxm2-32gb");
  d = device_defaults(v100.device, "auto");
  CHECK(d.precision == "fp16");
  CHECK(d.attention == "unfused");
  CHECK(d.precision_note == "precision fp16: the profile's device '" + v100.device.name + "' has no bf16 GEMM peak");

  // A CPU profile: an fp32 peak only, no attention table.
  auto cpu = a100.device;
  cpu.name = "AMD EPYC 7B13";
  for (auto& pk : cpu.peak_by_precision) pk.reset();
  cpu.peak_by_precision[static_cast<std::size_t>(core::Precision::fp32)] = FlopsPerSecond(1e12);
  cpu.attention.reset();
  d = device_defaults(cpu, "auto");
  CHECK(d.precision == "fp32");
  CHECK(d.attention == "unfused");
  CHECK(d.precision_note == "precision fp32: the profile's device 'AMD EPYC 7B13' has no bf16 or fp16 GEMM peak");
  CHECK(d.attention_note == "attention unfused: the profile's device 'AMD EPYC 7B13' has no fused-attention kernel");
}

TEST_CASE("TrainFlags::load resolves auto and keeps what the user set", "[cli][defaults]") {
  cli::TrainFlags f;
  f.profile = std::string(PLANNER_SOURCE_DIR) + "/cost_profiles/v100-sxm2-32gb.json";
  REQUIRE(f.load().ok());
  CHECK(f.precision == "fp16");
  CHECK(f.attention == "unfused");
  CHECK(f.defaults_note.find("precision fp16: ") == 0);
  CHECK(f.defaults_note.find("; attention unfused: ") != std::string::npos);
  // The cost model builds with the resolved values.
  auto p = f.load();
  REQUIRE(p.ok());
  CHECK(f.cost_model(*p).ok());

  cli::TrainFlags g;
  g.profile = f.profile;
  g.precision = "fp32";
  g.attention = "unfused";
  REQUIRE(g.load().ok());
  CHECK(g.precision == "fp32");
  CHECK(g.defaults_note.empty());  // nothing was defaulted
}
