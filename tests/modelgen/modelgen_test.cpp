// planner::modelgen: every architecture parses back, passes the ONNX checker
// and strict shape inference with static shapes, has the parameter count of
// its closed form (worked by hand below), declares its weights as external
// data without writing them, and is byte-for-byte deterministic.

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "modelgen/onnx_check.hpp"
#include "planner/modelgen/modelgen.hpp"

using namespace planner::modelgen;
using modelgen_test::float_params;
using modelgen_test::numel;
using modelgen_test::parse;

namespace {

/// Small but complete models of every arch.
ModelSpec tiny(Arch a) {
  ModelSpec s;
  s.arch = a;
  s.layers = 2;
  s.hidden = 8;
  s.heads = 2;
  s.seq = 4;
  s.vocab = 16;
  s.batch = 2;
  s.experts = 4;
  s.top_k = 2;
  s.width = 8;
  s.rows = 100;
  s.dim = 4;
  s.fields = 3;
  s.dense_features = 5;
  s.classes = 10;
  s.image = 32;
  return s;
}

BuiltModel must_build(const ModelSpec& s, const std::string& loc = "model.onnx.data") {
  auto r = build(s, loc);
  if (!r) FAIL(r.error().message);
  return std::move(r).value();
}

std::map<std::string, int> op_histogram(const onnx::ModelProto& m) {
  std::map<std::string, int> h;
  for (const auto& n : m.graph().node()) ++h[n.op_type()];
  return h;
}

const onnx::TensorProto* find_init(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

std::vector<std::int64_t> dims_of(const onnx::TensorProto& t) { return {t.dims().begin(), t.dims().end()}; }

}  // namespace

TEST_CASE("parse_arch and arch_name round-trip, unknown names list the known ones", "[modelgen]") {
  for (auto a : all_archs()) {
    auto p = parse_arch(arch_name(a));
    REQUIRE(p.ok());
    CHECK(*p == a);
    CHECK_FALSE(arch_options(a).empty());
  }
  auto bad = parse_arch("gpt4");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("gpt4") && Catch::Contains("widedeep"));
}

TEST_CASE("every arch: opset 17, checker, strict shape inference, static shapes, scalar loss", "[modelgen]") {
  for (auto a : all_archs()) {
    INFO(arch_name(a));
    auto built = must_build(tiny(a));
    auto m = parse(built.bytes);
    REQUIRE(m.opset_import_size() == 1);
    CHECK(m.opset_import(0).domain().empty());
    CHECK(m.opset_import(0).version() == 17);
    CHECK(m.ir_version() == 8);
    CHECK(m.graph().node_size() == built.node_count);
    CHECK(m.graph().initializer_size() == built.initializer_count);
    REQUIRE(m.graph().output_size() == 1);
    CHECK(m.graph().output(0).name() == "loss");
    CHECK(m.graph().output(0).type().tensor_type().shape().dim_size() == 0);
    // Every node comes from the default domain (standard ops only).
    for (const auto& n : m.graph().node()) CHECK(n.domain().empty());
    int checked = 0;
    REQUIRE_NOTHROW(checked = modelgen_test::check_with_onnx(built.bytes));
    int outputs = 0;
    for (const auto& n : m.graph().node())
      if (n.op_type() != "Constant") outputs += n.output_size();
    CHECK(checked == outputs);
  }
}

TEST_CASE("the loss op ends each arch", "[modelgen]") {
  for (auto a : all_archs()) {
    INFO(arch_name(a));
    auto m = parse(must_build(tiny(a)).bytes);
    const auto& last = m.graph().node(m.graph().node_size() - 1);
    CHECK(last.op_type() == (a == Arch::mlp ? "ReduceMean" : "SoftmaxCrossEntropyLoss"));
    CHECK(last.output(0) == "loss");
  }
}

TEST_CASE("gpt: closed-form parameter count, exact for a tiny model", "[modelgen][gpt]") {
  // Per layer: ln1 2h + qkv 3h^2+3h + proj h^2+h + ln2 2h + fc1 hf+f + fc2 fh+h
  //          = 4h^2 + 2hf + 9h + f  (f = 4h: 12h^2 + 13h).
  // Model: l * layer + token emb Vh + positions sh + final LN 2h + untied LM head hV.
  // l=2, h=8, V=16, s=4: 2*(768 + 104) + 128 + 32 + 16 + 128 = 2048.
  auto s = tiny(Arch::gpt);
  auto built = must_build(s);
  CHECK(built.parameter_count == 2048);
  CHECK(float_params(parse(built.bytes)) == 2048);
  CHECK(built.parameter_bytes == 4 * 2048);
  // Nodes: 31 per layer (LN, qkv MatMul+Add, Split, 3x Reshape+Transpose, scores MatMul+Mul+Add,
  // Softmax, context MatMul+Transpose+Reshape, proj MatMul+Add, residual, LN, fc1 2, GeLU 5,
  // fc2 2, residual) + 4 Constants + embeddings 3 + mask 2 + final LN, LM head, 2 Reshape, loss.
  CHECK(built.node_count == 31 * 2 + 14);
}

TEST_CASE("tied embeddings (gpt, llama): the LM head reads the token embedding transposed, hV fewer parameters",
          "[modelgen][gpt]") {
  // The tiny gpt above without its LM head hV = 128: 2048 - 128 = 1920; one
  // more node (the Transpose of embed.tokens.weight feeding lm_head/MatMul).
  auto s = tiny(Arch::gpt);
  s.tie_embeddings = true;
  auto built = must_build(s);
  CHECK(built.parameter_count == 1920);
  const auto m = parse(built.bytes);
  CHECK(float_params(m) == 1920);
  CHECK(built.node_count == 31 * 2 + 15);
  CHECK(find_init(m, "lm_head.weight") == nullptr);
  bool tied = false;
  for (const auto& n : m.graph().node())
    if (n.op_type() == "Transpose" && n.input_size() == 1 && n.input(0) == "embed.tokens.weight")
      for (const auto& user : m.graph().node())
        if (user.op_type() == "MatMul" && user.input_size() == 2 && user.input(1) == n.output(0)) tied = true;
  CHECK(tied);
  // llama the same way: its untied count less the head's hV.
  auto l = tiny(Arch::llama);
  const auto untied = must_build(l).parameter_count;
  l.tie_embeddings = true;
  CHECK(must_build(l).parameter_count == untied - 8 * 16);
}

TEST_CASE("gpt: GPT-3 175B has 174.6 B parameters within 0.5 % and builds in well under 1 s", "[modelgen][gpt]") {
  ModelSpec s;
  s.arch = Arch::gpt;
  s.layers = 96;
  s.hidden = 12288;
  s.heads = 96;
  s.seq = 2048;
  s.vocab = 51200;
  const auto t0 = std::chrono::steady_clock::now();
  auto built = must_build(s, "gpt3.onnx.data");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // 96 * (12 * 12288^2 + 13 * 12288) = 173,961,510,912
  // + 2 * 51200 * 12288 (embedding + untied head) = 1,258,291,200
  // + 2048 * 12288 (positions) + 2 * 12288 (final LN) = 25,190,400
  const std::int64_t l = 96, h = 12288, V = 51200, S = 2048;
  const std::int64_t closed = l * (12 * h * h + 13 * h) + 2 * V * h + S * h + 2 * h;
  CHECK(closed == 175'244'992'512);
  CHECK(built.parameter_count == closed);
  // Published 174.6 B counts a tied LM head; ours is untied (+0.63 B, 0.36 %).
  CHECK(std::abs(static_cast<double>(built.parameter_count) - 174.6e9) / 174.6e9 < 0.005);
  CHECK(built.node_count == 31 * 96 + 14);
  CHECK(secs < 1.0);
  CHECK(built.bytes.size() < 2'000'000);
}

TEST_CASE("llama: closed form, Llama-2 7B and 70B exactly", "[modelgen][llama]") {
  // Per layer: 2 RMSNorm 2h + q, o 2h^2 + k, v 2*h*kv*d + gate, up, down 3hf (no biases).
  // Model: l * layer + embedding Vh + final norm h + untied head hV.
  auto s = tiny(Arch::llama);
  s.hidden = 16;
  s.heads = 4;
  s.kv_heads = 2;  // d = 4, kv*d = 8
  s.ffn = 40;
  // 2 * (32 + 512 + 256 + 1920) + 2*16*16 + 16 = 5440 + 512 + 16 = 5968
  CHECK(must_build(s).parameter_count == 5968);

  ModelSpec l7;
  l7.arch = Arch::llama;
  l7.layers = 32;
  l7.hidden = 4096;
  l7.heads = 32;
  l7.seq = 4096;
  l7.vocab = 32000;
  CHECK(effective_ffn(l7) == 11008);  // 8/3 * 4096 rounded up to 256
  // 32 * (8192 + 2*4096^2 + 2*4096^2 + 3*4096*11008) + 2*32000*4096 + 4096
  CHECK(must_build(l7).parameter_count == 6'738'415'616);

  ModelSpec l70 = l7;
  l70.layers = 80;
  l70.hidden = 8192;
  l70.heads = 64;
  l70.kv_heads = 8;
  l70.ffn = 28672;
  // 80 * (16384 + 2*8192^2 + 2*8192*1024 + 3*8192*28672) + 2*32000*8192 + 8192
  CHECK(must_build(l70).parameter_count == 68'976'648'192);
}

TEST_CASE("llama: grouped-query attention repeats kv heads, rotary and RMSNorm from small ops", "[modelgen][llama]") {
  auto s = tiny(Arch::llama);
  s.hidden = 16;
  s.heads = 4;
  s.kv_heads = 2;
  auto m = parse(must_build(s).bytes);
  auto* k = find_init(m, "layers.1.attn.k.weight");
  REQUIRE(k != nullptr);
  CHECK(dims_of(*k) == std::vector<std::int64_t>{16, 8});
  auto h = op_histogram(m);
  CHECK(h["Expand"] == 2 * 2);       // k and v per layer
  CHECK(h["Neg"] == 2 * 2);          // rotate-half of q and k per layer
  CHECK(h["Cos"] == 1);              // tables computed once
  CHECK(h["Sin"] == 1);
  CHECK(h["ReduceMean"] == 2 * 2 + 1);  // RMSNorms
  CHECK(h.count("LayerNormalization") == 0);
  s.kv_heads = 0;  // = heads: no repeat
  CHECK(op_histogram(parse(must_build(s).bytes))["Expand"] == 0);
}

TEST_CASE("bert: closed form, BERT-base with untied MLM decoder", "[modelgen][bert]") {
  // Embeddings Vh + sh + 2h (segments) + 2h (LN); per layer as gpt 4h^2 + 2hf + 9h + f;
  // MLM head: transform h^2 + h, LN 2h, decoder hV + V.
  // l=2,h=8,f=32,V=16,s=4: 128+32+16+16 + 2*872 + 72+16 + 128+16 = 2168
  CHECK(must_build(tiny(Arch::bert)).parameter_count == 2168);
  ModelSpec b;
  b.arch = Arch::bert;
  b.layers = 12;
  b.hidden = 768;
  b.heads = 12;
  b.seq = 512;
  b.vocab = 30522;
  // HF BertForMaskedLM (109,514,298, tied) + untied decoder 30522*768 = 132,955,194.
  CHECK(must_build(b).parameter_count == 132'955'194);
}

TEST_CASE("t5: closed form, T5-base with untied LM head", "[modelgen][t5]") {
  // Shared embedding Vh; encoder layer 4h^2 + 2hf + 2h (2 norms); decoder layer 8h^2 + 2hf + 3h;
  // two final norms 2h; two relative-bias tables 2*32*heads; untied head hV. No biases.
  // tiny (l_e = l_d = 2, h=8, f=32, n=2, V=16): 128 + 2*784 + 2*1048 + 16 + 128 + 128 = 4064
  CHECK(must_build(tiny(Arch::t5)).parameter_count == 4064);
  auto s = tiny(Arch::t5);
  s.decoder_layers = 1;  // 4064 - 1048
  CHECK(must_build(s).parameter_count == 3016);
  ModelSpec t;
  t.arch = Arch::t5;
  t.layers = 12;
  t.hidden = 768;
  t.heads = 12;
  t.seq = 512;
  t.vocab = 32128;
  // HF t5-base (222,903,552, tied head) + 32128*768 = 247,577,856.
  CHECK(must_build(t).parameter_count == 247'577'856);
  auto h = op_histogram(parse(must_build(tiny(Arch::t5)).bytes));
  CHECK(h["Softmax"] == 2 + 2 * 2);  // encoder self, decoder self + cross
}

TEST_CASE("moe: closed form, capacity-sized expert slices, one weight set per expert", "[modelgen][moe]") {
  // Per layer: attention + LNs 4h^2 + 8h, router hE, experts E*(2hf + f + h).
  // Model: l * layer + 2Vh + sh + 2h.
  // l=2,h=8,f=32,E=4,V=16,s=4: 2*(256 + 64 + 32 + 4*552) + 256 + 32 + 16 = 5424
  auto s = tiny(Arch::moe);
  auto built = must_build(s);
  CHECK(built.parameter_count == 5424);
  // tokens = 2*4 = 8, capacity = ceil(8*2/4) = 4
  CHECK(moe_capacity(s) == 4);
  auto m = parse(built.bytes);
  auto h = op_histogram(m);
  CHECK(h["TopK"] == 2 * (1 + 4));   // router + one per expert
  CHECK(h["ScatterND"] == 2);        // one combine per layer, all experts' rows at once
  CHECK(find_init(m, "layers.1.moe.experts.3.fc2.weight") != nullptr);
  CHECK(find_init(m, "layers.0.moe.router.weight") != nullptr);
  // The per-expert TopK takes `capacity` tokens.
  bool found = false;
  for (const auto& t : m.graph().initializer()) {
    std::int64_t v = 0;
    if (t.data_type() != onnx::TensorProto::INT64 || t.dims_size() != 1 || t.dims(0) != 1) continue;
    REQUIRE(t.raw_data().size() == 8);
    std::memcpy(&v, t.raw_data().data(), 8);
    found = found || v == 4;
  }
  CHECK(found);
  s.batch = 3;
  s.seq = 5;
  s.top_k = 3;
  s.experts = 7;
  CHECK(moe_capacity(s) == 7);  // ceil(45/7)
}

TEST_CASE("llama-moe: closed form with a head size apart from hidden/heads, Qwen3-30B-A3B", "[modelgen][moe]") {
  // Per layer: 2 RMSNorms 2h, q and o 2*h*n*d, k and v 2*h*kv*d, router hE,
  // experts E*3hf (SwiGLU, no biases). Model: l * layer + 2Vh + h.
  // l=2, h=16, n=4, kv=2, d=8 (not 16/4), f=12, E=4, V=16:
  // layer 32 + 1024 + 512 + 64 + 4*576 = 3936; 2*3936 + 512 + 16 = 8400
  auto s = tiny(Arch::llama_moe);
  s.hidden = 16;
  s.heads = 4;
  s.kv_heads = 2;
  s.head_dim = 8;
  s.ffn = 12;
  auto built = must_build(s);
  CHECK(built.parameter_count == 8400);
  auto m = parse(built.bytes);
  auto* q = find_init(m, "layers.0.attn.q.weight");
  REQUIRE(q != nullptr);
  CHECK(dims_of(*q) == std::vector<std::int64_t>{16, 32});
  CHECK(find_init(m, "layers.1.moe.experts.3.down.weight") != nullptr);
  auto h = op_histogram(m);
  CHECK(h["TopK"] == 2 * (1 + 4));
  CHECK(h["ScatterND"] == 2);
  CHECK(h["Sigmoid"] == 2 * 4);  // SiLU in every expert
  CHECK(h.count("Erf") == 0);

  // Qwen3-30B-A3B (config.json: 48 layers, hidden 2048, 32 heads, 4 kv
  // heads, head_dim 128, 128 experts of width 768, vocab 151936):
  // layer 4096 + 2*2048*4096 + 2*2048*512 + 2048*128 + 128*3*2048*768
  //     = 4096 + 16,777,216 + 2,097,152 + 262,144 + 603,979,776 = 623,120,384
  // 48 * 623,120,384 + 2*151936*2048 + 2048 = 30,532,110,336 (HF's 30.5 B
  // total less the QK-norm weights, 2*128 a layer, which planner leaves out).
  const ModelSpec q3{.arch = Arch::llama_moe, .layers = 48, .hidden = 2048, .heads = 32, .kv_heads = 4,
                     .head_dim = 128, .ffn = 768, .seq = 4096, .vocab = 151936, .experts = 128, .top_k = 8};
  CHECK(must_build(q3).parameter_count == 30'532'110'336);
}

TEST_CASE("mlp: closed form and MSE loss", "[modelgen][mlp]") {
  // l (w^2 + w): 2 * (64 + 8) = 144
  auto built = must_build(tiny(Arch::mlp));
  CHECK(built.parameter_count == 144);
  auto h = op_histogram(parse(built.bytes));
  CHECK(h["Gemm"] == 2);
  CHECK(h["Relu"] == 1);
  CHECK(h["ReduceMean"] == 1);
}

TEST_CASE("resnet: closed form, torchvision's 50/101/152 counts", "[modelgen][resnet]") {
  // Stem conv 7*7*3*64 + BN 2*64. Stage i (width w = 64*2^i, out 4w) block:
  // 1x1 cin*w + 3x3 9w^2 + 1x1 4w^2 + BN 2(w + w + 4w); first block adds
  // projection cin*4w + BN 8w. FC 2048*classes + classes.
  auto closed = [](std::vector<int> blocks, std::int64_t classes) {
    std::int64_t p = 7 * 7 * 3 * 64 + 2 * 64, cin = 64;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const std::int64_t w = std::int64_t{64} << i;
      for (int b = 0; b < blocks[i]; ++b) {
        p += cin * w + 9 * w * w + 4 * w * w + 2 * 6 * w;
        if (b == 0) p += cin * 4 * w + 8 * w;
        cin = 4 * w;
      }
    }
    return p + 2048 * classes + classes;
  };
  ModelSpec s;
  s.arch = Arch::resnet;
  s.depth = 50;
  CHECK(closed({3, 4, 6, 3}, 1000) == 25'557'032);
  CHECK(must_build(s).parameter_count == 25'557'032);
  s.depth = 101;
  CHECK(must_build(s).parameter_count == 44'549'160);
  s.depth = 152;
  s.classes = 10;
  CHECK(must_build(s).parameter_count == closed({3, 8, 36, 3}, 10));
  auto h = op_histogram(parse(must_build(s).bytes));
  CHECK(h["Conv"] == 1 + 3 * (3 + 8 + 36 + 3) + 4);
  CHECK(h["BatchNormalization"] == h["Conv"]);
}

TEST_CASE("widedeep: closed form", "[modelgen][widedeep]") {
  // deep table rows*dim + wide table rows*1 + deep in*1024 + 1024 + 1024*512 + 512
  // + 512*256 + 256 + 256*1 + 1 (one bias for wide + deep), in = fields*dim + dense.
  // tiny (rows 100, dim 4, fields 3, dense 5: in = 17):
  // 400 + 100 + 18432 + 524800 + 131328 + 257 = 675317
  auto s = tiny(Arch::widedeep);
  CHECK(must_build(s).parameter_count == 675'317);
  auto m = parse(must_build(s).bytes);
  auto h = op_histogram(m);
  CHECK(h["Gather"] == 2);  // wide [rows,1] and deep [rows,dim] tables, same ids
  CHECK(h["ReduceSum"] == 1);
  CHECK(h["SoftmaxCrossEntropyLoss"] == 1);
  s.dense_features = 0;  // no dense input: in = 12, 5 * 1024 fewer weights in deep/fc1
  CHECK(must_build(s).parameter_count == 675'317 - 5 * 1024);
  m = parse(must_build(s).bytes);
  CHECK(m.graph().input_size() == 2);
}

TEST_CASE("weights are external data at consecutive offsets, tables are inline, nothing written", "[modelgen]") {
  const std::string loc = "planner-modelgen-test-not-written.onnx.data";
  for (auto a : all_archs()) {
    INFO(arch_name(a));
    auto m = parse(must_build(tiny(a), loc).bytes);
    std::int64_t offset = 0;
    for (const auto& t : m.graph().initializer()) {
      if (t.data_type() == onnx::TensorProto::INT64) {
        CHECK(t.data_location() != onnx::TensorProto::EXTERNAL);
        CHECK(t.raw_data().size() == static_cast<std::size_t>(8 * numel(t)));
        continue;
      }
      REQUIRE(t.data_type() == onnx::TensorProto::FLOAT);
      CHECK(t.data_location() == onnx::TensorProto::EXTERNAL);
      CHECK(t.raw_data().empty());
      CHECK(t.float_data_size() == 0);
      std::map<std::string, std::string> kv;
      for (const auto& e : t.external_data()) kv[e.key()] = e.value();
      CHECK(kv["location"] == loc);
      CHECK(kv["offset"] == std::to_string(offset));
      CHECK(kv["length"] == std::to_string(4 * numel(t)));
      offset += 4 * numel(t);
    }
    CHECK(offset == 4 * float_params(m));
  }
  CHECK_FALSE(std::filesystem::exists(loc));
}

TEST_CASE("same spec, same bytes, every arch", "[modelgen]") {
  for (auto a : all_archs()) {
    INFO(arch_name(a));
    CHECK(must_build(tiny(a)).bytes == must_build(tiny(a)).bytes);
    if (a == Arch::resnet) continue;  // 23 M random weights: covered by the others
    auto s = tiny(a);
    s.with_weights = true;
    CHECK(must_build(s).bytes == must_build(s).bytes);
  }
}

TEST_CASE("with-weights: inline random weights, norms one, biases zero, seeded", "[modelgen]") {
  auto s = tiny(Arch::gpt);
  s.with_weights = true;
  auto built = must_build(s);
  auto m = parse(built.bytes);
  CHECK(built.parameter_count == 2048);
  double sum_sq = 0;
  std::int64_t n = 0;
  for (const auto& t : m.graph().initializer()) {
    if (t.data_type() != onnx::TensorProto::FLOAT) continue;
    CHECK(t.data_location() != onnx::TensorProto::EXTERNAL);
    CHECK(t.external_data_size() == 0);
    REQUIRE(t.raw_data().size() == static_cast<std::size_t>(4 * numel(t)));
    std::vector<float> f(static_cast<std::size_t>(numel(t)));
    std::memcpy(f.data(), t.raw_data().data(), t.raw_data().size());
    if (t.name() == "layers.0.ln1.weight") CHECK(f[0] == 1.0f);
    if (t.name() == "layers.0.attn.qkv.bias") CHECK(f[0] == 0.0f);
    if (t.name() == "embed.tokens.weight")
      for (float v : f) sum_sq += static_cast<double>(v) * v, ++n;
  }
  REQUIRE(n == 128);
  CHECK(std::sqrt(sum_sq / static_cast<double>(n)) == Approx(0.02).epsilon(0.25));
  REQUIRE_NOTHROW(modelgen_test::check_with_onnx(built.bytes));
  auto other = s;
  other.seed = 99;
  CHECK(must_build(other).bytes != built.bytes);
}

TEST_CASE("with-weights refuses models over 2^28 parameters", "[modelgen]") {
  ModelSpec s;
  s.arch = Arch::gpt;
  s.layers = 30;
  s.hidden = 1024;
  s.heads = 16;
  s.with_weights = true;  // 30 * 12.6 M + 2 * 51.5 M > 268 M
  auto r = build(s, "x.data");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("--with-weights") && Catch::Contains("2^28"));
}

TEST_CASE("names are layer-numbered: weights with dots, nodes with slashes", "[modelgen]") {
  auto s = tiny(Arch::gpt);
  s.layers = 4;
  auto m = parse(must_build(s).bytes);
  CHECK(find_init(m, "layers.3.attn.qkv.weight") != nullptr);
  CHECK(find_init(m, "layers.3.mlp.fc2.bias") != nullptr);
  CHECK(find_init(m, "lm_head.weight") != nullptr);
  std::set<std::string> names;
  for (const auto& n : m.graph().node()) {
    CHECK_FALSE(n.name().empty());
    CHECK(names.insert(n.name()).second);  // unique
  }
  CHECK(names.count("layers.3/attn/qkv/MatMul") == 1);
  CHECK(names.count("layers.3/attn/Softmax") == 1);
  CHECK(names.count("layers.0/mlp/fc1/MatMul") == 1);
  CHECK(names.count("loss/SoftmaxCrossEntropyLoss") == 1);
  // torchvision names for resnet
  auto r = parse(must_build(tiny(Arch::resnet)).bytes);
  CHECK(find_init(r, "layer3.0.downsample.0.weight") != nullptr);
  CHECK(find_init(r, "layer4.2.bn3.weight") != nullptr);
}

TEST_CASE("option validation: one line naming the option", "[modelgen]") {
  struct Case {
    Arch arch;
    void (*edit)(ModelSpec&);
    const char* expect;
  };
  const Case cases[] = {
      {Arch::gpt, [](ModelSpec& s) { s.hidden = 100; s.heads = 12; }, "--hidden 100 is not divisible by --heads 12"},
      {Arch::gpt, [](ModelSpec& s) { s.layers = 0; }, "--layers 0 must be positive"},
      {Arch::gpt, [](ModelSpec& s) { s.seq = -5; }, "--seq -5 must be positive"},
      {Arch::gpt, [](ModelSpec& s) { s.vocab = 0; }, "--vocab"},
      {Arch::gpt, [](ModelSpec& s) { s.batch = 0; }, "--batch 0 must be positive"},
      {Arch::gpt, [](ModelSpec& s) { s.ffn = -1; }, "--ffn -1 must be positive"},
      {Arch::gpt, [](ModelSpec& s) { s.heads = 0; }, "--heads 0 must be positive"},
      {Arch::gpt, [](ModelSpec& s) { s.batch = 1 << 20; s.seq = 1 << 20; }, "--batch, --heads or --seq"},
      {Arch::llama, [](ModelSpec& s) { s.heads = 12; s.kv_heads = 5; s.hidden = 768; }, "--heads 12 is not divisible by --kv-heads 5"},
      {Arch::llama, [](ModelSpec& s) { s.heads = 4; s.kv_heads = 8; s.hidden = 64; }, "--kv-heads 8 is too large"},
      {Arch::llama, [](ModelSpec& s) { s.hidden = 12; s.heads = 4; }, "rotary embedding needs an even head size"},
      {Arch::moe, [](ModelSpec& s) { s.top_k = 5; s.experts = 4; }, "--top-k 5 is larger than --experts 4"},
      {Arch::llama_moe, [](ModelSpec& s) { s.head_dim = 7; }, "--head-dim 7 is odd"},
      {Arch::llama_moe, [](ModelSpec& s) { s.top_k = 5; s.experts = 4; }, "--top-k 5 is larger than --experts 4"},
      {Arch::gpt, [](ModelSpec& s) { s.hidden = 10; s.heads = 4; }, "--hidden 10 is not divisible by --heads 4"},
      {Arch::moe, [](ModelSpec& s) { s.experts = 0; }, "--experts 0 must be positive"},
      {Arch::moe, [](ModelSpec& s) { s.layers = 1000; s.experts = 1000; }, "expert blocks is too many"},
      {Arch::t5, [](ModelSpec& s) { s.decoder_layers = -1; }, "--decoder-layers -1 must be at least 0"},
      {Arch::resnet, [](ModelSpec& s) { s.depth = 34; }, "--depth 34 is not one of 50, 101, 152"},
      {Arch::resnet, [](ModelSpec& s) { s.image = 16; }, "--image 16 must be at least 32"},
      {Arch::resnet, [](ModelSpec& s) { s.classes = 0; }, "--classes 0 must be positive"},
      {Arch::mlp, [](ModelSpec& s) { s.width = 0; }, "--width 0 must be positive"},
      {Arch::widedeep, [](ModelSpec& s) { s.rows = 0; }, "--rows 0 must be positive"},
      {Arch::widedeep, [](ModelSpec& s) { s.dense_features = -1; }, "--dense-features -1 must be at least 0"},
      {Arch::widedeep, [](ModelSpec& s) { s.fields = 0; }, "--fields 0 must be positive"},
  };
  for (const auto& c : cases) {
    auto s = tiny(c.arch);
    c.edit(s);
    INFO(arch_name(c.arch) << ": expecting " << c.expect);
    auto st = validate(s);
    REQUIRE_FALSE(st.ok());
    CHECK_THAT(st.error().message, Catch::Contains(c.expect));
    CHECK(st.error().message.find('\n') == std::string::npos);
    auto r = build(s, "x.data");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == st.error().message);
  }
  // Options an arch does not read are not checked for it.
  auto s = tiny(Arch::resnet);
  s.hidden = 7;
  s.heads = 3;
  CHECK(validate(s).ok());
}
