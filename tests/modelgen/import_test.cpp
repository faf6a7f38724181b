// Generated models through the importer (planner::onnx): every tensor
// static, the parameter count the generator reports, no declared shape the
// importer disagrees with, and the transformer layers found as repeated blocks.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "modelgen/onnx_check.hpp"
#include "planner/graph/graph.hpp"
#include "planner/modelgen/modelgen.hpp"
#include "planner/onnx/importer.hpp"

namespace modelgen = planner::modelgen;
namespace graph = planner::graph;
namespace importer = planner::onnx;  // ::onnx is the protobuf namespace
using modelgen::Arch;
using modelgen::ModelSpec;

namespace {

ModelSpec small(Arch a, int layers) {
  ModelSpec s;
  s.arch = a;
  s.layers = layers;
  s.hidden = 32;
  s.heads = 4;
  s.kv_heads = a == Arch::llama ? 2 : 0;
  s.seq = 8;
  s.vocab = 64;
  s.batch = 2;
  s.experts = 4;
  s.top_k = 2;
  s.width = 16;
  s.rows = 200;
  s.dim = 8;
  s.fields = 3;
  s.dense_features = 5;
  s.classes = 10;
  s.image = 64;
  return s;
}

struct Imported {
  modelgen::BuiltModel built;
  importer::ImportedModel model;
};

/// Builds, writes model.onnx (no data file) into a temp folder and imports it.
Imported build_and_import(const ModelSpec& s) {
  auto built = modelgen::build(s, "model.onnx.data");
  if (!built) FAIL(built.error().message);
  auto dir = modelgen_test::temp_dir();
  const auto path = dir / "model.onnx";
  std::ofstream(path, std::ios::binary) << built->bytes;
  auto m = importer::import_file(path, importer::ImportOptions{});
  std::filesystem::remove_all(dir);
  if (!m) FAIL(m.error().message);
  return {std::move(built).value(), std::move(m).value()};
}

}  // namespace

TEST_CASE("every arch imports: static shapes, same parameter count, no disagreements", "[modelgen][import]") {
  for (auto a : modelgen::all_archs()) {
    INFO(modelgen::arch_name(a));
    auto r = build_and_import(small(a, 2));
    const auto& g = r.model.graph;
    // Constant nodes may become constant tensors rather than ops.
    int constants = 0;
    const auto proto = modelgen_test::parse(r.built.bytes);
    for (const auto& n : proto.graph().node()) constants += n.op_type() == "Constant";
    CHECK(static_cast<std::int64_t>(g.num_ops()) <= r.built.node_count);
    CHECK(static_cast<std::int64_t>(g.num_ops()) >= r.built.node_count - constants);
    for (const auto& t : g.tensors()) {
      INFO(t.name);
      for (auto d : t.shape) CHECK(d >= 0);
    }
    CHECK(graph::totals(g).parameter_count == r.built.parameter_count);
    CHECK(r.model.report.disagreements.empty());
    CHECK(g.info.opsets.at("") == 17);
    std::int64_t params = 0, external = 0;
    for (const auto& t : g.tensors())
      if (t.role == graph::TensorRole::parameter) {
        ++params;
        external += t.external_data ? 1 : 0;
      }
    CHECK(external == params);
  }
}

TEST_CASE("every op the generator emits has semantics in the importer", "[modelgen][import][semantics]") {
  for (auto a : modelgen::all_archs()) {
    INFO(modelgen::arch_name(a));
    auto r = build_and_import(small(a, 2));
    for (const auto& [kind, n] : r.model.report.unknown_ops) {
      INFO(kind << " x" << n);
      CHECK(n == 0);
    }
  }
}

TEST_CASE("transformer layers are found as --layers repeated blocks", "[modelgen][import]") {
  for (auto a : {Arch::gpt, Arch::llama, Arch::bert, Arch::moe}) {
    INFO(modelgen::arch_name(a));
    auto r = build_and_import(small(a, 4));
    bool found = false;
    for (const auto& b : r.model.graph.blocks) found = found || b.count == 4;
    CHECK(found);
  }
}

TEST_CASE("GPT-3 175B imports without its data file", "[modelgen][import]") {
  ModelSpec s;
  s.arch = Arch::gpt;
  s.layers = 96;
  s.hidden = 12288;
  s.heads = 96;
  s.seq = 2048;
  s.vocab = 51200;
  auto r = build_and_import(s);
  CHECK(graph::totals(r.model.graph).parameter_count == 175'244'992'512);
  bool found = false;
  for (const auto& b : r.model.graph.blocks) found = found || b.count == 96;
  CHECK(found);
}
