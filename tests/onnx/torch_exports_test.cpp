// Real PyTorch/torchvision exports (models/torch/, made by
// tools/export_torch_models.py; weights dropped, see models/torch/README.md).
//
// For each export:
//  a. the ModelProto holds what the importer must handle: dynamic dim_params
//     and, for ViT and the BERT-like model, Shape->Gather->(Unsqueeze)->
//     Concat->Reshape chains;
//  b. ONNX's own shape inference (no data propagation), with the symbolic
//     dims bound, leaves those Reshape outputs without a static shape, so it
//     is the importer's own propagation that makes them static;
//  c. the importer, with --batch/--dim bound, gives every tensor a static
//     shape and counts the parameters torch reports.

#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "planner/graph/graph.hpp"
#include "planner/onnx/importer.hpp"

namespace fs = std::filesystem;

namespace {

struct TorchExport {
  const char* file;
  /// dim_param -> value used to bind the graph inputs.
  std::map<std::string, std::int64_t> bind;
  /// Parameter count torch reports (sum of numel over model.parameters()).
  std::int64_t params;
  /// Whether the export must hold a Shape->Gather->Concat->Reshape chain.
  bool needs_chain;
  /// Shape of the graph output "output" once bound.
  std::vector<std::int64_t> output_shape;
};

const std::vector<TorchExport>& exports() {
  static const std::vector<TorchExport> all = {
      {"resnet50.onnx", {{"batch", 8}}, 25'557'032, false, {8, 1000}},
      {"vit_b16.onnx", {{"batch", 8}}, 86'567'656, true, {8, 1000}},
      {"bert_like.onnx", {{"batch", 8}, {"seq", 128}}, 3'869'928, true, {8, 128, 1000}},
  };
  return all;
}

fs::path model_path(const TorchExport& e) {
  return fs::path(PLANNER_SOURCE_DIR) / "models" / "torch" / e.file;
}

onnx::ModelProto load_proto(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream ss;
  ss << in.rdbuf();
  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(ss.str()));
  return m;
}

/// Reshape (or Flatten) nodes whose shape input is a Concat one of whose
/// inputs is Gather(Shape(x)), directly or through one Unsqueeze.
std::vector<const onnx::NodeProto*> shape_chain_reshapes(const onnx::GraphProto& g) {
  std::unordered_map<std::string, const onnx::NodeProto*> producer;
  for (const auto& n : g.node())
    for (const auto& o : n.output()) producer[o] = &n;
  auto produced_by = [&](const std::string& name, const char* type) -> const onnx::NodeProto* {
    auto it = producer.find(name);
    return it != producer.end() && it->second->op_type() == type ? it->second : nullptr;
  };
  std::vector<const onnx::NodeProto*> out;
  for (const auto& n : g.node()) {
    if (n.op_type() != "Reshape" || n.input_size() < 2) continue;
    const auto* concat = produced_by(n.input(1), "Concat");
    if (!concat) continue;
    bool fed = false;
    for (const auto& ci : concat->input()) {
      std::string src = ci;
      if (const auto* unsq = produced_by(src, "Unsqueeze")) src = unsq->input(0);
      const auto* gather = produced_by(src, "Gather");
      if (gather && gather->input_size() > 0 && produced_by(gather->input(0), "Shape")) {
        fed = true;
        break;
      }
    }
    if (fed) out.push_back(&n);
  }
  return out;
}

std::vector<std::string> input_dim_params(const onnx::GraphProto& g) {
  std::vector<std::string> names;
  for (const auto& in : g.input())
    for (const auto& d : in.type().tensor_type().shape().dim())
      if (d.has_dim_param()) names.push_back(d.dim_param());
  return names;
}

bool fully_static(const onnx::ValueInfoProto* vi) {
  if (!vi || !vi->type().has_tensor_type() || !vi->type().tensor_type().has_shape()) return false;
  for (const auto& d : vi->type().tensor_type().shape().dim())
    if (!d.has_dim_value() || d.dim_value() < 0) return false;
  return true;
}

planner::onnx::ImportOptions import_options(const TorchExport& e) {
  planner::onnx::ImportOptions opts;
  opts.batch = e.bind.at("batch");
  for (const auto& [name, value] : e.bind)
    if (name != "batch") opts.dims[name] = value;
  return opts;
}

}  // namespace

TEST_CASE("torch exports: committed without their external data", "[onnx][torch]") {
  for (const auto& e : exports()) {
    INFO(e.file);
    auto p = model_path(e);
    REQUIRE(fs::exists(p));
    CHECK(fs::file_size(p) < 1'000'000);
    CHECK_FALSE(fs::exists(p.string() + ".data"));
    auto m = load_proto(p);
    int external = 0;
    for (const auto& t : m.graph().initializer())
      if (t.data_location() == onnx::TensorProto::EXTERNAL) ++external;
    CHECK(external > 0);
    CHECK(m.opset_import_size() >= 1);
  }
}

TEST_CASE("torch exports: dynamic dims and Shape->Gather->Concat->Reshape chains", "[onnx][torch]") {
  for (const auto& e : exports()) {
    INFO(e.file);
    auto m = load_proto(model_path(e));
    auto params = input_dim_params(m.graph());
    // Every bound name is a dim_param of the graph inputs, and vice versa.
    for (const auto& [name, value] : e.bind) {
      INFO("dim_param " << name);
      CHECK(std::find(params.begin(), params.end(), name) != params.end());
    }
    for (const auto& name : params) CHECK(e.bind.count(name) == 1);
    REQUIRE(m.graph().input(0).type().tensor_type().shape().dim(0).dim_param() == "batch");

    auto chains = shape_chain_reshapes(m.graph());
    if (e.needs_chain) {
      REQUIRE(!chains.empty());
    } else {
      // ResNet-50's torch.flatten(x, 1) exports as one Flatten (no chain).
      bool flatten = false;
      for (const auto& n : m.graph().node()) flatten = flatten || n.op_type() == "Flatten";
      CHECK((flatten || !chains.empty()));
    }
  }
}

TEST_CASE("torch exports: ONNX shape inference alone leaves chain Reshapes unshaped",
          "[onnx][torch]") {
  for (const auto& e : exports()) {
    if (!e.needs_chain) continue;
    INFO(e.file);
    auto m = load_proto(model_path(e));
    for (auto& in : *m.mutable_graph()->mutable_input())
      for (auto& d : *in.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim())
        if (d.has_dim_param()) {
          auto v = e.bind.at(d.dim_param());
          d.set_dim_value(v);  // clears dim_param (oneof)
        }
    // Default options: no data propagation (as the importer runs it).
    onnx::shape_inference::InferShapes(m);

    std::unordered_map<std::string, const onnx::ValueInfoProto*> shapes;
    for (const auto& vi : m.graph().value_info()) shapes[vi.name()] = &vi;
    for (const auto& vi : m.graph().output()) shapes[vi.name()] = &vi;

    auto chains = shape_chain_reshapes(m.graph());
    REQUIRE(!chains.empty());
    int unshaped = 0;
    for (const auto* n : chains) {
      auto it = shapes.find(n->output(0));
      if (!fully_static(it == shapes.end() ? nullptr : it->second)) ++unshaped;
    }
    CHECK(unshaped >= 1);
  }
}

TEST_CASE("torch exports: import gives static shapes and torch's parameter count",
          "[onnx][torch]") {
  for (const auto& e : exports()) DYNAMIC_SECTION(e.file) {
    auto r = planner::onnx::import_file(model_path(e), import_options(e));
    if (!r.ok()) FAIL(r.error().message);
    const auto& g = r->graph;

    std::vector<std::string> dynamic;
    for (const auto& t : g.tensors()) {
      bool ok = true;
      for (auto d : t.shape) ok = ok && d >= 0;
      if (!ok) dynamic.push_back(t.name);
    }
    INFO("first tensors without a static shape: "
         << (dynamic.empty() ? std::string("-") : dynamic.front()));
    CHECK(dynamic.size() == 0);

    CHECK(planner::graph::totals(g).parameter_count == e.params);

    // Parameters are external initializers; their (absent) data is never read.
    for (const auto& t : g.tensors())
      if (t.role == planner::graph::TensorRole::parameter) {
        INFO(t.name);
        CHECK(t.external_data);
      }

    // The graph output has its bound shape.
    auto out = g.find_tensor("output");
    REQUIRE(out.has_value());
    CHECK(g.tensor(*out).shape == e.output_shape);

    // Every Reshape fed by a shape chain got a static shape holding as many
    // elements as its data input (what ONNX shape inference could not do).
    auto m = load_proto(model_path(e));
    for (const auto* n : shape_chain_reshapes(m.graph())) {
      INFO(n->name());
      auto in = g.find_tensor(n->input(0));
      auto res = g.find_tensor(n->output(0));
      REQUIRE(in.has_value());
      REQUIRE(res.has_value());
      CHECK(g.tensor(*res).numel() == g.tensor(*in).numel());
      CHECK(g.tensor(*res).numel() > 0);
    }
  }
}

TEST_CASE("torch exports: bound shapes of the chain Reshapes", "[onnx][torch]") {
  // Spot checks with known answers: ViT's patch flattening
  // x.reshape(n, 768, 14 * 14), the BERT-like head split view(b, s, 4, -1).
  struct Expect {
    std::size_t model;
    const char* tensor;
    std::vector<std::int64_t> shape;
  };
  const std::vector<Expect> expects = {
      {1, "/Reshape_output_0", {8, 768, 196}},
      {2, "/layers.0/attn/Reshape_output_0", {8, 128, 4, 64}},
      {2, "/layers.3/attn/Reshape_3_output_0", {8, 128, 256}},
  };
  for (const auto& x : expects) DYNAMIC_SECTION(x.tensor) {
    const auto& e = exports()[x.model];
    INFO(e.file);
    auto r = planner::onnx::import_file(model_path(e), import_options(e));
    if (!r.ok()) FAIL(r.error().message);
    auto id = r->graph.find_tensor(x.tensor);
    REQUIRE(id.has_value());
    CHECK(r->graph.tensor(*id).shape == x.shape);
  }
}
