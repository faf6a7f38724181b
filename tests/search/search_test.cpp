// The outer layout search: --fix parsing, the enumerated space (counted by
// hand), memory floors, and branch and bound against exhaustive scoring.

#include <set>

#include <catch2/catch.hpp>

#include "estimate/estimate_fixtures.hpp"
#include "planner/estimate/optimizer_bytes.hpp"
#include "planner/search/search.hpp"

using namespace planner;
using namespace estimate_test;

namespace {

search::Space small_space() {
  // 4 devices in one node, global batch 8, Megatron as of 2021-2022 (no
  // optimizer sharding; sequence parallelism with tp), no recompute,
  // micro-batch at most 2.
  search::Space s;
  s.devices = 4;
  s.devices_per_node = 8;
  s.global_batch = 8;
  s.framework = estimate::Framework::megatron_legacy;
  s.recompute = {cost::RecomputePolicy::none};
  s.max_micro_batch = 2;
  return s;
}

struct Providers {
  std::map<int, graph::OpGraph> graphs;
  FakeCostModel model;
  Providers() {
    model.flops_per_s = 1e11;  // below the fake's peak (1e12): the search's bound stays a lower bound
  }
  search::GraphProvider graph_provider() {
    return [this](int mb) -> Result<const graph::OpGraph*> {
      auto it = graphs.find(mb);
      if (it == graphs.end()) it = graphs.emplace(mb, gpt(mb, 16, 64, 4, 256, 128, 4)).first;
      return &it->second;
    };
  }
  search::ModelProvider model_provider() {
    return [this](cost::RecomputePolicy) -> Result<const cost::CostModel*> { return &model; };
  }
};

}  // namespace

TEST_CASE("fix: every key parses and a bad one is named", "[search]") {
  auto f = search::parse_fixed("tp=8,pp=4,dp=2,cp=1,vp=2,mb=1,zero=1,recompute=full,schedule=interleaved,sp=0");
  REQUIRE(f.ok());
  CHECK(*f->tp == 8);
  CHECK(*f->pp == 4);
  CHECK(*f->dp == 2);
  CHECK(*f->vp == 2);
  CHECK(*f->micro_batch == 1);
  CHECK(*f->zero == 1);
  CHECK(*f->recompute == cost::RecomputePolicy::full);
  CHECK(*f->schedule == sim::Schedule::interleaved);
  CHECK(*f->sequence_parallel == false);
  CHECK(*search::parse_fixed("ep=4")->ep == 4);
  CHECK(search::parse_fixed("ep=0").error().message.find("at least 1") != std::string::npos);
  CHECK(search::parse_fixed("").ok());
  CHECK(search::parse_fixed("tq=2").error().message.find("unknown key 'tq'") != std::string::npos);
  CHECK(search::parse_fixed("tp=x").error().message.find("tp") != std::string::npos);
  CHECK(search::parse_fixed("tp").error().message.find("KEY=VALUE") != std::string::npos);
  CHECK(search::parse_fixed("recompute=some").error().message.find("recompute") != std::string::npos);
  CHECK(search::parse_fixed("pp=0").error().message.find("at least 1") != std::string::npos);
}

TEST_CASE("the enumerated space, counted by hand", "[search]") {
  Providers p;
  const auto facts = search::facts_of(**p.graph_provider()(1), 1);
  CHECK(facts.layers == 4);
  CHECK(facts.heads == 4);
  // 4 devices, B = 8, 4 layers, 4 heads, micro-batch <= 2, one ZeRO option, one policy:
  //   tp=1: pp=1 (dp=4, 2/replica): mb 1, 2                                   2
  //         pp=2 (dp=2, 4/replica): mb 1 (m=4): 1f1b, interleaved v=2;
  //                                 mb 2 (m=2): 1f1b, interleaved v=2          4
  //         pp=4 (dp=1, 8/replica): mb 1, 2: 1f1b only (4 % (4*2) != 0)      2
  //   tp=2: pp=1 (dp=2): mb 1, 2                                              2
  //         pp=2 (dp=1, 8/replica): mb 1 (m=8), mb 2 (m=4): 1f1b and v=2     4
  //   tp=4: pp=1 (dp=1): mb 1, 2                                              2
  //   hybrid variants (the tp axis may split the batch), tp > 1 and pp = 1:
  //         tp=2 pp=1: 2; tp=4 pp=1: 2                                         4
  //   balanced-stage variants of the 1F1B layouts with pp > 1:
  //         tp=1 pp=2: 2; tp=1 pp=4: 2; tp=2 pp=2: 2                           6
  //   total                                                                  26
  const auto all = search::enumerate_layouts(small_space(), facts);
  CHECK(all.size() == 26);
  for (std::size_t i = 0; i < all.size(); ++i) {
    CHECK(all[i].order == i);
    CHECK(estimate::validate(all[i].config).ok());
    CHECK(all[i].config.sequence_parallel == (all[i].config.tp > 1 && !all[i].config.tp_splits_batch));
  }
  // --fix pins: tp=2 leaves 6 of them, their 2 hybrids and 2 balanced.
  auto s = small_space();
  s.fixed.tp = 2;
  CHECK(search::enumerate_layouts(s, facts).size() == 6 + 2 + 2);
  // Without hybrids, 22.
  s = small_space();
  s.hybrid_tp = false;
  CHECK(search::enumerate_layouts(s, facts).size() == 22);
  // Data-parallel frameworks: tp = pp = 1 (dp = 4), micro-batch 1 or 2; DDP
  // has one optimizer option, FSDP two (SHARD_GRAD_OP, FULL_SHARD).
  s = small_space();
  s.framework = estimate::Framework::ddp;
  CHECK(search::enumerate_layouts(s, facts).size() == 2);
  s.framework = estimate::Framework::fsdp;
  CHECK(search::enumerate_layouts(s, facts).size() == 4);
  // Megatron offers the distributed optimizer wherever dp > 1: the 8 layouts
  // with dp > 1 double (tp=1: pp=1 2, pp=2 4; tp=2 pp=1 2), and so do the
  // hybrids of tp=2 pp=1 (dp=2): 2 more, and the balanced variants of
  // tp=1 pp=2 (dp=2): 2 more.
  // Megatron also runs context parallelism: cp over the divisors of
  // N / tp whose split of the 16 tokens the estimate accepts (16 % (tp cp)
  // with sequence parallelism), each with both optimizer options (dp cp > 1):
  //   tp=1 cp=2: pp=1 (dp=2): mb 1, 2                                   2 x 2 =  4
  //              pp=2 (dp=1): mb 1, 2: 1f1b and v=2 (4), balanced (2)   6 x 2 = 12
  //        cp=4: pp=1 (dp=1): mb 1, 2                                   2 x 2 =  4
  //   tp=2 cp=2: pp=1 (dp=1): mb 1, 2, and their hybrids                4 x 2 =  8
  //   tp=4: N / tp = 1, no cp > 1                                               28
  s = small_space();
  s.framework = estimate::Framework::megatron;
  CHECK(search::enumerate_layouts(s, facts).size() == 26 + 8 + 2 + 2 + 28);
  s.fixed.cp = 1;
  CHECK(search::enumerate_layouts(s, facts).size() == 26 + 8 + 2 + 2);
}

TEST_CASE("cp: every divisor of N / tp that splits the sequence, no cap", "[search]") {
  search::Space s;
  s.framework = estimate::Framework::megatron;
  search::ModelFacts f;
  f.layers = 32;
  f.heads = 32;
  // 96 tokens on 64 devices at tp = 8: N / tp = 8, cp in {2, 4, 8}; with
  // sequence parallelism 96 % (8 cp) holds for cp = 2 (16) and 4 (32), not
  // 8 (64); without it 96 % cp holds for all three.
  s.devices = 64;
  f.seq = 96;
  CHECK(search::context_parallel_degrees(s, f, 8) == std::vector<int>{1, 2, 4});
  s.fixed.sequence_parallel = false;
  CHECK(search::context_parallel_degrees(s, f, 8) == std::vector<int>{1, 2, 4, 8});
  // tp = 1: no sequence parallelism; N / tp = 64: 96 % cp for 2, 4, 8, 16, 32 (not 64).
  s.fixed.sequence_parallel.reset();
  CHECK(search::context_parallel_degrees(s, f, 1) == std::vector<int>{1, 2, 4, 8, 16, 32});
  // Frameworks whose estimate does not run cp, and models without attention: cp = 1.
  for (auto fw : {estimate::Framework::megatron_legacy, estimate::Framework::deepspeed, estimate::Framework::fsdp,
                  estimate::Framework::ddp}) {
    s.framework = fw;
    CHECK(search::context_parallel_degrees(s, f, 8) == std::vector<int>{1});
  }
  s.framework = estimate::Framework::megatron;
  f.seq = 0;
  CHECK(search::context_parallel_degrees(s, f, 8) == std::vector<int>{1});

  // Llama-2-7B at 512k tokens on 512 H100 (8 per node), global batch 8, tp = 8:
  // N / tp = 64 and 2^19 tokens split by 8 cp for every power of two up to
  // 64, so cp in {1, 2, 4, 8, 16, 32, 64} (the old space stopped at 4).
  s.devices = 512;
  s.devices_per_node = 8;
  s.global_batch = 8;
  s.fixed.tp = 8;
  f.seq = 524288;
  f.parameters = 6.74e9;
  std::set<int> cps;
  for (const auto& c : search::enumerate_layouts(s, f)) cps.insert(c.config.cp);
  CHECK(cps == std::set<int>{1, 2, 4, 8, 16, 32, 64});
  // Recompute is searched with cp > 1 too (full recompute may fit where
  // none does not): tp 8 cp 16 dp 4 (pp 1, micro-batch 1) with each policy.
  std::set<cost::RecomputePolicy> policies;
  for (const auto& c : search::enumerate_layouts(s, f))
    if (c.config.cp == 16 && c.config.dp == 4 && c.config.pp == 1) policies.insert(c.recompute);
  CHECK(policies.size() == 3);
}

TEST_CASE("memory floor: model state with the candidate's sharding", "[search]") {
  search::ModelFacts f;
  f.parameters = 1e9;
  search::Candidate c;
  c.config.tp = 2;
  c.config.pp = 2;
  c.config.dp = 4;
  // 1e9 / (2*2) = 2.5e8 parameters; Adam, 16-bit weights, 2-byte grads: 2 + 2 + 12 = 16 B each = 4e9 B.
  CHECK(search::memory_floor(c, f).value == Approx(4e9));
  // ZeRO-1 over dp=4: 2 + 2 + 12/4 = 7 B each = 1.75e9 B.
  c.config.zero = 1;
  CHECK(search::memory_floor(c, f).value == Approx(1.75e9));
}

TEST_CASE("branch and bound finds the exhaustive optimum, with any number of threads", "[search]") {
  Providers p;
  const auto space = small_space();
  // Exhaustive: score every layout directly.
  const auto facts = search::facts_of(**p.graph_provider()(1), 1);
  const auto all = search::enumerate_layouts(space, facts);
  double best = 1e300;
  std::size_t best_order = 0;
  for (const auto& c : all) {
    auto e = estimate::estimate(**p.graph_provider()(c.config.micro_batch), p.model, c.config, false);
    REQUIRE(e.ok());
    if (e->fits && e->step_time.value < best) {
      best = e->step_time.value;
      best_order = c.order;
    }
  }
  for (int threads : {1, 2, 3}) {
    search::Options o;
    o.threads = threads;
    o.top_k = 3;
    o.batch = 4;
    auto r = search::search(space, p.graph_provider(), p.model_provider(), o);
    REQUIRE(r.ok());
    REQUIRE(!r->best.empty());
    CHECK(r->best.front().estimate.step_time.value == Approx(best).epsilon(1e-12));
    CHECK(r->best.front().candidate.order == best_order);
    CHECK(r->complete);
    CHECK(r->enumerated == 26);
    CHECK(r->scored + r->pruned_bound + r->pruned_memory == 26);
    // The space's bound: at least the smallest layout bound (floors only
    // raise them), at most the optimum; here every layout not scored was
    // pruned by a bound no better than the best (none by the twin rule), so
    // it is the best step itself.
    double min_bound = 1e300;
    // (A fake cost model: no bytes or launch terms, which follow the profile
    // model's pricing.)
    for (const auto& c : all) min_bound = std::min(min_bound, search::layout_bound(c, facts, p.model).total.value);
    CHECK(r->lower_bound.value >= min_bound);
    CHECK(r->lower_bound.value <= best);
    CHECK(r->pruned_twin == 0);
    CHECK(r->lower_bound.value == Approx(best).epsilon(1e-12));
    for (std::size_t i = 1; i < r->best.size(); ++i)
      CHECK(r->best[i - 1].estimate.step_time.value <= r->best[i].estimate.step_time.value);
    // Every bound was a lower bound of the scored layout's step.
    for (const auto& s : r->best) CHECK(s.candidate.bound.value <= s.estimate.step_time.value);
  }
}

TEST_CASE("memory pruning and the no-fit error", "[search]") {
  Providers p;
  p.model.capacity = Bytes(1e3);  // nothing fits
  auto r = search::search(small_space(), p.graph_provider(), p.model_provider(), {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("no layout fits") != std::string::npos);
  CHECK(r.error().message.find('\n') == std::string::npos);
}

namespace {

// The MoE MLP of estimate_fixtures.hpp at micro-batch mb: h=8, f=16, E=4
// experts, 2 classes (1,104 parameters, 1,024 in experts), or with
// f=`ffn` for larger experts.
struct MoeProviders {
  std::map<int, graph::OpGraph> graphs;
  FakeCostModel model;
  std::int64_t ffn = 16;
  search::GraphProvider graph_provider() {
    return [this](int mb) -> Result<const graph::OpGraph*> {
      auto it = graphs.find(mb);
      if (it == graphs.end()) it = graphs.emplace(mb, moe_mlp(mb, 8, ffn, 4, 2)).first;
      return &it->second;
    };
  }
  search::ModelProvider model_provider() {
    return [this](cost::RecomputePolicy) -> Result<const cost::CostModel*> { return &model; };
  }
};

// 4 devices, Megatron (distributed optimizer offered), tp = pp = 1
// (pinned), micro-batch pinned to `mb` and global batch 4 mb (dp = 4, m = 1).
search::Space moe_space(int mb) {
  search::Space s;
  s.devices = 4;
  s.global_batch = 4 * mb;
  s.framework = estimate::Framework::megatron;
  s.recompute = {cost::RecomputePolicy::none};
  s.fixed.tp = 1;
  s.fixed.pp = 1;
  s.fixed.micro_batch = mb;
  return s;
}

}  // namespace

TEST_CASE("ep: enumerated for MoE models over divisors of dp*cp that divide the experts", "[search][experts]") {
  MoeProviders p;
  const auto facts = search::facts_of(**p.graph_provider()(4), 4);
  CHECK(facts.experts == 4);
  CHECK(facts.expert_parameters == 1024);
  // Experts 1-3 with the Add summing each in are 3 identical repeated blocks
  // (expert 0 has no Add): 3 layers (pp pinned to 1 below).
  CHECK(facts.layers == 3);
  // dp = 4: ZeRO none or the distributed optimizer (2) x ep 1, 2, 4 (3) = 6.
  auto s = moe_space(4);
  auto all = search::enumerate_layouts(s, facts);
  CHECK(all.size() == 6);
  std::map<int, int> by_ep;
  for (const auto& c : all) ++by_ep[c.config.ep];
  CHECK(by_ep == std::map<int, int>{{1, 2}, {2, 2}, {4, 2}});
  // --fix ep=2: the 2 layouts with ep = 2; ep=3 divides neither dp*cp nor the experts: none.
  s.fixed.ep = 2;
  CHECK(search::enumerate_layouts(s, facts).size() == 2);
  s.fixed.ep = 3;
  CHECK(search::enumerate_layouts(s, facts).empty());
  // Frameworks without expert parallelism (FSDP, DDP, Megatron of 2021): ep = 1 only.
  s = moe_space(4);
  s.framework = estimate::Framework::megatron_legacy;
  for (const auto& c : search::enumerate_layouts(s, facts)) CHECK(c.config.ep == 1);
  // A dense model: ep = 1 only (the GPT of small_space: 26 layouts as counted above).
  Providers dense;
  const auto dense_facts = search::facts_of(**dense.graph_provider()(1), 1);
  CHECK(dense_facts.experts == 0);
  for (const auto& c : search::enumerate_layouts(small_space(), dense_facts)) CHECK(c.config.ep == 1);
}

TEST_CASE("memory floor: experts split over ep, their states over dp*cp/ep", "[search][experts]") {
  search::ModelFacts f;
  f.parameters = 1e9;
  f.experts = 8;
  f.expert_parameters = 8e8;
  search::Candidate c;
  c.config.dp = 8;
  c.config.zero = 1;
  // ep = 1: 1e9 x (2 + 2 + 12/8) B = 5.5e9 B.
  CHECK(search::memory_floor(c, f).value == Approx(5.5e9));
  // ep = 4: dense 2e8 x 5.5 B = 1.1e9; experts 8e8/4 = 2e8 x (2 + 2 + 12/(8/4)) B = 2e9.
  c.config.ep = 4;
  CHECK(search::memory_floor(c, f).value == Approx(3.1e9));
  // Without experts in the model ep changes nothing.
  f.experts = 0;
  f.expert_parameters = 0;
  CHECK(search::memory_floor(c, f).value == Approx(5.5e9));
}

TEST_CASE("search ep: ep = 4 wins when the all-to-all is cheaper than replicated experts", "[search][experts]") {
  // Micro-batch 4 (4 tokens): per micro-batch the all-to-alls move
  // 2 x (256 + 256) B over the ep group (docs in tests/estimate/experts_test.cpp);
  // the step = 54 ms of compute + the collectives (1 s/GB) + Adam (38 B per
  // local parameter at 1e12 B/s):
  //   ep=1 none:   all-reduce 1,104 x 4 = 4,416 B;            Adam 1,104 -> 4.416e-6 + 4.1952e-8
  //   ep=2 none:   1,024 + 320 + 512 x 4 (over 2) = 3,392 B;   Adam 592
  //   ep=4 none:   1,024 + 320 (experts over 1 rank: none);    Adam 336   -> 1.344e-6 + 1.2768e-8
  //   ep=4 distopt: 1,024 + 320 + 160 = 1,504 B;               Adam 276
  MoeProviders p;
  auto r = search::search(moe_space(4), p.graph_provider(), p.model_provider(), {});
  REQUIRE(r.ok());
  const auto& best = r->best.front();
  CHECK(best.candidate.config.ep == 4);
  CHECK_FALSE(best.candidate.config.distributed_optimizer);
  CHECK(best.estimate.step_time.value == Approx(0.054 + 1.344e-6 + 1.2768e-8).epsilon(1e-12));
  CHECK(r->enumerated == 6);
}

TEST_CASE("search ep: ep = 1 wins when the tokens outweigh the experts", "[search][experts]") {
  // Micro-batch 64: the all-to-alls move 4 x 4 experts x [64, 8] x 2 B =
  // 16,384 B per step, more than ep can save (at most the 4,096 B of expert
  // gradients): ep = 1, ZeRO none: 4,416 B of all-reduce + Adam 1,104.
  MoeProviders p;
  auto r = search::search(moe_space(64), p.graph_provider(), p.model_provider(), {});
  REQUIRE(r.ok());
  const auto& best = r->best.front();
  CHECK(best.candidate.config.ep == 1);
  CHECK_FALSE(best.candidate.config.distributed_optimizer);
  CHECK(best.estimate.step_time.value == Approx(0.054 + 4.416e-6 + 4.1952e-8).epsilon(1e-12));
}

TEST_CASE("search ep: experts that fit only split over ep, memory pruning stays sound", "[search][experts]") {
  // Large experts (f = 4096): 4 x 2 x 8 x 4096 = 262,144 expert parameters
  // of 262,224. Capacity between what ep = 1 and ep = 4 need.
  MoeProviders p;
  p.ffn = 4096;
  const auto& g = **p.graph_provider()(64);
  auto one = config_for(4, 1, 1, 1, 64);
  auto four = one;
  four.ep = 4;
  const auto e1 = run(g, p.model, one), e4 = run(g, p.model, four);
  REQUIRE(e4.peak_stage().peak() < e1.peak_stage().peak());
  p.model.capacity = (e4.peak_stage().peak() + e1.peak_stage().peak()) * 0.5;
  const auto space = moe_space(64);
  auto r = search::search(space, p.graph_provider(), p.model_provider(), {});
  REQUIRE(r.ok());
  CHECK(r->best.front().candidate.config.ep > 1);
  CHECK(r->best.front().estimate.fits);
  // Every layout the floor prunes really does not fit: the search's floor
  // (stage_memory_floor: model state, the framework's gradient buffers, the
  // experts' activations held whole, the allocator's fragmentation; the
  // fake has no reserve) above the device less the profile's margin.
  const auto facts = search::facts_of(g, 64);
  const auto saved = estimate::saved_bytes(g, p.model, cost::RecomputePolicy::none);
  const auto training = p.model.context().precision().default_precision();
  std::size_t pruned = 0;
  for (const auto& c : search::enumerate_layouts(space, facts)) {
    const Bytes floor = search::stage_memory_floor(c, facts, saved, Bytes(0), p.model.fragmentation(),
                                                   estimate::framework_gradient_bytes(c.config, training));
    CHECK(floor >= search::memory_floor(c, facts));
    if (floor <= p.model.capacity * (1 - p.model.memory_margin())) continue;
    ++pruned;
    const auto e = run(g, p.model, c.config);
    CHECK(e.peak_stage().peak() > p.model.capacity * (1 - p.model.memory_margin()));
  }
  CHECK(pruned == r->pruned_memory);
}

TEST_CASE("twin_of: cp folded into dp, everything else equal", "[search]") {
  // Megatron, 4 devices, 16 tokens: tp=1 cp=2 dp=2 pp=1 micro-batch 1 has
  // the twin tp=1 cp=1 dp=4 micro-batch 1 (same optimizer option); tp=1
  // cp=4 dp=1 likewise dp=4; tp=1 cp=2 pp=2 dp=1 has tp=1 pp=2 dp=2. A
  // global batch of 2 leaves dp=4 out: cp x dp = 4 layouts have no twin.
  Providers p;
  const auto facts = search::facts_of(**p.graph_provider()(1), 1);
  auto s = small_space();
  s.framework = estimate::Framework::megatron;
  s.hybrid_tp = false;
  const auto all = search::enumerate_layouts(s, facts);
  const auto twins = search::twin_of(all);
  REQUIRE(twins.size() == all.size());
  std::size_t with_twin = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& k = all[i].config;
    if (k.cp == 1) {
      CHECK(!twins[i]);
      continue;
    }
    REQUIRE(twins[i]);
    ++with_twin;
    const auto& t = all[*twins[i]].config;
    CHECK(t.cp == 1);
    CHECK(t.dp == k.dp * k.cp);
    CHECK(t.tp == k.tp);
    CHECK(t.pp == k.pp);
    CHECK(t.vp == k.vp);
    CHECK(t.micro_batch == k.micro_batch);
    CHECK(t.distributed_optimizer == k.distributed_optimizer);
    CHECK(t.balance_stages == k.balance_stages);
  }
  // The 28 cp layouts of the hand count above less the 4 hybrids: 24, every one with a twin.
  CHECK(with_twin == 24);
  // Global batch 2 leaves dp = 4 out, so tp=1 pp=1 has cp=2 dp=2 (micro-batch 1)
  // and cp=4 dp=1 (micro-batch 1, 2), each with both optimizer options:
  // 2 + 4 = 6 layouts without a twin.
  s.global_batch = 2;
  const auto small = search::enumerate_layouts(s, facts);
  const auto small_twins = search::twin_of(small);
  std::size_t orphans = 0;
  for (std::size_t i = 0; i < small.size(); ++i)
    if (small[i].config.cp > 1 && small[i].config.tp == 1 && small[i].config.pp == 1) {
      CHECK(!small_twins[i]);
      ++orphans;
    }
  CHECK(orphans == 6);
}

TEST_CASE("space_ranges: what the enumerated layouts span", "[search]") {
  // The Megatron space of the hand count above (4 devices, 16 tokens, 4 layers).
  Providers p;
  const auto facts = search::facts_of(**p.graph_provider()(1), 1);
  auto s = small_space();
  s.framework = estimate::Framework::megatron;
  const auto r = search::space_ranges(search::enumerate_layouts(s, facts));
  CHECK(r.tp == std::set<int>{1, 2, 4});
  CHECK(r.cp == std::set<int>{1, 2, 4});
  CHECK(r.pp == std::set<int>{1, 2, 4});
  CHECK(r.dp == std::set<int>{1, 2, 4});
  CHECK(r.ep == std::set<int>{1});
  CHECK(r.micro_batch == std::set<int>{1, 2});
  // Interleaving only at pp = 2 (4 layers: pp 4 x v 2 does not divide).
  CHECK(r.pp_vp == std::set<std::pair<int, int>>{{1, 1}, {2, 1}, {2, 2}, {4, 1}});
  CHECK(r.schedules == std::set<sim::Schedule>{sim::Schedule::one_f_one_b, sim::Schedule::interleaved});
  CHECK(r.state_sharding == std::set<std::pair<int, bool>>{{0, false}, {0, true}});
  // Hybrids (tp-any) turn sequence parallelism off.
  CHECK(r.sequence_parallel == std::set<bool>{false, true});
  CHECK(r.stage_cuts == std::set<std::string>{"balanced", "even"});
}
