#include <catch2/catch.hpp>

#include <utility>

#include "graph/graph_builder.hpp"
#include "planner/graph/analysis.hpp"

using namespace planner;
using namespace planner::graph;
using planner::testing::GraphBuilder;

TEST_CASE("topological order sorts ops listed out of order", "[graph]") {
  GraphBuilder b;
  auto x = b.tensor("x", {2, 4}, TensorRole::input);
  auto y = b.tensor("y", {2, 4});
  auto z = b.tensor("z", {2, 4});
  b.op("second", "Relu", {y}, {z});  // reads y before it is produced
  b.op("first", "Relu", {x}, {y});
  auto order = b.g.topological_order();
  REQUIRE(order.ok());
  REQUIRE(order->size() == 2);
  CHECK(b.g.op((*order)[0]).name == "first");
  REQUIRE(b.g.sort_topologically().ok());
  CHECK(b.g.ops()[0].name == "first");
  CHECK(b.g.tensor(z).producer->value == 1);
  CHECK(b.g.tensor(y).consumers.front().value == 1);
}

TEST_CASE("a cycle is an error naming an op on it", "[graph]") {
  GraphBuilder b;
  auto x = b.tensor("x", {2}, TensorRole::input);
  auto a = b.tensor("a", {2});
  auto c = b.tensor("c", {2});
  auto d = b.tensor("d", {2});
  b.op("pre", "Relu", {x}, {d});
  b.op("loop_a", "Add", {d, c}, {a});
  b.op("loop_b", "Relu", {a}, {c});
  auto order = b.g.topological_order();
  REQUIRE_FALSE(order.ok());
  const auto& msg = order.error().message;
  CHECK(msg.find("cycle") != std::string::npos);
  CHECK((msg.find("loop_a") != std::string::npos || msg.find("loop_b") != std::string::npos));
}

TEST_CASE("totals count parameters and op kinds", "[graph]") {
  GraphBuilder b;
  auto x = b.tensor("x", {8, 16}, TensorRole::input);
  auto w = b.param("w", {16, 32});
  auto y = b.tensor("y", {8, 32});
  auto id = b.op("mm", "MatMul", {x, w}, {y});
  b.g.op(id).cost.forward_flops = Flops(2.0 * 8 * 16 * 32);
  b.g.op(id).cost.backward_flops = Flops(2 * 2.0 * 8 * 16 * 32);
  auto t = totals(b.g);
  CHECK(t.parameter_count == 16 * 32);           // 512
  CHECK(t.parameter_bytes.value == 512 * 4.0);   // f32: 2048 bytes
  CHECK(t.forward_flops.value == 8192.0);        // 2*8*16*32
  CHECK(t.training_flops.value == 3 * 8192.0);   // fwd + 2x bwd
  CHECK(t.activation_bytes.value == 8 * 32 * 4.0);
  CHECK(t.op_histogram.at("MatMul") == 1);
}

namespace {
// input -> [MatMul(w_i) -> Add(b_i) -> Relu] x layers -> ReduceMean
OpGraph mlp_chain(int layers, int width) {
  GraphBuilder b;
  auto cur = b.tensor("x", {4, width}, TensorRole::input);
  auto pre = b.tensor("x0", {4, width});
  b.op("pre", "Identity", {cur}, {pre});
  cur = pre;
  for (int l = 0; l < layers; ++l) {
    auto s = std::to_string(l);
    auto w = b.param("w" + s, {width, width});
    auto bias = b.param("b" + s, {width});
    auto m = b.tensor("m" + s, {4, width});
    auto a = b.tensor("a" + s, {4, width});
    auto r = b.tensor("r" + s, {4, width});
    b.op("mm" + s, "MatMul", {cur, w}, {m});
    b.op("add" + s, "Add", {m, bias}, {a});
    b.op("relu" + s, "Relu", {a}, {r});
    cur = r;
  }
  auto out = b.tensor("loss", {});
  b.op("loss", "ReduceMean", {cur}, {out});
  return std::move(b.g);
}
}  // namespace

TEST_CASE("repeated blocks: a chain of identical layers", "[graph][blocks]") {
  auto g = mlp_chain(6, 16);
  find_repeated_blocks(g);
  REQUIRE(g.blocks.size() == 1);
  CHECK(g.blocks[0].count == 6);
  CHECK(g.blocks[0].ops_per_block == 3);
  CHECK(g.blocks[0].signature == "MatMul,Add,Relu");
  CHECK(g.op(*g.find_op("mm0")).layer == 0);
  CHECK(g.op(*g.find_op("relu5")).layer == 5);
  CHECK_FALSE(g.op(*g.find_op("pre")).layer.has_value());
  CHECK_FALSE(g.op(*g.find_op("loss")).layer.has_value());
}

TEST_CASE("repeated blocks: two stages of different widths are separate runs", "[graph][blocks]") {
  GraphBuilder b;
  auto cur = b.tensor("x", {4, 8}, TensorRole::input);
  int k = 0;
  auto layer = [&](std::int64_t in, std::int64_t out) {
    auto s = std::to_string(k++);
    auto w = b.param("w" + s, {in, out});
    auto m = b.tensor("m" + s, {4, out});
    auto r = b.tensor("r" + s, {4, out});
    b.op("mm" + s, "MatMul", {cur, w}, {m});
    b.op("relu" + s, "Relu", {m}, {r});
    cur = r;
  };
  for (int i = 0; i < 3; ++i) layer(8, 8);
  layer(8, 32);  // transition
  for (int i = 0; i < 4; ++i) layer(32, 32);
  find_repeated_blocks(b.g);
  // Blocks: 3 copies at width 8, then 4 (the transition differs) at width 32.
  REQUIRE(b.g.blocks.size() == 2);
  CHECK(b.g.blocks[0].count == 3);
  CHECK(b.g.blocks[1].count == 4);
  CHECK(b.g.blocks[1].first_layer == 3);
}

TEST_CASE("repeated blocks need a parameter: shape chains are not layers", "[graph][blocks]") {
  GraphBuilder b;
  auto cur = b.tensor("x", {4, 8}, TensorRole::input);
  for (int i = 0; i < 5; ++i) {
    auto s = std::to_string(i);
    auto a = b.tensor("a" + s, {4, 8});
    auto r = b.tensor("r" + s, {4, 8});
    b.op("neg" + s, "Neg", {cur}, {a});
    b.op("relu" + s, "Relu", {a}, {r});
    cur = r;
  }
  find_repeated_blocks(b.g);
  CHECK(b.g.blocks.empty());
}

TEST_CASE("attention pattern: MatMul, scale, mask, Softmax, Dropout, MatMul", "[graph][attention]") {
  GraphBuilder b;
  // q [2,4,16,8], kT [2,4,8,16], v [2,4,16,8]: batch 2, heads 4, seq 16, head dim 8.
  auto q = b.tensor("q", {2, 4, 16, 8});
  auto kt = b.tensor("kT", {2, 4, 8, 16});
  auto v = b.tensor("v", {2, 4, 16, 8});
  auto scale = b.tensor("scale", {}, TensorRole::constant);
  auto mask = b.tensor("mask", {1, 1, 16, 16}, TensorRole::constant);
  auto s = b.tensor("s", {2, 4, 16, 16});
  auto sc = b.tensor("sc", {2, 4, 16, 16});
  auto sm = b.tensor("sm", {2, 4, 16, 16});
  auto p = b.tensor("p", {2, 4, 16, 16});
  auto pd = b.tensor("pd", {2, 4, 16, 16});
  auto ctx = b.tensor("ctx", {2, 4, 16, 8});
  b.op("qk", "MatMul", {q, kt}, {s});
  b.op("scale", "Div", {s, scale}, {sc});
  b.op("mask", "Add", {sc, mask}, {sm});
  b.op("softmax", "Softmax", {sm}, {p});
  b.op("drop", "Dropout", {p}, {pd});
  b.op("pv", "MatMul", {pd, v}, {ctx});
  find_attention(b.g);
  REQUIRE(b.g.fused.size() == 1);
  const auto& f = b.g.fused[0];
  CHECK(f.ops.size() == 6);
  CHECK(f.batch == 2);
  CHECK(f.heads == 4);
  CHECK(f.seq_q == 16);
  CHECK(f.seq_k == 16);
  CHECK(f.head_dim == 8);
  CHECK(f.head_dim_v == 8);
  // Kept score-sized tensors: s, sc, sm, p, pd = 5 * 2*4*16*16 * 4 bytes = 40960.
  CHECK(f.score_bytes.value == 40960.0);
  CHECK(b.g.op(*b.g.find_op("softmax")).fused_group == 0);
}

TEST_CASE("attention pattern: key/value heads of grouped-query attention", "[graph][attention]") {
  // x [2,16,32] -> k projection [32,8] -> [2,16,8] -> Reshape [2,16,2,4]
  // (2 kv heads of 4) -> Transpose [2,2,16,4] -> Unsqueeze [2,2,1,16,4]
  // -> Expand [2,2,4,16,4] -> Reshape [2,8,16,4] (8 query heads) -> Transpose
  // [2,8,4,16] -> scores. Walking back from K stops at the projection's
  // output: 2*16*8 = 256 elements over batch 2 x key length 16 x head dim 4
  // = 2 key/value heads. Without the repeats (K read straight from the
  // 8-head projection) the pattern has 8.
  GraphBuilder b;
  auto x = b.tensor("x", {2, 16, 32}, TensorRole::input);
  auto wk = b.param("wk", {32, 8});
  auto kp = b.tensor("kp", {2, 16, 8});
  auto k4 = b.tensor("k4", {2, 16, 2, 4});
  auto kt = b.tensor("kt", {2, 2, 16, 4});
  auto ku = b.tensor("ku", {2, 2, 1, 16, 4});
  auto ke = b.tensor("ke", {2, 2, 4, 16, 4});
  auto kr = b.tensor("kr", {2, 8, 16, 4});
  auto kT = b.tensor("kT", {2, 8, 4, 16});
  auto q = b.tensor("q", {2, 8, 16, 4});
  auto v = b.tensor("v", {2, 8, 16, 4});
  auto s = b.tensor("s", {2, 8, 16, 16});
  auto p = b.tensor("p", {2, 8, 16, 16});
  auto ctx = b.tensor("ctx", {2, 8, 16, 4});
  b.op("k_proj", "MatMul", {x, wk}, {kp});
  b.op("k_view", "Reshape", {kp}, {k4});
  b.op("k_heads", "Transpose", {k4}, {kt});
  b.op("k_unsq", "Unsqueeze", {kt}, {ku});
  b.op("k_expand", "Expand", {ku}, {ke});
  b.op("k_repeat", "Reshape", {ke}, {kr});
  b.op("k_t", "Transpose", {kr}, {kT});
  b.op("qk", "MatMul", {q, kT}, {s});
  b.op("softmax", "Softmax", {s}, {p});
  b.op("pv", "MatMul", {p, v}, {ctx});
  find_attention(b.g);
  REQUIRE(b.g.fused.size() == 1);
  CHECK(b.g.fused[0].heads == 8);
  CHECK(b.g.fused[0].kv_heads == 2);

  GraphBuilder m;
  auto q2 = m.tensor("q", {2, 8, 16, 4});
  auto k2 = m.tensor("k", {2, 16, 32});
  auto k2h = m.tensor("kh", {2, 16, 8, 4});
  auto k2T = m.tensor("kT", {2, 8, 4, 16});
  auto v2 = m.tensor("v", {2, 8, 16, 4});
  auto s2 = m.tensor("s", {2, 8, 16, 16});
  auto p2 = m.tensor("p", {2, 8, 16, 16});
  auto c2 = m.tensor("ctx", {2, 8, 16, 4});
  auto x2 = m.tensor("x", {2, 16, 32}, TensorRole::input);
  auto w2 = m.param("wk", {32, 32});
  m.op("k_proj", "MatMul", {x2, w2}, {k2});
  m.op("k_view", "Reshape", {k2}, {k2h});
  m.op("k_t", "Transpose", {k2h}, {k2T});
  m.op("qk", "MatMul", {q2, k2T}, {s2});
  m.op("softmax", "Softmax", {s2}, {p2});
  m.op("pv", "MatMul", {p2, v2}, {c2});
  find_attention(m.g);
  REQUIRE(m.g.fused.size() == 1);
  CHECK(m.g.fused[0].kv_heads == 8);
}

TEST_CASE("a Softmax without a score MatMul is not attention", "[graph][attention]") {
  GraphBuilder b;
  auto x = b.tensor("x", {4, 10}, TensorRole::input);
  auto y = b.tensor("y", {4, 10});
  b.op("softmax", "Softmax", {x}, {y});
  find_attention(b.g);
  CHECK(b.g.fused.empty());
}

TEST_CASE("topological order of ops already in order is their id order", "[graph]") {
  // x -> a (op 0) -> b (op 1) -> d (op 3); c (op 2) reads only x: Kahn
  // with ties by id takes 0, then 1 and 2 ready (1 first), then 2, then 3.
  GraphBuilder b;
  auto x = b.tensor("x", {2}, TensorRole::input);
  auto a = b.tensor("a", {2});
  auto bt = b.tensor("b", {2});
  auto c = b.tensor("c", {2});
  auto d = b.tensor("d", {2});
  b.op("op0", "Relu", {x}, {a});
  b.op("op1", "Relu", {a}, {bt});
  b.op("op2", "Relu", {x}, {c});
  b.op("op3", "Add", {bt, c}, {d});
  auto order = b.g.topological_order();
  REQUIRE(order.ok());
  REQUIRE(order->size() == 4);
  for (std::uint32_t i = 0; i < 4; ++i) CHECK((*order)[i].value == i);
  // An op reading its own output is still a cycle, named.
  GraphBuilder s;
  auto y = s.tensor("y", {2});
  s.op("self", "Relu", {y}, {y});
  auto bad = s.g.topological_order();
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("self") != std::string::npos);
}

namespace {
struct CountKey {
  int k = 0;
  friend bool operator==(const CountKey&, const CountKey&) = default;
};
}  // namespace

TEST_CASE("derived values are computed once per key and dropped when the graph changes", "[graph]") {
  GraphBuilder b;
  auto x = b.tensor("x", {2, 4}, TensorRole::input);
  auto y = b.tensor("y", {2, 4});
  b.op("r", "Relu", {x}, {y});
  int calls = 0;
  auto ops_plus = [&](int k) {
    ++calls;
    return static_cast<int>(b.g.num_ops()) + k;
  };
  const OpGraph& cg = b.g;
  CHECK(*cg.derived<CountKey, int>(CountKey{10}, [&] { return ops_plus(10); }) == 11);  // 1 op + 10
  CHECK(*cg.derived<CountKey, int>(CountKey{10}, [&] { return ops_plus(10); }) == 11);  // kept
  CHECK(calls == 1);
  CHECK(*cg.derived<CountKey, int>(CountKey{20}, [&] { return ops_plus(20); }) == 21);  // another key
  CHECK(calls == 2);
  // A copy shares what was computed until it changes.
  OpGraph copy = b.g;
  CHECK(*std::as_const(copy).derived<CountKey, int>(CountKey{10}, [&] { return -1; }) == 11);
  // Adding an op drops the kept values: 2 ops + 10.
  auto z = b.tensor("z", {2, 4});
  b.op("r2", "Relu", {y}, {z});
  CHECK(*cg.derived<CountKey, int>(CountKey{10}, [&] { return ops_plus(10); }) == 12);
  CHECK(calls == 3);
  // So does a mutable op access; the copy keeps its own.
  b.g.op(OpId{0}).name = "renamed";
  CHECK(*cg.derived<CountKey, int>(CountKey{10}, [&] { return ops_plus(10); }) == 12);
  CHECK(calls == 4);
  CHECK(*std::as_const(copy).derived<CountKey, int>(CountKey{10}, [&] { return -1; }) == 11);
}
