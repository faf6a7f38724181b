// Activations kept for backward, validated against Korthikanti et al. 2022
// (section 4): per layer, 16-bit activations, 1-byte dropout masks,
//   none       sbh (34 + 5 a s / h) = 34 sbh + 5 a s^2 b
//   selective  34 sbh
//   full       2 sbh
// Our count adds the LayerNorm statistics Korthikanti leaves out: two norms x
// b s rows x 8 B (f32 mean and 1/std) = 16 sb per layer.
// GptShape defaults: b 2, s 128, h 256, a 4: sbh = 65,536, a s^2 b = 131,072, sb = 256.

#include <catch2/catch.hpp>

#include "cost/cost_helpers.hpp"

using namespace cost_test;
using cost::ActivationOptions;
using cost::AttentionMode;
using cost::RecomputePolicy;

namespace {

ActivationOptions bf16(AttentionMode mode = AttentionMode::unfused, RecomputePolicy r = RecomputePolicy::none) {
  ActivationOptions o;
  o.precision = cost::PrecisionPolicy::uniform(core::Precision::bf16);
  o.attention = mode;
  o.recompute = r;
  return o;
}

double korthikanti(const GptShape& m) { return 34 * m.sbh() + 5 * m.as2b(); }

}  // namespace

TEST_CASE("no recompute: sbh(34 + 5as/h) per layer, plus LayerNorm statistics", "[cost][activations]") {
  GptShape m;
  const auto g = build_gpt(m);
  const auto r = cost::saved_activations(g, bf16());
  // 34 sbh + 5 as^2 b + 16 sb = 2,228,224 + 655,360 + 4,096 = 2,887,680 B per layer:
  //   LN1 input 2 + QKV input 2 + Q, K 4 + V 2 + out-proj input 2 + dropout mask 1
  //   + LN2 input 2 + FC1 input 2 + GeLU input 8 + FC2 input 8 + dropout mask 1 = 34 sbh;
  //   softmax output 2 + dropout mask 1 + dropout output 2 = 5 as^2 b.
  REQUIRE(r.per_layer.size() == 2);
  for (const auto& [layer, bytes] : r.per_layer) CHECK(bytes.value == korthikanti(m) + 16 * m.sb());
  CHECK(r.per_layer.at(0).value == 2887680);
  // Outside the layers: token ids (b s int64 = 2048), final norm input (2 sbh)
  // and statistics (8 sb), LM-head input (2 sbh), labels (2048): 4 sbh + 24 sb = 268,288.
  CHECK(r.outside_layers.value == 4 * m.sbh() + 24 * m.sb());
  CHECK(r.total.value == 2 * 2887680 + 268288);
  CHECK(r.recompute_working_set.value == 0);
  // The loss buffer: b s V log-probabilities at the loss precision (bf16
  // here): 2 * 128 * 1000 * 2 = 512,000 B, not part of the total.
  CHECK(r.loss_buffer.value == 512000);
}

TEST_CASE("selective recompute drops the s x s attention tensors: 34 sbh", "[cost][activations]") {
  GptShape m;
  const auto g = build_gpt(m);
  const auto r = cost::saved_activations(g, bf16(AttentionMode::unfused, RecomputePolicy::selective));
  for (const auto& [layer, bytes] : r.per_layer) CHECK(bytes.value == 34 * m.sbh() + 16 * m.sb());
  // Backward of one layer rematerialises its 5 as^2 b = 655,360 B.
  CHECK(r.recompute_working_set.value == 5 * m.as2b());
  // With flash attention there is nothing s x s to drop.
  const auto f = cost::saved_activations(g, bf16(AttentionMode::flash, RecomputePolicy::selective));
  const auto f0 = cost::saved_activations(g, bf16(AttentionMode::flash, RecomputePolicy::none));
  CHECK(f.total == f0.total);
  CHECK(f.recompute_working_set.value == 0);
}

TEST_CASE("selective recompute of layernorm on a dense layer: Transformer Engine's fused norms, nothing more",
          "[cost][activations]") {
  GptShape m;
  const auto g = build_gpt(m);
  auto o = bf16(AttentionMode::unfused, RecomputePolicy::selective);
  o.modules = *cost::RecomputeModules::parse("core_attn,layernorm");
  const auto r = cost::saved_activations(g, o);
  // LN1 feeds the QKV GEMM alone and LN2 the FC1 GEMM alone: Transformer
  // Engine fuses each into its linear layer, which Megatron-Core's layernorm
  // module leaves alone, and the final norm is no layer's. So: selective
  // core_attn's 34 sbh + 16 sb per layer.
  for (const auto& [layer, bytes] : r.per_layer) CHECK(bytes.value == 34 * m.sbh() + 16 * m.sb());
  CHECK(r.outside_layers.value == 4 * m.sbh() + 24 * m.sb());
  // Under full recompute the modules are not read.
  auto f = bf16(AttentionMode::unfused, RecomputePolicy::full);
  const double full = cost::saved_activations(g, f).total.value;
  f.modules = o.modules;
  CHECK(cost::saved_activations(g, f).total.value == full);
}

TEST_CASE("selective recompute of moe_act and layernorm on a MoE layer's expert and pre-MLP norm",
          "[cost][activations]") {
  // One expert on T = 8 tokens, h = 4, f = 16, 2 classes, bf16 (2 B):
  //   x -> LayerNorm -> y -+- router MatMul -> rl ----------------------------------------+
  //                        +- Gather (dispatch) -> xe -+- gate MatMul -> g: SiLU(g) = g * Sigmoid(g) -+
  //                                                    +- up MatMul -> u ---------- Mul(SiLU, u) = p -+
  //   p -> down MatMul -> d -> head MatMul -> logits -> Add(., rl) -> loss
  Builder B;
  const std::int64_t T = 8, h = 4, f = 16, C = 2;
  B.input("x", {T, h});
  B.input("labels", {T}, DType::i64);
  B.constant("idx", {T}, DType::i64);
  for (const char* n : {"ln.g", "ln.b"}) B.param(n, {h});
  B.param("wr", {h, C});
  B.param("wg", {h, f});
  B.param("wu", {h, f});
  B.param("wd", {f, h});
  B.param("wh", {h, C});
  for (const char* n : {"y", "moe/xe", "moe/experts.0/d"}) B.act(n, {T, h});
  for (const char* n : {"moe/experts.0/g", "moe/experts.0/u", "moe/experts.0/act/sig", "moe/experts.0/act/silu",
                        "moe/experts.0/p"})
    B.act(n, {T, f});
  for (const char* n : {"rl", "logits", "logits2"}) B.act(n, {T, C});
  B.act("loss", {});
  B.op("LayerNormalization", {"x", "ln.g", "ln.b"}, {"y"}, {{"axis", std::int64_t{-1}}});
  B.op("MatMul", {"y", "wr"}, {"rl"});
  B.op("Gather", {"y", "idx"}, {"moe/xe"}, {{"axis", std::int64_t{0}}});
  B.op("MatMul", {"moe/xe", "wg"}, {"moe/experts.0/g"});
  B.op("MatMul", {"moe/xe", "wu"}, {"moe/experts.0/u"});
  B.op("Sigmoid", {"moe/experts.0/g"}, {"moe/experts.0/act/sig"});
  B.op("Mul", {"moe/experts.0/g", "moe/experts.0/act/sig"}, {"moe/experts.0/act/silu"});
  B.op("Mul", {"moe/experts.0/act/silu", "moe/experts.0/u"}, {"moe/experts.0/p"});
  B.op("MatMul", {"moe/experts.0/p", "wd"}, {"moe/experts.0/d"});
  B.op("MatMul", {"moe/experts.0/d", "wh"}, {"logits"});
  B.op("Add", {"logits", "rl"}, {"logits2"});
  B.op("SoftmaxCrossEntropyLoss", {"logits2", "labels"}, {"loss"}, {{"reduction", std::string("mean")}});
  B.g.graph_inputs = {*B.g.find_tensor("x"), *B.g.find_tensor("labels")};
  B.g.graph_outputs = {*B.g.find_tensor("loss")};
  auto g = B.finish();
  graph::find_recompute_modules(g);
  // No recompute: the norm's input x (T h = 64 B) and statistics (T rows x
  // 8 B = 64 B), the router's input y (64 B), the experts' input xe (64 B),
  // the fused SwiGLU's inputs g and u (T f = 256 B each), the down GEMM's
  // input p (256 B), the head's input d (64 B), the labels (8 x int64 =
  // 64 B): 1,152 B.
  const auto none = cost::saved_activations(g, bf16());
  CHECK(none.total.value == 1152);
  auto with = [&](const char* modules) {
    auto o = bf16(AttentionMode::unfused, RecomputePolicy::selective);
    o.modules = *cost::RecomputeModules::parse(modules);
    return cost::saved_activations(g, o).total.value;
  };
  // moe_act: p goes; g and u stay (the recompute reads them): 896 B.
  CHECK(with("moe_act") == 896);
  // layernorm: the statistics and the output y go, x stays: 1,024 B.
  CHECK(with("layernorm") == 1024);
  CHECK(with("layernorm,moe_act") == 768);
  // core_attn alone (the default) finds no attention here: 1,152 B.
  CHECK(with("core_attn") == 1152);
}

TEST_CASE("full recompute keeps each layer's input: 2 sbh", "[cost][activations]") {
  GptShape m;
  const auto g = build_gpt(m);
  const auto r = cost::saved_activations(g, bf16(AttentionMode::unfused, RecomputePolicy::full));
  for (const auto& [layer, bytes] : r.per_layer) CHECK(bytes.value == 2 * m.sbh());
  // Ops outside the layers keep theirs (embedding indices, final norm, LM head).
  CHECK(r.outside_layers.value == 4 * m.sbh() + 24 * m.sb());
  // Backward of one layer rematerialises the rest of it: 2,887,680 - 131,072 = 2,756,608 B.
  CHECK(r.recompute_working_set.value == korthikanti(m) + 16 * m.sb() - 2 * m.sbh());
}

TEST_CASE("activations scale linearly with the micro-batch", "[cost][activations]") {
  GptShape m;
  m.b = 4;
  const auto r = cost::saved_activations(build_gpt(m), bf16());
  CHECK(r.per_layer.at(1).value == 2 * 2887680.0);
}

TEST_CASE("GeLU spelled as small ops is counted as one fused kernel", "[cost][activations]") {
  GptShape m;
  m.small_op_gelu = true;  // f1b -> Div -> Erf -> Add -> Mul(f1b, .) -> Mul(., 0.5)
  const auto g = build_gpt(m);
  // Fused (the default): the region keeps its input f1 (8 sbh), as one Gelu op would.
  const auto fused = cost::saved_activations(g, bf16());
  CHECK(fused.per_layer.at(0).value == korthikanti(m) + 16 * m.sb());
  // Op by op: Erf keeps x/sqrt(2) (8 sbh), Mul keeps f1b and 1 + erf (16 sbh):
  // 24 sbh instead of 8, i.e. 16 sbh more per layer.
  auto o = bf16();
  o.fuse_elementwise = false;
  const auto split = cost::saved_activations(g, o);
  CHECK(split.per_layer.at(0).value == korthikanti(m) + 16 * m.sbh() + 16 * m.sb());
}

TEST_CASE("without dropout: 32 sbh + 2 as^2 b", "[cost][activations]") {
  GptShape m;
  m.dropout = false;
  const auto r = cost::saved_activations(build_gpt(m), bf16());
  // Two 1-byte masks (2 sbh) and the attention dropout (mask as^2 b, output 2 as^2 b) go away.
  CHECK(r.per_layer.at(0).value == 32 * m.sbh() + 2 * m.as2b() + 16 * m.sb());
}

TEST_CASE("the fp32 embedding makes the first layer's input 4 bytes wide", "[cost][activations][precision]") {
  GptShape m;
  const auto g = build_gpt(m);
  ActivationOptions o;  // default policy: bf16, embedding and loss fp32
  o.attention = AttentionMode::unfused;
  const auto r = cost::saved_activations(g, o);
  // Layer 0's LayerNorm reads the fp32 embedding output: 4 sbh instead of 2.
  CHECK(r.per_layer.at(0).value == korthikanti(m) + 2 * m.sbh() + 16 * m.sb());
  CHECK(r.per_layer.at(1).value == korthikanti(m) + 16 * m.sb());
  // The loss in fp32: b s V x 4 = 1,024,000 B.
  CHECK(r.loss_buffer.value == 1024000);
}

TEST_CASE("views, transposes and splits alias their input", "[cost][activations]") {
  GptShape m;
  const auto g = build_gpt(m);
  const auto qkvb = *g.find_tensor("l0.qkvb");
  for (const char* t : {"l0.q", "l0.qt", "l0.kt", "l0.vt"}) CHECK(cost::alias_root(g, *g.find_tensor(t)) == qkvb);
  CHECK(cost::alias_root(g, *g.find_tensor("l0.ctx_r")) == *g.find_tensor("l0.ctx"));
  CHECK(cost::alias_root(g, qkvb) == qkvb);
}

TEST_CASE("the graph analysis finds the same layers as the builder", "[cost][activations]") {
  GptShape m;
  m.layers = 3;
  auto g = build_gpt(m);
  const auto expected = cost::saved_activations(g, bf16());
  for (auto& op : g.mutable_ops()) op.layer.reset();
  graph::analyze(g);
  REQUIRE(g.blocks.size() == 1);
  CHECK(g.blocks[0].count == 3);
  const auto found = cost::saved_activations(g, bf16());
  CHECK(found.per_layer == expected.per_layer);
  CHECK(found.total == expected.total);
}

TEST_CASE("saved activations are computed once per graph and options, again after a change", "[cost][activations]") {
  GptShape m;
  auto g = build_gpt(m);
  const graph::OpGraph& cg = g;
  const auto a = cost::shared_saved_activations(cg, bf16());
  const auto b = cost::shared_saved_activations(cg, bf16());
  CHECK(a.get() == b.get());  // kept: the same report
  const auto f = cost::shared_saved_activations(cg, bf16(AttentionMode::unfused, RecomputePolicy::full));
  CHECK(f.get() != a.get());  // other options: its own (2 sbh per layer, above)
  for (const auto& [layer, bytes] : f->per_layer) CHECK(bytes.value == 2 * m.sbh());
  // Any mutable access drops it; the recount gives the same 2,887,680 B per layer.
  g.op(graph::OpId{0}).name += "_renamed";
  const auto c = cost::shared_saved_activations(cg, bf16());
  CHECK(c.get() != a.get());
  CHECK(c->per_layer.at(0).value == 2887680);
  CHECK(c->total == a->total);
}
