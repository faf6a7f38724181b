// The search's lower bound (search::layout_bound): hand-computed parts
// on a small GPT, and the property that it never exceeds the step the cost
// model predicts for any layout of the space (fast and exact op-level
// solvers), nor the best step the search finds.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "estimate/estimate_fixtures.hpp"
#include "planner/estimate/optimizer_bytes.hpp"
#include "planner/search/search.hpp"
#include "planner/sharding_milp/milp.hpp"

using namespace planner;
using namespace estimate_test;

namespace {

// A cost model whose context is hand-friendly: every peak (the vector peak
// too) 100 TFLOP/s; a GEMM table 0.25 at 1e6, 0.4 at 1e9, 0.5 at 1e12 FLOPs
// (best rate 50 TFLOP/s); flash attention at 0.2 up to 1024 keys and 0.6 at
// 8192; HBM at 1e12 B/s with efficiency 1 (round_device); 1 us per launch. Only context() is
// read by layout_bound.
class RoundModel final : public cost::CostModel {
 public:
  explicit RoundModel(cost::AttentionMode mode = cost::AttentionMode::unfused) : ctx_(make(mode)) {}
  cost::OpTime op_time(const graph::Op&, const graph::OpGraph&, const cost::OpScaling&) const override { return {}; }
  Result<Seconds> collective(core::Collective, Bytes, cluster::Placement) const override { return Seconds(0); }
  cost::MemoryBreakdown memory(const graph::OpGraph&, const cost::MemorySetup&) const override { return {}; }
  Bytes device_memory() const override { return Bytes(80e9); }
  FlopsPerSecond peak() const override { return FlopsPerSecond(100e12); }
  const cost::ComputeContext& context() const override { return ctx_; }

 private:
  static cost::ComputeContext make(cost::AttentionMode mode) {
    auto d = round_device();
    for (auto& p : d.peak_by_precision) p = FlopsPerSecond(100e12);
    for (auto& f : d.gemm_precision_factor) f.reset();
    d.gemm_table.rows = {{1e6, 0.25}, {1e9, 0.4}, {1e12, 0.5}};
    d.launch_overhead = Seconds(1e-6);
    REQUIRE(d.attention);
    d.attention->causal.rows = {{1024, 0.2}, {8192, 0.6}};
    d.attention->full.rows = {{1024, 0.2}, {8192, 0.6}};
    auto c = cost::ComputeContext::create(d, cost::PrecisionPolicy::mixed(core::Precision::bf16), mode,
                                          cost::RecomputePolicy::none);
    if (!c.ok()) FAIL(c.error().message);
    return std::move(c).value();
  }
  cost::ComputeContext ctx_;
};

search::Candidate candidate(int dp, int tp, int pp, std::int64_t B, int mb, int zero = 0,
                                cost::RecomputePolicy r = cost::RecomputePolicy::none) {
  search::Candidate c;
  c.config.dp = dp;
  c.config.tp = tp;
  c.config.pp = pp;
  c.config.global_batch = B;
  c.config.micro_batch = mb;
  c.config.zero = zero;
  c.recompute = r;
  return c;
}

cost::ProfileCostModel a100(cost::RecomputePolicy r) {
  auto m = cost::ProfileCostModel::create(cost_test::profile("a100-sxm4-80gb"),
                                          cost::PrecisionPolicy::mixed(core::Precision::bf16),
                                          cost::AttentionMode::flash, r);
  if (!m.ok()) FAIL(m.error().message);
  return std::move(m).value();
}

}  // namespace

TEST_CASE("min_local_parameters: each tensor at its smallest split, sizes rounded down", "[search][bound]") {
  search::ModelFacts f;
  f.parameter_shapes[{5}] = 1;     // 4 shards: 5/4 = 1 (or 5/2 = 2, 5/1 = 5): 1
  f.parameter_shapes[{6, 6}] = 2;  // 4 shards: (4,1) 1*6 = 6, (2,2) 3*3 = 9, (1,4) 6*1 = 6: 6, twice
  f.parameter_shapes[{3}] = 1;     // 4 shards: 3/4 = 0
  CHECK(search::min_local_parameters(f, 4) == 1 + 2 * 6 + 0);
  CHECK(search::min_local_parameters(f, 1) == 5 + 2 * 36 + 3);
  // 3 shards: [5] -> 1; [6,6] -> 2*6 = 12 (twice); [3] -> 1.
  CHECK(search::min_local_parameters(f, 3) == 1 + 2 * 12 + 1);

  // The small GPT of 2 layers: 9,216 + 2 x 49,984 + 8,320 = 117,504
  // parameters, every dim even (16, 64, 128, 192, 256): exactly half over 2.
  const auto g = small_gpt(2);
  const auto facts = search::facts_of(g, 2);
  CHECK(facts.parameters == 117504);
  CHECK(search::min_local_parameters(facts, 2) == 58752);
  CHECK(search::min_local_parameters(facts, 4) == 29376);
}

namespace {
// RoundModel's context (flash) with every collective at 1 ms.
class CommModel final : public cost::CostModel {
 public:
  cost::OpTime op_time(const graph::Op&, const graph::OpGraph&, const cost::OpScaling&) const override { return {}; }
  Result<Seconds> collective(core::Collective, Bytes, cluster::Placement) const override { return Seconds(1e-3); }
  cost::MemoryBreakdown memory(const graph::OpGraph&, const cost::MemorySetup&) const override { return {}; }
  Bytes device_memory() const override { return Bytes(80e9); }
  FlopsPerSecond peak() const override { return FlopsPerSecond(100e12); }
  const cost::ComputeContext& context() const override { return round_.context(); }

 private:
  RoundModel round_{cost::AttentionMode::flash};
};
}  // namespace

TEST_CASE("layout_bound: context parallelism's key/value exchanges by hand", "[search][bound]") {
  const CommModel model;
  search::ModelFacts facts;
  facts.batch = 1;
  // Three attention patterns of 1e12 FLOPs per sample (forward + backward) at
  // 8192 causal keys (table 0.6: 60 TFLOP/s), 1e6 elements to exchange each.
  for (int i = 0; i < 3; ++i) facts.compute.exchanges.push_back({1e6, 1e12, 8192, true});
  // dp 2 x cp 2, tp 1, B = 4, micro-batch 1: m = 2 micro-batches.
  auto c = candidate(2, 1, 1, 4, 1);
  c.config.cp = 2;
  // Per micro-batch and pattern after the first: all-gather + reduce-scatter
  // 2 ms, or the previous pattern unsplit over cp, 1e12 x (1 - 1/2) / 60e12
  // = 8.333 ms: 2 ms. 3 - 1 = 2 payments x 2 micro-batches / pp 1 = 8 ms.
  CHECK(search::layout_bound(c, facts, model).context_exchange.value == Approx(8e-3));
  CHECK(search::layout_bound(c, facts, model).compute.value == Approx(8e-3));
  // Overlapped with the GEMMs (tp_comm_overlap): at least 10 % exposed: 0.8 ms.
  c.config.tp_comm_overlap = true;
  CHECK(search::layout_bound(c, facts, model).context_exchange.value == Approx(8e-4));
  c.config.tp_comm_overlap = false;
  // Small patterns (1e10 FLOPs): unsplit is cheaper, 1e10 x 0.5 / 60e12 =
  // 8.333e-5 s, x 2 payments x 2 micro-batches = 3.3333e-4 s.
  for (auto& x : facts.compute.exchanges) x.flops = 1e10;
  CHECK(search::layout_bound(c, facts, model).context_exchange.value == Approx(3.3333333e-4));
  // One pattern (it may take the tokens whole) or cp = 1: nothing.
  facts.compute.exchanges.resize(1);
  CHECK(search::layout_bound(c, facts, model).context_exchange.value == 0);
  facts.compute.exchanges.resize(3);
  c.config.cp = 1;
  c.config.dp = 4;
  CHECK(search::layout_bound(c, facts, model).context_exchange.value == 0);
}

TEST_CASE("with_model_parallel_floor: the mean rank's busy time by hand", "[search][bound]") {
  // dp 1, tp 1, pp 2, global batch 8, micro-batch 2: m = 4 micro-batches.
  const auto c = candidate(1, 1, 2, 8, 2);
  search::LayoutBound b;
  b.compute = Seconds(1.0);
  b.pipelined = Seconds(1.25);
  b.optimizer = Seconds(0.5);
  b.grad_accumulation = Seconds(0.1);
  b.straggler = 1.2;
  b.total = Seconds(1.5 * 1.2);
  // Floor 1 s per micro-batch over the whole model: 4 x 1 / 2 + 0.1 = 2.1 s
  // per rank; pipelined 2.1 x (1 + 1/4) = 2.625; compute + optimizer 2.6;
  // total max(2.625, 2.6) x 1.2 = 3.15.
  const auto t = search::with_model_parallel_floor(b, c, Seconds(1.0));
  CHECK(t.model_parallel.value == Approx(2.1));
  CHECK(t.compute.value == Approx(2.1));
  CHECK(t.pipelined.value == Approx(2.625));
  CHECK(t.total.value == Approx(3.15));
  CHECK(t.optimizer.value == 0.5);
  // A floor below the per-class compute changes nothing: 4 x 0.4 / 2 + 0.1
  // = 0.9 < 1.
  const auto u = search::with_model_parallel_floor(b, c, Seconds(0.4));
  CHECK(u.model_parallel.value == Approx(0.9));
  CHECK(u.compute.value == 1.0);
  CHECK(u.total.value == b.total.value);
}

TEST_CASE("memory_floor: the layout's optimizer-state dtype, master copy and gradient width by hand", "[search][bound]") {
  search::ModelFacts facts;
  facts.parameters = 1e9;
  // dp 2, tp 2, no sharding: 5e8 local parameters of Adam with an fp32
  // master copy and fp32 states: 2 + 2 + (4 + 2 x 4) = 16 B each, 8e9 B.
  auto c = candidate(2, 2, 1, 8, 1);
  CHECK(search::memory_floor(c, facts).value == Approx(8e9));
  // bf16 states and no master copy (NeMo's Nemotron-4 340B recipe):
  // 2 + 2 + 2 x 2 = 8 B each, 4e9 B; a default-Adam floor would prune such
  // a layout at twice its state.
  c.config.optimizer_state_bytes = 2;
  c.config.master_weights = cost::MasterWeights::none;
  CHECK(search::memory_floor(c, facts).value == Approx(4e9));
  // Megatron's distributed optimizer over d = 2 keeps fp32 main gradients
  // (4 B) unless they are reduced in bf16: 2 + 4 + 4 / 2 = 8 B, then
  // 2 + 2 + 4 / 2 = 6 B.
  c.config.distributed_optimizer = true;
  CHECK(search::memory_floor(c, facts).value == Approx(4e9));
  c.config.grad_reduce_bytes = 2;
  CHECK(search::memory_floor(c, facts).value == Approx(3e9));
}

TEST_CASE("layout_bound: compute, pipeline stretch and optimizer by hand", "[search][bound]") {
  const RoundModel model;
  auto facts = search::facts_of(small_gpt(2), 2);
  // Hand-set FLOPs per sample, read at batch 1: a GEMM of 2mnk = 5e8 (at
  // micro-batch 2 its size is at most 1e9: efficiency 0.4, rate 40 TFLOP/s),
  // memory-bound and elementwise ops (vector peak 100 TFLOP/s), an attention
  // pattern priced op by op (unfused: best rate 50 TFLOP/s).
  facts.batch = 1;
  facts.compute = search::ComputeFacts{};
  facts.compute.gemm[5e8] = search::Work{2e8, 4e8, 2e8};
  facts.compute.vector = search::Work{1e7, 2e7, 0};
  facts.compute.elementwise = search::Work{1e7, 1e7, 0};
  facts.compute.unfused_attention = search::Work{1e8, 2e8, 1e8};
  // Under tp 2 the GEMM is split (local 2mnk at most 1e9 / 2 = 5e8:
  // efficiency 0.25 + 0.15 x log(500)/log(1000) = 0.384949, 38.49 TFLOP/s)
  // or whole on both tp ranks (0.4 / 2): at most 38.49 TFLOP/s, not 40.
  const double e_split = 0.25 + 0.15 * std::log(500.0) / std::log(1000.0);
  // dp 2 x tp 2, B = 8: per sample GEMM 6e8 / 38.49e12 = 1.558650e-5,
  // vector 3e-7, elementwise 2e-7, attention 6e-6; x 8 / 4 = 4.417300e-5 s.
  const double tp2 = (6e8 / (100e12 * e_split) + 3e-7 + 2e-7 + 6e-6) * 8 / 4;
  CHECK(tp2 == Approx(4.4173e-5).epsilon(1e-4));

  SECTION("dp 2 x tp 2, ZeRO 1, B = 8, micro-batch 2") {
    const auto b = search::layout_bound(candidate(2, 2, 1, 8, 2, 1), facts, model);
    // per sample: GEMM 6e8 / 40e12 = 1.5e-5; vector 3e7 / 1e14 = 3e-7;
    // elementwise 2e7 / 1e14 = 2e-7; attention 3e8 / 50e12 = 6e-6:
    // 2.15e-5 s at 40 TFLOP/s; at the split rate (above) tp2 = 4.4173e-5 s.
    // pp = 1: no stretch.
    CHECK(b.compute.value == Approx(tp2));
    CHECK(b.pipelined.value == Approx(tp2));
    // optimizer: 117,504 / tp 2 = 58,752 local, / 2 states shards (ZeRO 1
    // over dp 2) = 29,376 x 38 B (Adam) / 1e12 B/s = 1.116288e-6 s.
    CHECK(b.optimizer.value == Approx(1.116288e-6));
    CHECK(b.total.value == Approx(tp2 + 1.116288e-6));
  }
  SECTION("DeepSpeed bf16: BF16_Optimizer's fp32 accumulation passes count in the compute") {
    auto c = candidate(2, 2, 1, 8, 2, 1);
    c.config.framework = estimate::Framework::deepspeed;
    const auto b = search::layout_bound(c, facts, model);
    // m = 8 / (2 x 2) = 2 micro-batches, each 18 B over the 117,504 / tp 2 =
    // 58,752 local parameters / 1e12 B/s: 2 x 58,752 x 18 / 1e12 =
    // 2.115072e-6 s on top of the compute (tp2).
    CHECK(b.compute.value == Approx(tp2 + 2.115072e-6));
    // FSDP FULL_SHARD (fp32 reduce: 18 B as well) the same; DDP (12 B,
    // micro-batch 2 of 2 only): 58,752 x 12 / 1e12 = 7.05024e-7 s.
    c.config.framework = estimate::Framework::fsdp;
    c.config.zero = 3;
    CHECK(search::layout_bound(c, facts, model).compute.value == Approx(tp2 + 2.115072e-6));
    c.config.framework = estimate::Framework::ddp;
    c.config.zero = 0;
    CHECK(search::layout_bound(c, facts, model).compute.value == Approx(tp2 + 7.05024e-7));
  }
  SECTION("with the memory-bound ops' bytes") {
    search::MemoryFacts mem;
    mem.vector = 4e6;  // bytes per micro-batch of batch 1
    mem.elementwise = 2e6;
    const auto b = search::layout_bound(candidate(2, 2, 1, 8, 2, 1), facts, model, &mem);
    // m = 8 / (2 x 2) = 2 micro-batches: 2 x 6e6 B / (tp 2) / 1e12 B/s =
    // 6e-6 s, more than their FLOPs' 5e7 / 1e14 x 8 / 4 = 1e-6 s; the rest
    // (GEMM 1.5e-5 + attention 6e-6 per sample) x 8 / 4 = 4.2e-5 s:
    // 4.8e-5 s.
    CHECK(b.compute.value == Approx(tp2 + 4.8e-5 - 4.3e-5));
    // 30 kernels per micro-batch (12 of them layers' forward): 2 x 30 x 1 us
    // = 6e-5 s more; under full recompute on tp 2 x pp 2 (m = 4):
    // 4 x (30 + 12) x 1 us / pp 2 = 8.4e-5 s more.
    mem.kernels = 30;
    mem.layer_forward_kernels = 12;
    CHECK(search::layout_bound(candidate(2, 2, 1, 8, 2, 1), facts, model, &mem).compute.value ==
          Approx(tp2 + 4.8e-5 - 4.3e-5 + 6e-5));
    const auto full = candidate(1, 2, 2, 8, 2, 0, cost::RecomputePolicy::full);
    CHECK(search::layout_bound(full, facts, model, &mem).compute.value -
              search::layout_bound(full, facts, model).compute.value ==
          Approx(8.9e-5));
    // (and the memory-bound ops: bytes 4 x 6e6 / (tp 2 x pp 2) / 1e12 = 6e-6 s
    // replace their FLOPs' 5e7 / 1e14 x 8 / 4 = 1e-6 s: 8.4e-5 + 5e-6)
  }
  SECTION("tp 2 x pp 2, no ZeRO, full recompute, B = 8, micro-batch 2 (m = 4)") {
    const auto b = search::layout_bound(candidate(1, 2, 2, 8, 2, 0, cost::RecomputePolicy::full), facts, model);
    // per sample with the layers' forward again: GEMM 8e8 / 40e12 = 2e-5;
    // vector 3e-7; elementwise 2e-7; attention 4e8 / 50e12 = 8e-6:
    // 2.85e-5 s; x 8 / 4 = 5.7e-5 s at 40 TFLOP/s; the GEMM at the tp 2
    // split rate: 8e8 / 38.49e12 = 2.078200e-5 per sample: 5.856400e-5 s.
    const double c = (8e8 / (100e12 * e_split) + 3e-7 + 2e-7 + 8e-6) * 8 / 4;
    CHECK(c == Approx(5.8564e-5).epsilon(1e-4));
    CHECK(b.compute.value == Approx(c));
    // stretch 1 + (2-1)/(1 x 4) = 1.25: 7.3205e-5 s
    CHECK(b.pipelined.value == Approx(1.25 * c));
    // optimizer: 58,752 / pp 2 = 29,376 x 38 / 1e12 = 1.116288e-6 s
    CHECK(b.optimizer.value == Approx(1.116288e-6));
    // max(7.125e-5, 5.7e-5 + 1.116e-6) = the stretched compute
    CHECK(b.total.value == Approx(1.25 * c));
  }
  SECTION("micro-batch 4: the GEMM may reach 2e9 FLOPs") {
    const auto b = search::layout_bound(candidate(1, 1, 1, 4, 4), facts, model);
    // efficiency at 2e9: 0.4 + 0.1 x log(2)/log(1000) = 0.410034; GEMM 6e8 /
    // (100e12 x 0.410034) = 1.463293e-5; + 3e-7 + 2e-7 + 6e-6 = 2.1132932e-5
    // per sample, x 4 samples / 1 device = 8.453173e-5 s.
    CHECK(b.compute.value == Approx(8.453173e-5).epsilon(1e-6));
  }
  SECTION("flash attention: the FlashAttention FLOPs at the table's efficiency") {
    const RoundModel flash(cost::AttentionMode::flash);
    facts.compute = search::ComputeFacts{};
    facts.compute.unfused_attention = search::Work{1e8, 2e8, 1e8};  // not counted under flash
    facts.compute.flash[{8192, true}] = search::Work{1e9, 2.5e9, 1e9};
    const auto b = search::layout_bound(candidate(2, 1, 1, 8, 1), facts, flash);
    // 3.5e9 / (100e12 x 0.6) = 5.833333e-5 per sample x 8 / 2 devices = 2.333333e-4 s
    CHECK(b.compute.value == Approx(2.333333e-4));
    // dp 2 x cp 4: 8 devices share the same 8 samples' FLOPs, 1/8 each;
    // context parallelism splits the queries, so the FLOPs, once (the
    // 1/(tp cp) share of the cost model's compute_fraction), no further:
    // 5.833333e-5 x 8 / 8 = 5.833333e-5 s.
    auto cp = candidate(2, 1, 1, 8, 1);
    cp.config.cp = 4;
    CHECK(search::layout_bound(cp, facts, flash).compute.value == Approx(5.833333e-5));
  }
  SECTION("optimizer-bound: B = 1 sample on one device") {
    facts.compute = search::ComputeFacts{};
    facts.compute.vector = search::Work{1e6, 1e6, 0};
    const auto b = search::layout_bound(candidate(1, 1, 1, 1, 1), facts, model);
    // compute = 2e6 / 1e14 = 2e-8 s; optimizer 117,504 x 38 / 1e12 = 4.465152e-6 s
    CHECK(b.compute.value == Approx(2e-8));
    CHECK(b.optimizer.value == Approx(4.465152e-6));
    CHECK(b.total.value == Approx(4.485152e-6));
  }
}

namespace {

// Every layout of an 8-device space over the small GPT (and an MLP whose
// weights dominate), scored with the a100 profile: the bound is at most the
// predicted step, with the fast solver and (when `exact`) the MILP.
// Returns how many layouts' memory floors the in-flight activations raised
// by more than 20 % over the mean stage's state and one micro-batch.
std::size_t check_space(const std::function<graph::OpGraph(int)>& make, std::int64_t B, estimate::Framework fw, bool exact) {
  search::Space s;
  s.devices = 8;
  s.global_batch = B;
  s.framework = fw;
  s.max_micro_batch = 2;
  std::map<int, graph::OpGraph> graphs;
  auto graph_at = [&](int mb) -> const graph::OpGraph& {
    auto it = graphs.find(mb);
    if (it == graphs.end()) it = graphs.emplace(mb, make(mb)).first;
    return it->second;
  };
  std::map<cost::RecomputePolicy, cost::ProfileCostModel> models;
  for (auto r : s.recompute) models.emplace(r, a100(r));
  const auto facts = search::facts_of(graph_at(1), 1);
  std::map<cost::RecomputePolicy, search::MemoryFacts> memory;
  for (const auto& [r, m] : models) memory[r] = search::memory_facts(graph_at(1), m);
  const auto all = search::enumerate_layouts(s, facts);
  REQUIRE(all.size() > 10);
  const estimate::ShardingSolver milp = [](const sharding::ShardingProblem& p) -> Result<sharding::Solution> {
    PLANNER_TRY(sharding::MilpResult r, sharding::solve_milp(p));
    return r.solution;
  };
  std::size_t scored = 0, tightened = 0, stronger = 0;
  double best = std::numeric_limits<double>::infinity(), min_bound = best;
  // What search() keeps between layouts (a BoundMemo per policy, one
  // LoweringCache) must not change a number: each layout is also bounded
  // and estimated with them, as the search does, and compared bit for bit.
  std::map<cost::RecomputePolicy, search::BoundMemo> memos;
  estimate::LoweringCache lowerings;
  for (const auto& c : all) {
    const auto& model = models.at(c.recompute);
    const auto b = search::layout_bound(c, facts, model, &memory.at(c.recompute));
    const auto kept = search::layout_bound(c, facts, model, &memory.at(c.recompute), &memos[c.recompute]);
    CHECK(kept.total.value == b.total.value);
    CHECK(kept.compute.value == b.compute.value);
    CHECK(kept.optimizer.value == b.optimizer.value);
    min_bound = std::min(min_bound, b.total.value);
    const estimate::EstimateOptions eo{.advise = false, .solver = exact ? &milp : nullptr, .timeline = true};
    auto e = estimate::estimate(graph_at(c.config.micro_batch), model, c.config, eo);
    const estimate::EstimateOptions searching{.advise = false, .solver = exact ? &milp : nullptr,
                                              .lowering_cache = &lowerings, .describe = false};
    auto fast = estimate::estimate(graph_at(c.config.micro_batch), model, c.config, searching);
    REQUIRE(e.ok() == fast.ok());
    if (!e.ok()) continue;
    INFO(search::describe(c));
    CHECK(fast->step_time.value == e->step_time.value);
    CHECK(fast->peak_stage().peak().value == e->peak_stage().peak().value);
    CHECK(fast->fits == e->fits);
    CHECK(fast->units.empty());
    CHECK(!e->units.empty());
    ++scored;
    INFO(search::describe(c) << ": bound " << b.total.value << " (compute " << b.compute.value << ", pipelined "
                                 << b.pipelined.value << ", optimizer " << b.optimizer.value << ") step "
                                 << e->step_time.value);
    CHECK(b.total.value <= e->step_time.value * (1 + 1e-12));
    // The model-parallel floor (the op-level lowering's time-only optimum)
    // tightens the bound and keeps it below the step; the same with the
    // search's cache as without.
    const auto floor = estimate::model_parallel_floor(graph_at(c.config.micro_batch), model, c.config);
    const auto floor_kept = estimate::model_parallel_floor(graph_at(c.config.micro_batch), model, c.config, &lowerings);
    REQUIRE(floor.ok());
    REQUIRE(floor_kept.ok());
    REQUIRE(floor->has_value() == floor_kept->has_value());
    if (*floor) {
      CHECK((*floor)->value == (*floor_kept)->value);
      const auto tight = search::with_model_parallel_floor(b, c, **floor);
      INFO("floor " << (*floor)->value << ": tight bound " << tight.total.value << " (compute " << tight.compute.value
                    << ", model-parallel " << tight.model_parallel.value << ")");
      CHECK(tight.total.value >= b.total.value);
      CHECK(tight.total.value <= e->step_time.value * (1 + 1e-12));
      if (tight.total.value > b.total.value * (1 + 1e-9)) ++tightened;
    }
    // The optimizer part is at most the mean over pipeline ranks of their
    // optimizer steps (e->optimizer is the bottleneck rank's only), their
    // spans in the estimate's timeline.
    double opt = 0;
    for (const auto& sp : e->timeline->spans)
      if (sp.kind == estimate::SpanKind::optimizer) opt += (sp.end - sp.start).value;
    CHECK(b.optimizer.value <= opt / c.config.pp * (1 + 1e-12));
    if (e->fits) best = std::min(best, e->step_time.value);
    // The search's memory floor (search::stage_memory_floor: model state,
    // the activations the schedule holds in flight, experts' too, the last
    // rank's loss buffer, plus fragmentation and the reserve) is at most the fullest
    // stage's memory; where it binds (pp > 1) it is above the mean stage's
    // state and one micro-batch, the floor it replaced.
    {
      const auto base = model.memory(graph_at(1), cost::MemorySetup{});
      const auto saved = estimate::saved_bytes(graph_at(c.config.micro_batch), model, c.recompute);
      const double floor =
          search::stage_memory_floor(c, facts, saved, base.cuda_context + base.communicator,
                                     model.fragmentation(),
                                     estimate::framework_gradient_bytes(c.config, model.context().precision().default_precision()))
              .value;
      INFO("memory floor " << floor << " peak " << e->peak_stage().peak().value);
      CHECK(floor <= e->peak_stage().peak().value * (1 + 1e-12));
      const double before = search::memory_floor(c, facts).value +
                            saved.activations.value / (static_cast<double>(c.config.tp) * c.config.cp * c.config.pp);
      CHECK(floor >= before);
      if (c.config.pp > 1 && c.config.micro_batches() > 1 && floor > 1.2 * before) ++stronger;
    }
  }
  CHECK(scored > 10);
  CHECK(tightened > 0);
  CHECK(min_bound <= best);
  // One lowering kept per micro-batch, recompute policy (cost model), cp,
  // tp, sequence parallelism and expert batch (ep, for a model with
  // experts) at most, however many layouts share it.
  std::set<std::tuple<int, cost::RecomputePolicy, int, int, bool, bool, int>> keys;
  for (const auto& c : all)
    keys.insert({c.config.micro_batch, c.recompute, c.config.cp, c.config.tp, c.config.sequence_parallel,
                 c.config.tp_splits_batch, estimate::expert_batch(facts.experts, c.config)});
  CHECK(lowerings.size() > 0);
  CHECK(lowerings.size() <= keys.size());
  return stronger;
}

graph::OpGraph gpt_at(int mb) { return gpt(mb, 16, 64, 4, 256, 128, 4); }
// Attention-heavy: 2048 tokens at width 64 (flash attention near its best efficiency).
graph::OpGraph long_gpt_at(int mb) { return gpt(mb, 2048, 64, 4, 256, 128, 2); }
// Experts (ep enumerated over divisors of dp x cp that divide the 8 experts).
graph::OpGraph moe_at(int mb) { return moe_mlp(8 * mb, 256, 1024, 8, 64); }
// Weights (4.2 M parameters) outweigh 8 samples' work: the optimizer term binds.
graph::OpGraph wide_mlp_at(int mb) { return mlp(mb, 1024, 2048, 1024); }

// A GraphProvider that builds each micro-batch's graph once, into `graphs`.
search::GraphProvider cached(std::map<int, graph::OpGraph>& graphs, graph::OpGraph (*make)(int)) {
  return [&graphs, make](int mb) -> Result<const graph::OpGraph*> {
    auto it = graphs.find(mb);
    if (it == graphs.end()) it = graphs.emplace(mb, make(mb)).first;
    return &it->second;
  };
}

}  // namespace

TEST_CASE("layout_bound <= every layout's predicted step (fast solver)", "[search][bound]") {
  // Activation-heavy at pp > 1: the in-flight micro-batches raise floors.
  CHECK(check_space(gpt_at, 16, estimate::Framework::megatron, false) > 0);
  check_space(gpt_at, 16, estimate::Framework::deepspeed, false);
  check_space(wide_mlp_at, 8, estimate::Framework::megatron, false);
  check_space(long_gpt_at, 8, estimate::Framework::megatron, false);
  check_space(moe_at, 16, estimate::Framework::megatron, false);
  check_space(moe_at, 16, estimate::Framework::deepspeed, false);
  // Frameworks with gradient accumulation passes (weights dominate wide_mlp;
  // DDP's space is too small here: its bytes are checked by hand above).
  for (auto fw : {estimate::Framework::fsdp, estimate::Framework::megatron_legacy, estimate::Framework::deepspeed}) {
    INFO(estimate::framework_name(fw));
    if (fw != estimate::Framework::fsdp) check_space(wide_mlp_at, 8, fw, false);  // FSDP: 6 layouts only
    check_space(gpt_at, 16, fw, false);
  }
  check_space(moe_at, 16, estimate::Framework::fsdp, false);
}

TEST_CASE("layout_bound <= every layout's predicted step (--exact, MILP)", "[search][bound]") {
  check_space(gpt_at, 16, estimate::Framework::megatron, true);
  check_space(wide_mlp_at, 8, estimate::Framework::megatron, true);
}

TEST_CASE("search: the space's bound is at most the space's best fitting step and at least the smallest layout bound", "[search][bound]") {
  search::Space s;
  s.devices = 8;
  s.global_batch = 8;
  s.framework = estimate::Framework::megatron;
  s.max_micro_batch = 2;
  std::map<int, graph::OpGraph> graphs;
  std::map<cost::RecomputePolicy, cost::ProfileCostModel> models;
  for (auto r : s.recompute) models.emplace(r, a100(r));
  search::GraphProvider gp = cached(graphs, wide_mlp_at);
  search::ModelProvider mp = [&](cost::RecomputePolicy r) -> Result<const cost::CostModel*> {
    return &models.at(r);
  };
  const auto facts = search::facts_of(**gp(1), 1);
  double min_bound = std::numeric_limits<double>::infinity();
  std::map<cost::RecomputePolicy, search::MemoryFacts> memory;
  for (const auto& [r, m] : models) memory[r] = search::memory_facts(**gp(1), m);
  // Every layout estimated: the space's best fitting step (the optimum the
  // search's bound must not exceed, whether or not it finished).
  double optimum = std::numeric_limits<double>::infinity();
  for (const auto& c : search::enumerate_layouts(s, facts)) {
    if (search::memory_floor(c, facts) <= models.at(c.recompute).device_memory())
      min_bound = std::min(min_bound,
                           search::layout_bound(c, facts, models.at(c.recompute), &memory.at(c.recompute)).total.value);
    const auto e = estimate::estimate(**gp(c.config.micro_batch), models.at(c.recompute), c.config, false);
    const auto& m = models.at(c.recompute);
    if (e.ok() && e->fits && e->peak_stage().peak() <= m.device_memory() * std::min(s.max_memory_fraction, 1 - m.memory_margin()))
      optimum = std::min(optimum, e->step_time.value);
  }
  REQUIRE(optimum < std::numeric_limits<double>::infinity());
  for (double limit : {60.0, 0.0}) {  // exhausted, and stopped after the first batch
    search::Options o;
    o.time_limit_s = limit;
    o.batch = 4;
    auto r = search::search(s, gp, mp, o);
    REQUIRE(r.ok());
    CHECK(r->complete == (limit > 0));
    // Floors only raise layouts' bounds, and scored layouts give their steps.
    CHECK(r->lower_bound.value >= min_bound * (1 - 1e-12));
    CHECK(r->lower_bound.value <= optimum * (1 + 1e-12));
    CHECK(r->lower_bound.value <= r->best.front().estimate.step_time.value);
    if (limit > 0) CHECK(r->best.front().estimate.step_time.value == Approx(optimum).epsilon(1e-12));
    // Weight-bound: the optimizer term closes most of the gap the speed of
    // light leaves (hand check: 4.2 M params x 38 B / stream bandwidth).
    CHECK(r->lower_bound.value > 2 * r->speed_of_light.value);
    for (const auto& sc : r->best) CHECK(sc.candidate.bound.value <= sc.estimate.step_time.value);
  }
}

TEST_CASE("search: the memory margin keeps the plan's peak below (1 - margin) of capacity", "[search][bound]") {
  search::Space s;
  s.devices = 8;
  s.global_batch = 16;
  s.framework = estimate::Framework::megatron;
  s.max_micro_batch = 2;
  std::map<int, graph::OpGraph> graphs;
  std::map<cost::RecomputePolicy, cost::ProfileCostModel> models;
  for (auto r : s.recompute) models.emplace(r, a100(r));
  search::GraphProvider gp = cached(graphs, gpt_at);
  search::ModelProvider mp = [&](cost::RecomputePolicy r) -> Result<const cost::CostModel*> { return &models.at(r); };
  // The bundled profile's margin is the default.
  CHECK(models.begin()->second.memory_margin() == Approx(0.05));
  search::Options o;
  o.batch = 4;
  s.memory_margin = 0.0;
  auto free = search::search(s, gp, mp, o);
  REQUIRE(free.ok());
  const double cap = models.begin()->second.device_memory().value;
  // The unconstrained plan's peak, less a byte: a margin that excludes it.
  const double peak = free->best.front().estimate.peak_stage().peak().value;
  s.memory_margin = 1.0 - (peak - 1.0) / cap;
  auto kept = search::search(s, gp, mp, o);
  if (kept.ok()) {
    for (const auto& sc : kept->best) CHECK(sc.estimate.peak_stage().peak().value <= peak - 1.0);
    CHECK(kept->best.front().estimate.step_time.value >= free->best.front().estimate.step_time.value);
  } else {
    CHECK(kept.error().message.find("memory margin") != std::string::npos);
  }
}

TEST_CASE("search: at the whole device only the allocated peak must fit, below it the reserved peak", "[search][bound]") {
  search::Space s;
  s.devices = 8;
  s.global_batch = 16;
  s.framework = estimate::Framework::megatron;
  s.max_micro_batch = 2;
  s.memory_margin = 0.0;
  std::map<int, graph::OpGraph> graphs;
  search::GraphProvider gp = cached(graphs, gpt_at);
  auto models_with = [&](std::optional<Bytes> visible) {
    std::map<cost::RecomputePolicy, cost::ProfileCostModel> out;
    for (auto r : s.recompute) {
      auto p = cost_test::profile("a100-sxm4-80gb");
      if (visible) p.device.visible_memory = *visible;
      auto m = cost::ProfileCostModel::create(p, cost::PrecisionPolicy::mixed(core::Precision::bf16),
                                              cost::AttentionMode::flash, r);
      REQUIRE(m.ok());
      out.emplace(r, std::move(m).value());
    }
    return out;
  };
  search::Options o;
  o.batch = 4;
  auto roomy = models_with(std::nullopt);
  search::ModelProvider mp = [&](cost::RecomputePolicy r) -> Result<const cost::CostModel*> { return &roomy.at(r); };
  auto free = search::search(s, gp, mp, o);
  REQUIRE(free.ok());
  const auto& best = free->best.front().estimate;
  const double allocated = best.peak_stage().allocated().value, reserved = best.peak_stage().peak().value;
  // The A100 profile's fragmentation 0.15 of reserved: reserved - allocated
  // = 0.15 / 0.85 of the allocated bytes less the context and communicator.
  REQUIRE(reserved > allocated);
  // A device between the two: at margin 0 the same plan is kept (its
  // allocated peak fits; the allocator would free its cache and retry) ...
  auto tight = models_with(Bytes((allocated + reserved) / 2));
  mp = [&](cost::RecomputePolicy r) -> Result<const cost::CostModel*> { return &tight.at(r); };
  auto kept = search::search(s, gp, mp, o);
  REQUIRE(kept.ok());
  CHECK(kept->best.front().estimate.step_time.value == best.step_time.value);
  CHECK(kept->best.front().estimate.peak_stage().peak().value > (allocated + reserved) / 2);
  // ... and any margin holds the reserved peak below the limit instead.
  s.memory_margin = 0.001;
  auto held = search::search(s, gp, mp, o);
  if (held.ok())
    for (const auto& sc : held->best)
      CHECK(sc.estimate.peak_stage().peak().value <= (allocated + reserved) / 2 * 0.999 * (1 + 1e-12));
}
