// The step time of estimate() against hand-computed totals, with the fake
// cost model of estimate_fixtures.hpp (1 ms forward, 2 ms backward per op,
// collectives 1 s per GB, optimizer streaming at 1e12 B/s):
//   - data parallelism only: m (F + B) + exposed gradient sync + optimizer,
//     the exposure depending on the framework's overlap;
//   - 1F1B over two stages, balanced and unbalanced, with the
//     point-to-point transfer of the residual stream;
//   - the breakdown sums to the step.

#include <algorithm>

#include <catch2/catch.hpp>

#include "../../src/estimate/internal.hpp"
#include "estimate/estimate_fixtures.hpp"
#include "planner/graph/graph.hpp"

using namespace estimate_test;
using estimate::Framework;

namespace {

// Relative comparison for sums of seconds.
Approx rel(double v) { return Approx(v).epsilon(1e-12).margin(1e-15); }

// The large MLP of the overlap tests: x[8, 8000] -> fc1 (8000 x 10000) ->
// Relu -> fc2 (10000 x 10) -> loss. P = 80,000,000 + 10,000 + 100,000 + 10
// = 80,110,010 parameters, above Megatron's 40M-parameter bucket.
constexpr double kBigP = 80'110'010;
graph::OpGraph big_mlp() { return mlp(8, 8000, 10000, 10); }

}  // namespace

TEST_CASE("estimate step: dp only, small MLP: m (F + B) + the whole all-reduce + optimizer", "[estimate][step]") {
  // x[8,16] -> fc1 (16 x 32, bias) -> Relu -> fc2 (32 x 4, bias) -> loss.
  const auto g = mlp(8, 16, 32, 4);
  REQUIRE(g.num_ops() == 6);
  const FakeCostModel fake;
  // dp = 2, micro-batch 8 (the graph's batch), m = 4: global batch 64.
  const auto c = config_for(2, 1, 1, 4, 8);
  const auto e = run(g, fake, c);
  CHECK(e.micro_batches == 4);
  // P = 16*32 + 32 + 32*4 + 4 = 676.
  CHECK(e.parameters == 676);
  // Per micro-batch: 6 ops x 1 ms forward, 6 x 2 ms backward.
  REQUIRE(e.chunks.size() == 1);
  CHECK(e.chunks[0].forward_compute.value == rel(0.006));
  CHECK(e.chunks[0].backward_compute.value == rel(0.012));
  CHECK(e.chunks[0].has_embedding);
  CHECK(e.chunks[0].has_head);
  // compute = m (F + B) = 4 x 18 ms.
  CHECK(e.compute.value == rel(0.072));
  // Gradients: 676 x 4 B (fp32 main grads under Megatron) = 2,704 B, one
  // all-reduce over dp = 2 at 1 GB/s = 2.704 us. The model is far below the
  // 40M-parameter bucket: the last bucket is the whole reduction, exposed.
  CHECK(e.dp_total.value == rel(2.704e-6));
  CHECK(e.dp_exposed.value == rel(2.704e-6));
  // Optimizer (Adam, 38 B per parameter streamed at 1e12 B/s): 676 x 38 /
  // 1e12 = 2.5688e-8 s.
  CHECK(e.optimizer.value == rel(2.5688e-8));
  // step = 0.072 + 2.704e-6 + 2.5688e-8.
  CHECK(e.step_time.value == rel(0.072002729688));
  CHECK(e.bubble.value == Approx(0).margin(1e-12));
  CHECK(e.model_parallel.total().value == 0);
  CHECK(e.pipeline_p2p.value == 0);
  CHECK(breakdown_sum(e) == rel(e.step_time.value));
  // The one data-parallel collective: 2,704 B over 2 ranks of one node.
  const auto ar = calls_of(fake, core::Collective::all_reduce);
  REQUIRE(ar.size() == 1);
  CHECK(ar[0].bytes.value == 2704);
  CHECK(ar[0].where.ranks == 2);
  CHECK(ar[0].where.ranks_per_node == 2);
  // Model FLOPs: the graph's training FLOPs x dp x m; MFU against the
  // fake's 1 TFLOP/s over 2 devices.
  const double flops = graph::totals(g).training_flops.value * 2 * 4;
  CHECK(e.model_flops.value == rel(flops));
  CHECK(e.mfu == rel(flops / (e.step_time.value * 2) / 1e12));
  CHECK(e.fits);
  CHECK(e.advice.empty());
}

TEST_CASE("estimate step: dp only, large MLP: Megatron hides the reduction behind the last backward but the "
          "last bucket",
          "[estimate][step]") {
  const auto g = big_mlp();
  const auto c = config_for(2, 1, 1, 4, 8);
  // Gradients: 4 B x 80,110,010 = 320,440,040 B; all-reduce at 1 GB/s =
  // 0.32044004 s. Last bucket: 40e6 of the P parameters, reduce x 40e6 / P
  // = 4 x 40e6 / 1e9 = 0.16 s.
  const double reduce = 4 * kBigP / 1e9, tail = 0.16;
  // Optimizer: 80,110,010 x 38 / 1e12 = 0.00304418038 s.
  const double opt = 0.00304418038;

  SECTION("backward shorter than the reduction: what exceeds it is exposed") {
    const FakeCostModel fake;  // backward window = 6 ops x 2 ms = 12 ms
    const auto e = run(g, fake, c);
    CHECK(e.parameters == 80'110'010);
    CHECK(e.dp_total.value == rel(reduce));
    // max(tail, reduce - 0.012) = max(0.16, 0.30844004) = 0.30844004.
    CHECK(e.dp_exposed.value == rel(0.30844004));
    CHECK(e.optimizer.value == rel(opt));
    // step = 4 x 18 ms + 0.30844004 + 0.00304418038 = 0.38348422038.
    CHECK(e.step_time.value == rel(0.38348422038));
    CHECK(breakdown_sum(e) == rel(e.step_time.value));
  }
  SECTION("backward longer than the reduction: only the last bucket is exposed") {
    FakeCostModel fake;
    fake.bwd_ms = 100;  // backward window = 6 x 100 ms = 0.6 s > 0.32044004 s
    const auto e = run(g, fake, c);
    CHECK(e.dp_exposed.value == rel(tail));
    // compute = 4 x (6 ms + 600 ms) = 2.424 s; step = 2.424 + 0.16 + opt.
    CHECK(e.compute.value == rel(2.424));
    CHECK(e.step_time.value == rel(2.424 + 0.16 + opt));
    CHECK(breakdown_sum(e) == rel(e.step_time.value));
  }
  SECTION("DDP overlaps the same way") {
    auto d = c;
    d.framework = Framework::ddp;
    const FakeCostModel fake;
    // DDP's autograd accumulation (12 B per parameter, micro-batches 2..4:
    // 3/4 of a pass per micro-batch) lengthens the backward window:
    // 12 x 80,110,010 x 0.75 / 1e12 = 0.00072099009 s; window 0.01272099009 s;
    // exposed = max(0.16, 0.32044004 - 0.01272099009) = 0.30771904991.
    const auto e = run(g, fake, d);
    CHECK(e.grad_accumulation.value == rel(4 * 0.00072099009));
    CHECK(e.dp_exposed.value == rel(0.30771904991));
  }
  SECTION("megatron-legacy, deepspeed and fsdp without ZeRO-3 expose the whole reduction") {
    for (auto f : {Framework::megatron_legacy, Framework::deepspeed, Framework::fsdp}) {
      auto d = c;
      d.framework = f;
      FakeCostModel fake;
      fake.bwd_ms = 100;  // even with a long backward to hide behind
      const auto e = run(g, fake, d);
      INFO(estimate::framework_name(f));
      // bf16: 4 B gradients for every framework -> 0.32044004 s, all of it.
      CHECK(e.dp_total.value == rel(reduce));
      CHECK(e.dp_exposed.value == rel(reduce));
      // DeepSpeed bf16 adds BF16_Optimizer's fp32 accumulation after every
      // micro-batch: 18 B x 80,110,010 / 1e12 = 0.00144198018 s, x 4;
      // megatron-legacy its main_grad.add_: 10 B x 80,110,010 / 1e12 =
      // 0.0008011001 s, x 4; FSDP without ZeRO-3 none.
      const double acc = f == Framework::deepspeed         ? 4 * 0.00144198018
                         : f == Framework::megatron_legacy ? 4 * 0.0008011001
                                                           : 0.0;
      CHECK(e.grad_accumulation.value == Approx(acc).epsilon(1e-9).margin(1e-15));
      CHECK(e.step_time.value == rel(2.424 + acc + reduce + opt));
    }
  }
  SECTION("--grad-reduce-bytes 2 halves the reduction and the last bucket") {
    auto d = c;
    d.grad_reduce_bytes = 2;
    const FakeCostModel fake;
    const auto e = run(g, fake, d);
    // reduce = 2P / 1e9 = 0.16022002 s; tail = 2 x 40e6 / 1e9 = 0.08 s;
    // exposed = max(0.08, 0.16022002 - 0.012) = 0.14822002.
    CHECK(e.dp_total.value == rel(0.16022002));
    CHECK(e.dp_exposed.value == rel(0.14822002));
  }
}

TEST_CASE("estimate step: dp only with ZeRO-1 or the distributed optimizer: reduce-scatter, then all-gather "
          "of the weights",
          "[estimate][step]") {
  const auto g = big_mlp();
  for (bool distributed : {false, true}) {
    auto c = config_for(2, 1, 1, 4, 8);
    if (distributed) c.distributed_optimizer = true;
    else c.zero = 1;
    INFO(estimate::describe(c));
    const FakeCostModel fake;
    const auto e = run(g, fake, c);
    // Reduce-scatter of the fp32 gradients: 4P B = 0.32044004 s; all-gather
    // of the bf16 weights: 2P B = 0.16022002 s.
    CHECK(e.dp_total.value == rel(0.48066006));
    // Exposed: reduce-scatter max(0.16, 0.32044004 - 0.012) = 0.30844004;
    // all-gather behind the next forward (6 ms): max(0.16022002 x 40e6 / P
    // = 0.08, 0.16022002 - 0.006) = 0.15422002. Sum 0.46266006.
    CHECK(e.dp_exposed.value == rel(0.46266006));
    // Optimizer over half the parameters: 40,055,005 x 38 / 1e12.
    CHECK(e.optimizer.value == rel(0.00152209019));
    CHECK(e.step_time.value == rel(0.072 + 0.46266006 + 0.00152209019));
    CHECK(breakdown_sum(e) == rel(e.step_time.value));
    const auto rs = calls_of(fake, core::Collective::reduce_scatter);
    const auto ag = calls_of(fake, core::Collective::all_gather);
    REQUIRE(rs.size() == 1);
    REQUIRE(ag.size() == 1);
    CHECK(rs[0].bytes.value == rel(4 * kBigP));
    CHECK(ag[0].bytes.value == rel(2 * kBigP));
    CHECK(calls_of(fake, core::Collective::all_reduce).empty());
  }
}

TEST_CASE("estimate step: data-parallel groups are placed tp-fastest on the nodes", "[estimate][step]") {
  // dp = 8, tp = 2 on nodes of 8: a node holds 4 data-parallel ranks (each
  // with its 2 tensor-parallel ranks), so the gradient all-reduce spans 8
  // ranks, 4 per node.
  const auto g = mlp(8, 16, 32, 4);
  const FakeCostModel fake;
  const auto e = run(g, fake, config_for(8, 2, 1, 2, 8));
  bool found = false;
  for (const auto& call : calls_of(fake, core::Collective::all_reduce)) {
    if (call.where.ranks != 8) continue;
    found = true;
    CHECK(call.where.ranks_per_node == 4);
  }
  CHECK(found);
  CHECK(e.dp_total.value > 0);
}

TEST_CASE("estimate step: 1F1B over two balanced stages: (m + p - 1)(f + b) plus the transfers on the critical path",
          "[estimate][step][pipeline]") {
  // 4 layers, pp = 2: chunk 0 = embedding (5 ops) + layers 0-1 (62 ops) =
  // 67 ops; chunk 1 = layers 2-3 (62) + head (5) = 67 ops. f = 67 ms, b =
  // 134 ms on each.
  const auto g = small_gpt(4);
  REQUIRE(g.num_ops() == static_cast<std::size_t>(kPreOps + 4 * kLayerOps + kPostOps));
  const FakeCostModel fake;
  const auto c = config_for(1, 1, 2, 4);
  const auto e = run(g, fake, c);
  REQUIRE(e.chunks.size() == 2);
  const auto& c0 = e.chunks[0];
  const auto& c1 = e.chunks[1];
  CHECK(c0.first_layer == 0);
  CHECK(c0.last_layer == 1);
  CHECK(c0.has_embedding);
  CHECK_FALSE(c0.has_head);
  CHECK(c1.first_layer == 2);
  CHECK(c1.last_layer == 3);
  CHECK_FALSE(c1.has_embedding);
  CHECK(c1.has_head);
  CHECK(c0.forward_compute.value == rel(0.067));
  CHECK(c0.backward_compute.value == rel(0.134));
  CHECK(c1.forward_compute.value == rel(0.067));
  CHECK(c1.backward_compute.value == rel(0.134));

  // The residual stream leaving layer 1, [2, 16, 64] = 2,048 bf16 elements
  // = 4,096 B, sent between two ranks of one node: t = 4.096 us.
  const double t = 4.096e-6;
  CHECK(e.pipeline_p2p.value == rel(t));
  const auto sends = calls_of(fake, core::Collective::send_recv);
  REQUIRE(sends.size() == 1);
  CHECK(sends[0].bytes.value == 4096);
  CHECK(sends[0].where.ranks == 2);
  CHECK(sends[0].where.ranks_per_node == 2);

  // 1F1B, p = 2, m = 4 (dev 0: F0 F1 B0 F2 B1 F3 B2 B3; dev 1: F0 B0 F1 B1
  // F2 B2 F3 B3), f = 67 ms, b = 134 ms, transfer t each way. Megatron-Core's
  // 1F1B waits on its p2p requests, so each send also holds its sender for t
  // (sim/pipeline_test.cpp works the same timeline with f = 1, b = 2):
  //   dev0 F0 0..f (+t), F1 f+t..2f+t (+t); dev1 F0 f+t..2f+t, B0 ..2f+b+t
  //   (+t), F1 2f+b+2t..; dev0 B0 2f+b+2t..2f+2b+2t, F2 ..3f+2b+2t (+t),
  //   B1 3f+2b+3t.., F3 ..4f+3b+3t (+t); dev1 B3 ends 5f+4b+4t (+t); dev0
  //   B2 ends 4f+4b+4t, B3 starts 5f+4b+5t and ends 5f + 5b + 5t
  //   = (m + p - 1)(f + b) + 5t = 1.005 s + 5t.
  // Dev 0 then runs its optimizer step: 109,184 parameters (embeddings
  // 9,216 + 2 layers x 49,984) x 38 B / 1e12 = 4.148992e-6 s. Dev 1 ends
  // earlier (its last backward precedes dev 0's by b + t).
  const double opt0 = (kEmbeddingParams + 2 * kLayerParams) * 38 / 1e12;
  CHECK(e.optimizer.value == rel(opt0));
  CHECK(e.step_time.value == rel(1.005 + 5 * t + opt0));
  // Breakdown (device 0: equal busy, the first is taken): compute m (f + b)
  // = 0.804 s; bubble = the rest but the optimizer: 0.201 s + 5t.
  CHECK(e.compute.value == rel(0.804));
  CHECK(e.bubble.value == rel(0.201 + 5 * t));
  CHECK(e.dp_exposed.value == 0);
  CHECK(breakdown_sum(e) == rel(e.step_time.value));
  // 1F1B: stage 0 holds p = 2 micro-batches at its peak, the last stage 1.
  REQUIRE(e.stages.size() == 2);
  CHECK(e.stages[0].in_flight == 2);
  CHECK(e.stages[1].in_flight == 1);
}

TEST_CASE("estimate step: DeepSpeed's pipeline sends 1/tp of the boundary tensor and all-gathers it",
          "[estimate][step][pipeline]") {
  // small_gpt(4) at pp = 2, tp = 2: the residual stream leaving layer 1,
  // [2, 16, 64] bf16 = 4,096 B, is whole on both tensor-parallel ranks.
  const auto g = small_gpt(4);
  FakeCostModel fake;
  auto c = config_for(1, 2, 2, 4);
  c.framework = Framework::deepspeed;
  const auto ds = run(g, fake, c);
  // DeepSpeed (PipelineEngine.is_pipe_partitioned with tp > 1): each rank
  // sends its 2,048 B half (2.048 us at 1 ns/B) and the receiving pair
  // all-gathers the 4,096 B (4.096 us): 6.144 us per transfer.
  CHECK(ds.pipeline_p2p.value == rel(6.144e-6));
  const auto sends = calls_of(fake, core::Collective::send_recv);
  REQUIRE(sends.size() == 1);
  CHECK(sends[0].bytes.value == 2048);
  bool gathered = false;
  for (const auto& call : calls_of(fake, core::Collective::all_gather))
    gathered = gathered || (call.bytes.value == 4096 && call.where.ranks == 2);
  CHECK(gathered);

  // Megatron sends the tensor whole (this test's graph is not sequence
  // parallel).
  fake.clear_calls();
  c.framework = Framework::megatron;
  const auto mg = run(g, fake, c);
  CHECK(mg.pipeline_p2p.value == rel(4.096e-6));
}

TEST_CASE("estimate step: a tied LM head keeps a copy of the embedding on the last stage, its gradient all-reduced once",
          "[estimate][step][pipeline]") {
  // small_gpt(4) with the LM head reading embed.tokens.weight (8,192
  // elements) through a Transpose: 8,192 fewer parameters in the graph, but
  // at pp = 2 the last stage holds a copy (Megatron's embedding group,
  // DeepSpeed's tied modules), so both stages hold what the untied model's
  // do: stage 0 = embeddings 9,216 + 2 layers 99,968 = 109,184; stage 1 =
  // 2 layers + final_ln 128 + the copy 8,192 = 108,288.
  const FakeCostModel fake;
  const auto tied = run(gpt(2, 16, 64, 4, 256, 128, 4, true), fake, config_for(1, 1, 2, 4));
  REQUIRE(tied.stages.size() == 2);
  CHECK(tied.stages[0].parameters == 109184);
  CHECK(tied.stages[1].parameters == 108288);
  // The copies' gradients, fp32 main gradients (Megatron) of 8,192 elements
  // = 32,768 B, all-reduced by the two ranks (one node) once a step:
  // 32.768 us at 1 ns/B, with the model-parallel gradient syncs.
  bool found = false;
  for (const auto& call : calls_of(fake, core::Collective::all_reduce))
    found = found || (call.bytes.value == 32768 && call.where.ranks == 2 && call.where.ranks_per_node == 2);
  CHECK(found);
  REQUIRE(tied.model_parallel.by_kind.count("grad_sync") == 1);
  CHECK(tied.model_parallel.by_kind.at("grad_sync").value == rel(32.768e-6));
  CHECK(std::count(tied.notes.begin(), tied.notes.end(),
                   "tied weight embed.tokens.weight read on pipeline ranks 0, 1: a copy on each, gradients all-reduced "
                   "over them once a step") == 1);
  // Without pipelining there is one copy and nothing to sync.
  fake.clear_calls();
  const auto one = run(gpt(2, 16, 64, 4, 256, 128, 4, true), fake, config_for(1, 1, 1, 4));
  CHECK(one.stages[0].parameters == 109184 + 108288 - 8192);
  CHECK(one.model_parallel.by_kind.count("grad_sync") == 0);
  CHECK(one.notes.empty());
}

TEST_CASE("estimate step: 1F1B over two unbalanced stages: the slow last stage sets the pace",
          "[estimate][step][pipeline]") {
  // 3 layers over 2 chunks: the remainder goes to the last chunk, so chunk
  // 0 = embedding (5 ops) + layer 0 (31) = 36 ops: f0 = 36 ms, b0 = 72 ms;
  // chunk 1 = layers 1-2 (62) + head (5) = 67 ops: f1 = 67 ms, b1 = 134 ms.
  const auto g = small_gpt(3);
  const FakeCostModel fake;
  const auto e = run(g, fake, config_for(1, 1, 2, 4));
  REQUIRE(e.chunks.size() == 2);
  CHECK(e.chunks[0].first_layer == 0);
  CHECK(e.chunks[0].last_layer == 0);
  CHECK(e.chunks[1].first_layer == 1);
  CHECK(e.chunks[1].last_layer == 2);
  CHECK(e.chunks[0].forward_compute.value == rel(0.036));
  CHECK(e.chunks[1].backward_compute.value == rel(0.134));
  // With f1 + b1 = 201 ms > f0 + b0 = 108 ms, device 1 never waits after
  // its first forward: it runs F_i B_i back to back from f0 + t, each B_i
  // holding it t more for its send (Megatron-Core's 1F1B waits on its p2p
  // requests), and dev 0 runs each B_i as soon as dev 1's arrives (worked
  // out op by op):
  //   dev1 F0 at f0 + t; B3 ends f0 + m (f1 + b1) + 4t = 0.840 s + 4t
  //   dev0 B3 ends f0 + m (f1 + b1) + b0 + 5t = 0.912 s + 5t
  const double t = 4.096e-6;
  // Dev 0 adds its optimizer: 59,200 parameters (9,216 + 49,984) x 38 /
  // 1e12 = 2.2496e-6 s; dev 1 (108,288 parameters, 4.114944e-6 s) ends at
  // 0.840 + 5t + 4.1e-6 s, earlier.
  const double opt0 = (kEmbeddingParams + kLayerParams) * 38 / 1e12;
  const double opt1 = (2 * kLayerParams + kHeadParams) * 38 / 1e12;
  CHECK(e.step_time.value == rel(0.912 + 5 * t + opt0));
  // The breakdown is device 1's, the busiest: compute 4 x 201 ms, its
  // optimizer, and the bubble for the rest.
  CHECK(e.compute.value == rel(0.804));
  CHECK(e.optimizer.value == rel(opt1));
  CHECK(e.bubble.value == rel(0.912 + 5 * t + opt0 - 0.804 - opt1));
  CHECK(breakdown_sum(e) == rel(e.step_time.value));
}

TEST_CASE("estimate step: GPipe holds every micro-batch on the first stage, interleaving shrinks the bubble",
          "[estimate][step][pipeline]") {
  const auto g = small_gpt(4);
  const FakeCostModel fake;
  auto c = config_for(1, 1, 2, 4);
  const auto one = run(g, fake, c);
  c.schedule = sim::Schedule::gpipe;
  const auto gp = run(g, fake, c);
  REQUIRE(gp.stages.size() == 2);
  CHECK(gp.stages[0].in_flight == 4);
  CHECK(gp.stages[1].in_flight == 4);
  CHECK(breakdown_sum(gp) == rel(gp.step_time.value));
  // Same work, same chunks.
  CHECK(gp.compute.value == rel(one.compute.value));

  // Interleaved, vp = 2: 4 chunks of one layer each, chunk c on device c % 2.
  // Ops: 5 + 31 = 36, 31, 31, 31 + 5 = 36; each device runs 67 ops per
  // micro-batch, as under 1F1B.
  c.schedule = sim::Schedule::interleaved;
  c.vp = 2;
  const auto il = run(g, fake, c);
  REQUIRE(il.chunks.size() == 4);
  for (int k = 0; k < 4; ++k) {
    CHECK(il.chunks[static_cast<std::size_t>(k)].first_layer == k);
    CHECK(il.chunks[static_cast<std::size_t>(k)].last_layer == k);
  }
  CHECK(il.chunks[0].has_embedding);
  CHECK(il.chunks[3].has_head);
  CHECK(il.chunks[0].forward_compute.value == rel(0.036));
  CHECK(il.chunks[1].forward_compute.value == rel(0.031));
  CHECK(il.chunks[3].forward_compute.value == rel(0.036));
  CHECK(il.compute.value == rel(0.804));
  CHECK(breakdown_sum(il) == rel(il.step_time.value));
  // Textbook bubble (p - 1) / (v m) of the busy time vs (p - 1) / m: the
  // interleaved bubble is smaller than 1F1B's 0.201 s + 4t.
  CHECK(il.bubble.value < one.bubble.value);
  CHECK(il.step_time.value < one.step_time.value);
}

TEST_CASE("estimate step: tensor parallelism: Megatron's all-reduces on the critical path, 2 B per element on the wire",
          "[estimate][step][tp]") {
  // With op times proportional to FLOPs (1 GFLOP/s) the search picks
  // Megatron's layout (column-parallel QKV and fc1, row-parallel projection
  // and fc2): per layer and micro-batch 2 forward all-reduces (after the
  // projection and fc2) and 2 backward ones (into QKV and fc1), each of a
  // [2, 16, 64] tensor: 2,048 elements, moved in bf16 = 4,096 B = 4.096 us.
  const auto g = small_gpt(4);
  FakeCostModel fake;
  fake.flops_per_s = 1e9;
  const auto e = run(g, fake, config_for(1, 2, 2, 4));
  REQUIRE(e.chunks.size() == 2);
  // Chunk 0: 2 layers x 4 all-reduces x 4.096 us = 32.768 us per micro-batch.
  CHECK(e.chunks[0].model_parallel_comm.value == rel(32.768e-6));
  // Chunk 1 adds the LM head's backward all-reduce (its input gradient,
  // [2, 16, 64]: 4.096 us) and the vocabulary-parallel loss's statistics.
  CHECK(e.chunks[1].model_parallel_comm.value > 36.864e-6);
  CHECK(e.chunks[1].model_parallel_comm.value < 37.3e-6);
  // Only all-reduces, priced over 2 ranks of one node.
  for (const auto& [kind, v] : e.model_parallel.by_kind) CHECK(kind == "all_reduce");
  for (const auto& call : calls_of(fake, core::Collective::all_reduce)) {
    CHECK(call.where.ranks == 2);
    CHECK(call.where.ranks_per_node == 2);
  }
  CHECK(breakdown_sum(e) == rel(e.step_time.value));
}

TEST_CASE("estimate step: planner's executor runs a resharding as its tp code does, with the copies around it",
          "[estimate][step][tp]") {
  using estimate::detail::executor_step;
  using C = core::Collective;
  // A [4, 128, 256] f32 activation over 2 ranks: W = 524,288 B whole,
  // 262,144 B a rank's block.
  const auto step = [](C kind, double bytes, std::optional<int> gather, std::optional<int> scatter) {
    layout::CommStep s;
    s.kind = kind;
    s.group_size = 2;
    s.bytes = Bytes(bytes);
    s.gather_dim = gather;
    s.scatter_dim = scatter;
    return s;
  };
  const auto check = [](const auto& x, C kind, double bytes, double streams) {
    REQUIRE(x);
    CHECK(x->kind == kind);
    CHECK(x->bytes.value == bytes);
    CHECK(x->streams.value == streams);
  };
  SECTION("a change of split dim: gather the whole, take the block; backward: all-reduce the padded block") {
    const auto s = step(C::all_to_all, 262'144, 2, 1);  // each rank's block
    // Forward: gather (zeroed whole W + zeroed receive buffer W + rows
    // copied 2W) + the consumer's block taken (zeroed, read, written: 3W/2).
    check(executor_step(s, false), C::all_gather, 524'288, 4 * 524'288 + 786'432);
    // Backward: the block scattered into a zeroed whole (W + 3W/2), the
    // all-reduce, the producer's block taken (3W/2).
    check(executor_step(s, true), C::all_reduce, 524'288, 524'288 + 1'572'864);
  }
  SECTION("an all-gather's backward is an all-reduce of the whole gradient, then the block taken") {
    const auto s = step(C::reduce_scatter, 524'288, std::nullopt, 1);
    check(executor_step(s, true), C::all_reduce, 524'288, 786'432);
    // Forward: the send buffer laid out rank after rank (3W), the block zeroed (W/2).
    check(executor_step(s, false), C::reduce_scatter, 524'288, 3 * 524'288 + 262'144);
    // Blocks along dim 0 already lie in rank order: only the block zeroed.
    check(executor_step(step(C::reduce_scatter, 524'288, std::nullopt, 0), false), C::reduce_scatter, 524'288,
          262'144);
  }
  SECTION("all-gathers row by row where blocks interleave; a reduced output copied first") {
    check(executor_step(step(C::all_gather, 524'288, 1, std::nullopt), false), C::all_gather, 524'288,
          4 * 524'288);
    check(executor_step(step(C::all_gather, 524'288, 0, std::nullopt), true), C::all_gather, 524'288, 524'288);
    check(executor_step(step(C::all_reduce, 524'288, std::nullopt, std::nullopt), false), C::all_reduce, 524'288,
          2 * 524'288);
    check(executor_step(step(C::all_reduce, 524'288, std::nullopt, std::nullopt), true), C::all_reduce, 524'288, 0);
    CHECK_FALSE(executor_step(layout::CommStep{}, false));  // a local slice
  }
  SECTION("in the step: Megatron's layout, each forward all-reduce's output copied first at 1e12 B/s") {
    // The Megatron test above: 2 layers x 4 all-reduces x 4.096 us per
    // micro-batch on chunk 0; the 2 forward ones per layer each copy the
    // 4,096 B (on the wire) partial output once more: 2 x 4,096 B / 1e12.
    const auto g = small_gpt(4);
    FakeCostModel fake;
    fake.flops_per_s = 1e9;
    auto c = config_for(1, 2, 2, 4);
    c.framework = Framework::executor;
    const auto e = run(g, fake, c);
    CHECK(e.chunks[0].model_parallel_comm.value == rel(32.768e-6 + 2 * 2 * 8'192 / 1e12));
    CHECK(breakdown_sum(e) == rel(e.step_time.value));
  }
}

TEST_CASE("estimate step: tensor-parallel comm overlap leaves the first piece, full recompute repeats the forward's",
          "[estimate][step][tp]") {
  const auto g = small_gpt(4);
  const auto c = config_for(1, 2, 2, 4);
  SECTION("--tp-comm-overlap: the GEMMs (>= 0.39 ms each) hide all but 10 % of 32.768 us") {
    // qkv alone: 2 x 32 x 64 x 192 / 2 = 393,216 local FLOPs = 0.39 ms at
    // 1 GFLOP/s, far above its chunk's 16.384 us of forward all-reduces.
    FakeCostModel fake;
    fake.flops_per_s = 1e9;
    auto o = c;
    o.tp_comm_overlap = true;
    const auto e = run(g, fake, o);
    CHECK(e.chunks[0].model_parallel_comm.value == rel(3.2768e-6));
    CHECK(breakdown_sum(e) == rel(e.step_time.value));
  }
  SECTION("full recompute: the recomputed forward all-reduces again in backward") {
    FakeCostModel fake(cost::RecomputePolicy::full);
    fake.flops_per_s = 1e9;
    const auto e = run(g, fake, c);
    // 32.768 us + the 2 layers x 2 forward all-reduces again (16.384 us).
    CHECK(e.chunks[0].model_parallel_comm.value == rel(49.152e-6));
  }
}

TEST_CASE("estimate step: gradient accumulation passes per framework, per micro-batch",
          "[estimate][step][grad_accumulation]") {
  // small_gpt(4): 9,216 + 4 x 49,984 + 8,320 = 217,472 parameters, one
  // stage, dp = 2, 4 micro-batches, bf16; the fake streams 1e12 B/s.
  // Per micro-batch pass = bytes per parameter x 217,472 / 1e12 s.
  const auto g = small_gpt(4);
  auto run_with = [&](Framework f, int zero, double grad_reduce_bytes = 0) {
    auto c = config_for(2, 1, 1, 4);
    c.framework = f;
    c.zero = zero;
    c.grad_reduce_bytes = grad_reduce_bytes;
    const FakeCostModel fake;
    return run(g, fake, c);
  };
  SECTION("FSDP FULL_SHARD, fp32 reduce: cat 2x2 + cast (2 + 4) + pre-divide 2x4 = 18 B") {
    const auto e = run_with(Framework::fsdp, 3);
    // 18 x 217,472 / 1e12 = 3.914496e-6 s per micro-batch.
    CHECK(e.chunks[0].grad_accumulation.value == rel(3.914496e-6));
    CHECK(e.grad_accumulation.value == rel(4 * 3.914496e-6));
    CHECK(breakdown_sum(e) == rel(e.step_time.value));
  }
  SECTION("FSDP with bf16 reduce (PURE): cat 2x2 + pre-divide 2x2 = 8 B, no cast") {
    const auto e = run_with(Framework::fsdp, 3, 2);
    // 8 x 217,472 / 1e12 = 1.739776e-6 s per micro-batch.
    CHECK(e.grad_accumulation.value == rel(4 * 1.739776e-6));
  }
  SECTION("FSDP without per-micro-batch sharding, Megatron: no separate pass") {
    CHECK(run_with(Framework::fsdp, 1).grad_accumulation.value == 0);
    CHECK(run_with(Framework::megatron, 1).grad_accumulation.value == 0);
  }
  SECTION("Megatron-LM before accumulation fusion: main_grad.add_(grad), 2 + 4 + 4 B (bf16, fp32 main grads)") {
    // 10 x 217,472 / 1e12 = 2.17472e-6 s per micro-batch.
    CHECK(run_with(Framework::megatron_legacy, 0).grad_accumulation.value == rel(4 * 2.17472e-6));
    // 16-bit main gradients (--grad-reduce-bytes 2): 2 + 2 + 2 = 6 B.
    CHECK(run_with(Framework::megatron_legacy, 0, 2).grad_accumulation.value == rel(4 * 1.304832e-6));
  }
  SECTION("DeepSpeed ZeRO-2/3: every gradient copied into the reduction bucket: 2 x 2 B") {
    // 4 x 217,472 / 1e12 = 8.69888e-7 s per micro-batch.
    CHECK(run_with(Framework::deepspeed, 2).grad_accumulation.value == rel(4 * 8.69888e-7));
    CHECK(run_with(Framework::deepspeed, 3).grad_accumulation.value == rel(4 * 8.69888e-7));
  }
  SECTION("DeepSpeed bf16 ZeRO-1: BF16_Optimizer adds every micro-batch's gradient into fp32: 18 B") {
    const auto e = run_with(Framework::deepspeed, 1);
    CHECK(e.grad_accumulation.value == rel(4 * 3.914496e-6));
    CHECK(breakdown_sum(e) == rel(e.step_time.value));
    // It is on the compute stream: the step grows by exactly the passes
    // against the same layout with other passes (ZeRO-2 changes only the
    // gradient sharding, whose reduce-scatter + all-gather ZeRO-1 shares).
    const auto z2 = run_with(Framework::deepspeed, 2);
    CHECK(e.step_time.value - e.grad_accumulation.value ==
          rel(z2.step_time.value - z2.grad_accumulation.value));
  }
  SECTION("DDP (AMP, fp32 gradients): in-place accumulation after the first micro-batch: 12 B x 3/4") {
    const auto e = run_with(Framework::ddp, 0);
    // 12 x 217,472 x 0.75 / 1e12 = 1.957248e-6 s per micro-batch.
    CHECK(e.grad_accumulation.value == rel(4 * 1.957248e-6));
  }
  SECTION("planner's executor: every micro-batch's fp32 gradients added into the zeroed buffer: 12 B, the first too") {
    const auto e = run_with(Framework::executor, 0);
    // 12 x 217,472 / 1e12 = 2.609664e-6 s per micro-batch, 4 micro-batches.
    CHECK(e.grad_accumulation.value == rel(4 * 2.609664e-6));
    CHECK(breakdown_sum(e) == rel(e.step_time.value));
    // Once a step each op copies its weights out of the flat buffer the
    // optimizer updated: 3 streams x 217,472 x 2 B / 1e12 = 1.304832e-6 s
    // beside the same update as Megatron's.
    CHECK(e.optimizer.value - run_with(Framework::megatron, 0).optimizer.value == rel(1.304832e-6));
  }
}

TEST_CASE("estimate step: ZeRO-3: weights gathered and gradients reduce-scattered per micro-batch, behind the compute",
          "[estimate][step][zero3]") {
  // 4 layers, dp = 2, one stage: per micro-batch F = 134 ms, B = 268 ms.
  // Gathers: 217,472 bf16 weights = 434,944 B = 0.434944 ms; reduce-scatters:
  // 4 B gradients = 869,888 B = 0.869888 ms. Both hide behind the compute
  // (forward 134 ms > gather; backward 268 ms > gather + reduce-scatter) but
  // the first layer's share of each pass, 1/4 of it:
  //   forward 0.434944 / 4 = 0.108736 ms, backward 0.869888 / 4 = 0.217472 ms.
  const auto g = small_gpt(4);
  auto c = config_for(2, 1, 1, 4);
  c.zero = 3;
  const FakeCostModel fake;
  const auto e = run(g, fake, c);
  CHECK(e.chunks[0].zero3_exposed.value == rel(0.326208e-3));
  CHECK(e.zero3_exposed.value == rel(4 * 0.326208e-3));
  // No separate data-parallel sync after the flush.
  CHECK(e.dp_exposed.value == 0);
  // Optimizer over half the parameters: 108,736 x 38 / 1e12 = 4.131968e-6 s.
  CHECK(e.optimizer.value == rel(4.131968e-6));
  // step = 4 x (0.402 + 0.000326208) + 4.131968e-6.
  CHECK(e.step_time.value == rel(1.609308963968));
  CHECK(breakdown_sum(e) == rel(e.step_time.value));
  // The chunk's collectives are priced once and replayed per micro-batch,
  // and each unit's gather once per distinct size (the repeated layers share
  // it; the sums above add all 53 parameter tensors, DeepSpeed-style
  // per-tensor gathers: 2 embeddings + 12 per layer x 4 + final_ln (2) +
  // lm_head (1)). 8 sizes: 64 (norm weights and biases, proj and fc2
  // biases), 192 (qkv bias), 256 (fc1 bias), 1,024 (positions), 4,096
  // (proj), 8,192 (token embedding, lm_head), 12,288 (qkv), 16,384 (fc1,
  // fc2) = 42,496 elements: 84,992 B gathered at 2 B, 169,984 B
  // reduce-scattered at 4 B.
  double gathered = 0, scattered = 0;
  int gathers = 0;
  for (const auto& call : fake.calls()) {
    if (call.kind == core::Collective::all_gather) {
      gathered += call.bytes.value;
      ++gathers;
    }
    if (call.kind == core::Collective::reduce_scatter) scattered += call.bytes.value;
  }
  CHECK(gathered == rel(84'992));
  CHECK(scattered == rel(169'984));
  CHECK(gathers == 8);
  SECTION("one gather and one reduce-scatter per parameter tensor: 53 of each per micro-batch") {
    // Each collective priced at 1 s whatever its size: 53 s gathered, 53 s
    // reduce-scattered. Forward exposed 53 - 0.134 s, backward (gathers again
    // and the reduce-scatters) 106 - 0.268 s: 158.598 s per micro-batch.
    FakeCostModel latency;
    latency.seconds_per_byte = 0;
    latency.seconds_per_call = 1;
    const auto le = run(g, latency, c);
    CHECK(le.chunks[0].zero3_exposed.value == rel(158.598));
  }
  SECTION("planner's executor: the whole gather before each pass, waited for, with its copies; one reduce-scatter") {
    // One thread: the forward and the backward each wait for the gather,
    // 0.434944 ms, and stream the weights four times (zero-filled buffer,
    // zero-filled op tensor, the copy's read and write): 4 x 217,472 x 2 B
    // / 1e12 B/s = 1.739776e-6 s. Per pass 0.436683776 ms, per micro-batch
    // 0.873367552 ms. The gradients are reduce-scattered once after the
    // flush at 4 B: 869,888 B = 0.869888 ms, exposed; no all-gather after
    // the optimizer (the shard is kept).
    auto x = c;
    x.framework = Framework::executor;
    const FakeCostModel ex;
    const auto xe = run(g, ex, x);
    CHECK(xe.chunks[0].zero3_exposed.value == rel(0.873367552e-3));
    CHECK(xe.zero3_exposed.value == rel(4 * 0.873367552e-3));
    CHECK(xe.dp_exposed.value == rel(0.869888e-3));
    CHECK(breakdown_sum(xe) == rel(xe.step_time.value));
    // step = 4 x (0.402 + 0.873367552e-3 + the 12 B accumulation pass
    // 2.609664e-6) + 0.869888e-3 + the optimizer 4.131968e-6.
    CHECK(xe.step_time.value == rel(4 * (0.402 + 0.873367552e-3 + 2.609664e-6) + 0.869888e-3 + 4.131968e-6));
  }
  SECTION("DeepSpeed ZeRO-3 fetches weights on demand over a single ring: the gathers do not hide") {
    // forward exposed = every gather, 0.434944 ms; backward = the gathers
    // again + the reduce-scatters' last bucket (they overlap the backward, as
    // before): 0.434944 + 0.869888 / 4 = 0.652416 ms; 1.08736 ms per
    // micro-batch, 4 micro-batches.
    auto d = c;
    d.framework = Framework::deepspeed;
    const FakeCostModel ds;
    const auto de = run(g, ds, d);
    CHECK(de.chunks[0].zero3_exposed.value == rel(1.08736e-3));
    CHECK(de.zero3_exposed.value == rel(4 * 1.08736e-3));
    CHECK(breakdown_sum(de) == rel(de.step_time.value));
    for (const auto& call : calls_of(ds, core::Collective::all_gather)) CHECK(call.where.single_ring);
    for (const auto& call : calls_of(fake, core::Collective::all_gather)) CHECK_FALSE(call.where.single_ring);
  }
  SECTION("FSDP gathers one flat buffer per wrapped block: 4 layers + the root (embeddings and head)") {
    auto f = c;
    f.framework = Framework::fsdp;
    // Each collective priced at 1 s whatever its size: 5 gathers per pass,
    // 5 reduce-scatters. Forward exposed 5 - 0.134 s, backward (gathers
    // again and the reduce-scatters) 10 - 0.268 s: 14.598 s per micro-batch.
    FakeCostModel fsdp;
    fsdp.seconds_per_byte = 0;
    fsdp.seconds_per_call = 1;
    const auto fe = run(g, fsdp, f);
    CHECK(fe.chunks[0].zero3_exposed.value == rel(14.598));
  }
}
