// The per-rank replay program, counted by hand on the tiny GPT (4 layers,
// hidden h = 64, 4 heads of 16, sequence s = 32, vocabulary V = 128, ffn
// 4h = 256, micro-batch b = 2, so b s = 64 rows) under the fixture plans.

#include <algorithm>

#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "planner/executor/program.hpp"
#include "planner/sim/schedule.hpp"

namespace planner::executor {
namespace {

using testing::load_plan;
using testing::tiny_gpt;

RankProgram derive(const plan::Plan& p, int rank) {
  auto prog = derive_program(p, tiny_gpt(), rank);
  if (!prog) FAIL(prog.error().message);
  return *prog;
}

std::vector<Task> of_kind(const std::vector<Task>& tasks, TaskKind k) {
  std::vector<Task> out;
  std::copy_if(tasks.begin(), tasks.end(), std::back_inserter(out), [&](const Task& t) { return t.kind == k; });
  return out;
}

// Parameters of one layer, whole: ln1 2h + qkv h*3h + 3h + proj h*h + h
// + ln2 2h + fc1 h*4h + 4h + fc2 4h*h + h
//   = 128 + 12288 + 192 + 4096 + 64 + 128 + 16384 + 256 + 16384 + 64 = 49984.
constexpr std::int64_t kLayer = 49984;
// Embeddings: tokens V*h = 8192, positions s*h = 2048. Head: final_ln 2h =
// 128, lm_head h*V = 8192.
constexpr std::int64_t kEmbed = 8192 + 2048, kHead = 128 + 8192;

TEST_CASE("tensor-parallel plan: Megatron GEMM shapes, all-reduces and local parameters", "[executor]") {
  const auto p = load_plan("gpt_tp2.json");  // tp = 2, 2 micro-batches, qkv/fc1 tp:n, proj/fc2 tp:k
  const RankProgram r0 = derive(p, 0);
  REQUIRE(r0.steps.size() == 4);  // F0 B0 F1 B1 (1F1B on one stage)
  CHECK(r0.steps[0].step == plan::ScheduleStep{'F', 0, 0});
  CHECK(r0.steps[1].step == plan::ScheduleStep{'B', 0, 0});

  const auto fwd = of_kind(r0.steps[0].tasks, TaskKind::gemm);
  // Per layer 6 GEMMs (qkv, scores, context, proj, fc1, fc2) x 4 layers + lm_head = 25.
  REQUIRE(fwd.size() == 25);
  auto shape = [](const Task& t) { return std::array<std::int64_t, 4>{t.batch, t.m, t.n, t.k}; };
  using S = std::array<std::int64_t, 4>;  // batch, m, n, k
  CHECK(shape(fwd[0]) == S{1, 64, 96, 64});   // qkv: x[64,64] W[64, 3h/2 = 96] (column parallel)
  CHECK(shape(fwd[1]) == S{4, 32, 32, 16});   // scores: b*heads/2 = 4 of Q[32,16] K^T[16,32]
  CHECK(shape(fwd[2]) == S{4, 32, 16, 32});   // context: 4 of P[32,32] V[32,16]
  CHECK(shape(fwd[3]) == S{1, 64, 64, 32});   // proj: x[64, h/2 = 32] W[32,64] (row parallel)
  CHECK(shape(fwd[4]) == S{1, 64, 128, 64});  // fc1: W[64, 4h/2 = 128]
  CHECK(shape(fwd[5]) == S{1, 64, 64, 128});  // fc2: x[64,128] W[128,64]
  CHECK(shape(fwd[24]) == S{1, 64, 128, 64}); // lm_head, replicated: W[64,128]

  const auto bwd = of_kind(r0.steps[1].tasks, TaskKind::gemm);
  REQUIRE(bwd.size() == 50);  // dA and dB of every forward GEMM, last op first
  CHECK(shape(bwd[0]) == S{1, 64, 64, 128});  // lm_head dX[64,64] = dY[64,128] W^T
  CHECK(shape(bwd[1]) == S{1, 64, 128, 64});  // lm_head dW[64,128] = X^T[64,64] dY[64,128]

  const auto c = r0.counts();
  CHECK(c.gemms == 150);  // (25 + 50) x 2 micro-batches
  // Forward FLOPs per micro-batch, 2 m n k batch: qkv 786432 + scores 131072
  // + context 131072 + proj 262144 + fc1 1048576 + fc2 1048576 = 3407872 per
  // layer, x 4 = 13631488, + lm_head 1048576 = 14680064; backward twice that;
  // x 2 micro-batches: 14680064 x 3 x 2 = 88080384.
  CHECK(c.gemm_flops == Approx(88080384.0));
  // Two forward all-reduces per layer (after proj and fc2) and two backward
  // (before ln1 and ln2): 4 x 4 layers x 2 micro-batches = 32.
  CHECK(c.collectives == 32);
  CHECK(of_kind(r0.steps[0].tasks, TaskKind::collective).size() == 8);
  for (const auto& t : of_kind(r0.steps[1].tasks, TaskKind::collective)) {
    CHECK(t.coll == core::Collective::all_reduce);
    CHECK(t.axes == "tp");
    CHECK(t.bytes == 8192);  // b s h at 2 bytes (bf16) = 64 x 64 x 2
    CHECK(t.component == Component::tp_comm);
  }
  CHECK(c.sends == 0);
  // Local parameters: the sharded weights and biases halve: per layer
  // 128 + 6144 + 96 + 2048 + 64 + 128 + 8192 + 128 + 8192 + 64 = 25184.
  CHECK(r0.parameters == kEmbed + 4 * 25184 + kHead);  // 119296
  CHECK(r0.finish.size() == 1);  // dp = 1: the optimizer only
  CHECK(r0.finish[0].kind == TaskKind::optimizer);
  CHECK(r0.optimizer_states == 2);  // adam
  CHECK(r0.groups == std::vector<std::string>{"tp"});
  // Rank 1 runs the same program on the other halves.
  CHECK(derive(p, 1).counts().gemm_flops == c.gemm_flops);
}

TEST_CASE("pipeline plan: each stage its layers, activations and gradients across the cut", "[executor]") {
  const auto p = load_plan("gpt_pp2.json");  // pp = 2, layers 0-1 | 2-3, 1F1B, 2 micro-batches
  const RankProgram r0 = derive(p, 0), r1 = derive(p, 1);
  CHECK(r0.pp_rank == 0);
  CHECK(r1.pp_rank == 1);
  CHECK(r0.parameters == kEmbed + 2 * kLayer);  // 110208
  CHECK(r1.parameters == 2 * kLayer + kHead);   // 108288
  // Crossing the cut per micro-batch, at 2 bytes: the residual stream b s h =
  // 4096 elements (8192 B), the causal mask s x s = 1024 (2048 B) and four
  // scalar constants (8 B) made in chunk 0 and read in chunk 1: 10248 B.
  const auto s0 = r0.counts(), s1 = r1.counts();
  CHECK(s0.sends == 2);  // F0, F1 send activations down
  CHECK(s0.recvs == 2);  // B0, B1 receive gradients back
  CHECK(s1.sends == 2);
  CHECK(s1.recvs == 2);
  // 1F1B, stage 0 of 2: warm-up min(p - r - 1, m) = 1 forward, so F0 F1 B0 B1.
  REQUIRE(r0.steps.size() == 4);
  CHECK(r0.steps[1].step == plan::ScheduleStep{'F', 1, 0});
  const Task& send = r0.steps[0].tasks.back();
  CHECK(send.kind == TaskKind::send);
  CHECK(send.peer_pp == 1);
  CHECK(send.tag == 0);
  CHECK(send.bytes == 10248);
  // Stage 1 runs F0 B0 F1 B1: F0 starts by receiving; B0 (the loss is
  // here) receives nothing and ends by sending the gradient back.
  CHECK(r1.steps[0].tasks.front().kind == TaskKind::recv);
  CHECK(r1.steps[1].tasks.front().kind == TaskKind::memory);  // the loss's backward
  CHECK(r1.steps[1].tasks.back().kind == TaskKind::send);
  CHECK(r1.steps[1].tasks.back().tag == 1);
  // GEMMs: stage 0 holds 2 layers (12 per micro-batch forward), stage 1 two
  // layers and the head (13): x 3 (forward, dA, dB) x 2 micro-batches.
  CHECK(s0.gemms == 12 * 3 * 2);
  CHECK(s1.gemms == 13 * 3 * 2);
}

TEST_CASE("data-parallel plans: gradient all-reduce, or ZeRO-1 reduce-scatter and all-gather", "[executor]") {
  const std::int64_t all = kEmbed + 4 * kLayer + kHead;  // 218496 parameters
  {
    const RankProgram r = derive(load_plan("gpt_dp2.json"), 1);
    REQUIRE(r.finish.size() == 2);
    CHECK(r.finish[0].coll == core::Collective::all_reduce);
    CHECK(r.finish[0].axes == "dp");
    CHECK(r.finish[0].bytes == all * 4);  // f32 gradients: 873984 B
    CHECK(r.finish[0].component == Component::dp_comm);
    CHECK(r.finish[1].kind == TaskKind::optimizer);
    CHECK(r.finish[1].elements == all);
  }
  {
    const RankProgram r = derive(load_plan("gpt_dp2_zero1.json"), 1);
    REQUIRE(r.finish.size() == 3);
    CHECK(r.finish[0].coll == core::Collective::reduce_scatter);
    CHECK(r.finish[0].bytes == all * 4);
    CHECK(r.finish[1].elements == all / 2);  // each rank updates its half: 109248
    CHECK(r.finish[2].coll == core::Collective::all_gather);
    CHECK(r.finish[2].bytes == all * 2);     // bf16 parameters gathered back: 436992 B
    // Memory of the replay: p and g f32 (2 x 218496 x 4) + adam's 2 states on
    // the half (2 x 109248 x 4) + the working buffers.
    CHECK(r.memory_bytes() > (2.0 * all + 2.0 * (all / 2)) * 4);
  }
}

TEST_CASE("interleaved plan: two chunks per rank, transfers around the ring", "[executor]") {
  const auto p = load_plan("gpt_dp2_pp2_vp2.json");  // dp 2 x pp 2, vp 2: chunk c = layer c on rank c mod 2
  const RankProgram r0 = derive(p, 0);
  // Rank 0 holds chunks 0 and 2: F of chunk 0 sends (2), F of chunk 2
  // receives and sends (2 + 2), B of chunk 2 receives and sends (2 + 2), B
  // of chunk 0 receives (2): 6 sends, 6 receives over 2 micro-batches.
  CHECK(r0.counts().sends == 6);
  CHECK(r0.counts().recvs == 6);
  CHECK(r0.parameters == kEmbed + 2 * kLayer);
  // Its dp peer is rank 1 (dp is the fastest axis here), the pp peer rank 2.
  CHECK(coordinate(p, 3, "pp") == 1);
  CHECK(coordinate(p, 3, "dp") == 1);
  CHECK(with_coordinate(p, 1, "pp", 1) == 3);
}

TEST_CASE("order_transfers: 1F1B on two stages in a rendezvous-safe order", "[executor]") {
  const auto p = load_plan("gpt_pp2.json");
  std::vector<RankProgram> col{derive(p, 0), derive(p, 1)};
  REQUIRE(order_transfers(col).ok());
  auto orders = [](const RankProgram& r, TaskKind k) {
    std::vector<std::int64_t> v;
    for (const auto& s : r.steps)
      for (const auto& t : s.tasks)
        if (t.kind == k) v.push_back(t.order);
    return v;
  };
  // Stage 0 runs F0 F1 B0 B1, stage 1 F0 B0 F1 B1. Stage 1 takes F0's
  // activations (#0), sends B0's gradient (queued), takes F1's (#1); then
  // stage 0 takes the two gradients (#2, #3). Stage 0 sends #0 and #1 before
  // its receive #2; stage 1 sends #2 and #3 after its receive #1.
  CHECK(orders(col[0], TaskKind::send) == std::vector<std::int64_t>{0, 1});
  CHECK(orders(col[0], TaskKind::recv) == std::vector<std::int64_t>{2, 3});
  CHECK(orders(col[1], TaskKind::recv) == std::vector<std::int64_t>{0, 1});
  CHECK(orders(col[1], TaskKind::send) == std::vector<std::int64_t>{2, 3});
}

TEST_CASE("order_transfers: a schedule that waits on itself is an error", "[executor]") {
  // Each rank first receives what the other sends only afterwards.
  auto prog = [](int peer) {
    RankProgram r;
    StepProgram s;
    Task recv;
    recv.kind = TaskKind::recv;
    recv.peer_pp = peer;
    Task send = recv;
    send.kind = TaskKind::send;
    s.tasks = {recv, send};
    r.steps.push_back(s);
    return r;
  };
  std::vector<RankProgram> col{prog(1), prog(0)};
  const auto st = order_transfers(col);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message == "pipeline rank 0 waits forever at F0@c0: its neighbour never sends");
}

TEST_CASE("full recomputation runs the forward again, collectives included, before the backward", "[executor]") {
  auto p = load_plan("gpt_tp2.json");
  const RankProgram plain = derive(p, 0);
  p.training.recompute = "full";
  const RankProgram rc = derive(p, 0);
  // Per micro-batch the backward step gains the 25 forward GEMMs and the 8
  // forward all-reduces: 2 micro-batches x 25 = 50 GEMMs, x 8 = 16 all-reduces.
  CHECK(rc.counts().gemms == plain.counts().gemms + 50);
  CHECK(rc.counts().collectives == plain.counts().collectives + 16);
  CHECK(of_kind(rc.steps[1].tasks, TaskKind::gemm).front().op == "layers.0/attn/qkv/MatMul");
}

TEST_CASE("ZeRO-3 gathers a chunk's parameters around each pass and shards the update", "[executor]") {
  auto p = load_plan("gpt_dp2.json");
  p.layout.zero = 3;
  const RankProgram r = derive(p, 0);
  const std::int64_t all = kEmbed + 4 * kLayer + kHead;
  REQUIRE(r.steps.size() == 2);  // F0 B0
  const auto f = of_kind(r.steps[0].tasks, TaskKind::collective);
  REQUIRE(f.size() == 1);
  CHECK(f[0].coll == core::Collective::all_gather);
  CHECK(f[0].bytes == all * 2);  // the chunk's parameters at bf16
  const auto b = of_kind(r.steps[1].tasks, TaskKind::collective);
  REQUIRE(b.size() == 2);
  CHECK(b[0].coll == core::Collective::all_gather);
  CHECK(b[1].coll == core::Collective::reduce_scatter);
  CHECK(b[1].bytes == all * 4);  // f32 gradients
  REQUIRE(r.finish.size() == 1);  // no step-end sync: the optimizer on its half
  CHECK(r.finish[0].elements == all / 2);
}

TEST_CASE("the fixture plans' programs are sim's schedules", "[executor]") {
  // The executor follows layout.schedule_steps; planner writes them from
  // sim::device_orders, so a rank's steps are the simulator's order.
  for (const char* name : {"gpt_pp2.json", "gpt_dp2_pp2_vp2.json"}) {
    const auto p = load_plan(name);
    const auto sched = p.layout.schedule == "interleaved" ? sim::Schedule::interleaved
                       : p.layout.schedule == "gpipe"     ? sim::Schedule::gpipe
                                                          : sim::Schedule::one_f_one_b;
    auto orders = sim::device_orders(sched, p.layout.pp, static_cast<int>(p.training.micro_batches), p.layout.vp);
    REQUIRE(orders);
    for (int r = 0; r < p.cluster.devices; ++r) {
      const RankProgram prog = derive(p, r);
      const auto& want = (*orders)[static_cast<std::size_t>(prog.pp_rank)];
      REQUIRE(prog.steps.size() == want.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        CHECK(prog.steps[i].step.kind == (want[i].kind == sim::StepKind::forward ? 'F' : 'B'));
        CHECK(prog.steps[i].step.micro_batch == want[i].micro_batch);
        CHECK(prog.steps[i].step.chunk == want[i].chunk);
      }
    }
  }
}

TEST_CASE("derive_program names a plan op missing from the model", "[executor]") {
  auto p = load_plan("gpt_tp2.json");
  p.layout.chunks[0].ops[4] = "no/such/op";
  const auto r = derive_program(p, tiny_gpt(), 0);
  REQUIRE_FALSE(r);
  CHECK(r.error().message == "layout.chunks[0].ops[4]: op 'no/such/op' is not in the model");
}

}  // namespace
}  // namespace planner::executor

namespace planner::executor {
namespace {

// Forward memory traffic (read + written) of one op in rank 0's first step.
double forward_traffic(const RankProgram& r, std::string_view op) {
  double bytes = -1;
  for (const auto& t : r.steps[0].tasks)
    if (t.kind == TaskKind::memory && t.op == op) bytes = std::max(bytes, 0.0) + t.read_bytes + t.write_bytes;
  return bytes;  // -1: no memory task
}

TEST_CASE("fused elementwise chains: the replay drops the traffic a fusing framework keeps in registers",
          "[executor]") {
  const auto p = load_plan("gpt_dp2.json");  // dp = 2: each rank runs the whole model on b s = 64 rows
  ProgramOptions fuse;
  fuse.fuse_elementwise = true;
  auto plain = derive_program(p, tiny_gpt(), 0);
  auto fused = derive_program(p, tiny_gpt(), 0, fuse);
  REQUIRE(plain);
  REQUIRE(fused);
  // GELU (modelgen): Div(x, sqrt 2) -> Erf -> Add(., 1) -> Mul(x, .) -> Mul(., 0.5)
  // on [b s, 4h] = [64, 256] f32: 65,536 B per tensor. x (fc1's bias Add) has
  // two consumers, so it stays in memory; the four tensors between the five
  // ops have one elementwise consumer each and stay in registers.
  constexpr double kT = 64.0 * 256 * 4;  // 65,536 B
  // Erf reads s and writes e, both fused: no traffic left, no task.
  CHECK(forward_traffic(*plain, "layers.0/mlp/gelu/Erf") == kT + kT);
  CHECK(forward_traffic(*fused, "layers.0/mlp/gelu/Erf") == -1);
  // Div reads x (kept) and the 4-byte scalar, writes s (fused):
  // unfused 65,536 + 4 + 65,536 = 131,076 B; fused 131,076 - 65,536 = 65,540 B.
  CHECK(forward_traffic(*plain, "layers.0/mlp/gelu/Div") == kT + 4 + kT);
  CHECK(forward_traffic(*fused, "layers.0/mlp/gelu/Div") == Approx(kT + 4).epsilon(1e-12));
  // The GEMMs and the memory-bound ops outside elementwise chains are unchanged.
  CHECK(fused->counts().gemm_flops == plain->counts().gemm_flops);
  const double ln = forward_traffic(*plain, "layers.0/ln1/LayerNormalization");
  CHECK(ln > 0);
  CHECK(forward_traffic(*fused, "layers.0/ln1/LayerNormalization") == ln);
  CHECK(fused->counts().memory_bytes < plain->counts().memory_bytes);
}

}  // namespace
}  // namespace planner::executor
