// The exact MILP (CBC) for the flat op-sharding problem: hand-computed
// optima, random problems against brute force and the fast solver, the
// lowered GPT and MLP graphs against the fast solver (the "fast search
// reaches the --exact objective" requirement), and determinism.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>

#include "planner/sharding_milp/milp.hpp"
#include "sharding/sharding_fixtures.hpp"
#include "sharding/problem_fixtures.hpp"

using namespace planner;
using namespace planner::sharding;
using planner::sharding::testing::edge;
using planner::sharding::testing::strat;
using planner::sharding::testing::ModelBuilder;
using planner::sharding::testing::SimpleOracle;

namespace {

constexpr double ms = 1e-3;
constexpr double MiB = 1024.0 * 1024.0;

bool close(double a, double b, double rel = 1e-9) { return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b)); }

// The objective of the returned choice, three ways: evaluate(), the model's
// own coefficients, and CBC's bound below it.
void check_consistent(const ShardingProblem& p, const MilpResult& r) {
  const Evaluation ev = evaluate(p, r.solution.choice);
  CHECK(ev.feasible());
  CHECK(ev.total.value == r.solution.evaluation.total.value);
  CHECK(close(r.objective.value, ev.total.value));
  CHECK(r.lower_bound.value <= ev.total.value * (1 + 1e-9) + 1e-15);
  if (r.optimal) CHECK(r.lower_bound.value >= ev.total.value * (1 - 1e-6) - 1e-12);
}

// A chain a - b - c, two strategies each (ms, MiB):
//   a: s0 3 ms  8 MiB   s1 1 ms   2 MiB
//   b: s0 2 ms  6 MiB   s1 1 ms   3 MiB
//   c: s0 2 ms  4 MiB   s1 1.5 ms 1 MiB (1 ms compute + 0.5 ms grad_sync)
//   a-b: [[0, 4], [4, 5]] ms     b-c: [[0, 1.5], [2, 0]] ms
// Every choice (cost = nodes + edges, memory):
//   (0,0,0)  3+2+2     + 0+0   = 7     18 MiB
//   (0,0,1)  3+2+1.5   + 0+1.5 = 8     15
//   (0,1,0)  3+1+2     + 4+2   = 12    17
//   (0,1,1)  3+1+1.5   + 4+0   = 9.5   14
//   (1,0,0)  1+2+2     + 4+0   = 9     12
//   (1,0,1)  1+2+1.5   + 4+1.5 = 10    9
//   (1,1,0)  1+1+2     + 5+2   = 11    9
//   (1,1,1)  1+1+1.5   + 5+0   = 8.5   6
// Locally every node prefers s1 (8.5 ms in all); the optimum is (0,0,0).
ShardingProblem chain3() {
  ShardingProblem p;
  p.nodes.push_back({"a", {strat("s0", 3 * ms, 8 * MiB), strat("s1", 1 * ms, 2 * MiB)}});
  p.nodes.push_back({"b", {strat("s0", 2 * ms, 6 * MiB), strat("s1", 1 * ms, 3 * MiB)}});
  p.nodes.push_back({"c", {strat("s0", 2 * ms, 4 * MiB), strat("s1", 1 * ms, 1 * MiB, 0.5 * ms)}});
  p.edges.push_back(edge(0, 1, {0, 4 * ms, 4 * ms, 5 * ms}, "x"));
  p.edges.push_back(edge(1, 2, {0, 1.5 * ms, 2 * ms, 0}, "y"));
  return p;
}

}  // namespace

TEST_CASE("milp: the hand-computed optimum beats the locally best choice", "[sharding_milp][milp]") {
  const auto p = chain3();
  auto r = solve_milp(p);
  REQUIRE(r.ok());
  CHECK(r->solution.choice == Choice{0, 0, 0});
  CHECK(r->solution.evaluation.total.value == Approx(7 * ms).epsilon(1e-12));
  CHECK(evaluate(p, {1, 1, 1}).total.value == Approx(8.5 * ms).epsilon(1e-12));
  CHECK(r->optimal);
  CHECK(r->solution.exact);
  check_consistent(p, *r);
  // 6 x (3 nodes x 2) + 8 y (2 edges x 4 entries); rows: 3 one-hot, and per
  // edge 2 row marginals + 1 column marginal (the second is implied).
  CHECK(r->variables == 14);
  CHECK(r->constraints == 9);
}

TEST_CASE("milp: memory limits change the answer", "[sharding_milp][milp]") {
  auto p = chain3();
  SECTION("16 MiB: (0,0,0) needs 18, the best that fits is (0,0,1) at 8 ms") {
    p.memory_limit = Bytes(16 * MiB);
    auto r = solve_milp(p);
    REQUIRE(r.ok());
    CHECK(r->solution.choice == Choice{0, 0, 1});
    CHECK(r->solution.evaluation.total.value == Approx(8 * ms).epsilon(1e-12));
    CHECK(r->solution.evaluation.memory.value == 15 * MiB);
    check_consistent(p, *r);
    CHECK(r->constraints == 10);  // 9 + the memory row
  }
  SECTION("13 MiB: only (1,*,*) fits; (1,1,1) at 8.5 ms") {
    p.memory_limit = Bytes(13 * MiB);
    auto r = solve_milp(p);
    REQUIRE(r.ok());
    CHECK(r->solution.choice == Choice{1, 1, 1});
    CHECK(r->solution.evaluation.total.value == Approx(8.5 * ms).epsilon(1e-12));
    check_consistent(p, *r);
  }
  SECTION("10 MiB: a's s0 cannot fit (8 + 3 + 1 = 12 > 10): a is fixed, a-b folds into b") {
    p.memory_limit = Bytes(10 * MiB);
    auto r = solve_milp(p);
    REQUIRE(r.ok());
    CHECK(r->solution.choice == Choice{1, 1, 1});
    // x: b and c (4); y: b-c (4); rows: 2 one-hot, 2 + 1 marginals, memory.
    CHECK(r->variables == 8);
    CHECK(r->constraints == 6);
    check_consistent(p, *r);
  }
  SECTION("exactly at the limit fits: 15 MiB allows (0,0,1)") {
    p.memory_limit = Bytes(15 * MiB);
    auto r = solve_milp(p);
    REQUIRE(r.ok());
    CHECK(r->solution.choice == Choice{0, 0, 1});
  }
  SECTION("5 MiB: nothing fits; the message names the smallest, 2 + 3 + 1 = 6 MiB") {
    p.memory_limit = Bytes(5 * MiB);
    auto r = solve_milp(p);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == "no choice fits the memory limit 5.00 MiB (the smallest needs 6.00 MiB)");
  }
}

TEST_CASE("milp: validate() errors and bad options come back as one line", "[sharding_milp][milp]") {
  auto p = chain3();
  p.edges[1].cost.pop_back();
  auto r = solve_milp(p);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "edge 1 (y): matrix has 3 entries, want 4");
  MilpOptions o;
  o.threads = 0;
  CHECK_FALSE(solve_milp(chain3(), o).ok());
}

TEST_CASE("milp: the presolve fixes single-strategy nodes and drops constant edges", "[sharding_milp][milp]") {
  // a has one strategy (fixed): a-b folds into b's costs. b-c is constant
  // (2 ms whatever the choice). c-d couples c and d.
  ShardingProblem p;
  p.nodes.push_back({"a", {strat("only", 1 * ms, 0)}});
  p.nodes.push_back({"b", {strat("s0", 1 * ms, 0), strat("s1", 0.5 * ms, 0)}});
  p.nodes.push_back({"c", {strat("s0", 2 * ms, 0), strat("s1", 1 * ms, 0)}});
  p.nodes.push_back({"d", {strat("s0", 2 * ms, 0), strat("s1", 1 * ms, 0)}});
  p.edges.push_back(edge(0, 1, {0, 2 * ms}));
  p.edges.push_back(edge(1, 2, {2 * ms, 2 * ms, 2 * ms, 2 * ms}));
  p.edges.push_back(edge(2, 3, {0, 0.5 * ms, 0.5 * ms, 3 * ms}));
  // b after the fold: s0 1 + 0 = 1, s1 0.5 + 2 = 2.5 -> s0; b is then
  // coupled to nothing (b-c is constant) and the presolve fixes it.
  // c,d: (0,0) 2+2+0 = 4; (0,1) 2+1+0.5 = 3.5; (1,0) 1+2+0.5 = 3.5;
  // (1,1) 1+1+3 = 5. (0,1) and (1,0) tie: neither is one move from the
  // other at the same cost, so either may come back.
  // Total: a 1 + b 1 + a-b 0 + b-c 2 + 3.5 = 7.5 ms.
  auto r = solve_milp(p);
  REQUIRE(r.ok());
  CHECK(r->solution.evaluation.total.value == Approx(7.5 * ms).epsilon(1e-12));
  CHECK(r->solution.choice[0] == 0);
  CHECK(r->solution.choice[1] == 0);
  // b is coupled to nothing after the folds and takes its best strategy; x:
  // c, d (4), y: c-d (4).
  CHECK(r->variables == 8);
  check_consistent(p, *r);

  // Every node fixed: CBC is not called.
  ShardingProblem q;
  q.nodes.push_back({"a", {strat("only", 1 * ms, 0)}});
  q.nodes.push_back({"b", {strat("only", 2 * ms, 0)}});
  q.edges.push_back(edge(0, 1, {0.25 * ms}));
  auto rq = solve_milp(q);
  REQUIRE(rq.ok());
  CHECK(rq->variables == 0);
  CHECK(rq->optimal);
  CHECK(rq->solution.evaluation.total.value == Approx(3.25 * ms).epsilon(1e-12));
  CHECK(rq->lower_bound.value == Approx(3.25 * ms).epsilon(1e-12));
}

TEST_CASE("milp: ties go to the lower strategy index", "[sharding_milp][milp]") {
  // n0: s0 2 ms, s1 1 ms (1 MiB each); n1: s0, s1, s2 at 1 ms each with
  // 1, 3, 2 MiB; edge n0-n1 [[0, 0, 0], [0.5, 0, 0]] ms.
  //   (0, *) = 2 + 1 + 0 = 3;  (1, 0) = 1 + 1 + 0.5 = 2.5;
  //   (1, 1) = (1, 2) = 1 + 1 + 0 = 2   -> a tie; the lower index, (1, 1).
  ShardingProblem p;
  p.nodes.push_back({"n0", {strat("s0", 2 * ms, 1 * MiB), strat("s1", 1 * ms, 1 * MiB)}});
  p.nodes.push_back({"n1", {strat("s0", 1 * ms, 1 * MiB), strat("s1", 1 * ms, 3 * MiB), strat("s2", 1 * ms, 2 * MiB)}});
  p.edges.push_back(edge(0, 1, {0, 0, 0, 0.5 * ms, 0, 0}));
  auto r = solve_milp(p);
  REQUIRE(r.ok());
  CHECK(r->solution.choice == Choice{1, 1});
  CHECK(r->solution.evaluation.total.value == Approx(2 * ms).epsilon(1e-12));
  // 3.5 MiB: (1, 1) needs 1 + 3 = 4 MiB; (1, 2) needs 3 and is the optimum.
  p.memory_limit = Bytes(3.5 * MiB);
  r = solve_milp(p);
  REQUIRE(r.ok());
  CHECK(r->solution.choice == Choice{1, 2});
  // The same with the strategies' order reversed on n1 picks the other
  // index of the same strategy: ties follow indices, not names.
  ShardingProblem q = p;
  q.memory_limit.reset();
  std::swap(q.nodes[1].strategies[1], q.nodes[1].strategies[2]);
  q.edges[0] = edge(0, 1, {0, 0, 0, 0.5 * ms, 0, 0});
  r = solve_milp(q);
  REQUIRE(r.ok());
  CHECK(r->solution.choice == Choice{1, 1});
  CHECK(q.nodes[1].strategies[r->solution.choice[1]].name == "s2");
}

namespace {

// 5-12 nodes of 2-4 strategies (2-3 past 9 nodes, to keep brute force
// quick), a chain with skip edges back 2-4 nodes, now and then a parallel
// edge, a constant edge or a single-strategy node; costs 0-10 ms, memory
// 1-10 MiB.
ShardingProblem random_problem(std::mt19937& rng, std::size_t n, bool with_limit) {
  std::uniform_int_distribution<int> back(2, 4);
  std::uniform_real_distribution<double> cost(0.0, 10 * ms), mem(1 * MiB, 10 * MiB), coin(0.0, 1.0);
  ShardingProblem p;
  for (std::size_t i = 0; i < n; ++i) {
    ProblemNode node;
    node.name = "n" + std::to_string(i);
    std::uniform_int_distribution<int> ns(2, n > 9 ? 3 : 4);
    const int k = coin(rng) < 0.1 ? 1 : ns(rng);
    for (int s = 0; s < k; ++s)
      node.strategies.push_back(strat("s" + std::to_string(s), cost(rng), mem(rng), coin(rng) < 0.3 ? cost(rng) : 0));
    p.nodes.push_back(std::move(node));
    auto connect = [&](std::size_t from) {
      std::vector<double> m(p.nodes[from].strategies.size() * p.nodes[i].strategies.size());
      const bool constant = coin(rng) < 0.1;
      const double c0 = cost(rng);
      for (auto& v : m) v = constant ? c0 : coin(rng) < 0.3 ? 0.0 : cost(rng);
      // Orient some edges backwards.
      if (coin(rng) < 0.3) {
        std::vector<double> t(m.size());
        const std::size_t a = p.nodes[from].strategies.size(), b = p.nodes[i].strategies.size();
        for (std::size_t x = 0; x < a; ++x)
          for (std::size_t y = 0; y < b; ++y) t[y * a + x] = m[x * b + y];
        p.edges.push_back(edge(i, from, std::move(t)));
      } else {
        p.edges.push_back(edge(from, i, std::move(m)));
      }
    };
    if (i > 0 && coin(rng) < 0.9) connect(i - 1);
    const auto b = static_cast<std::size_t>(back(rng));
    if (i >= b && coin(rng) < 0.5) connect(i - b);
    if (i >= 1 && coin(rng) < 0.1) connect(i - 1);  // a parallel edge now and then
  }
  if (with_limit) {
    double lean = 0, fat = 0;
    for (const auto& node : p.nodes) {
      double lo = 1e30, hi = 0;
      for (const auto& s : node.strategies) {
        lo = std::min(lo, s.memory.value);
        hi = std::max(hi, s.memory.value);
      }
      lean += lo;
      fat += hi;
    }
    // Now and then below the smallest (infeasible), mostly in between.
    p.memory_limit = Bytes(lean * 0.98 + coin(rng) * (fat - lean) * 0.6);
  }
  return p;
}

}  // namespace

TEST_CASE("milp: random problems match brute force and the fast solver", "[sharding_milp][milp]") {
  std::mt19937 rng(20250101);
  int compared = 0, limited = 0, infeasible = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const bool with_limit = trial % 2 == 1;
    const auto p = random_problem(rng, 5 + static_cast<std::size_t>(trial % 8), with_limit);
    INFO("trial " << trial);
    auto brute = solve_brute_force(p);
    auto fast = solve(p);
    auto milp = solve_milp(p);
    REQUIRE(brute.ok() == milp.ok());
    REQUIRE(fast.ok() == milp.ok());
    if (!milp.ok()) {
      CHECK(milp.error().message == brute.error().message);
      ++infeasible;
      continue;
    }
    CHECK(milp->optimal);
    check_consistent(p, *milp);
    CHECK(close(milp->solution.evaluation.total.value, brute->evaluation.total.value));
    if (fast->exact) CHECK(close(milp->solution.evaluation.total.value, fast->evaluation.total.value));
    ++compared;
    if (with_limit) ++limited;
  }
  CHECK(compared >= 100);
  CHECK(limited >= 40);
  CHECK(infeasible >= 1);
}

TEST_CASE("milp: dense random graphs under memory limits match brute force", "[sharding_milp][milp]") {
  // Complete graphs of 5-7 nodes x 3 strategies: nothing for elimination,
  // every pair a block of 9 y variables.
  std::mt19937 rng(77);
  std::uniform_real_distribution<double> cost(0.0, 10 * ms), mem(1 * MiB, 10 * MiB), coin(0.0, 1.0);
  for (int trial = 0; trial < 20; ++trial) {
    ShardingProblem p;
    const std::size_t n = 5 + static_cast<std::size_t>(trial % 3);
    double lean = 0, fat = 0;
    for (std::size_t i = 0; i < n; ++i) {
      ProblemNode node{"k" + std::to_string(i), {}};
      double lo = 1e30, hi = 0;
      for (int s = 0; s < 3; ++s) {
        node.strategies.push_back(strat("s", cost(rng), mem(rng)));
        lo = std::min(lo, node.strategies.back().memory.value);
        hi = std::max(hi, node.strategies.back().memory.value);
      }
      lean += lo;
      fat += hi;
      p.nodes.push_back(std::move(node));
    }
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < n; ++j) {
        std::vector<double> m(9);
        for (auto& v : m) v = cost(rng);
        p.edges.push_back(edge(i, j, m));
      }
    p.memory_limit = Bytes(lean + (0.1 + 0.8 * coin(rng)) * (fat - lean));
    INFO("trial " << trial);
    auto brute = solve_brute_force(p);
    auto milp = solve_milp(p);
    REQUIRE(brute.ok());
    REQUIRE(milp.ok());
    CHECK(milp->optimal);
    check_consistent(p, *milp);
    CHECK(close(milp->solution.evaluation.total.value, brute->evaluation.total.value));
  }
}

namespace {

// x[B,h] -> layers x (fc_i -> Relu) -> head -> cross-entropy: the fixture's
// MLP made as deep as wanted (1 layer = the fixture's mlp()).
void deep_mlp(ModelBuilder& b, int layers, std::int64_t B, std::int64_t h, std::int64_t ffn, std::int64_t classes) {
  auto x = b.input("x", {B, h}, core::DType::f32);
  auto labels = b.input("labels", {B}, core::DType::i64);
  std::int64_t width = h;
  for (int i = 0; i < layers; ++i) {
    const std::string L = "layers." + std::to_string(i);
    x = b.linear(L + "/fc1", x, width, ffn, true);
    x = b.op(L + "/relu", "Relu", {x}, b.shape(x));
    x = b.linear(L + "/fc2", x, ffn, h, true);
    width = h;
  }
  auto y = b.linear("head", x, h, classes, true);
  auto loss = b.op("loss", "SoftmaxCrossEntropyLoss", {y, labels}, {}, {{"reduction", std::string("mean")}});
  b.g.graph_outputs.push_back(loss);
  b.finish();
}

struct RealCase {
  std::string model;
  int layers;
  std::string mesh;
};

}  // namespace

TEST_CASE("milp: the fast solver reaches the exact objective on GPT and MLP graphs", "[sharding_milp][milp][real]") {
  std::vector<RealCase> cases;
  for (const char* model : {"gpt", "mlp"})
    for (int layers : {1, 2, 4})
      for (const char* mesh :
           {"mesh()", "mesh(tp=2)", "mesh(tp=4)", "mesh(dp=2,tp=2)", "mesh(tp=8)", "mesh(dp=2,tp=4)"})
        cases.push_back({model, layers, mesh});
  SimpleOracle oracle;
  for (const auto& c : cases) {
    const std::string name = c.model + " x" + std::to_string(c.layers) + " on " + c.mesh;
    INFO(name);
    ModelBuilder b;
    // GPT: b=4 s=64 h=512 heads=8 ffn=2048 V=1024 (as the Megatron test);
    // MLP: x[32,512], ffn 2048, 64 classes.
    if (c.model == "gpt") b.gpt(4, 64, 512, 8, 2048, 1024, c.layers);
    else deep_mlp(b, c.layers, 32, 512, 2048, 64);
    auto l = lower_sharding(b.g, layout::DeviceMesh::parse(c.mesh).value(), oracle);
    REQUIRE(l.ok());
    const auto& p = l->problem;
    auto fast = solve(p);
    REQUIRE(fast.ok());
    REQUIRE(fast->exact);
    auto milp = solve_milp(p);
    REQUIRE(milp.ok());
    CHECK(milp->optimal);
    check_consistent(p, *milp);
    CHECK(close(milp->solution.evaluation.total.value, fast->evaluation.total.value));
    if (c.mesh == "mesh()") CHECK(milp->variables == 0);
  }
}

namespace {

struct Lowered {
  ModelBuilder b;
  LoweredSharding l;
};

// The Megatron test's GPT (b=4 s=64 h=512 heads=8 ffn=2048 V=1024).
Lowered lowered_gpt(int layers, const char* mesh, bool sequence_parallel = false, bool share = true) {
  Lowered r;
  r.b.gpt(4, 64, 512, 8, 2048, 1024, layers);
  SimpleOracle oracle;
  LoweringOptions o;
  o.sharding.sequence_parallel = sequence_parallel;
  o.share_repeated_layers = share;
  auto l = lower_sharding(r.b.g, layout::DeviceMesh::parse(mesh).value(), oracle, o);
  REQUIRE(l.ok());
  r.l = std::move(*l);
  return r;
}

// A limit `f` of the way from the smallest memory any choice needs to the
// memory of the unconstrained optimum.
Bytes limit_between(const ShardingProblem& p, const Solution& free_run, double f) {
  double lean = 0;
  for (const auto& n : p.nodes) {
    double lo = 1e300;
    for (const auto& s : n.strategies) lo = std::min(lo, s.memory.value);
    lean += lo;
  }
  return Bytes(lean + f * (free_run.evaluation.memory.value - lean));
}

}  // namespace

TEST_CASE("milp: larger GPT problems with and without memory limits agree with the fast solver",
          "[sharding_milp][milp][real]") {
  struct Case {
    int layers;
    const char* mesh;
    bool sp, share;
    std::vector<double> limits;  // fractions for limit_between; none = unconstrained only
  };
  // Unshared layers: 4 copies of every layer op (116 nodes); sequence
  // parallelism roughly doubles the strategies of the layer ops.
  const std::vector<Case> cases = {
      {2, "mesh(dp=2,tp=4)", false, true, {0.75, 0.5, 0.25}},
      {4, "mesh(tp=8)", true, false, {0.5}},
      {4, "mesh(dp=2,tp=4)", true, false, {0.5}},
      {4, "mesh(dp=2,tp=2)", false, false, {0.75}},
  };
  for (const auto& c : cases) {
    INFO("gpt x" << c.layers << " on " << c.mesh << (c.sp ? " sequence parallel" : "")
                 << (c.share ? "" : " unshared"));
    const auto g = lowered_gpt(c.layers, c.mesh, c.sp, c.share);
    auto p = g.l.problem;
    auto free_run = solve(p);
    REQUIRE(free_run.ok());
    REQUIRE(free_run->exact);
    std::vector<std::optional<Bytes>> limits = {std::nullopt};
    for (double f : c.limits) limits.push_back(limit_between(p, *free_run, f));
    for (const auto& limit : limits) {
      INFO("limit " << (limit ? format_bytes(*limit) : std::string("none")));
      p.memory_limit = limit;
      auto fast = solve(p);
      auto milp = solve_milp(p);
      REQUIRE(fast.ok());
      REQUIRE(milp.ok());
      CHECK(milp->optimal);
      check_consistent(p, *milp);
      if (limit) {
        CHECK(milp->solution.evaluation.memory <= *limit);
        // The limit binds: the unconstrained optimum no longer fits.
        CHECK_FALSE(evaluate(p, free_run->choice).feasible());
      }
      if (fast->exact) CHECK(close(milp->solution.evaluation.total.value, fast->evaluation.total.value));
      else CHECK(milp->solution.evaluation.total.value <= fast->evaluation.total.value * (1 + 1e-9));
    }
  }
}

TEST_CASE("milp: solving twice gives the same choice", "[sharding_milp][milp]") {
  std::mt19937 rng(4242);
  for (int trial = 0; trial < 10; ++trial) {
    const auto p = random_problem(rng, 12, trial % 2 == 1);
    auto a = solve_milp(p), b = solve_milp(p);
    REQUIRE(a.ok() == b.ok());
    if (!a.ok()) continue;
    CHECK(a->solution.choice == b->solution.choice);
    CHECK(a->lower_bound.value == b->lower_bound.value);
  }
  auto g = lowered_gpt(2, "mesh(dp=2,tp=2)");
  auto free_run = solve(g.l.problem);
  REQUIRE(free_run.ok());
  for (double f : {-1.0, 0.5}) {
    auto p = g.l.problem;
    if (f >= 0) p.memory_limit = limit_between(p, *free_run, f);
    auto a = solve_milp(p), b = solve_milp(p);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a->solution.choice == b->solution.choice);
  }
}

TEST_CASE("milp: sizes of the real test problems (docs/sharding-milp.md)", "[.][sizes]") {
  // Hidden: prints the tables of docs/sharding-milp.md
  // (build/default/tests/sharding_milp_test "[sizes]").
  auto row = [](const std::string& what, const char* mesh, const ShardingProblem& p) {
    std::size_t strategies = 0;
    for (const auto& n : p.nodes) strategies += n.strategies.size();
    const auto t0 = std::chrono::steady_clock::now();
    auto fast = solve(p);
    const double fast_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto milp = solve_milp(p);
    REQUIRE(fast.ok());
    REQUIRE(milp.ok());
    std::printf("| %s | %s | %zu | %zu | %zu | %zu | %zu | %.3f | %.4f | %s |\n", what.c_str(), mesh, p.nodes.size(),
                p.edges.size(), strategies, milp->variables, milp->constraints, milp->solve_seconds, fast_s,
                close(milp->solution.evaluation.total.value, fast->evaluation.total.value) ? "yes" : "NO");
  };
  std::printf("| model | mesh | nodes | edges | strategies | variables | constraints | CBC s | fast s | equal |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  SimpleOracle oracle;
  for (const char* model : {"gpt", "mlp"})
    for (int layers : {1, 2, 4})
      for (const char* mesh :
           {"mesh()", "mesh(tp=2)", "mesh(tp=4)", "mesh(dp=2,tp=2)", "mesh(tp=8)", "mesh(dp=2,tp=4)"}) {
        ModelBuilder b;
        if (std::string(model) == "gpt") b.gpt(4, 64, 512, 8, 2048, 1024, layers);
        else deep_mlp(b, layers, 32, 512, 2048, 64);
        auto l = lower_sharding(b.g, layout::DeviceMesh::parse(mesh).value(), oracle);
        REQUIRE(l.ok());
        row(std::string(model) + " x" + std::to_string(layers), mesh, l->problem);
      }
  for (bool sp : {false, true})
    for (const char* mesh : {"mesh(tp=8)", "mesh(dp=2,tp=4)"}) {
      const auto g = lowered_gpt(4, mesh, sp, false);
      auto p = g.l.problem;
      auto free_run = solve(p);
      REQUIRE(free_run.ok());
      const std::string what = std::string("gpt x4 unshared") + (sp ? " SP" : "");
      row(what, mesh, p);
      for (double f : {0.75, 0.5, 0.25}) {
        p.memory_limit = limit_between(p, *free_run, f);
        row(what + " limit " + std::to_string(f).substr(0, 4), mesh, p);
      }
    }
}

TEST_CASE("milp: a time limit or threads or a gap still give valid choices", "[sharding_milp][milp][real]") {
  // The largest test problem: GPT x4, unshared layers, sequence parallel, on
  // dp=2 x tp=4, memory limit halfway (4240 variables, 1360 constraints).
  const auto g = lowered_gpt(4, "mesh(dp=2,tp=4)", true, false);
  auto p = g.l.problem;
  auto free_run = solve(p);
  REQUIRE(free_run.ok());
  p.memory_limit = limit_between(p, *free_run, 0.5);
  auto fast = solve(p);
  REQUIRE(fast.ok());
  REQUIRE(fast->exact);
  SECTION("10 ms: CBC stops early (at worst before reading its MIP start); the answer is still feasible") {
    MilpOptions o;
    o.time_limit_s = 0.01;
    auto r = solve_milp(p, o);
    INFO((r.ok() ? std::string() : r.error().message));
    REQUIRE(r.ok());
    check_consistent(p, *r);
    CHECK(r->solution.evaluation.total.value >= fast->evaluation.total.value * (1 - 1e-9));
    CHECK(r->lower_bound.value <= fast->evaluation.total.value * (1 + 1e-9));
    CHECK(r->solution.exact == r->optimal);
  }
  SECTION("4 threads (repeatable mode) reach the same objective") {
    MilpOptions o;
    o.threads = 4;
    auto r = solve_milp(p, o);
    REQUIRE(r.ok());
    CHECK(r->optimal);
    check_consistent(p, *r);
    CHECK(close(r->solution.evaluation.total.value, fast->evaluation.total.value));
  }
  SECTION("a 5% gap: within 5% of the bound") {
    MilpOptions o;
    o.relative_gap = 0.05;
    auto r = solve_milp(p, o);
    REQUIRE(r.ok());
    check_consistent(p, *r);
    CHECK(r->solution.evaluation.total.value <= r->lower_bound.value * 1.05 * (1 + 1e-9));
    CHECK(r->solution.evaluation.total.value <= fast->evaluation.total.value * 1.05 * (1 + 1e-9));
  }
}
