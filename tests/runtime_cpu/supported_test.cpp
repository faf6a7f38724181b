// check_supported: the op variants the kernels lack are refused up front
// (before a forward), naming the op, its type and the input or output, by
// check_supported, Interpreter::create and forward_op alike.
#include <catch2/catch.hpp>

#include "../graph/graph_builder.hpp"
#include "planner/runtime_cpu/interpreter.hpp"
#include "planner/runtime_cpu/op_kernels.hpp"

using namespace planner;
using namespace planner::runtime_cpu;

namespace {

/// x [2,4] -> LayerNormalization(w, b) -> y -> SoftmaxCrossEntropyLoss(y,
/// labels) -> loss: the tiny graph every case edits one op of.
struct TinyLossGraph {
  testing::GraphBuilder b;
  graph::OpId ln, loss;

  TinyLossGraph() {
    const auto x = b.tensor("x", {2, 4}, graph::TensorRole::input);
    const auto w = b.param("ln.weight", {4});
    const auto bias = b.param("ln.bias", {4});
    const auto y = b.tensor("y", {2, 4});
    const auto labels = b.tensor("labels", {2}, graph::TensorRole::input, core::DType::i64);
    const auto l = b.tensor("loss", {});
    ln = b.op("ln", "LayerNormalization", {x, w, bias}, {y});
    loss = b.op("xent", "SoftmaxCrossEntropyLoss", {y, labels}, {l});
    b.g.graph_outputs.push_back(l);
  }
  graph::Op& op(graph::OpId id) { return b.g.op(id); }
  void add_output(graph::OpId id, const std::string& name, std::vector<std::int64_t> shape) {
    op(id).outputs.emplace_back(b.tensor(name, std::move(shape)));
  }
  std::string refusal(graph::OpId id) {
    const auto st = check_supported(b.g.op(id));
    return st.ok() ? "supported" : st.error().message;
  }
};

}  // namespace

TEST_CASE("check_supported accepts the variants the kernels run", "[runtime_cpu][supported]") {
  TinyLossGraph t;
  CHECK(t.refusal(t.ln) == "supported");
  CHECK(t.refusal(t.loss) == "supported");
  CHECK(is_supported(t.op(t.ln)));
  // An omitted optional input (the bias) is fine.
  t.op(t.ln).inputs[2] = std::nullopt;
  CHECK(t.refusal(t.ln) == "supported");
  // reduction=mean spelled out, and an ignore_index, are run.
  t.op(t.loss).attrs["reduction"] = std::string("mean");
  t.op(t.loss).attrs["ignore_index"] = std::int64_t{-100};
  CHECK(t.refusal(t.loss) == "supported");
  REQUIRE(Interpreter::create(t.b.g, InterpreterOptions{}).ok());
}

TEST_CASE("check_supported refuses LayerNormalization's Mean and InvStdDev outputs", "[runtime_cpu][supported]") {
  TinyLossGraph t;
  t.add_output(t.ln, "ln.mean", {2, 1});
  CHECK_FALSE(is_supported(t.op(t.ln)));
  CHECK(t.refusal(t.ln) ==
        "op 'ln' (LayerNormalization): output 1 (Mean) is not implemented (the kernels compute output 0, Y, only)");
  // Only InvStdDev (Mean's name left empty): output 2 is named.
  t.op(t.ln).outputs[1] = std::nullopt;
  t.add_output(t.ln, "ln.inv_std_dev", {2, 1});
  CHECK(t.refusal(t.ln) ==
        "op 'ln' (LayerNormalization): output 2 (InvStdDev) is not implemented (the kernels compute output 0, Y, "
        "only)");
  // Refused before anything runs, with the same line.
  auto it = Interpreter::create(t.b.g, InterpreterOptions{});
  REQUIRE_FALSE(it.ok());
  CHECK(it.error().message == t.refusal(t.ln));
}

TEST_CASE("check_supported refuses class weights, log_prob and other reductions of the loss",
          "[runtime_cpu][supported]") {
  SECTION("class weights (input 2)") {
    TinyLossGraph t;
    t.op(t.loss).inputs.emplace_back(t.b.param("class_weights", {4}));
    CHECK(t.refusal(t.loss) == "op 'xent' (SoftmaxCrossEntropyLoss): input 2 (class weights) is not implemented");
    auto it = Interpreter::create(t.b.g, InterpreterOptions{});
    REQUIRE_FALSE(it.ok());
    CHECK(it.error().message == t.refusal(t.loss));
  }
  SECTION("an omitted weights input is fine") {
    TinyLossGraph t;
    t.op(t.loss).inputs.emplace_back(std::nullopt);
    CHECK(t.refusal(t.loss) == "supported");
  }
  SECTION("the log_prob output") {
    TinyLossGraph t;
    t.add_output(t.loss, "log_prob", {2, 4});
    CHECK(t.refusal(t.loss) ==
          "op 'xent' (SoftmaxCrossEntropyLoss): output 1 (log_prob) is not implemented (the kernels compute the loss "
          "only)");
  }
  SECTION("reduction=sum") {
    TinyLossGraph t;
    t.op(t.loss).attrs["reduction"] = std::string("sum");
    CHECK(t.refusal(t.loss) == "op 'xent' (SoftmaxCrossEntropyLoss): reduction 'sum' is not implemented (mean only)");
  }
}

TEST_CASE("check_supported refuses an omitted output and an unknown type or domain", "[runtime_cpu][supported]") {
  TinyLossGraph t;
  t.op(t.ln).outputs.emplace_back(std::nullopt);
  CHECK(t.refusal(t.ln) ==
        "op 'ln' (LayerNormalization): output 1 is omitted (an empty name), which the interpreters do not support");
  graph::Op conv;
  conv.name = "c";
  conv.type = "Conv";
  CHECK(check_supported(conv).error().message == "op 'c' (Conv): no CPU kernel for this op type");
  graph::Op ms = t.op(t.loss);
  ms.domain = "com.microsoft";
  CHECK(check_supported(ms).error().message ==
        "op 'xent' (com.microsoft:SoftmaxCrossEntropyLoss): no CPU kernel for this op type");
}

TEST_CASE("forward_op refuses an unsupported variant too (a caller that skipped check_supported)",
          "[runtime_cpu][supported]") {
  TinyLossGraph t;
  t.add_output(t.ln, "ln.mean", {2, 1});
  const Value x = Tensor(Shape{2, 4}), w = Tensor(Shape{4});
  // One output asked for: the op's own outputs decide, not the specs.
  auto y = forward_op(t.op(t.ln), {&x, &w, nullptr}, {OutputSpec{{2, 4}}});
  REQUIRE_FALSE(y.ok());
  CHECK(y.error().message == t.refusal(t.ln));
}
