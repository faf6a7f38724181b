// The device calibration without a GPU: measure_device on a fake
// runtime::Device whose times follow a known model (so the sweep's numbers
// are checked exactly), and device_profile on synthetic measurements worked
// out by hand.

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "planner/calibrate/measure_device.hpp"
#include "planner/calibrate/profile_out.hpp"
#include "planner/runtime/fake_communicator.hpp"

using namespace planner;
using namespace planner::calibrate;
using core::Precision;

namespace {

// Times: a GEMM takes 2mnk / rate(p) + 5 us, a traffic call (r + w) / 2e12
// + 2 us; nothing is computed. Buffers are host memory, so the fake
// communicator can move them.
class FakeDevice final : public runtime::Device {
 public:
  std::string name() const override { return "Fake GPU"; }
  std::vector<std::pair<std::string, std::string>> versions() const override {
    return {{"cuda_driver", "0.0"}, {"cuda_runtime", "0.0"}, {"cublas", "0.0.0"}, {"nccl", "0.0.0"}};
  }
  Result<runtime::DeviceMemory> memory() const override {
    return runtime::DeviceMemory{Bytes(80e9), Bytes(80e9 - 1073741824.0)};
  }
  Result<void*> allocate(std::size_t bytes) override {
    bufs_[next_].assign(std::max<std::size_t>(bytes, 16), 0);
    return static_cast<void*>(bufs_[next_++].data());
  }
  void release(void* p) override {
    for (auto it = bufs_.begin(); it != bufs_.end(); ++it)
      if (it->second.data() == p) {
        bufs_.erase(it);
        return;
      }
  }
  Status fill(void*, std::size_t, Precision, float) override { return {}; }
  Status gemm(Precision p, std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, const void*,
              const void*, void*) override {
    static const std::map<Precision, double> rate{
        {Precision::fp32, 5e13}, {Precision::tf32, 4e14}, {Precision::bf16, 8e14}, {Precision::fp16, 8e14}};
    acc_ += 2.0 * m * n * k * batch / rate.at(p) + 5e-6;
    return {};
  }
  Status traffic(const void*, void*, std::size_t, double r, double w) override {
    acc_ += (r + w) / 2e12 + 2e-6;
    return {};
  }
  Status optimizer(float*, const float*, float*, std::size_t, const runtime::OptimizerUpdate&) override { return {}; }
  Status synchronize() override { return {}; }
  Result<Seconds> time(const std::function<Status()>& enqueue, int reps) override {
    PLANNER_TRY_STATUS(enqueue());
    acc_ = 0;
    for (int i = 0; i < reps; ++i) PLANNER_TRY_STATUS(enqueue());
    return Seconds(acc_ / reps);
  }

 private:
  double acc_ = 0;
  int next_ = 0;
  std::map<int, std::vector<std::uint8_t>> bufs_;
};

}  // namespace

TEST_CASE("measure_device on a fake device and 2 fake ranks", "[calibrate]") {
  runtime::FakeWorld world(2, Seconds(60));
  std::vector<Result<DeviceMeasurements>> got(2, make_error("not run"));
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      FakeDevice dev;
      runtime::Communicator& host = world.comm(r);
      MeasureOptions o;
      o.quick = true;
      got[r] = measure_device(dev, host, [&] { return host.split(0, host.rank()); }, o);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    REQUIRE(got[r].ok());
  }
  const DeviceMeasurements& m = *got[0];
  CHECK(m.ranks == 2);
  CHECK(m.device == "Fake GPU");
  CHECK(m.total_memory.value == 80e9);
  CHECK(m.context_memory.value == Approx(1073741824.0));  // total - free
  REQUIRE(m.gemm_sizes == std::vector<int>{64, 128, 256, 512, 1024});
  // bf16 at n = 1024: 2 * 1024^3 / 8e14 + 5e-6 = 2.68435e-6 + 5e-6 = 7.68435e-6 s.
  REQUIRE(m.gemm[static_cast<std::size_t>(Precision::bf16)].size() == 5);
  CHECK(m.gemm[static_cast<std::size_t>(Precision::bf16)][4].x == 2.0 * 1024 * 1024 * 1024);
  CHECK(m.gemm[static_cast<std::size_t>(Precision::bf16)][4].time.value == Approx(7.68435e-6).epsilon(1e-5));
  // fp32 at n = 64: 2 * 64^3 / 5e13 + 5e-6 = 1.048576e-8 + 5e-6 = 5.010486e-6 s.
  CHECK(m.gemm[static_cast<std::size_t>(Precision::fp32)][0].time.value == Approx(5.010486e-6).epsilon(1e-5));
  // Skinny bf16 [d x 1024] x [1024 x 1024], d = 1..1024: 11 shapes.
  CHECK(m.skinny_dims.size() == 11);
  CHECK(m.aligned_n == 512);
  // Copy: 64 KiB..64 MiB by 4 = 6 sizes; at 64 MiB (32 MiB read, 32 MiB
  // written): 67108864 / 2e12 + 2e-6 = 3.3554e-5 + 2e-6 = 3.5554e-5 s.
  REQUIRE(m.copy.size() == 6);
  CHECK(m.copy.back().x == 67108864.0);
  CHECK(m.copy.back().time.value == Approx(3.5554432e-5).epsilon(1e-5));
  CHECK(m.launch_sync.value >= 0);
  // Collectives on the split communicator: 4096, 65536, 1048576 bytes each.
  for (auto kind : kCalibratedCollectives) {
    INFO(core::to_string(kind));
    const auto& s = m.collectives[static_cast<std::size_t>(kind)];
    REQUIRE(s.size() == 3);
    CHECK(s[2].x == 1048576.0);
    CHECK(s[2].time.value > 0);
  }
  CHECK(m.communicator_memory.value == 0);  // the fake's free memory never changes
}

TEST_CASE("device_profile: peaks, factors, bandwidth and launch cost by hand", "[calibrate]") {
  DeviceMeasurements m;
  m.ranks = 1;
  m.device = "Fake GPU";
  m.host = "h";
  m.total_memory = Bytes(141e9);
  m.context_memory = Bytes(536870912.0);  // 0.5 GiB
  m.gemm_sizes = {1000, 2000};            // 2n^3 = 2e9, 1.6e10 FLOPs
  auto at = [&](Precision p) -> std::vector<Sample>& { return m.gemm[static_cast<std::size_t>(p)]; };
  // bf16 and fp16: 4e14 then 8e14 FLOP/s; fp32 2.5e13 then 5e13; tf32 1e14 then 4e14.
  at(Precision::bf16) = {{2e9, Seconds(2e9 / 4e14)}, {1.6e10, Seconds(1.6e10 / 8e14)}};
  at(Precision::fp16) = at(Precision::bf16);
  at(Precision::fp32) = {{2e9, Seconds(2e9 / 2.5e13)}, {1.6e10, Seconds(1.6e10 / 5e13)}};
  at(Precision::tf32) = {{2e9, Seconds(2e9 / 1e14)}, {1.6e10, Seconds(1.6e10 / 4e14)}};
  m.skinny_n = 2000;
  m.skinny_dims = {500};  // 2 * 500 * 2000^2 = 4e9 FLOPs at 4e14
  m.skinny = {{4e9, Seconds(4e9 / 4e14)}};
  m.aligned_n = 2000;
  m.aligned = {1.6e10, Seconds(1.6e10 / 8e14)};
  m.misaligned = {2.0 * 1999 * 1999 * 1999, Seconds(2.0 * 1999 * 1999 * 1999 / 4e14)};  // half the rate
  m.copy = {{1e6, Seconds(1e-6)}, {1e8, Seconds(2.5e-5)}};                             // 1 TB/s, 4 TB/s
  m.launch_sync = Seconds(3e-6);
  Provenance prov;
  prov.items = {{"date", "2026-12-03T00:00:00Z"}, {"cublas", "13.0.0"}, {"nccl", "2.27.7"}};
  auto w = device_profile(m, prov, "fake-gpu", std::nullopt);
  REQUIRE(w.ok());
  const auto& d = w->parsed.device;
  CHECK(d.name == "Fake GPU");
  // Peaks: the best rate of each precision.
  CHECK(d.peak_by_precision[static_cast<std::size_t>(core::Precision::bf16)]->value == Approx(8e14));
  CHECK(d.peak_by_precision[static_cast<std::size_t>(core::Precision::fp32)]->value == Approx(5e13));
  CHECK(d.peak_by_precision[static_cast<std::size_t>(core::Precision::tf32)]->value == Approx(4e14));
  CHECK_FALSE(d.peak_by_precision[static_cast<std::size_t>(core::Precision::fp8)].has_value());
  // The bf16 table is (2e9, 0.5), (1.6e10, 1). fp32's rate / peak is 0.5 and
  // 1 at those FLOPs: factor 1. tf32's is 0.25 and 1: sqrt(0.5 * 1) = 0.7071.
  CHECK(*d.gemm_precision_factor[static_cast<std::size_t>(core::Precision::fp32)] == Approx(1.0));
  CHECK(*d.gemm_precision_factor[static_cast<std::size_t>(core::Precision::tf32)] == Approx(0.7071).epsilon(1e-4));
  CHECK(*d.gemm_precision_factor[static_cast<std::size_t>(core::Precision::fp16)] == Approx(1.0));
  CHECK(d.gemm_misaligned_factor == Approx(0.5));
  CHECK(d.hbm_bandwidth.value == Approx(4e12));
  CHECK(d.launch_overhead.value == Approx(3e-6));
  CHECK(d.visible_memory.value == Approx(131.3 * 1073741824.0));  // 141e9 / 2^30 = 131.32 -> 4 digits
  CHECK(w->parsed.interconnect.levels.front().devices_per_group == 1);
  REQUIRE(w->checks.size() == 5);  // bf16, fp32, tf32, fp16 GEMMs, copy; no collective on one rank
  CHECK(w->checks[0].what == "bf16 GEMM (square and skinny)");
  CHECK(w->checks[4].what == "copy traffic");
  CHECK(w->checks[4].max_error < 1e-3);  // the rate table reproduces both sizes
  CHECK(w->text.find("\"source\": \"measured by planner calibrate --backend cuda on h (Fake GPU") != std::string::npos);
  // A bad name is refused.
  CHECK_FALSE(device_profile(m, prov, "Fake", std::nullopt).ok());
}
