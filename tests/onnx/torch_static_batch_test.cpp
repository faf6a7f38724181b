// Static-batch, training-mode PyTorch/torchvision exports (models/torch/,
// made by tools/export_torch_models.py; weights dropped). torch writes the
// batch of 8 into every Reshape target, Expand shape and random mask, so
// rebinding has to find the batch by structure: through the Transposes and
// head split/merge Reshapes of nn.MultiheadAttention (batch second), past
// BatchNormalization's running statistics (batch-free), into the class token
// expanded to the batch and the stochastic-depth masks drawn at [8,1,1,1].
//
// For each export and three other batches n: the import is rebound, every
// tensor is static, the shapes agree op by op (broadcasts, concatenations,
// matrix products), and every op's FLOPs are its batch-8 FLOPs times n / 8
// when it reads or writes a batched tensor, unchanged otherwise; so the
// model's FLOPs are exactly affine in the batch.

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "planner/graph/graph.hpp"
#include "planner/onnx/importer.hpp"

namespace fs = std::filesystem;
using planner::graph::OpGraph;
using Shape = std::vector<std::int64_t>;

namespace {

constexpr std::int64_t kExportBatch = 8;

struct StaticExport {
  const char* file;
  /// Trainable floats of the export: torch's parameter count (sum of numel
  /// over parameters()), except where constant folding rewrote parameters.
  std::int64_t params;
};

const std::vector<StaticExport>& static_exports() {
  static const std::vector<StaticExport> all = {
      {"resnet50_b8_train.onnx", 25'557'032},
      {"vit_b_16_b8_train.onnx", 86'567'656},
      // torch counts 28,288,354; constant folding (on, as by default, in
      // training mode) replaced each block's relative-position bias table
      // [169, heads] by its gather [2401, heads]: 12 blocks of 3+3+6+6+6x12+24+24
      // = 138 heads in all, (2401 - 169) x 138 = 308,016 more floats.
      {"swin_t_b8_train.onnx", 28'596'370},
      {"convnext_tiny_b8_train.onnx", 28'589'128},
      {"efficientnet_b0_b8_train.onnx", 5'288'548},
      {"mobilenet_v3_large_b8_train.onnx", 5'483'032},
      {"mha_encoder_b8_train.onnx", 1'838'090},
  };
  return all;
}

fs::path model_path(const char* file) { return fs::path(PLANNER_SOURCE_DIR) / "models" / "torch" / file; }

planner::onnx::ImportedModel import_at(const char* file, std::optional<std::int64_t> batch) {
  planner::onnx::ImportOptions o;
  o.batch = batch;
  auto r = planner::onnx::import_file(model_path(file), o);
  if (!r.ok()) FAIL(r.error().message);
  return std::move(*r);
}

bool touches_batch(const OpGraph& g, const planner::graph::Op& op) {
  for (const auto& t : op.inputs)
    if (t && g.tensor(*t).batch_axis) return true;
  for (const auto& t : op.outputs)
    if (t && g.tensor(*t).batch_axis) return true;
  return false;
}

/// Numpy broadcasting; empty optional when the shapes do not broadcast.
std::optional<Shape> broadcast(const std::vector<Shape>& ins) {
  Shape out;
  for (const auto& s : ins) {
    if (s.size() > out.size()) out.insert(out.begin(), s.size() - out.size(), 1);
    for (std::size_t k = 0; k < s.size(); ++k) {
      auto& o = out[out.size() - s.size() + k];
      if (s[k] == o || s[k] == 1) continue;
      if (o != 1) return std::nullopt;
      o = s[k];
    }
  }
  return out;
}

/// The first op whose shapes disagree (a tensor left at the export's batch
/// next to a rebound one), or "" when all agree.
std::string inconsistent_op(const OpGraph& g) {
  for (const auto& op : g.ops()) {
    std::vector<Shape> ins;
    for (const auto& t : op.inputs)
      if (t) ins.push_back(g.tensor(*t).shape);
    if (op.outputs.empty() || !op.outputs[0]) continue;
    const Shape& out = g.tensor(*op.outputs[0]).shape;
    if (op.type == "Add" || op.type == "Sub" || op.type == "Mul" || op.type == "Div" || op.type == "Where" ||
        op.type == "Pow") {
      auto b = broadcast(ins);
      if (!b || *b != out) return op.name;
    } else if (op.type == "Concat") {
      auto axis = op.attr_int("axis").value_or(0);
      if (axis < 0) axis += static_cast<std::int64_t>(out.size());
      std::int64_t sum = 0;
      for (const auto& s : ins) {
        if (s.size() != out.size()) return op.name;
        for (std::size_t k = 0; k < s.size(); ++k)
          if (static_cast<std::int64_t>(k) != axis && s[k] != out[k]) return op.name;
        sum += s[static_cast<std::size_t>(axis)];
      }
      if (sum != out[static_cast<std::size_t>(axis)]) return op.name;
    } else if (op.type == "MatMul" && ins.size() == 2 && ins[0].size() >= 2 && ins[1].size() >= 2) {
      if (ins[0].back() != ins[1][ins[1].size() - 2]) return op.name;
    } else if (op.type == "Reshape" || op.type == "Transpose" || op.type == "Flatten") {
      std::int64_t a = 1, b = 1;
      for (auto d : ins[0]) a *= d;
      for (auto d : out) b *= d;
      if (a != b) return op.name;
    }
  }
  return "";
}

}  // namespace

TEST_CASE("torch static-batch exports: static, training mode, torch's parameters", "[onnx][torch]") {
  for (const auto& e : static_exports()) DYNAMIC_SECTION(e.file) {
    auto m = import_at(e.file, std::nullopt);
    CHECK(m.report.static_batch == kExportBatch);
    CHECK_FALSE(m.report.batch_rebound);
    CHECK(planner::graph::totals(m.graph).parameter_count == e.params);
    REQUIRE(!m.graph.graph_inputs.empty());
    CHECK(m.graph.tensor(m.graph.graph_inputs[0]).shape[0] == kExportBatch);
    CHECK(inconsistent_op(m.graph).empty());
  }
}

TEST_CASE("torch static-batch exports rebind to three other batches, FLOPs linear in the batch",
          "[onnx][torch]") {
  for (const auto& e : static_exports()) DYNAMIC_SECTION(e.file) {
    const auto base = import_at(e.file, std::nullopt);
    const auto& g0 = base.graph;
    for (std::int64_t n : {3, 5, 12}) {
      INFO("batch " << n);
      const auto m = import_at(e.file, n);
      const auto& g = m.graph;
      std::string notes;
      for (const auto& x : m.report.notes) notes += x + "; ";
      INFO("notes: " << notes);
      REQUIRE(m.report.batch_rebound);
      REQUIRE(g.num_ops() == g0.num_ops());
      REQUIRE(g.num_tensors() == g0.num_tensors());
      CHECK(g.tensor(g.graph_inputs[0]).shape[0] == n);
      std::string dynamic;
      for (const auto& t : g.tensors())
        for (auto d : t.shape)
          if (d < 0 && dynamic.empty()) dynamic = t.name;
      CHECK(dynamic.empty());
      CHECK(inconsistent_op(g) == "");
      // Per op: scaled by n / 8 exactly where the batch is, unchanged elsewhere.
      std::string off;
      double batched = 0, fixed = 0;
      for (std::size_t i = 0; i < g.num_ops(); ++i) {
        const auto& op = g.ops()[i];
        const double f0 = g0.ops()[i].cost.forward_flops.value + g0.ops()[i].cost.backward_flops.value;
        const double f = op.cost.forward_flops.value + op.cost.backward_flops.value;
        const bool scales = touches_batch(g, op);
        const double want = scales ? f0 / kExportBatch * static_cast<double>(n) : f0;
        if (f != Approx(want).epsilon(1e-12) && off.empty()) off = op.name;
        (scales ? batched : fixed) += f0;
      }
      INFO("first op whose FLOPs do not follow the batch: " << off);
      CHECK(off.empty());
      // Almost all the work follows the batch (weights-only ops are the rest).
      CHECK(batched > 100 * fixed);
      const double t0 = planner::graph::totals(g0).training_flops.value;
      const double t = planner::graph::totals(g).training_flops.value;
      CHECK(t == Approx(fixed + batched / kExportBatch * static_cast<double>(n)).epsilon(1e-12));
      CHECK(t != Approx(t0));
    }
  }
}
