// If / Loop / Scan: shapes through subgraphs, and the control-flow op costed
// as its subgraph (If: the costlier branch; Loop: body x trip count).
#include <catch2/catch.hpp>

#include "onnx/model_builder.hpp"
#include "planner/graph/graph.hpp"

using namespace planner;
using namespace planner::testing;
namespace importer = planner::onnx;

namespace {

using Shape = std::vector<std::int64_t>;

const graph::Op& op_named(const importer::ImportedModel& m, const std::string& name) {
  auto id = m.graph.find_op(name);
  REQUIRE(id.has_value());
  return m.graph.op(*id);
}

std::vector<std::int64_t> shape_of(const importer::ImportedModel& m, const std::string& name) {
  auto id = m.graph.find_tensor(name);
  REQUIRE(id.has_value());
  return m.graph.tensor(*id).shape;
}

double forward_flops(const importer::ImportedModel& m) { return graph::totals(m.graph).forward_flops.value; }

}  // namespace

TEST_CASE("If: outputs shaped by the branches, cost of the costlier branch", "[onnx][control]") {
  GraphBuilder then_g;
  then_g.node("MatMul", {"x", "W"}, {"t1"});
  then_g.node("Relu", {"t1"}, {"t_out"});
  then_g.output("t_out");
  GraphBuilder else_g;
  else_g.node("Concat", {"x", "x", "x", "x"}, {"e_out"}).attr("axis", 1);
  else_g.output("e_out");

  ModelBuilder m;
  m.input("x", kF32, {2, 4}).input("cond", kBool, {}).init_f32("W", {4, 16});
  m.node("If", {"cond"}, {"y"}, "branch").attr("then_branch", then_g.proto()).attr("else_branch", else_g.proto());
  m.output("y");
  auto r = import_model(m);
  REQUIRE(r.ok());
  CHECK(shape_of(*r, "y") == Shape{2, 16});
  const auto& op = op_named(*r, "branch");
  CHECK(op.op_class == graph::OpClass::control_flow);
  // W is read only inside the branch, yet it is a parameter of the model.
  CHECK(graph::totals(r->graph).parameter_count == 64);

  ModelBuilder flat;
  flat.input("x", kF32, {2, 4}).init_f32("W", {4, 16});
  flat.node("MatMul", {"x", "W"}, {"t1"});
  flat.node("Relu", {"t1"}, {"t_out"});
  flat.output("t_out");
  auto rf = import_model(flat);
  REQUIRE(rf.ok());
  CHECK(op.cost.forward_flops.value == Approx(forward_flops(*rf)));
  CHECK(op.cost.forward_flops.value >= 2.0 * 2 * 4 * 16);
}

TEST_CASE("Loop with a static trip count: scan outputs stacked, cost = body x count", "[onnx][control]") {
  GraphBuilder body;
  body.input("iter", kI64, {}).input("cond_in", kBool, {}).input("v_in", kF32, {2, 4});
  body.node("MatMul", {"v_in", "W"}, {"v_out"});
  body.node("Identity", {"cond_in"}, {"cond_out"});
  body.node("Relu", {"v_out"}, {"s_out"});
  body.output("cond_out").output("v_out").output("s_out");

  ModelBuilder m;
  m.input("x", kF32, {2, 4}).init_f32("W", {4, 4}).init_i64("M", {}, {5});
  pb::TensorProto t;
  t.set_name("keep_going");
  t.set_data_type(kBool);
  t.add_int32_data(1);
  m.init(t);
  m.node("Loop", {"M", "keep_going", "x"}, {"v_final", "scanned"}, "loop").attr("body", body.proto());
  m.output("v_final").output("scanned");
  auto r = import_model(m);
  REQUIRE(r.ok());
  CHECK(shape_of(*r, "v_final") == Shape{2, 4});
  CHECK(shape_of(*r, "scanned") == Shape{5, 2, 4});
  const auto& op = op_named(*r, "loop");
  CHECK(op.op_class == graph::OpClass::control_flow);

  ModelBuilder once;
  once.input("v_in", kF32, {2, 4}).input("cond_in", kBool, {}).init_f32("W", {4, 4});
  once.node("MatMul", {"v_in", "W"}, {"v_out"});
  once.node("Identity", {"cond_in"}, {"cond_out"});
  once.node("Relu", {"v_out"}, {"s_out"});
  once.output("cond_out").output("s_out");
  auto r1 = import_model(once);
  REQUIRE(r1.ok());
  CHECK(op.cost.forward_flops.value == Approx(5 * forward_flops(*r1)));
  CHECK(op.cost.forward_flops.value >= 5 * 2.0 * 2 * 4 * 4);

  SECTION("without a known trip count the import fails naming the op") {
    ModelBuilder n;
    n.input("x", kF32, {2, 4}).input("go", kBool, {}).init_f32("W", {4, 4});
    n.node("Loop", {"", "go", "x"}, {"v_final", "scanned"}, "open_loop").attr("body", body.proto());
    n.output("v_final").output("scanned");
    auto rn = import_model(n);
    REQUIRE_FALSE(rn.ok());
    CHECK(rn.error().message.find("'open_loop'") != std::string::npos);
    CHECK(rn.error().message.find("trip count") != std::string::npos);
  }
}

TEST_CASE("Scan: state and scan outputs, cost = body x sequence length", "[onnx][control]") {
  GraphBuilder body;
  body.input("acc_in", kF32, {4}).input("row", kF32, {4});
  body.node("Add", {"acc_in", "row"}, {"acc_out"});
  body.node("Mul", {"row", "row"}, {"sq"});
  body.output("acc_out").output("sq");

  ModelBuilder m;
  m.input("init", kF32, {4}).input("seq", kF32, {7, 4});
  m.node("Scan", {"init", "seq"}, {"final", "squares"}, "scan").attr("body", body.proto()).attr("num_scan_inputs", 1);
  m.output("final").output("squares");
  auto r = import_model(m);
  REQUIRE(r.ok());
  CHECK(shape_of(*r, "final") == Shape{4});
  CHECK(shape_of(*r, "squares") == Shape{7, 4});
  CHECK(op_named(*r, "scan").op_class == graph::OpClass::control_flow);
}
