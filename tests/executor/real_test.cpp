// The real mode on the in-process fake communicator (one thread per rank):
// the fixture plans of tests/executor/data train the tiny GPT (vocabulary
// 128) with --check against the interpreter; a dropped collective fails the
// check; tensor parallelism (its views and share helpers, real_tp.hpp).

#include <algorithm>
#include <cmath>
#include <set>
#include <thread>

#include <catch2/catch.hpp>

#include "fake_run.hpp"
#include "fixtures.hpp"
#include "planner/executor/real.hpp"
#include "planner/runtime/fake_communicator.hpp"
#include "planner/runtime_cpu/interpreter.hpp"
#include "../../src/executor/real_tp.hpp"

namespace planner::executor {
namespace {

TEST_CASE("real mode: --check passes on dp, ZeRO-1, pp and interleaved plans", "[executor][real]") {
  for (const char* name : {"gpt_dp2.json", "gpt_dp2_zero1.json", "gpt_pp2.json", "gpt_dp2_pp2_vp2.json"}) {
    INFO(name);
    const auto p = testing::load_plan(name);
    RealOptions o;
    o.steps = 2;
    o.warmup = 1;
    o.check = true;
    const auto res = testing::run_all(p, o);
    for (const auto& r : res) {
      REQUIRE(r.ok());
      CHECK(r->check_failure.empty());
      REQUIRE(r->losses.size() == 3);
      CHECK(r->step_times_s.size() == 2);
      // Every rank learns the same losses (all-reduced).
      CHECK(r->losses == res[0]->losses);
    }
    // Rank 0 checked 3 steps (kMaxCheckedSteps), each within 1e-5.
    REQUIRE(res[0]->checked.size() == 3);
    for (const auto& c : res[0]->checked) CHECK(c.max_rel_error <= 1e-5);
    // Initial weights N(0, 0.02) give near-uniform logits over 128 classes:
    // loss ~ ln 128 = 4.852.
    CHECK(std::fabs(res[0]->losses[0] - std::log(128.0)) < 0.05);
    // Adam (lr 1e-4 in the plans) lowers it.
    CHECK(res[0]->losses[2] < res[0]->losses[0]);
  }
}

TEST_CASE("real mode: pipeline sends are posted so the sender does not wait for its receiver", "[executor][real]") {
  // gpt_pp2: 2 stages, 2 micro-batches; per step each stage sends once per
  // micro-batch (activations forward, gradients back): 2 sends per rank per
  // step, 3 steps (1 warm-up + 2). Blocking sends both ways ran 1F1B in
  // lock-step on MPI (each stage waited for the other's receive).
  RealOptions o;
  o.steps = 2;
  o.warmup = 1;
  std::vector<testing::SendCounts> counts;
  const auto res = testing::run_all(testing::load_plan("gpt_pp2.json"), o, std::nullopt, &counts);
  REQUIRE(res.size() == 2);
  for (std::size_t r = 0; r < 2; ++r) {
    INFO("rank " << r);
    REQUIRE(res[r].ok());
    CHECK(counts[r].blocking == 0);
    CHECK(counts[r].posted == 2 * 3);
  }
}

TEST_CASE("real mode: the same global batch gives the same loss under every layout", "[executor][real]") {
  // gpt_dp2 (dp 2 x 1 micro-batch) and gpt_pp2 (2 micro-batches) both cover
  // 4 sequences = global rows 0-3 of the seed's inputs; the step-1 loss is
  // the mean over those sequences, so the two agree to fp32 rounding.
  RealOptions o;
  o.steps = 1;
  o.warmup = 0;
  const auto a = testing::run_all(testing::load_plan("gpt_dp2.json"), o);
  const auto b = testing::run_all(testing::load_plan("gpt_pp2.json"), o);
  REQUIRE(a[0].ok());
  REQUIRE(b[0].ok());
  CHECK(a[0]->losses[0] == Approx(b[0]->losses[0]).epsilon(1e-6));
}

TEST_CASE("real mode: a dropped gradient reduction fails --check", "[executor][real]") {
  RealOptions o;
  o.steps = 2;
  o.warmup = 0;
  o.check = true;
  // World collective #1 of gpt_dp2 (pp = 1, dp = world) is the gradient all-reduce.
  const auto res = testing::run_all(testing::load_plan("gpt_dp2.json"), o, runtime::FaultSpec{1, 1});
  for (const auto& r : res) {
    REQUIRE(r.ok());
    CHECK_FALSE(r->check_failure.empty());
  }
  CHECK_THAT(res[0]->check_failure, Catch::StartsWith("--check failed at step 1: gradient of '"));
}

TEST_CASE("real mode: --check passes on tp and tp x pp plans", "[executor][real][tp]") {
  // Megatron column/row splits, head-split attention, the fused QKV split
  // (gen_plans.sh, megatron.hints), with the plans' own optimizer (AdamW,
  // the default users run) and with SGD with momentum. The attention key
  // bias (true gradient 0, rounding noise here and in the reference) is
  // compared as a gradient from the same weights and as the update of the
  // run's gradients, so Adam's sign-like step does not fail it
  // (docs/executor.md).
  for (const auto& [name, optimizer] : {std::pair{"gpt_tp2.json", ""}, std::pair{"gpt_tp2_pp2.json", ""},
                                        std::pair{"gpt_tp2.json", "sgd_momentum"}}) {
    INFO(name << " " << optimizer);
    auto p = testing::load_plan(name);
    if (*optimizer != 0) p.training.optimizer.name = optimizer;
    else CHECK(p.training.optimizer.name == "adam");
    RealOptions o;
    o.steps = 2;
    o.warmup = 0;
    o.check = true;
    const auto res = testing::run_all(p, o);
    for (const auto& r : res) {
      REQUIRE(r.ok());
      CHECK(r->check_failure.empty());
      CHECK(r->losses == res[0]->losses);
    }
    REQUIRE(res[0]->checked.size() == 2);
    for (const auto& c : res[0]->checked) CHECK(c.max_rel_error <= 1e-5);
    CHECK(std::fabs(res[0]->losses[0] - std::log(128.0)) < 0.05);
  }
}

TEST_CASE("real mode: --check passes under sequence parallelism, the partial weight gradients all-reduced once a step",
          "[executor][real][tp]") {
  // Megatron SP on the tp plan (2 micro-batches a step, AdamW): the norms
  // and the row-parallel biases run on sequence blocks, so their weights'
  // gradients are partial sums over tp. The plan prices their all-reduce
  // once a step (grad_sync); the executor sums them over the micro-batches
  // and all-reduces them together, in one call of all their elements.
  const auto& g = testing::tiny_gpt();
  auto p = testing::load_plan("gpt_tp2.json");
  p.layout.sequence_parallel = true;
  REQUIRE(p.training.micro_batches == 2);
  const auto l = real_detail::derive_tp_layout(p, g);
  REQUIRE(l.ok());
  std::set<std::uint32_t> partial;
  for (std::uint32_t o = 0; o < g.num_ops(); ++o) {
    const auto& info = l->ops[o];
    if (!info.split) continue;
    const auto& op = g.op(graph::OpId{o});
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      if (!op.inputs[i]) continue;
      const auto& t = g.tensor(*op.inputs[i]);
      if (t.role == graph::TensorRole::parameter && !t.producer && !info.in[i].view.is_split() &&
          !l->stored[op.inputs[i]->value].is_split())
        partial.insert(op.inputs[i]->value);
    }
  }
  std::size_t elements = 0;
  for (auto id : partial) elements += static_cast<std::size_t>(g.tensor(graph::TensorId{id}).numel());
  // 4 layers x (ln1, ln2: weight and bias; proj and fc2 biases) + the
  // final norm's weight and bias, 64 elements each.
  CHECK(partial.size() == 4 * 6 + 2);
  CHECK(elements == 26 * 64);
  RealOptions o;
  o.steps = 2;
  o.warmup = 0;
  o.check = true;
  std::vector<testing::SendCounts> counts;
  const auto res = testing::run_all(p, o, std::nullopt, &counts);
  for (std::size_t r = 0; r < res.size(); ++r) {
    REQUIRE(res[r].ok());
    CHECK(res[r]->check_failure.empty());
    CHECK(std::count(counts[r].all_reduces.begin(), counts[r].all_reduces.end(), elements) == o.steps);
  }
  for (const auto& c : res[0]->checked) CHECK(c.max_rel_error <= 1e-5);
}

TEST_CASE("real mode: a plan strategy the kernels cannot run split is refused naming the op", "[executor][real][tp]") {
  // A LayerNorm split along the hidden axis it normalises (a hand-edited plan).
  auto p = testing::load_plan("gpt_tp2.json");
  for (auto& s : p.layout.strategies)
    if (s.unit == "layers.0/ln1/LayerNormalization") {
      s.inputs[0] = "[-,-,tp]";
      s.outputs[0] = "[-,-,tp]";
    }
  const auto st = real_supported(p, testing::tiny_gpt());
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message ==
        "the real mode cannot run op 'layers.0/ln1/LayerNormalization' (LayerNormalization) under tensor parallelism "
        "with strategy ((1,1,1),(1,),(1,)) (replicated): its normalised axis 2 is split");
}

TEST_CASE("tp views of the Megatron plan", "[executor][real][tp]") {
  // tiny GPT: hidden 64, 4 heads, micro-batch 2, sequence 32; tp = 2.
  using real_detail::TpView;
  const auto& g = testing::tiny_gpt();
  const auto l = real_detail::derive_tp_layout(testing::load_plan("gpt_tp2.json"), g);
  REQUIRE(l.ok());
  const auto stored = [&](const std::string& t) { return l->stored[g.find_tensor(t)->value]; };
  // Column-parallel weights and biases kept as shares, row-parallel weights
  // split on their rows, their biases and the LayerNorm weights whole.
  CHECK(stored("layers.0.attn.qkv.weight") == TpView::split_at(1));
  CHECK(stored("layers.0.mlp.fc1.bias") == TpView::split_at(0));
  CHECK(stored("layers.0.mlp.fc2.weight") == TpView::split_at(0));
  CHECK(stored("layers.0.mlp.fc2.bias") == TpView::rep());
  CHECK(stored("layers.0.ln1.weight") == TpView::rep());
  // The row-parallel output is a partial sum, kept whole (all-reduced).
  const auto proj = *g.find_op("layers.0/attn/proj/MatMul");
  CHECK(l->ops[proj.value].out[0].view == TpView::part());
  CHECK(stored(g.tensor(*g.op(proj).outputs[0]).name) == TpView::rep());
  // The QKV columns behind the Split (3 x 64 wide): rank r holds block r of
  // each of q, k, v, i.e. columns 32r..32r+31 of each 64-wide third.
  const auto& m = l->stored_map[g.find_tensor("layers.0.attn.qkv.weight")->value];
  REQUIRE(m.size() == 2);
  CHECK(m[1].size() == 96);
  CHECK(m[1][0] == 32);
  CHECK(m[1][31] == 63);
  CHECK(m[1][32] == 96);  // 64 + 32
  CHECK(m[1][64] == 160);  // 128 + 32
  // The bias (added before the Split) holds the same columns.
  CHECK(l->stored_map[g.find_tensor("layers.0.attn.qkv.bias")->value] == m);
  // Attention runs head-split: q, k, v and the context split on dim 1 (heads).
  const auto ctx = *g.find_op("layers.0/attn/context/MatMul");
  CHECK(l->ops[ctx.value].out[0].view == TpView::split_at(1));
  CHECK(l->ops[ctx.value].split);
}

TEST_CASE("tp views under sequence parallelism", "[executor][real][tp]") {
  // Megatron SP on the same plan: the norms and residual adds run on
  // sequence blocks ([2,32,64] split on dim 1), the row-parallel outputs are
  // reduce-scattered into them, the column-parallel inputs all-gathered.
  using real_detail::TpView;
  const auto& g = testing::tiny_gpt();
  auto p = testing::load_plan("gpt_tp2.json");
  p.layout.sequence_parallel = true;
  const auto l = real_detail::derive_tp_layout(p, g);
  REQUIRE(l.ok());
  const auto out_of = [&](const char* op) { return *g.op(*g.find_op(op)).outputs[0]; };
  const auto ln1 = *g.find_op("layers.0/ln1/LayerNormalization");
  CHECK(l->ops[ln1.value].in[0].view == TpView::split_at(1));
  CHECK(l->ops[ln1.value].in[1].view == TpView::rep());  // its weight: whole, gradient a partial sum
  CHECK(l->ops[ln1.value].split);
  CHECK(l->stored[out_of("layers.0/ln1/LayerNormalization").value] == TpView::rep());  // all-gathered for qkv
  CHECK(l->stored[out_of("layers.0/attn/proj/MatMul").value] == TpView::split_at(1));  // reduce-scattered
  CHECK(l->stored[out_of("layers.0/attn_residual/Add").value] == TpView::split_at(1));
  CHECK(l->stored[out_of("layers.0/mlp/fc2/MatMul").value] == TpView::split_at(1));
  // The embedding output is drawn whole and read by its block.
  CHECK(l->stored[out_of("embed/tokens/Gather").value] == TpView::rep());
  CHECK(l->stored[out_of("embed/Add").value] == TpView::split_at(1));
  // The head reads the final norm's output whole (all-gather).
  CHECK(l->stored[out_of("final_ln/LayerNormalization").value] == TpView::rep());
}

TEST_CASE("tp output views of single ops", "[executor][real][tp]") {
  using real_detail::TpView;
  const auto& g = testing::tiny_gpt();
  const auto derive = [&](const char* op, std::vector<std::optional<TpView>> in) {
    return real_detail::derive_outputs(g.op(*g.find_op(op)), g, in, {}, 2);
  };
  // x[2,32,64] W[64,192]: column split -> output split on its last dim;
  // contraction split -> partial; rows of x split -> rows of the output.
  auto col = derive("layers.0/attn/qkv/MatMul", {TpView::rep(), TpView::split_at(1)});
  REQUIRE(col.ok());
  CHECK((*col)[0] == TpView::split_at(2));
  auto row = derive("layers.0/attn/qkv/MatMul", {TpView::split_at(2), TpView::split_at(0)});
  REQUIRE(row.ok());
  CHECK((*row)[0] == TpView::part());
  auto rows = derive("layers.0/attn/qkv/MatMul", {TpView::split_at(1), TpView::rep()});
  REQUIRE(rows.ok());
  CHECK((*rows)[0] == TpView::split_at(1));
  CHECK_FALSE(derive("layers.0/attn/qkv/MatMul", {TpView::split_at(2), TpView::split_at(1)}).ok());
  // LayerNorm over the last axis: the batch may be split, the hidden not.
  auto ln = derive("layers.0/ln1/LayerNormalization", {TpView::split_at(0), TpView::rep(), TpView::rep()});
  REQUIRE(ln.ok());
  CHECK((*ln)[0] == TpView::split_at(0));
  const auto bad = derive("layers.0/ln1/LayerNormalization", {TpView::split_at(2), TpView::rep(), TpView::rep()});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "its normalised axis 2 is split");
  // Softmax over the last axis of [2,4,32,32] scores, split by heads.
  auto sm = derive("layers.0/attn/Softmax", {TpView::split_at(1)});
  REQUIRE(sm.ok());
  CHECK((*sm)[0] == TpView::split_at(1));
  CHECK_FALSE(derive("layers.0/attn/Softmax", {TpView::split_at(3)}).ok());
  // Sequence parallelism: a whole table looked up by ids split along the
  // sequence (ids [2,32] split at 1) gives [2,32,64] split at 1.
  auto look = derive("embed/tokens/Gather", {TpView::rep(), TpView::split_at(1)});
  REQUIRE(look.ok());
  CHECK((*look)[0] == TpView::split_at(1));
  // Nothing split: nothing derived.
  auto none = derive("layers.0/attn/Softmax", {TpView::rep()});
  REQUIRE(none.ok());
  CHECK((*none)[0] == TpView::rep());
}

TEST_CASE("tp output views of reductions (llama's RMSNorm mean over the hidden dim)", "[executor][real][tp]") {
  using real_detail::TpView;
  static const graph::OpGraph g = testing::build_graph(testing::spec(modelgen::Arch::llama, 1, 64, 4, 32, 128), "llama.onnx");
  const auto id = g.find_op("layers.0/attn_norm/ReduceMean");
  REQUIRE(id);
  // x[2,32,64], mean over axis -1 with keepdims: [2,32,1]. Split by sequence
  // (dim 1): each rank reduces its rows, the output is split at 1 too.
  auto seq = real_detail::derive_outputs(g.op(*id), g, {TpView::split_at(1)}, {}, 2);
  REQUIRE(seq.ok());
  CHECK((*seq)[0] == TpView::split_at(1));
  // Split along the reduced hidden dim: each rank's mean of its half is a
  // partial sum (divided by tp in TpRank::forward).
  auto hid = real_detail::derive_outputs(g.op(*id), g, {TpView::split_at(2)}, {}, 2);
  REQUIRE(hid.ok());
  CHECK((*hid)[0] == TpView::part());
  // A maximum over the split dim is no sum: refused with the reason.
  graph::Op max_op = g.op(*id);
  max_op.type = "ReduceMax";
  auto mx = real_detail::derive_outputs(max_op, g, {TpView::split_at(2)}, {}, 2);
  REQUIRE_FALSE(mx.ok());
  CHECK(mx.error().message == "it reduces the split dim 2 (only a sum or a mean over it is a partial sum)");
}

TEST_CASE("tp share helpers", "[executor][real][tp]") {
  using namespace real_detail;
  // Split sizes 4, 4, 4 over 2 ranks: rank 0 holds 0-1, 4-5, 8-9.
  const auto m = split_input_map({4, 4, 4}, 2);
  CHECK(m[0] == std::vector<std::int64_t>{0, 1, 4, 5, 8, 9});
  CHECK(m[1] == std::vector<std::int64_t>{2, 3, 6, 7, 10, 11});
  // Default shares: contiguous blocks, n = 6 over 3 ranks -> rank 1 holds 2, 3.
  CHECK(held_indices({}, 6, 3, 1) == std::vector<std::int64_t>{2, 3});
  CHECK(held_indices(m, 12, 2, 1) == m[1]);
  // [2,32,64] split on dim 2 -> [2,32,4,16] split on dim 2 (heads): 64 elements
  // before the split dim in both, so blocks survive. Splitting dim 3 instead
  // (16-element pieces) would interleave them.
  CHECK(reshape_keeps_blocks({2, 32, 64}, 2, {2, 32, 4, 16}, 2, 2));
  CHECK_FALSE(reshape_keeps_blocks({2, 32, 64}, 2, {2, 32, 4, 16}, 3, 2));
  CHECK_FALSE(reshape_keeps_blocks({2, 32, 6}, 2, {2, 32, 2, 3}, 2, 4));  // 2 heads over 4 ranks
  // take / put_add along dim 1 of [[0,1,2],[3,4,5]] at indices {2, 0}.
  const runtime_cpu::Tensor x({2, 3}, {0, 1, 2, 3, 4, 5});
  const auto part = std::get<runtime_cpu::Tensor>(take(x, 1, std::vector<std::int64_t>{2, 0}));
  CHECK(part.shape == runtime_cpu::Shape{2, 2});
  CHECK(part.data == std::vector<float>{2, 0, 5, 3});
  runtime_cpu::Tensor back({2, 3});
  put_add(back, 1, std::vector<std::int64_t>{2, 0}, part);
  CHECK(back.data == std::vector<float>{0, 0, 2, 3, 0, 5});
  CHECK(local_shape({2, 32, 64}, TpView::split_at(2), 2) == runtime_cpu::Shape{2, 32, 32});
  CHECK(local_shape({2, 32, 64}, TpView::part(), 2) == runtime_cpu::Shape{2, 32, 64});
}

TEST_CASE("Interpreter::set_input replaces an input and checks its shape", "[executor][real]") {
  auto it = runtime_cpu::Interpreter::create(testing::tiny_gpt(), {.seed = 1});
  REQUIRE(it.ok());
  std::string ids;
  for (auto id : testing::tiny_gpt().graph_inputs)
    if (!core::is_floating(testing::tiny_gpt().tensor(id).dtype)) ids = testing::tiny_gpt().tensor(id).name;
  REQUIRE_FALSE(ids.empty());
  auto l0 = it->forward();
  REQUIRE(l0.ok());
  // All-zero token ids (and labels): another loss.
  const auto& t = testing::tiny_gpt().tensor(*testing::tiny_gpt().find_tensor(ids));
  REQUIRE(it->set_input(ids, runtime_cpu::IndexTensor{t.shape, std::vector<std::int64_t>(static_cast<std::size_t>(t.numel()), 0)}).ok());
  auto l1 = it->forward();
  REQUIRE(l1.ok());
  CHECK(*l1 != *l0);
  const auto bad = it->set_input(ids, runtime_cpu::IndexTensor{{1}, {0}});
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::StartsWith("input '" + ids + "': the value given is int64 [1]"));
  CHECK_FALSE(it->set_input("no_such_input", runtime_cpu::Tensor({1})).ok());
}

}  // namespace
}  // namespace planner::executor
