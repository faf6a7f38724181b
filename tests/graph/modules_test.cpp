// Recompute modules (graph/analysis.hpp): which ops form a normalisation and
// an expert's activation, the units of --recompute-modules layernorm / moe_act.

#include <catch2/catch.hpp>

#include "graph/graph_builder.hpp"
#include "planner/graph/analysis.hpp"

using namespace planner;
using graph::OpClass;
using graph::TensorRole;

namespace {

struct Net {
  testing::GraphBuilder b;
  graph::OpId op(const std::string& name, const std::string& type, OpClass cls, std::vector<graph::TensorId> ins,
                 std::vector<graph::TensorId> outs) {
    const auto id = b.op(name, type, std::move(ins), std::move(outs));
    b.g.op(id).op_class = cls;
    return id;
  }
};

}  // namespace

TEST_CASE("recompute modules: a decomposed RMSNorm is one unit, the residual add is not", "[graph][modules]") {
  // x ─┬─ Mul(x,x) ─ ReduceMean ─ Add eps ─ Sqrt ─┐
  //    ├────────────────────────────────────────── Div ─ Mul w ─ y ─┬─ MatMul ─ a
  //    │                                                  (later) └─ Reshape ─ Gather (a MoE's dispatch)
  //    └─ Add(x, a): the residual also reads the MatMul's output
  Net n;
  auto& b = n.b;
  const auto x = b.tensor("x", {2, 8, 16}, TensorRole::input);
  const auto eps = b.tensor("eps", {}, TensorRole::constant);
  const auto w = b.param("w", {16});
  const auto wq = b.param("wq", {16, 16});
  auto t = [&](const char* name, std::vector<std::int64_t> s) { return b.tensor(name, std::move(s)); };
  const auto sq = t("sq", {2, 8, 16}), ms = t("ms", {2, 8, 1}), e = t("e", {2, 8, 1}), rms = t("rms", {2, 8, 1});
  const auto nrm = t("nrm", {2, 8, 16}), y = t("y", {2, 8, 16}), a = t("a", {2, 8, 16}), out = t("out", {2, 8, 16});
  std::vector<graph::OpId> norm{
      n.op("norm/Mul", "Mul", OpClass::elementwise, {x, x}, {sq}),
      n.op("norm/ReduceMean", "ReduceMean", OpClass::reduction, {sq}, {ms}),
      n.op("norm/Add", "Add", OpClass::elementwise, {ms, eps}, {e}),
      n.op("norm/Sqrt", "Sqrt", OpClass::elementwise, {e}, {rms}),
      n.op("norm/Div", "Div", OpClass::elementwise, {x, rms}, {nrm}),
      n.op("norm/Mul_1", "Mul", OpClass::elementwise, {nrm, w}, {y}),
  };
  const auto mm = n.op("q/MatMul", "MatMul", OpClass::matmul, {y, wq}, {a});
  const auto residual = n.op("residual", "Add", OpClass::elementwise, {x, a}, {out});
  // Read by a GEMM alone (a Shape reads no values), Transformer Engine fuses
  // the norm into it: no unit.
  const auto dims = b.tensor("dims", {3}, TensorRole::activation, core::DType::i64);
  n.op("dims/Shape", "Shape", OpClass::data_movement, {y}, {dims});
  graph::find_recompute_modules(b.g);
  for (auto o : norm) CHECK_FALSE(b.g.op(o).norm_unit);
  // Read through a view by a token gather as well (a MoE layer's pre-MLP
  // norm): a unit, Megatron's `layernorm` module.
  const auto idx = b.tensor("idx", {4}, TensorRole::constant, core::DType::i64);
  const auto flat = t("flat", {16, 16}), picked = t("picked", {4, 16});
  n.op("dispatch/Reshape", "Reshape", OpClass::data_movement, {y}, {flat});
  n.op("dispatch/Gather", "Gather", OpClass::data_movement, {flat, idx}, {picked});
  graph::find_recompute_modules(b.g);
  for (auto o : norm) {
    REQUIRE(b.g.op(o).norm_unit);
    CHECK(*b.g.op(o).norm_unit == *b.g.op(norm.front()).norm_unit);
    CHECK_FALSE(b.g.op(o).expert_act_unit);
  }
  CHECK_FALSE(b.g.op(mm).norm_unit);
  CHECK_FALSE(b.g.op(residual).norm_unit);
}

TEST_CASE("recompute modules: a norm op is its own unit, a mean over another axis is no norm", "[graph][modules]") {
  Net n;
  auto& b = n.b;
  const auto x = b.tensor("x", {2, 8, 16}, TensorRole::input);
  const auto g1 = b.param("g1", {16}), b1 = b.param("b1", {16});
  const auto y1 = b.tensor("y1", {2, 8, 16}), y2 = b.tensor("y2", {2, 8, 16}), m = b.tensor("m", {2, 1, 16});
  const auto ln = n.op("ln", "LayerNormalization", OpClass::normalization, {x, g1, b1}, {y1});
  const auto ln2 = n.op("ln2", "LayerNormalization", OpClass::normalization, {y1, g1, b1}, {y2});
  const auto pool = n.op("pool", "ReduceMean", OpClass::reduction, {y2}, {m});
  graph::find_recompute_modules(b.g);
  REQUIRE(b.g.op(ln).norm_unit);
  REQUIRE(b.g.op(ln2).norm_unit);
  CHECK(*b.g.op(ln).norm_unit != *b.g.op(ln2).norm_unit);
  CHECK_FALSE(b.g.op(pool).norm_unit);  // over the sequence axis: pooling, not a norm
  // The final norm (outside the layers) is no layer's module.
  b.g.op(ln2).outside_layers = true;
  graph::find_recompute_modules(b.g);
  CHECK(b.g.op(ln).norm_unit);
  CHECK_FALSE(b.g.op(ln2).norm_unit);
}

TEST_CASE("recompute modules: an expert's SwiGLU, not its output bias nor a dense activation", "[graph][modules]") {
  //  xe ─ gate MatMul ─ g ─┬─ Sigmoid ─ Mul(g, .) ─┐
  //                        └──────────┘            ├─ Mul ─ p ─ down MatMul ─ d ─ Add bias ─ o
  //  xe ─ up MatMul ─ u ─────────────────────────────┘
  //  x ─ dense MatMul ─ h ─ Relu ─ r (no expert)
  Net n;
  auto& b = n.b;
  const auto xe = b.tensor("xe", {4, 8}, TensorRole::input);
  const auto wg = b.param("wg", {8, 16}), wu = b.param("wu", {8, 16}), wd = b.param("wd", {16, 8});
  const auto bias = b.param("bias", {8}), wdense = b.param("wdense", {8, 8});
  auto t = [&](const char* name, std::vector<std::int64_t> s) { return b.tensor(name, std::move(s)); };
  const auto g = t("g", {4, 16}), u = t("u", {4, 16}), sg = t("sg", {4, 16}), silu = t("silu", {4, 16});
  const auto p = t("p", {4, 16}), d = t("d", {4, 8}), o = t("o", {4, 8}), h = t("h", {4, 8}), r = t("r", {4, 8});
  const std::string X = "layers.0/moe/experts.3";
  n.op(X + "/gate/MatMul", "MatMul", OpClass::matmul, {xe, wg}, {g});
  n.op(X + "/up/MatMul", "MatMul", OpClass::matmul, {xe, wu}, {u});
  std::vector<graph::OpId> act{
      n.op(X + "/act/Sigmoid", "Sigmoid", OpClass::elementwise, {g}, {sg}),
      n.op(X + "/act/Mul", "Mul", OpClass::elementwise, {g, sg}, {silu}),
      n.op(X + "/Mul", "Mul", OpClass::elementwise, {silu, u}, {p}),
  };
  n.op(X + "/down/MatMul", "MatMul", OpClass::matmul, {p, wd}, {d});
  const auto add = n.op(X + "/down/Add", "Add", OpClass::elementwise, {d, bias}, {o});
  n.op("dense/MatMul", "MatMul", OpClass::matmul, {xe, wdense}, {h});
  const auto relu = n.op("dense/Relu", "Relu", OpClass::elementwise, {h}, {r});
  graph::find_recompute_modules(b.g);
  for (auto a : act) {
    REQUIRE(b.g.op(a).expert_act_unit);
    CHECK(*b.g.op(a).expert_act_unit == *b.g.op(act.front()).expert_act_unit);
  }
  CHECK_FALSE(b.g.op(add).expert_act_unit);   // after the last GEMM
  CHECK_FALSE(b.g.op(relu).expert_act_unit);  // no expert
  CHECK_FALSE(b.g.op(relu).norm_unit);
}
