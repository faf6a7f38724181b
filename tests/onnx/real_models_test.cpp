// Every third-party ONNX file of shared/models/real/ imports once its
// symbolic dims are bound, with plausible totals.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/ranges.h>

#include "planner/graph/graph.hpp"
#include "planner/onnx/importer.hpp"

using namespace planner;
namespace fs = std::filesystem;

namespace {

fs::path real_dir() { return fs::path(PLANNER_SHARED_DIR) / "models" / "real"; }

struct Case {
  std::string file;
  onnx::ImportOptions opts;
};

/// The flags each file needs (what a user passes on the command line).
std::vector<Case> cases() {
  std::vector<Case> c;
  auto add = [&](std::string f, std::optional<std::int64_t> batch, std::map<std::string, std::int64_t> dims,
                 std::vector<std::string> params = {}) {
    onnx::ImportOptions o;
    o.batch = batch;
    o.dims = std::move(dims);
    o.params_from_inputs = std::move(params);
    c.push_back({std::move(f), std::move(o)});
  };
  add("gh_genai_tiny_random_gpt2_fp32_past.onnx", 1, {{"seq_len", 8}, {"past_seq_len", 4}, {"total_seq_len", 12}});
  add("gh_onnx_light_resnet50.onnx", std::nullopt, {});
  add("gh_ort_3layer_bloom_optimized_training.onnx", 2,
      {{"inputs_attention_mask_dim1", 16}, {"inputs_labels_dim1", 16}}, {"_original_module.*"});
  add("gh_ort_TFBertForQuestionAnswering_keras2onnx.onnx", 1, {});
  add("gh_ort_bert_squad_BertForQuestionAnswering_0_opset11.onnx", std::nullopt, {});
  add("gh_ort_bert_toy_optimized.onnx", 2, {{"max_seq_len_in_batch", 16}});
  add("gh_ort_computation_reduction_transformer.onnx", 2, {{"seqlen", 16}, {"dynamic_prediction_count", 4}});
  add("gh_ort_gpt2_GPT2Model_opset11_no_past.onnx", 1, {{"seq_len", 8}});
  add("gh_ort_self_attention_megatron_basic_test.onnx", 2, {{"seqlen", 8}});
  add("gh_ort_winml_fns_candy.onnx", 1, {});
  return c;
}

const Case& case_for(const std::string& file) {
  static const auto all = cases();
  for (const auto& c : all)
    if (c.file == file) return c;
  FAIL("no flags for " << file);
  return all.front();
}

Result<onnx::ImportedModel> import_real(const std::string& file) {
  const auto& c = case_for(file);
  return onnx::import_file(real_dir() / file, c.opts);
}

int max_block_count(const graph::OpGraph& g) {
  int m = 0;
  for (const auto& b : g.blocks) m = std::max(m, b.count);
  return m;
}

}  // namespace

TEST_CASE("every real-world model imports with its flags", "[onnx][real]") {
  std::set<std::string> seen;
  for (const auto& entry : fs::directory_iterator(real_dir())) {
    if (entry.path().extension() != ".onnx") continue;
    const std::string file = entry.path().filename().string();
    seen.insert(file);
    INFO(file);
    auto r = import_real(file);
    if (!r.ok()) {
      // The BLOOM training graph may fail, with one line naming the op.
      INFO(r.error().message);
      CHECK(file == "gh_ort_3layer_bloom_optimized_training.onnx");
      CHECK(r.error().message.find('\n') == std::string::npos);
      CHECK(r.error().message.find("op '") != std::string::npos);
      continue;
    }
    const auto& g = r->graph;
    CHECK(g.num_ops() > 0);
    for (const auto& t : g.tensors()) {
      INFO(t.name);
      for (auto d : t.shape) CHECK(d >= 0);
    }
    const auto tot = graph::totals(g);
    CHECK(tot.parameter_count > 0);
    CHECK(tot.forward_flops.value > 0);
  }
  CHECK(seen.size() == 10);
}

namespace {

std::vector<std::int64_t> shape_of(const onnx::ImportedModel& m, const std::string& name) {
  auto id = m.graph.find_tensor(name);
  REQUIRE(id.has_value());
  return m.graph.tensor(*id).shape;
}

using Shape = std::vector<std::int64_t>;

onnx::ImportedModel must_import(const std::string& file) {
  auto r = import_real(file);
  INFO((r.ok() ? std::string() : r.error().message));
  REQUIRE(r.ok());
  return std::move(*r);
}

}  // namespace

// Parameter counts below are sums over the float initializers' dims (scalars
// excluded, BatchNormalization running statistics excluded), computed outside
// the planner from the files, and cross-checked by hand where noted.

TEST_CASE("real: GPT-2 export (unsorted, shrunk weights, declared 768)", "[onnx][real]") {
  auto m = must_import("gh_ort_gpt2_GPT2Model_opset11_no_past.onnx");
  CHECK(shape_of(m, "hidden_states") == Shape{1, 8, 4});
  // By hand: 12 layers x 244 (ln 8, c_attn 60, c_proj 20, ln 8, c_fc 80, c_proj 68) + ln_f 8
  // + wte 20x4 + wpe 8x4 = 3048 trainable, plus the 12 [1,1,8,8] causal-mask buffers
  // ("attn.bias") that the export stores as float initializers.
  CHECK(graph::totals(m.graph).parameter_count == 3048 + 12 * 64);
  REQUIRE(m.report.disagreements.size() == 1);
  CHECK(m.report.disagreements[0].tensor == "hidden_states");
  CHECK(m.report.disagreements[0].declared == Shape{-1, -1, 768});
  CHECK(max_block_count(m.graph) == 12);
  CHECK(m.graph.fused.size() == 12);
}

TEST_CASE("real: BERT for QA export (declared [1,128], real [1,10])", "[onnx][real]") {
  auto m = must_import("gh_ort_bert_squad_BertForQuestionAnswering_0_opset11.onnx");
  CHECK(shape_of(m, "start") == Shape{1, 10});
  CHECK(shape_of(m, "end") == Shape{1, 10});
  CHECK(graph::totals(m.graph).parameter_count == 11474);
  CHECK(m.report.disagreements.size() == 2);
  CHECK(max_block_count(m.graph) == 12);
}

TEST_CASE("real: light ResNet-50 (weights made by ConstantOfShape)", "[onnx][real]") {
  auto m = must_import("gh_onnx_light_resnet50.onnx");
  CHECK(shape_of(m, "gpu_0/softmax_1") == Shape{1, 1000});
  // ResNet-50's well-known 25,557,032 trainable parameters (torchvision's count).
  CHECK(graph::totals(m.graph).parameter_count == 25'557'032);
  CHECK(m.graph.tensor(*m.graph.find_tensor("gpu_0/conv1_w_0")).role == graph::TensorRole::parameter);
  CHECK(m.graph.tensor(*m.graph.find_tensor("gpu_0/res_conv1_bn_rm_0")).role == graph::TensorRole::constant);
  // ~4.1 GMACs forward.
  const double fwd = graph::totals(m.graph).forward_flops.value;
  CHECK(fwd > 7.5e9);
  CHECK(fwd < 9.0e9);
  CHECK(m.graph.tensor(*m.graph.find_tensor("gpu_0/softmax_1")).batch_axis == 0);
}

TEST_CASE("real: BLOOM training graph (weights as inputs, contrib training ops)", "[onnx][real]") {
  auto r = import_real("gh_ort_3layer_bloom_optimized_training.onnx");
  if (!r.ok()) {
    // Acceptable: one line naming the op whose output shape is unknown.
    CHECK(r.error().message.find('\n') == std::string::npos);
    CHECK(r.error().message.find("op '") != std::string::npos);
    return;
  }
  // By hand: embeddings 250880 x 1024 + LN 2048 + 3 x 12,596,224 + ln_f 2048 = 294,693,888
  // weights (the README's ~294.7M), plus the [16,1] ALiBi slopes initializer.
  CHECK(graph::totals(r->graph).parameter_count == 294'693'888 + 16);
  const auto& g = r->graph;
  const auto grad = g.find_tensor("_original_module._original_model.transformer.word_embeddings.weight_grad");
  REQUIRE(grad.has_value());
  CHECK(g.tensor(*grad).shape == Shape{250880, 1024});
  CHECK(g.tensor(*g.find_tensor("inputs_input_ids")).shape == Shape{2, 16});
  // Without --params-from-inputs the weights are still found: the graph
  // outputs a "<name>_grad" for each of them.
  auto opts = case_for("gh_ort_3layer_bloom_optimized_training.onnx").opts;
  opts.params_from_inputs.clear();
  auto r2 = onnx::import_file(real_dir() / "gh_ort_3layer_bloom_optimized_training.onnx", opts);
  REQUIRE(r2.ok());
  CHECK(graph::totals(r2->graph).parameter_count == 294'693'888 + 16);
}

TEST_CASE("real: the other transformer exports", "[onnx][real]") {
  {
    auto m = must_import("gh_ort_TFBertForQuestionAnswering_keras2onnx.onnx");
    CHECK(shape_of(m, "output_1") == Shape{1, 7});
    CHECK(graph::totals(m.graph).parameter_count == 21218);
    CHECK(max_block_count(m.graph) == 24);
  }
  {
    auto m = must_import("gh_ort_bert_toy_optimized.onnx");
    CHECK(shape_of(m, "prediction_scores") == Shape{2, 16, 99});
    CHECK(shape_of(m, "seq_relationship_score") == Shape{2, 2});
    CHECK(graph::totals(m.graph).parameter_count == 56414);
    CHECK(max_block_count(m.graph) == 5);
  }
  {
    auto m = must_import("gh_genai_tiny_random_gpt2_fp32_past.onnx");
    CHECK(shape_of(m, "logits") == Shape{1, 8, 1000});
    CHECK(shape_of(m, "present_0") == Shape{2, 1, 4, 12, 8});  // past 4 + 8 new
    CHECK(graph::totals(m.graph).parameter_count == 142112);
    CHECK(m.graph.tensor(*m.graph.find_tensor("present_0")).batch_axis == 1);
  }
  {
    // By hand: LN 2x256 + dense 128x128+128 + decoder 128x256+256 = 50048.
    auto m = must_import("gh_ort_computation_reduction_transformer.onnx");
    CHECK(shape_of(m, "output") == Shape{2, 4, 256});
    CHECK(shape_of(m, "gather_output") == Shape{2, 128});
    CHECK(graph::totals(m.graph).parameter_count == 50048);
  }
  {
    // By hand: qkv 4x12+12, dense 4x4+4 = 80.
    auto m = must_import("gh_ort_self_attention_megatron_basic_test.onnx");
    CHECK(shape_of(m, "output") == Shape{2, 8, 4});
    CHECK(graph::totals(m.graph).parameter_count == 80);
  }
}

TEST_CASE("real: fast neural style (removed ops ImageScaler, Crop, Affine)", "[onnx][real]") {
  auto m = must_import("gh_ort_winml_fns_candy.onnx");
  CHECK(shape_of(m, "outputImage") == Shape{1, 3, 720, 720});
  CHECK(graph::totals(m.graph).parameter_count == 424905);
  CHECK(m.graph.tensor(*m.graph.find_tensor("outputImage")).batch_axis == 0);
}

// Hidden: prints a summary of each real model (run with "[.dump]").
TEST_CASE("dump real-world model summaries", "[.dump]") {
  for (const auto& c : cases()) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = onnx::import_file(real_dir() / c.file, c.opts);
    auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok()) {
      std::printf("%s: FAILED %s\n", c.file.c_str(), r.error().message.c_str());
      continue;
    }
    const auto& g = r->graph;
    auto tot = graph::totals(g);
    int with_batch = 0, acts = 0;
    for (const auto& t : g.tensors())
      if (t.role == graph::TensorRole::activation || t.role == graph::TensorRole::input) {
        ++acts;
        with_batch += t.batch_axis.has_value();
      }
    std::printf("%s: %.1f ms, ops %zu, params %lld, fwd %.4g, train %.4g, act bytes %.4g, batch axis %d/%d, fused %zu\n",
                c.file.c_str(), ms, g.num_ops(), static_cast<long long>(tot.parameter_count), tot.forward_flops.value,
                tot.training_flops.value, tot.activation_bytes.value, with_batch, acts, g.fused.size());
    int shown = 0;
    for (const auto& t : g.tensors())
      if ((t.role == graph::TensorRole::activation || t.role == graph::TensorRole::input) && !t.batch_axis &&
          core::is_floating(t.dtype) && shown++ < 4)
        std::printf("   no batch axis: %s %s\n", t.name.c_str(), fmt::format("{}", fmt::join(t.shape, ",")).c_str());
    for (const auto& b : g.blocks)
      std::printf("   blocks: %d x %d ops (first layer %d)\n", b.count, b.ops_per_block, b.first_layer);
    for (const auto& [k, v] : r->report.unknown_ops) std::printf("   unknown op %s x%d\n", k.c_str(), v);
    for (const auto& d : r->report.disagreements)
      std::printf("   disagreement %s declared %s computed %s\n", d.tensor.c_str(),
                  fmt::format("{}", fmt::join(d.declared, ",")).c_str(),
                  fmt::format("{}", fmt::join(d.computed, ",")).c_str());
    for (const auto& n : r->report.notes) std::printf("   note: %s\n", n.c_str());
  }
}
