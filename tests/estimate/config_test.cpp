// ParallelConfig: validate() names each violated constraint, describe()'s
// one-line summary, micro-batch arithmetic, state sharding and framework
// names.

#include <catch2/catch.hpp>

#include "estimate/estimate_fixtures.hpp"

using namespace estimate_test;
using estimate::Framework;
using estimate::ParallelConfig;

namespace {

std::string error_of(const ParallelConfig& c) {
  const auto s = estimate::validate(c);
  if (s.ok()) FAIL("validate() accepted " << estimate::describe(c));
  return s.error().message;
}

}  // namespace

TEST_CASE("estimate config: validate accepts a consistent layout", "[estimate][config]") {
  // dp=2 tp=8 pp=4: 64 devices; 16 micro-batches of 1 per replica.
  ParallelConfig c = config_for(2, 8, 4, 16);
  CHECK(c.devices() == 64);
  CHECK(c.global_batch == 32);
  CHECK(estimate::validate(c).ok());
  // Interleaved with vp = 2 and m = 16 a multiple of pp = 4.
  c.schedule = sim::Schedule::interleaved;
  c.vp = 2;
  CHECK(estimate::validate(c).ok());
  // Every ZeRO stage; distributed optimizer alone or with ZeRO-1.
  for (int z = 0; z <= 3; ++z) {
    ParallelConfig zc = config_for(2, 1, 1, 4);
    zc.zero = z;
    CHECK(estimate::validate(zc).ok());
  }
  ParallelConfig d = config_for(2, 1, 1, 4);
  d.distributed_optimizer = true;
  d.zero = 1;
  CHECK(estimate::validate(d).ok());
}

TEST_CASE("estimate config: devices are the product of the degrees", "[estimate][config]") {
  ParallelConfig c = config_for(2, 8, 4, 4);
  CHECK(c.devices() == 64);  // 2 * 8 * 4 * 1
  c.cp = 2;
  CHECK(c.devices() == 128);
  // Past the planner's limit of 2^20 devices: 1024 * 1024 * 2 * 1.
  c = config_for(1024, 1024, 2, 2048);
  CHECK(error_of(c) == "dp*tp*pp*cp = 1024*1024*2*1 = 2097152 devices is above the planner's limit of 1048576 devices");
}

TEST_CASE("estimate config: validate: every degree is at least 1", "[estimate][config]") {
  ParallelConfig c = config_for(1, 1, 1, 1);
  c.tp = 0;
  CHECK(error_of(c) == "`tp` must be at least 1 (got 0)");
  c = config_for(1, 1, 1, 1);
  c.vp = -1;
  CHECK(error_of(c) == "`vp` must be at least 1 (got -1)");
  c = config_for(1, 1, 1, 1);
  c.micro_batch = 0;
  CHECK(error_of(c) == "`micro_batch` must be at least 1 (got 0)");
  c = config_for(1, 1, 1, 1);
  c.global_batch = 0;
  CHECK(error_of(c) == "`global_batch` must be at least 1 (got 0)");
  c = config_for(1, 1, 1, 1);
  c.devices_per_node = 0;
  CHECK(error_of(c) == "`devices_per_node` must be at least 1 (got 0)");
}

TEST_CASE("estimate config: validate: the global batch divides into micro-batches per replica", "[estimate][config]") {
  // micro-batch 2 x dp 2 = 4 sequences per micro-step; 10 is not a multiple.
  ParallelConfig c = config_for(2, 1, 1, 1, 2);
  c.global_batch = 10;
  CHECK(error_of(c) == "`global_batch` 10 is not divisible by micro-batch * dp = 2 * 2 = 4");
  c.global_batch = 12;  // 12 / 4 = 3 micro-batches
  CHECK(estimate::validate(c).ok());
  CHECK(c.micro_batches() == 3);
}

TEST_CASE("estimate config: validate: expert parallelism divides dp*cp", "[estimate][config]") {
  ParallelConfig c = config_for(2, 1, 1, 4);
  c.ep = 4;  // dp * cp = 2
  CHECK(error_of(c) == "`ep` 4 must divide dp*cp = 2 (experts are split over data/context ranks)");
  c.ep = 2;
  CHECK(estimate::validate(c).ok());
}

TEST_CASE("estimate config: validate: interleaved needs vp >= 2, pp >= 2 and m % pp == 0", "[estimate][config]") {
  ParallelConfig c = config_for(1, 1, 4, 8);
  c.schedule = sim::Schedule::interleaved;
  CHECK(error_of(c) == "`schedule` interleaved needs `vp` of at least 2 virtual stages");
  c.vp = 2;
  CHECK(estimate::validate(c).ok());
  // m = 6 is not a multiple of pp = 4.
  c.global_batch = 6;
  CHECK(error_of(c) == "interleaved schedule: micro-batches per step (6) must be a multiple of `pp` 4");
  // pp = 1 cannot interleave.
  ParallelConfig one = config_for(1, 1, 1, 4);
  one.schedule = sim::Schedule::interleaved;
  one.vp = 2;
  CHECK(error_of(one) == "`schedule` interleaved needs `pp` of at least 2");
}

TEST_CASE("estimate config: validate: vp without the interleaved schedule", "[estimate][config]") {
  ParallelConfig c = config_for(1, 1, 2, 4);
  c.vp = 2;
  CHECK(error_of(c) == "`vp` 2 needs `schedule` interleaved");
  c.schedule = sim::Schedule::gpipe;
  CHECK(error_of(c) == "`vp` 2 needs `schedule` interleaved");
}

TEST_CASE("estimate config: validate: ZeRO stage, distributed optimizer, grad bytes, sp", "[estimate][config]") {
  ParallelConfig c = config_for(2, 1, 1, 4);
  c.zero = 4;
  CHECK(error_of(c) == "`zero` must be 0, 1, 2 or 3 (got 4)");
  c.zero = -1;
  CHECK(error_of(c) == "`zero` must be 0, 1, 2 or 3 (got -1)");
  for (int z : {2, 3}) {
    c.zero = z;
    c.distributed_optimizer = true;
    CHECK(error_of(c) == "`distributed_optimizer` is ZeRO-1 sharding; it cannot be combined with `zero` 2 or 3");
  }
  c = config_for(2, 1, 1, 4);
  c.grad_reduce_bytes = 3;
  CHECK(error_of(c) == "`grad_reduce_bytes` must be 2 or 4 (got 3)");
  for (int b : {0, 2, 4}) {
    c.grad_reduce_bytes = b;
    CHECK(estimate::validate(c).ok());
  }
  c = config_for(2, 1, 1, 4);
  c.sequence_parallel = true;
  CHECK(error_of(c) == "`sequence_parallel` (sequence parallelism) needs `tp` of at least 2");
  c = config_for(1, 2, 1, 4);
  c.sequence_parallel = true;
  CHECK(estimate::validate(c).ok());
}

TEST_CASE("estimate config: micro_batches = global / (micro_batch * dp)", "[estimate][config]") {
  // GPT-3 175B on 1024 A100s (Narayanan et al.): B = 1536, b = 1, dp = 8 -> 192.
  ParallelConfig c = config_for(8, 8, 16, 192);
  CHECK(c.global_batch == 1536);
  CHECK(c.micro_batches() == 192);
  // b = 2, dp = 8, B = 2048 -> 128.
  c.micro_batch = 2;
  c.global_batch = 2048;
  CHECK(c.micro_batches() == 128);
}

TEST_CASE("estimate config: describe: one line with the non-default degrees only", "[estimate][config]") {
  // The example of the header: dp=8 tp=8 pp=12 mb=2 B=2048 1f1b zero1.
  ParallelConfig c = config_for(8, 8, 12, 128, 2);
  c.zero = 1;
  CHECK(c.global_batch == 2048);
  CHECK(estimate::describe(c) ==
        "dp=8 tp=8 pp=12 micro-batch=2 global-batch=2048 (128 micro-batches) 1f1b zero1");
  // Every optional part: cp, ep, vp, sp; the distributed optimizer's name.
  ParallelConfig d = config_for(2, 2, 2, 4);
  d.cp = 2;
  d.ep = 2;
  d.vp = 2;
  d.sequence_parallel = true;
  d.schedule = sim::Schedule::interleaved;
  d.distributed_optimizer = true;
  CHECK(estimate::describe(d) ==
        "dp=2 tp=2 pp=2 cp=2 ep=2 vp=2 sp micro-batch=1 global-batch=8 (4 micro-batches) interleaved "
        "distributed_optimizer");
  ParallelConfig g = config_for(1, 1, 4, 8);
  g.schedule = sim::Schedule::gpipe;
  CHECK(estimate::describe(g) == "dp=1 tp=1 pp=4 micro-batch=1 global-batch=8 (8 micro-batches) gpipe none");
}

TEST_CASE("estimate config: state_sharding follows --zero and --distributed-optimizer", "[estimate][config]") {
  using cost::StateSharding;
  ParallelConfig c;
  CHECK(c.state_sharding() == StateSharding::none);
  c.zero = 1;
  CHECK(c.state_sharding() == StateSharding::zero1);
  c.distributed_optimizer = true;  // ZeRO-1 with fp32 main gradients
  CHECK(c.state_sharding() == StateSharding::distributed_optimizer);
  c.zero = 0;
  CHECK(c.state_sharding() == StateSharding::distributed_optimizer);
  c.distributed_optimizer = false;
  c.zero = 2;
  CHECK(c.state_sharding() == StateSharding::zero2);
  c.zero = 3;
  CHECK(c.state_sharding() == StateSharding::zero3);
}

TEST_CASE("estimate config: framework names round-trip, an unknown one lists them", "[estimate][config]") {
  for (auto f : {Framework::megatron, Framework::megatron_legacy, Framework::deepspeed, Framework::fsdp,
                 Framework::ddp, Framework::executor}) {
    const auto parsed = estimate::parse_framework(estimate::framework_name(f));
    REQUIRE(parsed.ok());
    CHECK(*parsed == f);
  }
  CHECK(estimate::framework_name(Framework::megatron_legacy) == "megatron-legacy");
  const auto bad = estimate::parse_framework("colossal");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message ==
        "unknown framework 'colossal' (expected megatron, megatron-legacy, deepspeed, fsdp, ddp or executor)");
}
