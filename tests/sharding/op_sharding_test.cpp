// The flat op-sharding problem: evaluate() and explain() on hand-built
// problems with the arithmetic in comments; the DP against brute force.
#include <catch2/catch.hpp>

#include <random>

#include "planner/sharding/op_sharding.hpp"
#include "sharding/problem_fixtures.hpp"

using namespace planner;
using namespace planner::sharding;
using planner::sharding::testing::edge;
using planner::sharding::testing::strat;

namespace {

// Three nodes in a chain, a -> b -> c, two strategies each:
//   a: rep (compute 4, mem 10)   col (compute 1, mem 4, grad_sync 0.5)
//   b: rep (compute 2, mem 6)    col (compute 1, mem 3)
//   c: rep (compute 3, mem 8)    row (compute 1, mem 2, op_comm 0.25)
// edges a-b: [[0, 1], [2, 0]]  (rep->rep 0, rep->col 1, col->rep 2, col->col 0)
//       b-c: [[0, 3], [0.5, 0.75]]
ShardingProblem chain3() {
  ShardingProblem p;
  p.nodes.push_back({"a", {strat("rep", 4, 10), strat("col", 1, 4, 0.5)}});
  p.nodes.push_back({"b", {strat("rep", 2, 6), strat("col", 1, 3)}});
  p.nodes.push_back({"c", {strat("rep", 3, 8), strat("row", 1, 2, 0, 0.25)}});
  p.edges.push_back(edge(0, 1, {0, 1, 2, 0}, "x"));
  p.edges.push_back(edge(1, 2, {0, 3, 0.5, 0.75}, "y"));
  return p;
}

}  // namespace

TEST_CASE("evaluate sums node terms, edge entries and memory", "[search][op_sharding]") {
  const auto p = chain3();
  // (col, col, row): compute 1 + 1 + 1 = 3; grad_sync 0.5; op_comm 0.25;
  // reshard e_ab[1][1] = 0 + e_bc[1][1] = 0.75; total 4.5; memory 4 + 3 + 2 = 9.
  auto ev = evaluate(p, {1, 1, 1});
  CHECK(ev.cost[CostTerm::compute].value == 3.0);
  CHECK(ev.cost[CostTerm::grad_sync].value == 0.5);
  CHECK(ev.cost[CostTerm::op_comm].value == 0.25);
  CHECK(ev.cost[CostTerm::reshard].value == 0.75);
  CHECK(ev.total.value == 4.5);
  CHECK(ev.memory.value == 9.0);
  CHECK(ev.feasible());
  // (rep, rep, rep): 4 + 2 + 3 = 9, no resharding; memory 24.
  ev = evaluate(p, {0, 0, 0});
  CHECK(ev.total.value == 9.0);
  CHECK(ev.memory.value == 24.0);
}

TEST_CASE("evaluate reports violations", "[search][op_sharding]") {
  auto p = chain3();
  CHECK(evaluate(p, {0, 0}).violations.size() == 1);
  auto ev = evaluate(p, {0, 5, 0});
  REQUIRE(ev.violations.size() == 1);
  CHECK(ev.violations[0].find("node 1 (b): strategy 5 out of range") != std::string::npos);
  p.memory_limit = Bytes(20);
  ev = evaluate(p, {0, 0, 0});  // 24 > 20
  REQUIRE(ev.violations.size() == 1);
  CHECK(ev.violations[0] == "memory 24 B exceeds the limit 20 B");
  CHECK(evaluate(p, {1, 1, 1}).feasible());
}

TEST_CASE("explain lists the largest differing terms first", "[search][op_sharding]") {
  const auto p = chain3();
  // a = (col, col, row) total 4.5; b = (rep, col, row):
  //   node a: compute 4 vs 1 (+3), grad_sync 0 vs 0.5 (-0.5), memory +6
  //   edge a->b: e_ab[0][1] = 1 vs e_ab[1][1] = 0 (+1)
  //   b total = 4 + 1 + 1 + 0.25 + 1 + 0.75 = 8
  const std::string text = explain(p, {1, 1, 1}, {0, 1, 1});
  CHECK(text ==
        "a: 4.50 s (9 B), b: 8.00 s (15 B); a is cheaper by 3.50 s\n"
        "  node a: col -> rep: compute +3.00 s\n"
        "  edge a -> b (x): reshard +1.00 s\n"
        "  node a: col -> rep: grad_sync -500.00 ms\n"
        "  node a: col -> rep: memory +6 B");
  // The other way round: b is cheaper; equal choices: no lines.
  CHECK(explain(p, {0, 1, 1}, {1, 1, 1}).find("b is cheaper by 3.50 s") != std::string::npos);
  CHECK(explain(p, {1, 1, 1}, {1, 1, 1}) == "a: 4.50 s (9 B), b: 4.50 s (9 B); equal cost");
  // max_lines cuts the list.
  CHECK(explain(p, {1, 1, 1}, {0, 1, 1}, 1).find("... 3 more") != std::string::npos);
}

TEST_CASE("solve finds the hand-computed optimum of the chain", "[search][op_sharding]") {
  auto p = chain3();
  // Candidates (a, b, c) -> total:
  //   col col row: 3 + 0.5 + 0.25 + 0 + 0.75 = 4.5
  //   col col rep: 1 + 1 + 3 + 0.5 + 0 + 0.5 = 6
  //   col rep row: 1 + 2 + 1 + 0.5 + 0.25 + 2 + 3 = 9.75 ...
  auto s = solve(p);
  REQUIRE(s.ok());
  CHECK(s->choice == Choice{1, 1, 1});
  CHECK(s->evaluation.total.value == 4.5);
  CHECK(s->exact);
  // A memory limit of 8 forbids (col, col, row) (9) ... and everything else:
  // the leanest choice needs 4 + 3 + 2 = 9.
  p.memory_limit = Bytes(8);
  auto bad = solve(p);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("no choice fits the memory limit") == 0);
}

TEST_CASE("the memory limit changes the optimum exactly", "[search][op_sharding]") {
  // Two nodes: x fast but fat, or slow and lean; y's strategies match x's
  // through the edge. Without a limit (fast, fast) costs 1 + 1 = 2 and
  // needs 10 + 10; with a limit of 12: (lean, lean) costs 3 + 3 = 6,
  // (fast, lean) 1 + 3 + 5 = 9 (edge) and needs 10 + 2 = 12: fits but costs more.
  ShardingProblem p;
  p.nodes.push_back({"x", {strat("fast", 1, 10), strat("lean", 3, 2)}});
  p.nodes.push_back({"y", {strat("fast", 1, 10), strat("lean", 3, 2)}});
  p.edges.push_back(edge(0, 1, {0, 5, 5, 0}));
  auto s = solve(p);
  REQUIRE(s.ok());
  CHECK(s->choice == Choice{0, 0});
  p.memory_limit = Bytes(12);
  s = solve(p);
  REQUIRE(s.ok());
  CHECK(s->choice == Choice{1, 1});
  CHECK(s->evaluation.total.value == 6.0);
  CHECK(s->exact);
}

TEST_CASE("solve with a given first pass: the first pass reads times only, memory is taken from the problem",
          "[search][op_sharding]") {
  // The problem above: (fast, fast) is the time-only optimum whatever the
  // memory (cost 2). Solved for a lean copy (every strategy 1 byte), the
  // first pass serves the fat problem: without a limit it is the answer,
  // evaluated against the fat memory (10 + 10); with a limit of 12 the
  // solver goes on to (lean, lean) as solve() alone does.
  ShardingProblem fat;
  fat.nodes.push_back({"x", {strat("fast", 1, 10), strat("lean", 3, 2)}});
  fat.nodes.push_back({"y", {strat("fast", 1, 10), strat("lean", 3, 2)}});
  fat.edges.push_back(edge(0, 1, {0, 5, 5, 0}));
  ShardingProblem lean = fat;
  for (auto& n : lean.nodes)
    for (auto& st : n.strategies) st.memory = Bytes(1);
  auto first = solve_time_only(lean);
  REQUIRE(first.ok());
  CHECK(first->choice == Choice{0, 0});
  CHECK(first->evaluation.memory.value == 2.0);
  auto s = solve(fat, *first);
  REQUIRE(s.ok());
  CHECK(s->choice == Choice{0, 0});
  CHECK(s->evaluation.memory.value == 20.0);
  fat.memory_limit = Bytes(12);
  s = solve(fat, *first);
  REQUIRE(s.ok());
  CHECK(s->choice == Choice{1, 1});
  CHECK(s->evaluation.total.value == 6.0);
  auto alone = solve(fat);
  REQUIRE(alone.ok());
  CHECK(alone->choice == s->choice);
  // A first pass of another problem's size is refused.
  Solution wrong = *first;
  wrong.choice.push_back(0);
  auto bad = solve(fat, wrong);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("2 nodes") != std::string::npos);
}

TEST_CASE("validate names the bad node or edge", "[search][op_sharding]") {
  auto p = chain3();
  p.edges.push_back(edge(0, 0, {0, 0, 0, 0}));
  CHECK(p.validate().error().message.find("from == to") != std::string::npos);
  p = chain3();
  p.edges.push_back(edge(0, 2, {0, 0, 0}));
  CHECK(p.validate().error().message == "edge 2 (t): matrix has 3 entries, want 4");
  p = chain3();
  p.nodes[1].strategies.clear();
  CHECK(p.validate().error().message == "node 1 (b): no strategies");
  p = chain3();
  p.nodes[2].strategies[0].cost[CostTerm::compute] = Seconds(-1);
  CHECK_FALSE(p.validate().ok());
}

namespace {

// A random DAG in topological order: each node has 1..4 strategies and edges
// to up to 2 earlier nodes (the previous one, and a "residual" further back).
ShardingProblem random_problem(std::mt19937& rng, std::size_t n, bool with_limit) {
  std::uniform_int_distribution<int> ns(1, 4), back(2, 5);
  std::uniform_real_distribution<double> cost(0.0, 10.0), mem(1.0, 10.0), coin(0.0, 1.0);
  ShardingProblem p;
  for (std::size_t i = 0; i < n; ++i) {
    ProblemNode node;
    node.name = "n" + std::to_string(i);
    const int k = ns(rng);
    for (int s = 0; s < k; ++s)
      node.strategies.push_back(strat("s" + std::to_string(s), cost(rng), mem(rng), coin(rng) < 0.3 ? cost(rng) : 0));
    p.nodes.push_back(std::move(node));
    auto connect = [&](std::size_t from) {
      std::vector<double> m(p.nodes[from].strategies.size() * p.nodes[i].strategies.size());
      for (auto& v : m) v = coin(rng) < 0.3 ? 0.0 : cost(rng);
      p.edges.push_back(edge(from, i, std::move(m)));
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
    p.memory_limit = Bytes(lean + coin(rng) * (fat - lean) * 0.6);
  }
  return p;
}

}  // namespace

TEST_CASE("the DP equals brute force on random DAGs with residual edges", "[search][op_sharding]") {
  std::mt19937 rng(20240611);
  int compared = 0, limited = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const bool with_limit = trial % 2 == 1;
    const auto p = random_problem(rng, 3 + static_cast<std::size_t>(trial % 8), with_limit);
    auto brute = solve_brute_force(p);
    auto dp = solve(p);
    INFO("trial " << trial);
    REQUIRE(brute.ok() == dp.ok());
    if (!brute.ok()) continue;
    CHECK(dp->exact);
    CHECK(dp->evaluation.feasible());
    CHECK(dp->evaluation.total.value == Approx(brute->evaluation.total.value).epsilon(1e-9));
    ++compared;
    if (with_limit) ++limited;
  }
  CHECK(compared > 250);
  CHECK(limited > 100);
}

TEST_CASE("a tiny beam marks the result inexact but keeps it valid", "[search][op_sharding]") {
  // K5: every node has 4 neighbours, so nothing is eliminated and the DP's
  // frontier holds up to 4 nodes (81 states); a beam of 2 must cut.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> cost(0.0, 10.0);
  ShardingProblem p;
  for (int i = 0; i < 5; ++i)
    p.nodes.push_back({"k" + std::to_string(i), {strat("a", cost(rng), 1), strat("b", cost(rng), 1), strat("c", cost(rng), 1)}});
  for (std::size_t i = 0; i < 5; ++i)
    for (std::size_t j = i + 1; j < 5; ++j) {
      std::vector<double> m(9);
      for (auto& v : m) v = cost(rng);
      p.edges.push_back(edge(i, j, m));
    }
  SolveOptions o;
  o.max_states = 2;
  auto s = solve(p, o);
  REQUIRE(s.ok());
  CHECK_FALSE(s->exact);
  CHECK(s->peak_states <= 2);
  auto exact = solve(p);
  REQUIRE(exact.ok());
  CHECK(exact->exact);
  CHECK(exact->max_frontier == 4);
  CHECK(s->evaluation.total.value >= exact->evaluation.total.value);
  CHECK(exact->evaluation.total.value == Approx(solve_brute_force(p)->evaluation.total.value));
}

TEST_CASE("the DP equals brute force under memory limits on dense graphs", "[search][op_sharding]") {
  // Complete graphs leave nothing to eliminate: the frontier DP with Pareto
  // sets alone carries the memory constraint.
  std::mt19937 rng(99);
  std::uniform_real_distribution<double> cost(0.0, 10.0), mem(1.0, 10.0), coin(0.0, 1.0);
  int compared = 0;
  for (int trial = 0; trial < 60; ++trial) {
    ShardingProblem p;
    const std::size_t n = 4 + static_cast<std::size_t>(trial % 3);
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
    p.memory_limit = Bytes(lean + coin(rng) * (fat - lean));
    auto brute = solve_brute_force(p);
    auto dp = solve(p);
    INFO("trial " << trial);
    REQUIRE(brute.ok() == dp.ok());
    if (!brute.ok()) continue;
    CHECK(dp->exact);
    CHECK(dp->evaluation.feasible());
    CHECK(dp->evaluation.total.value == Approx(brute->evaluation.total.value).epsilon(1e-9));
    ++compared;
  }
  CHECK(compared > 50);
}

TEST_CASE("long random chains with residual edges solve exactly and fast", "[search][op_sharding]") {
  // 400 nodes of up to 4 strategies: far beyond brute force; the answer must
  // be no worse than greedy choices and reproducible.
  std::mt19937 rng(5);
  auto p = random_problem(rng, 400, false);
  auto a = solve(p), b = solve(p);
  REQUIRE(a.ok());
  CHECK(a->exact);
  CHECK(a->choice == b->choice);
  Choice zeros(p.nodes.size(), 0);
  CHECK(a->evaluation.total <= evaluate(p, zeros).total);
  p.memory_limit = Bytes(a->evaluation.memory.value * 0.9);
  auto limited = solve(p);
  REQUIRE(limited.ok());
  CHECK(limited->evaluation.feasible());
  CHECK(limited->evaluation.total >= a->evaluation.total);
}

TEST_CASE("an expert layer's fan-out solves exactly in a narrow order", "[search][op_sharding]") {
  // An MoE layer's shape after elimination: tokens (0) and routing indices
  // (1) feed 24 expert branches (2..25), which all feed one Concat (26).
  // Every branch has three neighbours, so nothing is eliminated, and in
  // graph order all 24 branches stay live until the Concat: a frontier of
  // 26 nodes, 2^26 states, far past the beam. The DP processes the Concat
  // as soon as two branches wait on it instead (frontier <= 4), and is exact.
  //
  // Hand optimum: once tokens, indices and the Concat are fixed (t, i, c),
  // the branches are independent. Branch b, strategy s costs
  //   unary b + s/10 + e(t,b)[t][s] + e(i,b)[i][s] + e(b,c)[s][c]
  // with e(t,b) = [[0, 2], [2, 0]] (a reshard when they differ), e(i,b) =
  // [[0, 1], [1, 0]], e(b,c) = [[0, 3], [3, 0]]; tokens/indices/Concat cost
  // (1, 0.5) each for (s0, s1). All at s1: 3 x 0.5 + 24 x (1 + 0.1 + ... ) is
  // the total the loop below works out over the 8 (t, i, c) corners.
  ShardingProblem p;
  p.nodes.push_back({"tokens", {strat("s0", 1, 1), strat("s1", 0.5, 1)}});
  p.nodes.push_back({"indices", {strat("s0", 1, 1), strat("s1", 0.5, 1)}});
  constexpr std::size_t kBranches = 24;
  for (std::size_t b = 0; b < kBranches; ++b)
    p.nodes.push_back({"expert" + std::to_string(b),
                       {strat("s0", 1 + static_cast<double>(b % 5) / 10, 1), strat("s1", 1.1, 1)}});
  p.nodes.push_back({"concat", {strat("s0", 1, 1), strat("s1", 0.5, 1)}});
  const std::size_t concat = kBranches + 2;
  for (std::size_t b = 2; b < concat; ++b) {
    p.edges.push_back(edge(0, b, {0, 2, 2, 0}));
    p.edges.push_back(edge(1, b, {0, 1, 1, 0}));
    p.edges.push_back(edge(b, concat, {0, 3, 3, 0}));
  }
  double best = 1e30;
  for (int t = 0; t < 2; ++t)
    for (int i = 0; i < 2; ++i)
      for (int c = 0; c < 2; ++c) {
        double total = (t ? 0.5 : 1) + (i ? 0.5 : 1) + (c ? 0.5 : 1);
        for (std::size_t b = 2; b < concat; ++b) {
          double branch = 1e30;
          for (int s = 0; s < 2; ++s) {
            const double unary = s ? 1.1 : 1 + static_cast<double>((b - 2) % 5) / 10;
            branch = std::min(branch, unary + (s != t ? 2 : 0) + (s != i ? 1 : 0) + (s != c ? 3 : 0));
          }
          total += branch;
        }
        best = std::min(best, total);
      }
  auto s = solve(p);
  REQUIRE(s.ok());
  CHECK(s->exact);
  CHECK(s->max_frontier <= 4);
  CHECK(s->evaluation.total.value == Approx(best));
  // All at s1: 1.5 + 24 x 1.1 = 27.9, which no corner beats (a branch at s0
  // saves at most 0.1 and pays a reshard of 2 + 1 + 3 against s1 neighbours).
  CHECK(best == Approx(27.9));
  auto again = solve(p);
  REQUIRE(again.ok());
  CHECK(again->choice == s->choice);
}
