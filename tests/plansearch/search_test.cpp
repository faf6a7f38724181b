// The outer layout search: --fix parsing, the enumerated space (counted by
// hand), memory floors, and branch and bound against exhaustive scoring.

#include <catch2/catch.hpp>

#include "estimate/estimate_fixtures.hpp"
#include "planner/plansearch/search.hpp"

using namespace planner;
using namespace estimate_test;

namespace {

plansearch::Space small_space() {
  // 4 devices in one node, global batch 8, Megatron as of 2021-2022 (no
  // optimizer sharding; sequence parallelism with tp), no recompute,
  // micro-batch at most 2.
  plansearch::Space s;
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
  plansearch::GraphProvider graph_provider() {
    return [this](int mb) -> Result<const graph::OpGraph*> {
      auto it = graphs.find(mb);
      if (it == graphs.end()) it = graphs.emplace(mb, gpt(mb, 16, 64, 4, 256, 128, 4)).first;
      return &it->second;
    };
  }
  plansearch::ModelProvider model_provider() {
    return [this](cost::RecomputePolicy) -> Result<const cost::CostModel*> { return &model; };
  }
};

}  // namespace

TEST_CASE("fix: every key parses and a bad one is named", "[plansearch]") {
  auto f = plansearch::parse_fixed("tp=8,pp=4,dp=2,cp=1,vp=2,mb=1,zero=1,recompute=full,schedule=interleaved,sp=0");
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
  CHECK(plansearch::parse_fixed("").ok());
  CHECK(plansearch::parse_fixed("tq=2").error().message.find("unknown key 'tq'") != std::string::npos);
  CHECK(plansearch::parse_fixed("tp=x").error().message.find("tp") != std::string::npos);
  CHECK(plansearch::parse_fixed("tp").error().message.find("KEY=VALUE") != std::string::npos);
  CHECK(plansearch::parse_fixed("recompute=some").error().message.find("recompute") != std::string::npos);
  CHECK(plansearch::parse_fixed("pp=0").error().message.find("at least 1") != std::string::npos);
}

TEST_CASE("the enumerated space, counted by hand", "[plansearch]") {
  Providers p;
  const auto facts = plansearch::facts_of(**p.graph_provider()(1), 1);
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
  const auto all = plansearch::enumerate_layouts(small_space(), facts);
  CHECK(all.size() == 26);
  for (std::size_t i = 0; i < all.size(); ++i) {
    CHECK(all[i].order == i);
    CHECK(estimate::validate(all[i].config).ok());
    CHECK(all[i].config.sequence_parallel == (all[i].config.tp > 1 && !all[i].config.tp_splits_batch));
  }
  // --fix pins: tp=2 leaves 6 of them, their 2 hybrids and 2 balanced.
  auto s = small_space();
  s.fixed.tp = 2;
  CHECK(plansearch::enumerate_layouts(s, facts).size() == 6 + 2 + 2);
  // Without hybrids, 22.
  s = small_space();
  s.hybrid_tp = false;
  CHECK(plansearch::enumerate_layouts(s, facts).size() == 22);
  // Data-parallel frameworks: tp = pp = 1 (dp = 4), micro-batch 1 or 2; DDP
  // has one optimizer option, FSDP two (SHARD_GRAD_OP, FULL_SHARD).
  s = small_space();
  s.framework = estimate::Framework::ddp;
  CHECK(plansearch::enumerate_layouts(s, facts).size() == 2);
  s.framework = estimate::Framework::fsdp;
  CHECK(plansearch::enumerate_layouts(s, facts).size() == 4);
  // Megatron offers the distributed optimizer wherever dp > 1: the 8 layouts
  // with dp > 1 double (tp=1: pp=1 2, pp=2 4; tp=2 pp=1 2), and so do the
  // hybrids of tp=2 pp=1 (dp=2): 2 more, and the balanced variants of
  // tp=1 pp=2 (dp=2): 2 more.
  s = small_space();
  s.framework = estimate::Framework::megatron;
  CHECK(plansearch::enumerate_layouts(s, facts).size() == 26 + 8 + 2 + 2);
}

TEST_CASE("memory floor: model state with the candidate's sharding", "[plansearch]") {
  plansearch::ModelFacts f;
  f.parameters = 1e9;
  plansearch::Candidate c;
  c.config.tp = 2;
  c.config.pp = 2;
  c.config.dp = 4;
  // 1e9 / (2*2) = 2.5e8 parameters; Adam, 16-bit weights, 2-byte grads: 2 + 2 + 12 = 16 B each = 4e9 B.
  CHECK(plansearch::memory_floor(c, f).value == Approx(4e9));
  // ZeRO-1 over dp=4: 2 + 2 + 12/4 = 7 B each = 1.75e9 B.
  c.config.zero = 1;
  CHECK(plansearch::memory_floor(c, f).value == Approx(1.75e9));
}

TEST_CASE("branch and bound finds the exhaustive optimum, with any number of threads", "[plansearch]") {
  Providers p;
  const auto space = small_space();
  // Exhaustive: score every layout directly.
  const auto facts = plansearch::facts_of(**p.graph_provider()(1), 1);
  const auto all = plansearch::enumerate_layouts(space, facts);
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
    plansearch::Options o;
    o.threads = threads;
    o.top_k = 3;
    o.batch = 4;
    auto r = plansearch::search(space, p.graph_provider(), p.model_provider(), o);
    REQUIRE(r.ok());
    REQUIRE(!r->best.empty());
    CHECK(r->best.front().estimate.step_time.value == Approx(best).epsilon(1e-12));
    CHECK(r->best.front().candidate.order == best_order);
    CHECK(r->complete);
    CHECK(r->enumerated == 26);
    CHECK(r->scored + r->pruned_bound + r->pruned_memory == 26);
    CHECK(r->lower_bound.value == Approx(best));
    for (std::size_t i = 1; i < r->best.size(); ++i)
      CHECK(r->best[i - 1].estimate.step_time.value <= r->best[i].estimate.step_time.value);
    // Every bound was a lower bound of the scored layout's step.
    for (const auto& s : r->best) CHECK(s.candidate.bound.value <= s.estimate.step_time.value);
  }
}

TEST_CASE("memory pruning and the no-fit error", "[plansearch]") {
  Providers p;
  p.model.capacity = Bytes(1e3);  // nothing fits
  auto r = plansearch::search(small_space(), p.graph_provider(), p.model_provider(), {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("no layout fits") != std::string::npos);
  CHECK(r.error().message.find('\n') == std::string::npos);
}
