// Graphs where Megatron's template is not the best plan, so no template can
// pass: a huge vocabulary with a tiny hidden size, a very wide MLP on a tiny
// batch, and a memory limit that forces a split speed would not choose.
#include <catch2/catch.hpp>

#include "sharding/sharding_fixtures.hpp"

using namespace planner;
using namespace planner::sharding;
using planner::sharding::testing::ModelBuilder;
using planner::sharding::testing::SimpleOracle;

namespace {

layout::DeviceMesh mesh(const char* text) { return layout::DeviceMesh::parse(text).value(); }

std::string weight(const LoweredSharding& l, const graph::OpGraph& g, const Choice& c, const std::string& op) {
  return layout::to_string(*chosen(l, c, *find_node(l, g, op)).inputs.at(1), l.mesh);
}
std::string table(const LoweredSharding& l, const graph::OpGraph& g, const Choice& c, const std::string& op) {
  return layout::to_string(*chosen(l, c, *find_node(l, g, op)).inputs.at(0), l.mesh);
}

// The strategy of `node` whose assignment is `a`.
std::size_t with_assignment(const LoweredSharding& l, std::size_t node, std::string_view a) {
  const auto& s = l.nodes[node].sharding.strategies;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (ops::to_string(s[i].assignment) == a) return i;
  FAIL("no strategy '" << a << "' on " << l.problem.nodes[node].name);
  return 0;
}

}  // namespace

TEST_CASE("huge vocabulary, tiny hidden: split the vocabulary, replicate the layers", "[search][not_megatron]") {
  // h=32 over 4 tp ranks would make every layer all-reduce 128 tokens x 32
  // values: latency-bound (2*3*5 us each) against microseconds of compute.
  // The 65536-row table and LM head are what is worth splitting.
  ModelBuilder b;
  b.gpt(4, 32, 32, 4, 128, 65536, 2);
  SimpleOracle oracle;
  auto l = lower_sharding(b.g, mesh("mesh(dp=2,tp=4)"), oracle);
  REQUIRE(l.ok());
  auto s = solve(l->problem);
  REQUIRE(s.ok());
  REQUIRE(s->exact);
  const Choice& c = s->choice;
  INFO(describe_plan(*l, c));
  // The LM head is vocabulary parallel, and so is the loss (3 statistics per
  // row all-reduced over tp instead of gathering 64 MB of logits).
  CHECK(weight(*l, b.g, c, "lm_head/MatMul") == "[-,tp]");
  CHECK(ops::to_string(chosen(*l, c, *find_node(*l, b.g, "loss")).assignment) == "dp:n tp:c");
  // The embedding table is split over tp -- on its hidden columns: its
  // output then needs an all-gather ((n-1) latencies) rather than the
  // all-reduce of a vocabulary-parallel table (2(n-1)); the table being
  // replicated over dp avoids syncing its 8 MB gradient.
  CHECK(table(*l, b.g, c, "embed/tokens") == "[-,tp]");
  // Every layer's weights stay whole over tp: pure data parallelism inside.
  for (const char* op : {"layers.0/attn/qkv/MatMul", "layers.0/attn/proj/MatMul", "layers.0/mlp/fc1/MatMul",
                         "layers.0/mlp/fc2/MatMul"})
    CHECK(weight(*l, b.g, c, op) == "[-,-]");

  // Against the vocabulary-parallel embedding: the output [4,32,32] f32 =
  // 16384 B is all-reduced (2*3/4*S/1e11 + 6*5 us) instead of all-gathered
  // (3/4*S/1e11 + 3*5 us): 3/4*16384/1e11 + 15 us = 15.12 us more; and it
  // is held whole (partial) rather than a quarter: 12 KiB more.
  Choice vocab = c;
  const auto emb = *find_node(*l, b.g, "embed/tokens");
  vocab[emb] = with_assignment(*l, emb, "tp:v");
  const std::string why = explain(l->problem, c, vocab);
  INFO(why);
  CHECK(why.find("a is cheaper by 15.12 us") != std::string::npos);
  CHECK(why.find("edge embed/tokens -> embed/Add (embed/tokens): reshard +15.12 us") != std::string::npos);
  CHECK(why.find("tp:h -> ((4,1),(1,1)) tp:v: memory +12.00 KiB") != std::string::npos);

  // Against Megatron's layers: take the plan the solver makes when
  // communication is free (every layer splits over tp) and price it here.
  SimpleOracle free_comm;
  free_comm.alpha = 0;
  free_comm.bw = 1e18;
  auto l2 = lower_sharding(b.g, mesh("mesh(dp=2,tp=4)"), free_comm);
  REQUIRE(l2.ok());
  auto megatron = solve(l2->problem);
  REQUIRE(megatron.ok());
  CHECK(weight(*l2, b.g, megatron->choice, "layers.0/mlp/fc1/MatMul") == "[-,tp]");
  CHECK(weight(*l2, b.g, megatron->choice, "layers.0/mlp/fc2/MatMul") == "[tp,-]");
  const auto priced = evaluate(l->problem, megatron->choice);
  CHECK(priced.total > s->evaluation.total);
  const std::string vs = explain(l->problem, c, megatron->choice);
  INFO(vs);
  CHECK(vs.find("reshard +") != std::string::npos);  // the layers' all-reduces
}

TEST_CASE("a very wide MLP on a tiny batch splits its weights over every device", "[search][not_megatron]") {
  // hidden 64, ffn 65536, 8 tokens, mesh dp=2 x tp=4 with both axes free to
  // split anything. Megatron's template (dp on the batch, tp on the weights)
  // would all-reduce 2 x 16 MB of weight gradients over dp for 8 tokens;
  // splitting the weights 8 ways leaves only [8,64] activations to move.
  ModelBuilder b;
  b.mlp(8, 64, 65536, 64);
  SimpleOracle oracle;
  LoweringOptions o;
  o.sharding.roles = {ops::AxisRole::any, ops::AxisRole::any};
  auto l = lower_sharding(b.g, mesh("mesh(dp=2,tp=4)"), oracle, o);
  REQUIRE(l.ok());
  auto s = solve(l->problem);
  REQUIRE(s.ok());
  REQUIRE(s->exact);
  INFO(describe_plan(*l, s->choice));
  CHECK(weight(*l, b.g, s->choice, "fc1/MatMul") == "[-,dp*tp]");
  CHECK(weight(*l, b.g, s->choice, "fc2/MatMul") == "[dp*tp,-]");
  CHECK(table(*l, b.g, s->choice, "fc1/MatMul") == "[-,-]");  // the batch is not split

  // Megatron's template on the same problem.
  Choice t(l->problem.nodes.size());
  const std::pair<const char*, const char*> plan[] = {
      {"fc1/MatMul", "dp:m tp:n"}, {"fc1/Add", "dp:d0 tp:d1"}, {"relu", "dp:d0 tp:d1"},
      {"fc2/MatMul", "dp:m tp:k"}, {"fc2/Add", "dp:d0"},       {"loss", "dp:n"}};
  for (const auto& [op, a] : plan) {
    const auto n = *find_node(*l, b.g, op);
    t[n] = with_assignment(*l, n, a);
  }
  const auto tmpl = evaluate(l->problem, t);
  CHECK(tmpl.total > s->evaluation.total);
  CHECK(tmpl.memory > s->evaluation.memory);
  const std::string why = explain(l->problem, s->choice, t);
  INFO(why);
  // The two largest differences: fc1's and fc2's weight-gradient sync.
  const auto line1 = why.find('\n'), line3 = why.find('\n', why.find('\n', line1 + 1) + 1);
  const std::string top = why.substr(line1, line3 - line1);
  CHECK(top.find("node fc1/MatMul: ((1,1),(1,8)) dp:n tp:n -> ((2,1),(1,4)) dp:m tp:n: grad_sync +") !=
        std::string::npos);
  CHECK(top.find("node fc2/MatMul") != std::string::npos);
}

TEST_CASE("a memory limit forces a split speed would not choose", "[search][not_megatron]") {
  // A small MLP (64 -> 1024 -> 64, 8 tokens) on tp=4: replicating everything
  // costs ~23 us; any split adds an all-reduce or all-gather of 30 us. The
  // weights take 2 x 65536 x 16 B = 2 MiB replicated.
  ModelBuilder b;
  b.mlp(8, 64, 1024, 64);
  SimpleOracle oracle;
  LoweringOptions o;
  auto run = [&](std::optional<double> mib) {
    o.memory_limit.reset();
    if (mib) o.memory_limit = Bytes(*mib * 1024 * 1024);
    auto l = lower_sharding(b.g, mesh("mesh(tp=4)"), oracle, o);
    REQUIRE(l.ok());
    return std::make_pair(std::move(*l), solve(l->problem));
  };
  auto [l0, free] = run(std::nullopt);
  REQUIRE(free.ok());
  CHECK(weight(l0, b.g, free->choice, "fc1/MatMul") == "[-,-]");
  CHECK(weight(l0, b.g, free->choice, "fc2/MatMul") == "[-,-]");
  CHECK(free->evaluation.memory.value > 2.0 * 1024 * 1024);

  // 1.5 MiB: splitting fc1's columns is enough (its output gathered before fc2).
  auto [l1, some] = run(1.5);
  REQUIRE(some.ok());
  CHECK(some->exact);
  CHECK(some->evaluation.feasible());
  CHECK(some->evaluation.memory.value <= 1.5 * 1024 * 1024);
  CHECK(weight(l1, b.g, some->choice, "fc1/MatMul") == "[-,tp]");
  CHECK(weight(l1, b.g, some->choice, "fc2/MatMul") == "[-,-]");
  CHECK(some->evaluation.total > free->evaluation.total);
  const std::string why = explain(l1.problem, free->choice, some->choice);
  INFO(why);
  CHECK(why.find("a is cheaper by") != std::string::npos);
  CHECK(why.find("memory -") != std::string::npos);

  // 0.8 MiB: both weights split, column then row.
  auto [l2, both] = run(0.8);
  REQUIRE(both.ok());
  CHECK(both->exact);
  CHECK(weight(l2, b.g, both->choice, "fc1/MatMul") == "[-,tp]");
  CHECK(weight(l2, b.g, both->choice, "fc2/MatMul") == "[tp,-]");
  CHECK(both->evaluation.total > some->evaluation.total);

  // 0.3 MiB: nothing fits; the error says what the leanest choice needs.
  auto [l3, none] = run(0.3);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message.find("no choice fits the memory limit") == 0);
}
