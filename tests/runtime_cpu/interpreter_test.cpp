// The interpreter on tiny models written by modelgen and imported by the
// ONNX importer: full-model gradients against finite differences of the
// loss, and a loss that falls under a few optimizer steps.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "planner/modelgen/modelgen.hpp"
#include "planner/onnx/importer.hpp"
#include "planner/runtime_cpu/interpreter.hpp"
#include "planner/runtime_cpu/rng.hpp"

using namespace planner;
using namespace planner::runtime_cpu;

namespace {

graph::OpGraph tiny_graph(const modelgen::ModelSpec& spec, std::int64_t* parameter_count = nullptr) {
  auto built = modelgen::build(spec, "tiny.onnx.data");
  REQUIRE(built.ok());
  if (parameter_count) *parameter_count = built->parameter_count;
  auto imported = onnx::import_bytes(built->bytes, modelgen::arch_name(spec.arch),
                                     std::filesystem::temp_directory_path(), onnx::ImportOptions{});
  if (!imported.ok()) FAIL(imported.error().message);
  return std::move(imported->graph);
}

modelgen::ModelSpec tiny(modelgen::Arch arch) {
  modelgen::ModelSpec s;
  s.arch = arch;
  s.layers = 2;
  s.hidden = 8;
  s.heads = 2;
  s.ffn = 16;
  s.seq = 4;
  s.vocab = 11;
  s.batch = 2;
  s.width = 6;
  if (arch == modelgen::Arch::llama) s.kv_heads = 1;  // GQA: k/v heads repeated
  return s;
}

/// Checks d loss / d p for a few elements of every parameter p: the element
/// with the largest analytic gradient and two drawn at random.
///
/// Tolerance: the loss is fp32 after ~100 ops, so it carries rounding noise
/// of a few 1e-7 relative (loss ~ 2.5: ~1e-6 absolute); with eps = 1e-2 that
/// is ~5e-5 in the difference quotient, and truncation eps^2/6 |L'''| is
/// ~2e-5 for third derivatives of order 1. |analytic - fd| <= 5e-4 + 2e-2
/// |fd| leaves a 10x margin; a wrong backward rule is off by O(|g|), and
/// the largest gradients checked are ~1e-1 (asserted below), so it fails.
void check_model_gradients(const modelgen::ModelSpec& spec) {
  std::int64_t parameter_count = 0;
  const graph::OpGraph g = tiny_graph(spec, &parameter_count);
  auto it = Interpreter::create(g, InterpreterOptions{11, 0.3f, true});
  if (!it.ok()) FAIL(it.error().message);
  auto loss0 = it->forward();
  if (!loss0.ok()) FAIL(loss0.error().message);
  auto grads = it->backward();
  if (!grads.ok()) FAIL(grads.error().message);
  const double eps = 1e-2;
  double largest = 0.0;
  std::int64_t trained = 0;
  for (const auto& name : it->parameter_names()) {
    Tensor* p = it->parameter(name);
    const Tensor& gr = grads->at(name);
    REQUIRE(gr.shape == p->shape);
    trained += p->size();
    std::vector<std::int64_t> picks;
    std::int64_t best = 0;
    for (std::int64_t k = 1; k < gr.size(); ++k)
      if (std::abs(gr[k]) > std::abs(gr[best])) best = k;
    picks.push_back(best);
    const IndexTensor r = uniform_indices(5, name, {2}, p->size());
    picks.insert(picks.end(), r.data.begin(), r.data.end());
    for (std::int64_t k : picks) {
      const float keep = (*p)[k];
      (*p)[k] = static_cast<float>(keep + eps);
      auto up = it->forward();
      (*p)[k] = static_cast<float>(keep - eps);
      auto down = it->forward();
      (*p)[k] = keep;
      REQUIRE(up.ok());
      REQUIRE(down.ok());
      const double fd = (*up - *down) / (2 * eps), an = gr[k];
      INFO(name << "[" << k << "]: analytic " << an << " vs finite difference " << fd);
      CHECK(std::abs(an - fd) <= 5e-4 + 2e-2 * std::abs(fd));
      largest = std::max(largest, std::abs(an));
      
    }
  }
  // Every weight modelgen declares is trained (and nothing else).
  CHECK(trained == parameter_count);
  CHECK(largest > 0.05);  // the check above compares real gradients, not zeros
}

}  // namespace

TEST_CASE("interpreter gradients match finite differences: mlp", "[runtime_cpu][interpreter]") {
  check_model_gradients(tiny(modelgen::Arch::mlp));
}

TEST_CASE("interpreter gradients match finite differences: gpt", "[runtime_cpu][interpreter]") {
  check_model_gradients(tiny(modelgen::Arch::gpt));
}

TEST_CASE("interpreter gradients match finite differences: llama", "[runtime_cpu][interpreter]") {
  check_model_gradients(tiny(modelgen::Arch::llama));
}

TEST_CASE("interpreter gradients match finite differences: bert", "[runtime_cpu][interpreter]") {
  check_model_gradients(tiny(modelgen::Arch::bert));
}

TEST_CASE("the loss falls over a few SGD and AdamW steps", "[runtime_cpu][interpreter]") {
  const graph::OpGraph g = tiny_graph(tiny(modelgen::Arch::gpt));
  for (const OptimizerConfig& opt : {OptimizerConfig{SgdConfig{0.5f, 0.0f, 0.0f}},
                                     OptimizerConfig{AdamWConfig{0.01f, 0.9f, 0.999f, 1e-8f, 0.0f}}}) {
    auto it = Interpreter::create(g, InterpreterOptions{3, 0.3f, false});
    REQUIRE(it.ok());
    std::vector<double> losses;
    for (int step = 0; step < 5; ++step) {
      auto r = it->train_step(opt);
      if (!r.ok()) FAIL(r.error().message);
      losses.push_back(r->loss);
    }
    INFO("losses " << losses[0] << " " << losses[1] << " " << losses[2] << " " << losses[3] << " " << losses[4]);
    // Same batch every step and a small enough step: each step lowers the loss.
    for (std::size_t k = 1; k < losses.size(); ++k) CHECK(losses[k] < losses[k - 1]);
  }
}

TEST_CASE("the mlp loss equals the same model written as loops", "[runtime_cpu][interpreter]") {
  // mlp: y = relu(x W0 + b0) W1 + b1, loss = mean((y - t)^2); B = 2, width 6.
  const graph::OpGraph g = tiny_graph(tiny(modelgen::Arch::mlp));
  const InterpreterOptions opt{4, 0.3f, true};
  auto it = Interpreter::create(g, opt);
  REQUIRE(it.ok());
  auto loss = it->forward();
  REQUIRE(loss.ok());
  const Tensor x = normal_tensor(opt.seed, "inputs", {2, 6}, 0.0f, 1.0f);
  const Tensor t = normal_tensor(opt.seed, "targets", {2, 6}, 0.0f, 1.0f);
  const Tensor& w0 = *it->parameter("layers.0.fc.weight");
  const Tensor& b0 = *it->parameter("layers.0.fc.bias");
  const Tensor& w1 = *it->parameter("layers.1.fc.weight");
  const Tensor& b1 = *it->parameter("layers.1.fc.bias");
  double sum = 0.0;
  for (int r = 0; r < 2; ++r) {
    double h[6];
    for (int j = 0; j < 6; ++j) {
      double a = b0[j];
      for (int k = 0; k < 6; ++k) a += static_cast<double>(x[r * 6 + k]) * w0[k * 6 + j];
      h[j] = a > 0 ? a : 0;
    }
    for (int j = 0; j < 6; ++j) {
      double y = b1[j];
      for (int k = 0; k < 6; ++k) y += h[k] * w1[k * 6 + j];
      sum += (y - t[r * 6 + j]) * (y - t[r * 6 + j]);
    }
  }
  CHECK(*loss == Approx(sum / 12.0).epsilon(1e-5));
}

TEST_CASE("a train step returns the weights the optimizer wrote", "[runtime_cpu][interpreter]") {
  const graph::OpGraph g = tiny_graph(tiny(modelgen::Arch::mlp));
  auto it = Interpreter::create(g, InterpreterOptions{4, 0.3f, false});
  REQUIRE(it.ok());
  const Tensor before = *it->parameter("layers.1.fc.weight");
  auto r = it->train_step(SgdConfig{0.1f, 0.0f, 0.0f});
  REQUIRE(r.ok());
  REQUIRE(r->weights.size() == 4);  // 2 layers x (weight, bias)
  const Tensor& after = r->weights.at("layers.1.fc.weight");
  const Tensor& grad = r->gradients.at("layers.1.fc.weight");
  // Plain SGD: w' = w - 0.1 g, element by element.
  for (std::int64_t k = 0; k < after.size(); ++k) CHECK(after[k] == Approx(before[k] - 0.1f * grad[k]));
  CHECK(it->parameter("layers.1.fc.weight")->data == after.data);
}

TEST_CASE("interpreter draws the same numbers for the same seed", "[runtime_cpu][interpreter]") {
  const graph::OpGraph g = tiny_graph(tiny(modelgen::Arch::gpt));
  auto a = Interpreter::create(g, InterpreterOptions{9, 0.02f, false});
  auto b = Interpreter::create(g, InterpreterOptions{9, 0.02f, false});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  auto la = a->forward(), lb = b->forward();
  REQUIRE(la.ok());
  REQUIRE(lb.ok());
  CHECK(*la == *lb);
  // Tiny weights: logits near 0, so the loss is near ln(vocab) = ln 11 = 2.398.
  CHECK(*la == Approx(std::log(11.0)).margin(0.05));
  // The weights are the RNG's tensors by name: norm scales ones, biases zeros.
  CHECK(a->parameter("final_ln.weight")->data == std::vector<float>(8, 1.0f));
  CHECK(a->parameter("layers.0.attn.qkv.bias")->data == std::vector<float>(24, 0.0f));
  CHECK(a->parameter("lm_head.weight")->data == normal_tensor(9, "lm_head.weight", {8, 11}, 0.0f, 0.02f).data);
}

TEST_CASE("the importer keeps small constants for the interpreter", "[runtime_cpu][interpreter]") {
  const graph::OpGraph g = tiny_graph(tiny(modelgen::Arch::gpt));
  auto pos = g.find_tensor("position_ids");
  REQUIRE(pos);
  const auto& v = g.tensor(*pos).values;
  REQUIRE(v);
  CHECK_FALSE(v->is_float);
  CHECK(v->ints == std::vector<std::int64_t>{0, 1, 2, 3});
  // Weights are external data: no values.
  CHECK_FALSE(g.tensor(*g.find_tensor("lm_head.weight")).values);
}

TEST_CASE("interpreter refuses ops without a kernel, naming the op", "[runtime_cpu][interpreter]") {
  modelgen::ModelSpec s;
  s.arch = modelgen::Arch::resnet;
  s.image = 32;
  s.classes = 4;
  const graph::OpGraph g = tiny_graph(s);
  auto it = Interpreter::create(g, InterpreterOptions{});
  REQUIRE_FALSE(it.ok());
  CHECK(it.error().message == "op 'conv1/Conv' (Conv): no CPU kernel for this op type");
}
