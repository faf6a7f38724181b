// The replay's device backend without a GPU: a fake runtime::Device that
// counts what it is asked to run (host memory, nothing computed) and a
// second fake world standing in for the device communicator. Every GEMM,
// traffic and optimizer task of the program reaches the device, in the
// plan's precision, each followed by a synchronize; the plan's collectives
// travel over the device world; peak memory is the device's.

#include <map>
#include <thread>

#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "planner/executor/replay.hpp"
#include "planner/runtime/fake_communicator.hpp"

namespace planner::executor {
namespace {

class CountingDevice final : public runtime::Device {
 public:
  std::string name() const override { return "counting"; }
  std::vector<std::pair<std::string, std::string>> versions() const override { return {}; }
  Result<runtime::DeviceMemory> memory() const override {
    return runtime::DeviceMemory{Bytes(1e12), Bytes(1e12 - static_cast<double>(allocated))};
  }
  Result<void*> allocate(std::size_t bytes) override {
    allocated += bytes;
    bufs_.emplace_back(std::max<std::size_t>(bytes, 16));
    return static_cast<void*>(bufs_.back().data());
  }
  void release(void*) override {}
  Status fill(void*, std::size_t, core::Precision, float) override { return {}; }
  Status gemm(core::Precision p, std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, const void*,
              const void*, void*) override {
    ++gemms;
    precisions[p] += 1;
    flops += 2.0 * m * n * k * batch;
    return {};
  }
  Status traffic(const void*, void*, std::size_t, double r, double w) override {
    ++traffics;
    bytes += r + w;
    return {};
  }
  Status optimizer(float*, const float*, float*, std::size_t, const runtime::OptimizerUpdate& u) override {
    ++optimizers;
    states = u.states;
    return {};
  }
  Status synchronize() override {
    ++syncs;
    return {};
  }
  Result<Seconds> time(const std::function<Status()>&, int) override { return Seconds(0); }

  std::size_t allocated = 0;
  int gemms = 0, traffics = 0, optimizers = 0, syncs = 0, states = -1;
  double flops = 0, bytes = 0;
  std::map<core::Precision, int> precisions;

 private:
  std::vector<std::vector<std::uint8_t>> bufs_;
};

}  // namespace

TEST_CASE("replay on a device: every compute task on the device, collectives on the device world", "[executor]") {
  const plan::Plan p = testing::load_plan("gpt_tp2.json");
  REQUIRE(p.cluster.devices == 2);
  REQUIRE(p.training.precision == "bf16");
  std::vector<RankProgram> progs;
  for (int r = 0; r < 2; ++r) {
    auto prog = derive_program(p, testing::tiny_gpt(), r);
    REQUIRE(prog);
    progs.push_back(*prog);
  }
  runtime::FakeWorld world(2, Seconds(30)), device_world(2, Seconds(30));
  std::vector<CountingDevice> devs(2);
  std::vector<Result<ReplayResult>> out(2, Error{"not run"});
  std::vector<std::thread> threads;
  ReplayOptions o;
  o.steps = 2;
  o.warmup = 1;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      ReplayOptions mine = o;
      mine.device = &devs[static_cast<std::size_t>(r)];
      mine.device_world = &device_world.comm(r);
      out[static_cast<std::size_t>(r)] = replay(progs[static_cast<std::size_t>(r)], p, world.comm(r), mine);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    REQUIRE(out[static_cast<std::size_t>(r)]);
    const RankProgram& prog = progs[static_cast<std::size_t>(r)];
    const CountingDevice& d = devs[static_cast<std::size_t>(r)];
    int memory = 0, optim = 0;
    auto count = [&](const Task& t) {
      memory += t.kind == TaskKind::memory;
      optim += t.kind == TaskKind::optimizer;
    };
    for (const auto& s : prog.steps)
      for (const auto& t : s.tasks) count(t);
    for (const auto& t : prog.finish) count(t);
    const auto c = prog.counts();
    // 1 warm-up + 2 measured steps, each the whole program.
    CHECK(d.gemms == 3 * c.gemms);
    CHECK(d.flops == Approx(3 * c.gemm_flops));
    CHECK(d.traffics == 3 * memory);
    CHECK(d.bytes == Approx(3 * c.memory_bytes));
    CHECK(d.optimizers == 3 * optim);
    CHECK(d.states == prog.optimizer_states);
    CHECK(d.precisions.size() == 1);
    CHECK(d.precisions.count(core::Precision::bf16) == 1);
    // One synchronize after setup, then one per compute task.
    CHECK(d.syncs == 1 + 3 * (c.gemms + memory + optim));
    // The GEMM buffer holds the largest GEMM's A, B and C in bf16 (2 bytes).
    CHECK(d.allocated >= static_cast<std::size_t>(prog.max_gemm_floats) * 2);
    // Peak memory: the device's bytes in use, every rank's on every rank.
    CHECK(out[0]->peak_rss_bytes[static_cast<std::size_t>(r)] == Approx(static_cast<double>(d.allocated)));
  }
  CHECK(out[0]->components_s[static_cast<std::size_t>(Component::tp_comm)] > 0);
}

TEST_CASE("replay on a device: fp8 plans and a device without its communicator are refused", "[executor]") {
  plan::Plan p = testing::load_plan("gpt_tp2.json");
  p.training.precision = "fp8";
  runtime::FakeWorld world(1);
  CountingDevice d;
  ReplayOptions o;
  o.device = &d;
  o.device_world = &world.comm(0);
  RankProgram prog;
  auto r = replay(prog, p, world.comm(0), o);
  REQUIRE_FALSE(r);
  CHECK(r.error().message == "training.precision: precision 'fp8': the device backend has no fp8 GEMM (use bf16 or fp16)");
  o.device_world = nullptr;
  r = replay(prog, p, world.comm(0), o);
  REQUIRE_FALSE(r);
  CHECK(r.error().message == "replay: a device needs its device communicator, and the other way round");
}

}  // namespace planner::executor
