// A Megatron GPT built in code, tp=4 (x dp=2): the solver arrives by itself
// at Megatron's tensor parallelism -- column-parallel QKV and fc1, heads
// split, row-parallel projection and fc2, one all-reduce per direction per
// block half -- and, with sequence parallelism allowed, at Korthikanti et
// al.'s reduce-scatter / all-gather form. No rule names Megatron; the costs
// decide.
#include <catch2/catch.hpp>

#include "sharding/sharding_fixtures.hpp"

using namespace planner;
using namespace planner::sharding;
using planner::sharding::testing::count_comms;
using planner::sharding::testing::ModelBuilder;
using planner::sharding::testing::SimpleOracle;

namespace {

constexpr int kLayers = 3;

struct Solved {
  ModelBuilder b;
  LoweredSharding l;
  Solution s;
  std::vector<PlannedComm> comms;

  const ops::Strategy& of(const std::string& op) const { return chosen(l, s.choice, *find_node(l, b.g, op)); }
  std::string in(const std::string& op, std::size_t port) const {
    return layout::to_string(*of(op).inputs.at(port), l.mesh);
  }
  std::string out(const std::string& op) const { return layout::to_string(*of(op).outputs.at(0), l.mesh); }
};

Solved solve_gpt(bool sequence_parallel, bool share = true) {
  Solved r;
  // b=4 s=64 h=512 heads=8 ffn=2048 V=1024: weights dominate the tokens
  // (256 per dp rank), so splitting them beats replicating them over tp.
  r.b.gpt(4, 64, 512, 8, 2048, 1024, kLayers);
  SimpleOracle oracle;
  LoweringOptions o;
  o.sharding.sequence_parallel = sequence_parallel;
  o.share_repeated_layers = share;
  auto l = lower_sharding(r.b.g, layout::DeviceMesh::parse("mesh(dp=2,tp=4)").value(), oracle, o);
  REQUIRE(l.ok());
  r.l = std::move(*l);
  auto s = solve(r.l.problem);
  REQUIRE(s.ok());
  REQUIRE(s->exact);
  r.s = std::move(*s);
  r.comms = planned_comms(r.l, r.b.g, r.s.choice);
  return r;
}

bool on_tp(const PlannedComm& c) { return c.step.group_size == 4; }
bool in_layers(const PlannedComm& c) { return c.where.find("layers.") != std::string::npos; }
bool not_grad_sync(const PlannedComm& c) { return c.source != CostTerm::grad_sync; }

int layer_comms(const Solved& r, core::Collective kind, bool backward) {
  return count_comms(r.comms, [&](const PlannedComm& c) {
    return on_tp(c) && in_layers(c) && not_grad_sync(c) && c.step.kind == kind && c.backward == backward;
  });
}

}  // namespace

TEST_CASE("tp=4 on a GPT gives Megatron's layout by itself", "[search][megatron]") {
  const Solved r = solve_gpt(false);
  INFO(describe_plan(r.l, r.s.choice));
  // Attention: QKV column parallel, heads split, projection row parallel.
  CHECK(r.in("layers.0/attn/qkv/MatMul", 1) == "[-,tp]");
  CHECK(ops::to_string(r.of("layers.0/attn/scores/MatMul").assignment) == "dp:b tp:n");
  CHECK(r.in("layers.0/attn/proj/MatMul", 1) == "[tp,-]");
  CHECK(r.out("layers.0/attn/proj/MatMul") == "[dp,-,-]partial(tp)");
  // MLP: fc1 column parallel, GeLU on its slice, fc2 row parallel.
  CHECK(r.in("layers.0/mlp/fc1/MatMul", 1) == "[-,tp]");
  CHECK(r.out("layers.0/mlp/gelu/Mul2") == "[dp,-,tp]");
  CHECK(r.in("layers.0/mlp/fc2/MatMul", 1) == "[tp,-]");
  // The residual stream and the norms stay whole over tp; dp splits the batch.
  CHECK(r.out("layers.0/ln1") == "[dp,-,-]");
  CHECK(r.out("layers.0/mlp_residual") == "[dp,-,-]");
  // The LM head is column (vocabulary) parallel and the loss
  // vocabulary-parallel.
  CHECK(r.in("lm_head/MatMul", 1) == "[-,tp]");
  CHECK(ops::to_string(r.of("loss").assignment) == "dp:n tp:c");

  // Exactly one all-reduce per direction per block half: forward after the
  // projection and after fc2 (Megatron's g), backward into QKV and fc1
  // (Megatron's f); nothing else crosses tp inside the layers.
  CHECK(layer_comms(r, core::Collective::all_reduce, false) == 2 * kLayers);
  CHECK(layer_comms(r, core::Collective::all_reduce, true) == 2 * kLayers);
  CHECK(count_comms(r.comms, [](const PlannedComm& c) { return on_tp(c) && in_layers(c) && not_grad_sync(c); }) ==
        4 * kLayers);
  CHECK(count_comms(r.comms, [](const PlannedComm& c) {
          return on_tp(c) && !c.backward && c.where.rfind("edge layers.0/attn/proj/MatMul", 0) == 0;
        }) == kLayers);
  CHECK(count_comms(r.comms, [](const PlannedComm& c) {
          return on_tp(c) && c.backward && c.where.rfind("edge layers.0/ln2", 0) == 0 &&
                 c.where.find("fc1/MatMul") != std::string::npos;
        }) == kLayers);
}

TEST_CASE("with sequence parallelism the all-reduces become reduce-scatter + all-gather", "[search][megatron]") {
  const Solved r = solve_gpt(true);
  INFO(describe_plan(r.l, r.s.choice));
  // The same tensor-parallel regions ...
  CHECK(r.in("layers.0/attn/qkv/MatMul", 1) == "[-,tp]");
  CHECK(r.in("layers.0/attn/proj/MatMul", 1) == "[tp,-]");
  CHECK(r.in("layers.0/mlp/fc1/MatMul", 1) == "[-,tp]");
  CHECK(r.in("layers.0/mlp/fc2/MatMul", 1) == "[tp,-]");
  // ... but norms, residual adds and biases after the row-parallel MatMuls
  // run on a sequence slice.
  CHECK(r.out("layers.0/ln1") == "[dp,tp,-]");
  CHECK(r.out("layers.0/attn_residual") == "[dp,tp,-]");
  CHECK(r.out("layers.0/mlp/fc2/Add") == "[dp,tp,-]");
  using K = core::Collective;
  CHECK(layer_comms(r, K::all_reduce, false) == 0);
  CHECK(layer_comms(r, K::all_reduce, true) == 0);
  // Per block half: forward all-gather in, reduce-scatter out; backward the
  // transposes (reduce-scatter of dX, all-gather of dY).
  CHECK(layer_comms(r, K::all_gather, false) == 2 * kLayers);
  CHECK(layer_comms(r, K::reduce_scatter, false) == 2 * kLayers);
  CHECK(layer_comms(r, K::reduce_scatter, true) == 2 * kLayers);
  CHECK(layer_comms(r, K::all_gather, true) == 2 * kLayers);
  // Same communication volume, less compute and activation memory: cheaper.
  const Solved plain = solve_gpt(false);
  CHECK(r.s.evaluation.total < plain.s.evaluation.total);
  CHECK(r.s.evaluation.memory < plain.s.evaluation.memory);
  // The layer norms' weights now need their gradients summed over tp too.
  CHECK(count_comms(r.comms, [](const PlannedComm& c) {
          return c.source == CostTerm::grad_sync && on_tp(c) && c.where == "node layers.0/ln1 x3";
        }) == 2 * kLayers);
}

TEST_CASE("layers solved one by one agree with the shared solution", "[search][megatron]") {
  const Solved shared = solve_gpt(false, true);
  const Solved each = solve_gpt(false, false);
  CHECK(shared.l.problem.nodes.size() < each.l.problem.nodes.size());
  CHECK(each.s.evaluation.total.value == Approx(shared.s.evaluation.total.value).epsilon(1e-9));
  // Every copy chose what copy 0 chose.
  CHECK(each.in("layers.2/mlp/fc2/MatMul", 1) == "[tp,-]");
  CHECK(each.in("layers.1/attn/qkv/MatMul", 1) == "[-,tp]");
}

TEST_CASE("explain says why Megatron beats replicating the MLP", "[search][megatron]") {
  const Solved r = solve_gpt(false);
  // b: the same plan with fc2 replicated over tp (its input gathered).
  Choice b = r.s.choice;
  const auto fc2 = *find_node(r.l, r.b.g, "layers.0/mlp/fc2/MatMul");
  const auto& strategies = r.l.nodes[fc2].sharding.strategies;
  for (std::size_t i = 0; i < strategies.size(); ++i)
    if (ops::to_string(strategies[i].assignment) == "dp:b") b[fc2] = i;
  REQUIRE(b != r.s.choice);
  const std::string text = explain(r.l.problem, r.s.choice, b);
  INFO(text);
  CHECK(text.find("a is cheaper by") != std::string::npos);
  // The largest difference: fc2's compute, 4x on every tp rank.
  const auto first = text.find('\n');
  CHECK(text.substr(first, 60).find("node layers.0/mlp/fc2/MatMul x3") != std::string::npos);
  CHECK(text.find("compute +") != std::string::npos);
}
