// The Llama-style decoder of tools/export_torch_models.py (RMSNorm, rotary
// embeddings, grouped-query attention with 16 query and 4 key/value heads,
// SwiGLU, causal mask, cross-entropy; 4 layers, hidden 1024, vocabulary
// 32000), exported by torch 1.13 at opset 14 in training mode with a dynamic
// batch and sequence (bound here to 2 x 256), in the two spellings of
// grouped-query attention:
//
//  - k.repeat_interleave(4, dim=2) on [b, s, kv, d]: torch lowers it to
//    SplitToSequence (constant split sizes), a Loop of SequenceAt/Expand/
//    Reshape/SequenceInsert and ConcatFromSequence;
//  - k[:, :, None].expand(...).reshape(...), as Hugging Face's repeat_kv.
//
// Both import with every tensor static, count torch's parameters, find the 4
// layers as 4 repeated blocks and 4 attention patterns with 4 key/value
// heads, and bind to another batch with every op on the batch scaling.

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "planner/graph/graph.hpp"
#include "planner/onnx/importer.hpp"

namespace fs = std::filesystem;

namespace {

struct LlamaExport {
  const char* file;
  std::size_t onnx_nodes;  ///< nodes of the file's main graph (one op each)
};

const LlamaExport kExports[] = {
    {"llama_gqa_repeat_interleave.onnx", 1123},
    {"llama_gqa_expand.onnx", 922},
};

// Parameters: embedding and LM head 2 x 32000 x 1024 = 65,536,000; per layer
// q and o 2 x 1024 x 1024, k and v 2 x 1024 x 256, gate, up and down
// 3 x 1024 x 2816, two RMSNorm weights 2 x 1024: 11,274,240; 4 layers
// 45,096,960; final norm 1024. Total 110,633,984.
constexpr std::int64_t kParams = 110'633'984;

planner::onnx::ImportedModel import(const char* file, std::int64_t batch = 2) {
  planner::onnx::ImportOptions o;
  o.batch = batch;
  o.dims["seq"] = 256;
  auto r = planner::onnx::import_file(fs::path(PLANNER_SOURCE_DIR) / "models" / "torch" / file, o);
  if (!r.ok()) FAIL(r.error().message);
  return std::move(*r);
}

}  // namespace

TEST_CASE("llama exports: static shapes and torch's parameters", "[onnx][torch][llama]") {
  for (const auto& e : kExports) DYNAMIC_SECTION(e.file) {
    const auto m = import(e.file);
    const auto& g = m.graph;
    CHECK(g.num_ops() == e.onnx_nodes);
    std::string dynamic;
    for (const auto& t : g.tensors())
      for (auto d : t.shape)
        if (d < 0 && dynamic.empty()) dynamic = t.name;
    CHECK(dynamic.empty());
    CHECK(planner::graph::totals(g).parameter_count == kParams);
    auto loss = g.find_tensor("loss");
    REQUIRE(loss.has_value());
    CHECK(g.tensor(*loss).shape.empty());
  }
}

TEST_CASE("llama exports: 4 repeated blocks, one per layer, and 4 GQA attention patterns",
          "[onnx][torch][llama]") {
  for (const auto& e : kExports) DYNAMIC_SECTION(e.file) {
    const auto m = import(e.file);
    const auto& g = m.graph;
    REQUIRE(g.blocks.size() == 1);
    CHECK(g.blocks[0].count == 4);
    // Every op of a block that torch named in a scope belongs to that layer
    // of the model (torch leaves some Constants unscoped, "Constant_882"),
    // and every MatMul of /layers.k/ is in block k.
    std::string misplaced;
    int matmuls = 0;
    for (const auto& op : g.ops()) {
      const bool in_layer = op.name.rfind("/layers.", 0) == 0;
      const bool scoped = op.name.rfind("/", 0) == 0;
      if (op.layer && scoped && op.name.rfind("/layers." + std::to_string(*op.layer) + "/", 0) != 0 &&
          misplaced.empty())
        misplaced = op.name;
      if (in_layer && op.type == "MatMul") {
        ++matmuls;
        if (!op.layer && misplaced.empty()) misplaced = op.name;
      }
    }
    INFO("first op outside its layer's block: " << misplaced);
    CHECK(misplaced.empty());
    CHECK(matmuls == 4 * 9);  // q, k, v, scores, context, o, gate, up, down

    REQUIRE(g.fused.size() == 4);
    for (const auto& p : g.fused) {
      CHECK(p.batch == 2);
      CHECK(p.heads == 16);
      CHECK(p.kv_heads == 4);
      CHECK(p.head_dim == 64);
      CHECK(p.seq_q == 256);
      CHECK(p.seq_k == 256);
    }
  }
}

TEST_CASE("llama exports: another batch, FLOPs follow", "[onnx][torch][llama]") {
  for (const auto& e : kExports) DYNAMIC_SECTION(e.file) {
    const auto m2 = import(e.file);
    const auto m6 = import(e.file, 6);
    auto ids = m6.graph.find_tensor("input_ids");
    REQUIRE(ids.has_value());
    CHECK(m6.graph.tensor(*ids).shape == std::vector<std::int64_t>{6, 256});
    // Every op that touches the batch triples its FLOPs from batch 2 to 6;
    // the rest (the causal mask built from constants) keeps them.
    std::string off;
    for (std::size_t i = 0; i < m6.graph.num_ops(); ++i) {
      const auto& op = m6.graph.ops()[i];
      bool batched = false;
      for (const auto& t : op.inputs) batched = batched || (t && m6.graph.tensor(*t).batch_axis);
      for (const auto& t : op.outputs) batched = batched || (t && m6.graph.tensor(*t).batch_axis);
      const double f2 = m2.graph.ops()[i].cost.forward_flops.value;
      const double f6 = op.cost.forward_flops.value;
      if (f6 != Approx(batched ? 3 * f2 : f2).epsilon(1e-12) && off.empty()) off = op.name;
    }
    INFO("first op whose FLOPs do not follow the batch: " << off);
    CHECK(off.empty());
    const double f2 = planner::graph::totals(m2.graph).training_flops.value;
    const double f6 = planner::graph::totals(m6.graph).training_flops.value;
    CHECK(f6 / f2 == Approx(3.0).epsilon(1e-6));
  }
}
