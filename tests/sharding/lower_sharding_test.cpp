// Lowering graphs to the flat problem: units, costs and edge matrices by
// hand on a small MLP; shared repeated layers; tied parameters.
#include <catch2/catch.hpp>

#include "sharding/sharding_fixtures.hpp"

using namespace planner;
using namespace planner::sharding;
using planner::sharding::testing::ModelBuilder;
using planner::sharding::testing::SimpleOracle;

namespace {

layout::DeviceMesh mesh(const char* text) { return layout::DeviceMesh::parse(text).value(); }

std::size_t strategy_with(const LoweredSharding& l, std::size_t node, std::string_view assignment) {
  const auto& s = l.nodes[node].sharding.strategies;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (ops::to_string(s[i].assignment) == assignment) return i;
  FAIL("no strategy '" << assignment << "' on node " << l.problem.nodes[node].name);
  return 0;
}

std::size_t edge_between(const LoweredSharding& l, std::size_t from, std::size_t to) {
  for (std::size_t e = 0; e < l.problem.edges.size(); ++e)
    if (l.problem.edges[e].from == from && l.problem.edges[e].to == to) return e;
  FAIL("no edge " << from << " -> " << to);
  return 0;
}

}  // namespace

TEST_CASE("an MLP lowers to one node per op with hand-checked costs", "[search][lower]") {
  ModelBuilder b;
  b.mlp(8, 64, 1024, 64);  // x[8,64] -> fc1 (64x1024) -> relu -> fc2 (1024x64) -> loss
  SimpleOracle oracle;
  auto l = lower_sharding(b.g, mesh("mesh(tp=4)"), oracle);
  REQUIRE(l.ok());
  REQUIRE(l->problem.nodes.size() == 6);  // fc1/MatMul fc1/Add relu fc2/MatMul fc2/Add loss
  CHECK(l->problem.edges.size() == 5);
  const auto fc1 = *find_node(*l, b.g, "fc1/MatMul");
  const auto fc2 = *find_node(*l, b.g, "fc2/MatMul");
  const auto add2 = *find_node(*l, b.g, "fc2/Add");
  // x is a graph input: its last dim is hidden, so tp (a model axis) may
  // split fc1's n only: replicated and column parallel.
  REQUIRE(l->nodes[fc1].sharding.strategies.size() == 2);
  CHECK(l->problem.nodes[fc1].strategies[1].name == "((1,1),(1,4)) tp:n");

  // fc1 replicated: forward 2*8*64*1024 = 1048576 FLOPs, backward dW only
  // (x needs no gradient) 1048576; bytes: forward reads x 2048 + W 262144,
  // writes y 32768; backward reads dy 32768 + x 2048, writes dW 262144:
  // 593920 B. Time 2097152/1e12 + 593920/1e11 = 8.036352 us; column
  // parallel: a quarter.
  CHECK(l->problem.nodes[fc1].strategies[0].cost[CostTerm::compute].value == Approx(8.036352e-6));
  CHECK(l->problem.nodes[fc1].strategies[1].cost[CostTerm::compute].value == Approx(8.036352e-6 / 4));
  // Memory: W 65536 elements x 16 B + y 32768 B = 1081344 B replicated.
  CHECK(l->problem.nodes[fc1].strategies[0].memory.value == 1081344.0);

  // fc2 row parallel -> fc2/Add replicated: forward all-reduce of y [8,64]
  // f32 = 2048 B over 4 ranks: 2*3/4*2048/1e11 + 2*3*5e-6 = 30.03072 us;
  // backward: the Add returns dY replicated, the MatMul wants it without
  // its partial axis (replicated): nothing.
  const auto e = edge_between(*l, fc2, add2);
  const auto row = strategy_with(*l, fc2, "tp:k");
  const auto rep_add = strategy_with(*l, add2, "");
  CHECK(l->problem.edges[e].cost[row * l->nodes[add2].sharding.strategies.size() + rep_add].value ==
        Approx(30.03072e-6));
  CHECK(l->problem.edges[e].cost[0].value == 0.0);  // replicated -> replicated
}

TEST_CASE("the data-parallel gradient sync is bucketed bandwidth", "[search][lower]") {
  ModelBuilder b;
  b.mlp(8, 64, 1024, 64);
  SimpleOracle oracle;
  auto l = lower_sharding(b.g, mesh("mesh(dp=2,tp=2)"), oracle);
  REQUIRE(l.ok());
  const auto fc1 = *find_node(*l, b.g, "fc1/MatMul");
  const auto s = strategy_with(*l, fc1, "dp:m tp:n");
  // W local [64,512] f32 = 131072 B, partial over dp: all-reduce over 2
  // ranks, bandwidth part only: 2*(1/2)*131072/1e11 = 1.31072 us.
  CHECK(l->problem.nodes[fc1].strategies[s].cost[CostTerm::grad_sync].value == Approx(1.31072e-6));
  LoweringOptions exposed;
  exposed.bucket_grad_sync = false;
  auto l2 = lower_sharding(b.g, mesh("mesh(dp=2,tp=2)"), oracle, exposed);
  REQUIRE(l2.ok());
  // With its latency: + 2*(2-1)*5e-6.
  CHECK(l2->problem.nodes[fc1].strategies[s].cost[CostTerm::grad_sync].value == Approx(1.31072e-6 + 10e-6));
}

TEST_CASE("lower_times leaves the state costs to add_state_costs, which weights the syncs per axis",
          "[search][lower]") {
  ModelBuilder b;
  b.mlp(8, 64, 1024, 64);
  SimpleOracle oracle;
  auto times = lower_times(b.g, mesh("mesh(dp=2,tp=2)"), oracle);
  REQUIRE(times.ok());
  const auto fc1 = *find_node(*times, b.g, "fc1/MatMul");
  const auto s = strategy_with(*times, fc1, "dp:m tp:n");
  // No sync and no memory yet; the sync is kept unweighted: the dp
  // all-reduce's bandwidth part, 1.31072 us (the test above), on axis 0.
  CHECK(times->problem.nodes[fc1].strategies[s].cost[CostTerm::grad_sync].value == 0.0);
  CHECK(times->problem.nodes[fc1].strategies[s].memory.value == 0.0);
  CHECK_FALSE(times->problem.memory_limit);
  REQUIRE(times->grad_syncs[fc1][s].size() == 1);
  CHECK(times->grad_syncs[fc1][s][0].axis == 0);
  CHECK(times->grad_syncs[fc1][s][0].seconds == Approx(1.31072e-6));
  // Priced with the dp axis at weight 1/4 and a limit: a quarter of it.
  LoweringOptions o;
  o.axis_grad_sync_weight = {0.25};
  o.memory_limit = Bytes(1e9);
  ShardingProblem p = times->problem;
  add_state_costs(p, *times, b.g, oracle, o);
  CHECK(p.nodes[fc1].strategies[s].cost[CostTerm::grad_sync].value == Approx(0.25 * 1.31072e-6));
  CHECK(p.memory_limit->value == 1e9);
  // The same numbers as lower_sharding, bit for bit, for every strategy.
  auto whole = lower_sharding(b.g, mesh("mesh(dp=2,tp=2)"), oracle, o);
  REQUIRE(whole.ok());
  REQUIRE(whole->problem.nodes.size() == p.nodes.size());
  for (std::size_t n = 0; n < p.nodes.size(); ++n)
    for (std::size_t k = 0; k < p.nodes[n].strategies.size(); ++k) {
      const auto& x = p.nodes[n].strategies[k];
      const auto& y = whole->problem.nodes[n].strategies[k];
      CHECK(x.memory.value == y.memory.value);
      for (std::size_t t = 0; t < x.cost.terms.size(); ++t) CHECK(x.cost.terms[t].value == y.cost.terms[t].value);
    }
}

TEST_CASE("repeated layers share one node per position", "[search][lower]") {
  ModelBuilder b;
  b.gpt(2, 16, 64, 4, 256, 128, 3);
  REQUIRE(b.g.blocks.size() == 1);
  REQUIRE(b.g.blocks[0].count == 3);
  SimpleOracle oracle;
  auto shared = lower_sharding(b.g, mesh("mesh(dp=2,tp=2)"), oracle);
  LoweringOptions o;
  o.share_repeated_layers = false;
  auto each = lower_sharding(b.g, mesh("mesh(dp=2,tp=2)"), oracle, o);
  REQUIRE(shared.ok());
  REQUIRE(each.ok());
  const auto per_block = static_cast<std::size_t>(b.g.blocks[0].ops_per_block);
  // 5 attention ops become one unit in every layer.
  CHECK(each->problem.nodes.size() - shared->problem.nodes.size() == 2 * (per_block - 4));
  const auto ln1 = *find_node(*shared, b.g, "layers.2/ln1");
  CHECK(ln1 == *find_node(*shared, b.g, "layers.0/ln1"));
  CHECK(shared->problem.nodes[ln1].name == "layers.0/ln1 x3");
  CHECK(shared->nodes[ln1].instances.size() == 3);
  // The layer-to-layer edge: the last residual Add of layer k feeds ln1 of
  // layer k+1, twice for three layers; the embedding feeds layer 0 once.
  const auto add2 = *find_node(*shared, b.g, "layers.0/mlp_residual");
  const auto emb = *find_node(*shared, b.g, "embed/Add");
  const auto wrap = edge_between(*shared, add2, ln1);
  REQUIRE(shared->edge_uses[wrap].size() == 1);
  CHECK(shared->edge_uses[wrap][0].count == 2);
  CHECK(shared->edge_uses[edge_between(*shared, emb, ln1)][0].count == 1);

  // Solving shared or per layer gives the same optimum here (every layer
  // prefers the same plan), and the shared problem is a fraction of the size.
  auto a = solve(shared->problem), c = solve(each->problem);
  REQUIRE(a.ok());
  REQUIRE(c.ok());
  CHECK(a->exact);
  CHECK(a->evaluation.total.value == Approx(c->evaluation.total.value).epsilon(1e-9));
  CHECK(a->evaluation.memory.value == Approx(c->evaluation.memory.value).epsilon(1e-9));
}

TEST_CASE("shape arithmetic and constant subgraphs take no part", "[search][lower]") {
  ModelBuilder b;
  b.gpt(2, 16, 64, 4, 256, 128, 1);
  SimpleOracle oracle;
  auto l = lower_sharding(b.g, mesh("mesh(tp=2)"), oracle);
  REQUIRE(l.ok());
  CHECK_FALSE(find_node(*l, b.g, "causal_mask/Trilu"));
  CHECK_FALSE(find_node(*l, b.g, "causal_mask/ConstantOfShape"));
  // The attention pattern is one node; its ops all map onto it.
  const auto att = find_node(*l, b.g, "layers.0/attn/Softmax");
  REQUIRE(att);
  CHECK(att == find_node(*l, b.g, "layers.0/attn/scores/MatMul"));
  CHECK(l->problem.nodes[*att].name == "attention(layers.0/attn/scores/MatMul)");
}

TEST_CASE("a parameter read by two ops ties their layouts", "[search][lower]") {
  // Tied embedding: the token table [V,h] is gathered and, transposed
  // through Gemm(transB), used as the LM head.
  ModelBuilder b;
  const std::int64_t B = 4, h = 16, V = 64;
  auto ids = b.input("ids", {B}, core::DType::i64);
  auto labels = b.input("labels", {B}, core::DType::i64);
  auto table = b.param("wte", {V, h});
  auto x = b.op("emb", "Gather", {table, ids}, {B, h});
  auto y = b.op("relu", "Relu", {x}, {B, h});
  auto logits = b.op("head", "Gemm", {y, table}, {B, V}, {{"transB", std::int64_t{1}}});
  b.g.graph_outputs.push_back(b.op("loss", "SoftmaxCrossEntropyLoss", {logits, labels}, {}));
  b.finish();
  SimpleOracle oracle;
  auto l = lower_sharding(b.g, mesh("mesh(tp=4)"), oracle);
  REQUIRE(l.ok());
  const auto emb = *find_node(*l, b.g, "emb"), head = *find_node(*l, b.g, "head");
  const auto e = edge_between(*l, emb, head);
  REQUIRE(l->edge_uses[e].size() == 1);
  CHECK(l->edge_uses[e][0].tied);
  // Vocabulary-parallel embedding [tp,-] against a vocabulary-parallel head
  // (Gemm n = V, B transposed: [tp,-] too): the same layout, free.
  const auto ev = strategy_with(*l, emb, "tp:v"), hn = strategy_with(*l, head, "tp:n");
  const auto nh = l->nodes[head].sharding.strategies.size();
  CHECK(l->problem.edges[e].cost[ev * nh + hn].value == 0.0);
  // Against a replicated head: the table is gathered forward ([tp,-] ->
  // [-,-], 4096 B: 3/4*4096/1e11 + 3*5e-6) and sliced back for the gradient.
  const auto hr = strategy_with(*l, head, "");
  CHECK(l->problem.edges[e].cost[ev * nh + hr].value == Approx(0.75 * 4096 / 1e11 + 15e-6));
}
