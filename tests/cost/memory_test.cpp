// Memory of one device: model state per optimizer and sharding (BRIEF §2),
// and the whole breakdown on the a100-sxm4-80gb profile (CUDA context
// 0.9 GiB, NCCL buffers 1.5 GiB, visible 79.21 GiB).

#include <catch2/catch.hpp>

#include "cost/cost_helpers.hpp"

using namespace cost_test;
using cost::Optimizer;
using cost::OptimizerSetup;
using cost::ParamCounts;
using cost::StateSharding;

namespace {

// Bytes of model state for 1e9 parameters of one kind, in GB (1e9 B), so the
// figures read as bytes per parameter.
double gb(ParamCounts p, Optimizer o, StateSharding s, int d = 8, bool fp32_grads = false) {
  OptimizerSetup setup;
  setup.optimizer = o;
  setup.sharding = s;
  setup.data_parallel = d;
  setup.fp32_grads = fp32_grads;
  return cost::model_state(p, setup).total().value / 1e9;
}

const ParamCounts kOneBillion16{1e9, 0};
const ParamCounts kOneBillion32{0, 1e9};

}  // namespace

TEST_CASE("ZeRO stages for a 1B-parameter model at d = 8 (Adam, bf16)", "[cost][memory]") {
  // 2 B weight + 2 B gradient + 12 B (fp32 master, m, v) = 16 B/param.
  CHECK(gb(kOneBillion16, Optimizer::adam, StateSharding::none) == Approx(16.0));
  // ZeRO-1 shards the 12 B: 2 + 2 + 12/8 = 5.5 B/param.
  CHECK(gb(kOneBillion16, Optimizer::adam, StateSharding::zero1) == Approx(5.5));
  // ZeRO-2 also the gradients: 2 + (2 + 12)/8 = 3.75.
  CHECK(gb(kOneBillion16, Optimizer::adam, StateSharding::zero2) == Approx(3.75));
  // ZeRO-3 everything: 16/8 = 2.
  CHECK(gb(kOneBillion16, Optimizer::adam, StateSharding::zero3) == Approx(2.0));
  // Megatron's distributed optimizer keeps fp32 main gradients: 2 + 4 + 12/8 = 6 + 12/d = 7.5.
  CHECK(gb(kOneBillion16, Optimizer::adam, StateSharding::distributed_optimizer) == Approx(7.5));
  CHECK(gb(kOneBillion16, Optimizer::adam, StateSharding::distributed_optimizer, 64) == Approx(6.0 + 12.0 / 64));
  // fp32 main gradients without sharding: 2 + 4 + 12 = 18.
  CHECK(gb(kOneBillion16, Optimizer::adam, StateSharding::none, 8, true) == Approx(18.0));
  // d = 1 shards nothing.
  CHECK(gb(kOneBillion16, Optimizer::adam, StateSharding::zero3, 1) == Approx(16.0));
  // The split into items: ZeRO-2 at d = 8.
  OptimizerSetup z2;
  z2.sharding = StateSharding::zero2;
  z2.data_parallel = 8;
  const auto st = cost::model_state(kOneBillion16, z2);
  CHECK(st.weights.value == Approx(2e9));
  CHECK(st.gradients.value == Approx(0.25e9));
  CHECK(st.optimizer_states.value == Approx(1.5e9));
}

TEST_CASE("Adam vs SGD, mixed precision and fp32", "[cost][memory]") {
  // Mixed precision: SGD with momentum 2 + 2 + (4 master + 4 momentum) = 12; plain SGD 2 + 2 + 4 = 8.
  CHECK(gb(kOneBillion16, Optimizer::sgd_momentum, StateSharding::none) == Approx(12.0));
  CHECK(gb(kOneBillion16, Optimizer::sgd, StateSharding::none) == Approx(8.0));
  // fp32 training: Adam 4 + 4 + 8 = 16; SGD with momentum 4 + 4 + 4 = 12; SGD 4 + 4 = 8.
  CHECK(gb(kOneBillion32, Optimizer::adam, StateSharding::none) == Approx(16.0));
  CHECK(gb(kOneBillion32, Optimizer::sgd_momentum, StateSharding::none) == Approx(12.0));
  CHECK(gb(kOneBillion32, Optimizer::sgd, StateSharding::none) == Approx(8.0));
  // fp32 parameters sharded: ZeRO-1 4 + 4 + 8/8 = 9; distributed optimizer 8 + 8/d = 9.
  CHECK(gb(kOneBillion32, Optimizer::adam, StateSharding::zero1) == Approx(9.0));
  CHECK(gb(kOneBillion32, Optimizer::adam, StateSharding::distributed_optimizer) == Approx(9.0));
  // SGD with momentum under ZeRO-1: 2 + 2 + 8/8 = 5.
  CHECK(gb(kOneBillion16, Optimizer::sgd_momentum, StateSharding::zero1) == Approx(5.0));
}

TEST_CASE("bf16 optimizer states and master-weight policies", "[cost][memory]") {
  OptimizerSetup s;
  s.sharding = StateSharding::distributed_optimizer;
  s.data_parallel = 2;
  s.grads_16bit = true;
  auto per_param = [&](ParamCounts p) { return cost::model_state(p, s).total().value / 1e9; };
  // NeMo's default (Apex store_param_remainders): 2 W + 2 G + (2 remainder + 8 fp32 m, v)/2 = 9.
  s.master = cost::MasterWeights::remainder;
  CHECK(per_param(kOneBillion16) == Approx(9.0));
  // Nemotron-4 340B's distributed_fused_adam dtype bf16: 2 + 2 + (0 + 2 + 2)/2 = 6.
  s.state_bytes = 2.0;
  s.master = cost::MasterWeights::none;
  CHECK(per_param(kOneBillion16) == Approx(6.0));
  const auto items = cost::model_state(kOneBillion16, s);
  CHECK(items.optimizer_states.value == Approx(2e9));
  // fp32-kept parameters keep fp32 states: 4 + 4 + 8/2 = 12 whatever the policy.
  CHECK(per_param(kOneBillion32) == Approx(12.0));
  // SGD with momentum, bf16 momentum, fp32 master, no sharding: 2 + 2 + 4 + 2 = 10.
  OptimizerSetup m;
  m.optimizer = Optimizer::sgd_momentum;
  m.state_bytes = 2.0;
  CHECK(cost::model_state(kOneBillion16, m).total().value / 1e9 == Approx(10.0));
  CHECK(cost::optimizer_label(s) == "adam (bf16 states, no master copy)");
  CHECK(cost::optimizer_label(m) == "sgd_momentum (bf16 states)");
  CHECK(cost::optimizer_label(OptimizerSetup{}) == "adam");
}

TEST_CASE("parameters read by an fp32 class are kept in fp32", "[cost][memory][precision]") {
  GptShape m;  // h 256, V 1000, 2 layers
  const auto g = build_gpt(m);
  // Per layer 12 h^2 + 13 h = 786,432 + 3,328 = 789,760; two layers 1,579,520;
  // final norm 2h = 512; LM head h V = 256,000; embedding V h = 256,000 (fp32).
  const auto mixed = cost::count_parameters(g, cost::PrecisionPolicy{});
  CHECK(mixed.fp32 == 256000);
  CHECK(mixed.low_precision == 1579520 + 512 + 256000);
  const auto all16 = cost::count_parameters(g, cost::PrecisionPolicy::uniform(core::Precision::bf16));
  CHECK(all16.fp32 == 0);
  CHECK(all16.total() == mixed.total());
  const auto all32 = cost::count_parameters(g, cost::PrecisionPolicy::uniform(core::Precision::fp32));
  CHECK(all32.low_precision == 0);
  // ZeRO-1 at d = 8 with the fp32 embedding: 16-bit 2 + 2 + 12/8 = 5.5 B,
  // fp32 4 + 4 + 8/8 = 9 B per parameter.
  OptimizerSetup z1;
  z1.sharding = StateSharding::zero1;
  z1.data_parallel = 8;
  CHECK(cost::model_state(mixed, z1).total().value == Approx(1836032 * 5.5 + 256000 * 9.0));
}

TEST_CASE("memory(): every item of a small GPT on an A100", "[cost][memory]") {
  GptShape m;
  const auto g = build_gpt(m);
  const auto ctx = context("a100-sxm4-80gb", cost::PrecisionPolicy{}, cost::AttentionMode::unfused);
  cost::MemorySetup setup;
  setup.in_flight_micro_batches = 3;
  const auto mem = cost::memory(g, ctx, setup);
  // Weights: 1,836,032 x 2 B + 256,000 x 4 B = 4,696,064 B; gradients the same;
  // optimizer 1,836,032 x 12 + 256,000 x 8 = 24,080,384 B.
  CHECK(mem.weights.value == 4696064);
  CHECK(mem.gradients.value == 4696064);
  CHECK(mem.optimizer_states.value == 24080384);
  CHECK(mem.gathered_weights.value == 0);
  // Activations per micro-batch (default policy, unfused): layer 0 with the
  // fp32 embedding output 2,887,680 + 131,072, layer 1 2,887,680, outside 268,288
  // = 6,174,720; three micro-batches in flight: 18,524,160.
  CHECK(mem.per_micro_batch.total.value == 6174720);
  CHECK(mem.activations.value == 3 * 6174720.0);
  // Loss buffer b s V x 4 B = 1,024,000 per micro-batch in flight.
  CHECK(mem.loss_buffer.value == 3 * 1024000.0);
  // Largest transient: output b s 4h + input gradient b s 4h, bf16, 2 x 524,288;
  // the FC1 bias Add is the first op of that size (GeLU ties with it).
  CHECK(mem.temporary.value == 1048576);
  CHECK(mem.temporary_op == "Add:l0.f1b");
  CHECK(mem.cuda_context == gib(0.9));
  CHECK(mem.communicator == gib(1.5));
  const double allocated = 4696064 * 2 + 24080384 + 3 * 6174720.0 + 3 * 1024000.0 + 1048576;
  // The profile's allocator fragmentation 0.15 (1 - active / reserved):
  // reserved = allocated / 0.85, so the item is 0.15 / 0.85 of allocated.
  CHECK(mem.fragmentation.value == Approx(0.15 / 0.85 * allocated));
  CHECK(mem.total().value == Approx(allocated / 0.85 + gib(2.4).value));
  CHECK(mem.allocated().value == Approx(allocated + gib(2.4).value));
  CHECK(mem.fits(gib(79.21)));
  CHECK_FALSE(mem.fits(gib(2.4)));
  // What must fit is the allocated peak: the allocator frees its cache and
  // retries before an out-of-memory, so the reserved total may exceed it.
  CHECK(mem.fits(mem.allocated()));
  CHECK_FALSE(mem.fits(mem.allocated() - Bytes(1)));
  CHECK(mem.total() > mem.allocated());
  const auto items = mem.largest_items();
  REQUIRE(items.size() == 9);  // all but the ZeRO-3 gather and the recompute working set
  CHECK(items[0].kind == cost::MemoryKind::communicator);
  CHECK(items[1].kind == cost::MemoryKind::cuda_context);
  CHECK(items[2].kind == cost::MemoryKind::optimizer_states);
  for (std::size_t i = 1; i < items.size(); ++i) CHECK(items[i - 1].bytes >= items[i].bytes);
}

TEST_CASE("memory(): ZeRO-3 gathers the largest layer, recompute adds a working set", "[cost][memory]") {
  GptShape m;
  const auto g = build_gpt(m);
  const auto ctx = context("a100-sxm4-80gb", cost::PrecisionPolicy{}, cost::AttentionMode::unfused,
                           cost::RecomputePolicy::full);
  cost::MemorySetup setup;
  setup.optimizer.sharding = StateSharding::zero3;
  setup.optimizer.data_parallel = 8;
  setup.communicator = false;
  setup.fragmentation = 0;
  const auto mem = cost::memory(g, ctx, setup);
  // Largest layer: 789,760 16-bit parameters = 1,579,520 B, twice (current + prefetch).
  CHECK(mem.gathered_weights.value == 2 * 1579520.0);
  CHECK(mem.weights.value == Approx(4696064 / 8.0));
  // Full recompute: layer 0's input (fp32 embedding output, 4 sbh) and layer 1's (2 sbh), plus outside.
  CHECK(mem.activations.value == 4 * m.sbh() + 2 * m.sbh() + 4 * m.sbh() + 24 * m.sb());
  // Working set: layer 0 rematerialises 2,887,680 + 131,072 - 262,144 = 2,756,608 B.
  CHECK(mem.recompute_working_set.value == 2756608);
  CHECK(mem.communicator.value == 0);
  CHECK(mem.fragmentation.value == 0);
  // A device share scales parameters and activations separately.
  setup.share.parameters = 0.5;
  setup.share.activations = 0.25;
  const auto half = cost::memory(g, ctx, setup);
  CHECK(half.weights.value == Approx(mem.weights.value / 2));
  CHECK(half.activations.value == Approx(mem.activations.value / 4));
}

TEST_CASE("memory(): fused kernels shrink the unfused-attention transient", "[cost][memory]") {
  // b = 2, s = 1024, a = 4, d = 64, no dropout: one b a s s tensor is
  // 8,388,608 elements = 16,777,216 B in bf16; [b, a, s, d] is 1,048,576 B.
  GptShape m;
  m.s = 1024;
  m.dropout = false;
  const auto g = build_gpt(m);
  cost::MemorySetup setup;
  setup.communicator = false;
  // Eager kernels: the scale Mul writes its output and, in backward, the
  // gradient of the scores beside it: 2 x 16,777,216 B (the mask Add and the
  // Softmax tie with it; the first one is reported).
  const auto eager = cost::memory(g, context("a100-sxm4-80gb", cost::PrecisionPolicy{}, cost::AttentionMode::unfused), setup);
  CHECK(eager.temporary.value == 33554432);
  CHECK(eager.temporary_op == "Mul:l0.scaled");
  // Fused kernels (Megatron's FusedScaleMaskSoftmax): the scale and mask run
  // inside the softmax kernel and its backward is in place, so one b a s s
  // tensor remains; the largest transient is now a batched MatMul: the scores
  // MatMul's output (16,777,216) + the gradients of q and k (2 x 1,048,576)
  // = 18,874,368 B (the context MatMul ties: probs and v gradients + output).
  auto fused_ctx = cost::ComputeContext::create(profile("a100-sxm4-80gb").device, cost::PrecisionPolicy{},
                                                cost::AttentionMode::unfused, cost::RecomputePolicy::none, true);
  REQUIRE(fused_ctx.ok());
  const auto fused = cost::memory(g, fused_ctx.value(), setup);
  CHECK(fused.temporary.value == 18874368);
  CHECK(fused.temporary_op == "MatMul:l0.scores");
}

TEST_CASE("model_state: 16-bit gradient buffer under the distributed optimizer", "[cost][memory]") {
  // Megatron-Core with grad_reduce_in_fp32 off (NeMo grad_sync_dtype bf16):
  // 2 B weight + 2 B gradient + 12/d B = 4 + 12/8 = 5.5 B per parameter.
  OptimizerSetup s;
  s.sharding = StateSharding::distributed_optimizer;
  s.data_parallel = 8;
  s.grads_16bit = true;
  const auto st = cost::model_state(kOneBillion16, s);
  CHECK(st.weights.value == Approx(2e9));
  CHECK(st.gradients.value == Approx(2e9));
  CHECK(st.optimizer_states.value == Approx(1.5e9));
  // Without it the distributed optimizer keeps fp32 main gradients: 4 B.
  s.grads_16bit = false;
  CHECK(cost::model_state(kOneBillion16, s).gradients.value == Approx(4e9));
}
