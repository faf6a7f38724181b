// The real mode's recomputation (src/executor/real_recompute.hpp), context
// parallelism's views (real_cp.cpp) and the tp rules added for GQA and
// tp_splits_batch (real_tp.hpp): groups and dropped tensors of the tiny GPT
// counted by hand, a recomputing run and a cp run on the in-process fake
// communicator, and the output views of Expand, a batch-split loss and a
// row-parallel Gemm with a bias.

#include <thread>

#include <catch2/catch.hpp>

#include "fake_run.hpp"
#include "fixtures.hpp"
#include "planner/executor/real.hpp"
#include "planner/runtime/fake_communicator.hpp"
#include "../../src/executor/real_recompute.hpp"
#include "../../src/executor/real_tp.hpp"

namespace planner::executor {
namespace {

using real_detail::TpView;

std::vector<std::vector<graph::OpId>> one_chunk(const graph::OpGraph& g) {
  auto order = g.topological_order();
  REQUIRE(order.ok());
  return {*order};
}

}  // namespace

TEST_CASE("recompute groups of the tiny GPT", "[executor][real][recompute]") {
  const auto& g = testing::tiny_gpt();
  const auto chunks = one_chunk(g);
  // full: one group a layer, its 31 ops (ln1; qkv MatMul, Add; Split; q, k,
  // v Reshape and Transpose; attention's 5; Transpose, Reshape; proj
  // MatMul, Add; residual Add; ln2; fc1 MatMul, Add; GeLU's 5; fc2 MatMul,
  // Add; residual Add). They make 33 tensors (Split makes 3); all but the
  // layer's output (the second residual Add's, read by the next layer) are
  // read inside the layer only: 32 dropped.
  auto full = real_detail::plan_recompute(g, "full", "", chunks);
  REQUIRE(full.ok());
  REQUIRE(full->groups.size() == 4);
  for (const auto& grp : full->groups) {
    CHECK(grp.chunk == 0);
    CHECK(grp.ops.size() == 31);
    CHECK(grp.dropped.size() == 32);
  }
  CHECK(full->group_of[g.find_op("embed/Add")->value] == -1);
  CHECK(full->group_of[g.find_op("layers.2/ln1/LayerNormalization")->value] == 2);
  // selective: the attention pattern's 5 ops (scores MatMul, scale Mul, mask
  // Add, Softmax, context MatMul); dropped: the four [2,4,32,32] tensors the
  // first four make (the context is read by the Transpose outside).
  auto sel = real_detail::plan_recompute(g, "selective", "", chunks);
  REQUIRE(sel.ok());
  REQUIRE(sel->groups.size() == 4);
  for (const auto& grp : sel->groups) {
    CHECK(grp.ops.size() == 5);
    REQUIRE(grp.dropped.size() == 4);
    for (auto t : grp.dropped) CHECK(g.tensor(t).numel() == 2 * 4 * 32 * 32);
  }
  CHECK(sel->group_of[g.find_op("layers.0/attn/Softmax")->value] >= 0);
  CHECK(sel->group_of[g.find_op("layers.0/ln1/LayerNormalization")->value] == -1);
  // selective layernorm on the GPT: its norms feed one GEMM each (qkv, fc1;
  // the final norm is no layer's), so Transformer Engine fuses them and
  // Megatron's layernorm module has none: the 4 attention groups only.
  auto gpt_ln = real_detail::plan_recompute(g, "selective", "core_attn,layernorm", chunks);
  REQUIRE(gpt_ln.ok());
  CHECK(gpt_ln->groups.size() == 4);
  const auto bad_module = real_detail::plan_recompute(g, "selective", "mlp", chunks);
  REQUIRE_FALSE(bad_module.ok());
  CHECK_THAT(bad_module.error().message, Catch::Contains("training.recompute_modules: recompute module 'mlp'"));
  auto none = real_detail::plan_recompute(g, "none", "", chunks);
  REQUIRE(none.ok());
  CHECK_FALSE(none->any());
  const auto bad = real_detail::plan_recompute(g, "most", "", chunks);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "training.recompute 'most' is none of none, selective, full");
}

TEST_CASE("recompute groups of a BERT's norms: dropped outputs, their readers", "[executor][real][recompute]") {
  // Post-LN BERT, 4 layers: each norm's output feeds a GEMM and a residual
  // Add, so each is Megatron's layernorm module, but the last layer's second
  // norm, which feeds the MLM head's GEMM alone (fused): 7 norm groups, and
  // the 4 attention patterns.
  const auto g = testing::build_graph(testing::spec(modelgen::Arch::bert, 4, 32, 2, 8, 64), "tiny_bert.onnx");
  const auto chunks = one_chunk(g);
  auto ln = real_detail::plan_recompute(g, "selective", "core_attn,layernorm", chunks);
  REQUIRE(ln.ok());
  CHECK(ln->groups.size() == 11);
  const auto norm = g.find_op("layers.1/attn_ln/LayerNormalization");
  REQUIRE(norm);
  const int gi = ln->group_of[norm->value];
  REQUIRE(gi >= 0);
  const auto& grp = ln->groups[static_cast<std::size_t>(gi)];
  CHECK(grp.ops == std::vector<graph::OpId>{*norm});
  // Its output, read outside the group by two ops, is dropped after the
  // later of them and made again before either's backward.
  REQUIRE(grp.dropped.size() == 1);
  CHECK(grp.dropped[0] == *g.op(*norm).outputs[0]);
  const auto& readers = g.tensor(grp.dropped[0]).consumers;
  REQUIRE(readers.size() == 2);
  for (auto r : readers) CHECK(ln->reads_dropped[r.value] == std::vector<int>{gi});
  CHECK((grp.drop_after == readers[0] || grp.drop_after == readers[1]));
  CHECK(ln->drops_after[grp.drop_after.value] == std::vector<int>{gi});
  CHECK(ln->group_of[g.find_op("layers.3/mlp_ln/LayerNormalization")->value] == -1);
}

TEST_CASE("real mode: recomputation passes --check, counts its work and holds less", "[executor][real][recompute]") {
  // gpt_pp2: dp 1, 2 micro-batches of 2 sequences; T = 2 x 32 = 64 tokens,
  // hidden 64, 4 heads of 16, ffn 256. Forward FLOPs a layer, a micro-batch:
  //   qkv 2*64*64*192 = 1572864 + bias 64*192 = 12288
  //   proj 2*64*64*64 = 524288 + 4096; fc1 2*64*64*256 = 2097152 + 16384;
  //   fc2 2097152 + 4096; residuals 2*4096 = 8192; GeLU 5 x 16384 = 81920;
  //   LayerNorm 7 x 4096 twice = 57344;
  //   attention: scores 2*2*4*32*32*16 = 262144, scale 8192, mask 8192,
  //   Softmax 5*8192 = 40960, context 262144 -> 581632
  //   -> 7057408. full: 31 ops x 4 layers x 2 = 248 ops, 7057408 x 8 =
  //   56459264 FLOPs; selective: 5 x 4 x 2 = 40 ops, 581632 x 8 = 4653056.
  const struct {
    const char* policy;
    double ops, flops;
  } cases[] = {{"none", 0, 0}, {"full", 248, 56459264}, {"selective", 40, 4653056}};
  std::vector<std::vector<double>> held;
  for (const auto& c : cases) {
    INFO(c.policy);
    auto p = testing::load_plan("gpt_pp2.json");
    p.training.recompute = c.policy;
    RealOptions o;
    o.steps = 1;
    o.warmup = 1;
    o.check = true;
    const auto res = testing::run_all(p, o);
    for (const auto& r : res) {
      REQUIRE(r.ok());
      CHECK(r->check_failure.empty());
      CHECK(r->recomputed_ops_per_step == c.ops);
      CHECK(r->recomputed_flops_per_step == c.flops);
    }
    REQUIRE(res[0]->checked.size() == 2);
    for (const auto& ck : res[0]->checked) CHECK(ck.max_rel_error <= 1e-5);
    held.push_back(res[0]->peak_activation_bytes);
  }
  // Every rank holds fewer activation bytes at peak; full far fewer on
  // rank 0 (layers 0-1 and the embedding only).
  REQUIRE(held[0].size() == 2);
  for (std::size_t r = 0; r < 2; ++r) {
    CHECK(held[1][r] < held[0][r]);
    CHECK(held[2][r] < held[0][r]);
  }
  CHECK(3 * held[1][0] < held[0][0]);
}

TEST_CASE("tp output views: Expand, a batch-split loss, a row-parallel Gemm with a bias", "[executor][real][tp]") {
  // llama, 4 heads on 2 kv heads: k_repeat/Expand [2,2,1,32,16] ->
  // [2,2,2,32,16]. Split along the kv heads (dim 1, not broadcast): the
  // output is split there too; along dim 2 (1 broadcast to 2): refused.
  static const graph::OpGraph llama =
      testing::build_graph(testing::spec(modelgen::Arch::llama, 1, 64, 4, 32, 128, 2), "llama_gqa.onnx");
  const auto& ex = llama.op(*llama.find_op("layers.0/attn/k_repeat/Expand"));
  auto kv = real_detail::derive_outputs(ex, llama, {TpView::split_at(1), TpView::rep()}, {}, 2);
  REQUIRE(kv.ok());
  CHECK((*kv)[0] == TpView::split_at(1));
  auto bc = real_detail::derive_outputs(ex, llama, {TpView::split_at(2), TpView::rep()}, {}, 2);
  REQUIRE_FALSE(bc.ok());
  CHECK(bc.error().message == "it broadcasts the split dim 2");

  // The GPT's loss over [64,128] scores and [64] labels: rows split with
  // their labels -> a partial sum (each rank's mean / tp); classes split ->
  // vocabulary-parallel, whole; rows split, labels whole: refused.
  const auto& g = testing::tiny_gpt();
  const auto& loss = g.op(*g.find_op("loss/SoftmaxCrossEntropyLoss"));
  auto rows = real_detail::derive_outputs(loss, g, {TpView::split_at(0), TpView::split_at(0)}, {}, 2);
  REQUIRE(rows.ok());
  CHECK((*rows)[0] == TpView::part());
  auto classes = real_detail::derive_outputs(loss, g, {TpView::split_at(1), TpView::rep()}, {}, 2);
  REQUIRE(classes.ok());
  CHECK((*classes)[0] == TpView::rep());
  CHECK_FALSE(real_detail::derive_outputs(loss, g, {TpView::split_at(0), TpView::rep()}, {}, 2).ok());

  // mlp Gemm x[2,32] W[32,32] b[32]: contraction split with a whole bias ->
  // a partial sum (tp rank 0 adds the bias); with the bias split: refused.
  static const graph::OpGraph mlp = [] {
    modelgen::ModelSpec s;
    s.arch = modelgen::Arch::mlp;
    s.layers = 2;
    s.width = 32;
    return testing::build_graph(s, "mlp.onnx");
  }();
  const auto& gemm = mlp.op(*mlp.find_op("layers.0/fc/Gemm"));
  auto part = real_detail::derive_outputs(gemm, mlp, {TpView::split_at(1), TpView::split_at(0), TpView::rep()}, {}, 2);
  REQUIRE(part.ok());
  CHECK((*part)[0] == TpView::part());
  auto split_bias =
      real_detail::derive_outputs(gemm, mlp, {TpView::split_at(1), TpView::split_at(0), TpView::split_at(0)}, {}, 2);
  REQUIRE_FALSE(split_bias.ok());
  CHECK(split_bias.error().message == "a split bias added to a partial sum");
}

TEST_CASE("cp views of the tiny GPT: the sequence split, K^T and V gathered", "[executor][real][cp]") {
  const auto& g = testing::tiny_gpt();
  auto p = testing::load_plan("gpt_pp2.json");
  p.layout.pp = 1;
  p.layout.cp = 2;
  auto l = real_detail::derive_cp_layout(p, g);
  REQUIRE(l.ok());
  const auto op = [&](const char* name) -> const real_detail::TpOpInfo& { return l->ops[g.find_op(name)->value]; };
  const auto out_of = [&](const char* name) { return *g.op(*g.find_op(name)).outputs[0]; };
  // ids [2,32] read split along the sequence: tokens [2,32,64] split at 1.
  CHECK(op("embed/tokens/Gather").in[1].view == TpView::split_at(1));
  CHECK(l->stored[out_of("embed/tokens/Gather").value] == TpView::split_at(1));
  // The position rows [32,64] are made whole and read as the rank's block.
  CHECK(l->stored[out_of("embed/positions/Gather").value] == TpView::rep());
  CHECK(op("embed/Add").in[1].view == TpView::split_at(0));
  // q [2,4,32,16] split at 2 (its queries); K^T [2,4,16,32] made split at 3
  // and kept whole (all-gathered) for the scores; the causal mask [32,32]
  // read as its rows; V kept whole for the context.
  CHECK(op("layers.0/attn/scores/MatMul").in[0].view == TpView::split_at(2));
  CHECK(op("layers.0/attn/scores/MatMul").in[1].view == TpView::rep());
  CHECK(op("layers.0/attn/k/Transpose").out[0].view == TpView::split_at(3));
  CHECK(l->stored[out_of("layers.0/attn/k/Transpose").value] == TpView::rep());
  CHECK(op("layers.0/attn/scores/Add").in[1].view == TpView::split_at(0));
  CHECK(op("layers.0/attn/Softmax").out[0].view == TpView::split_at(2));
  CHECK(op("layers.0/attn/context/MatMul").in[1].view == TpView::rep());
  CHECK(l->stored[out_of("layers.0/attn/context/Reshape").value] == TpView::split_at(1));
  // The logits [2,32,128] gathered for the reshape before the loss; the loss whole.
  CHECK(l->stored[out_of("lm_head/MatMul").value] == TpView::rep());
  CHECK(op("loss/SoftmaxCrossEntropyLoss").out[0].view == TpView::rep());
  // No parameter is a share.
  for (std::uint32_t i = 0; i < g.num_tensors(); ++i)
    if (g.tensor(graph::TensorId{i}).role == graph::TensorRole::parameter) CHECK_FALSE(l->stored[i].is_split());

  // On the fake communicator: --check passes, and every rank learns one loss.
  // gpt_dp2's two ranks, turned into a cp group (one micro-batch of 2).
  p = testing::load_plan("gpt_dp2.json");
  p.layout.dp = 1;
  p.layout.cp = 2;
  for (auto& a : p.layout.mesh) {
    if (a.name == "dp") a.size = 1;
    if (a.name == "cp") a.size = 2;
  }
  RealOptions o;  // the plan's AdamW
  o.steps = 1;
  o.warmup = 0;
  o.check = true;
  const auto res = testing::run_all(p, o);
  for (const auto& r : res) {
    REQUIRE(r.ok());
    CHECK(r->check_failure.empty());
    CHECK(r->losses == res[0]->losses);
  }
  REQUIRE(res[0]->checked.size() == 1);
  CHECK(res[0]->checked[0].max_rel_error <= 1e-5);
}

}  // namespace planner::executor
