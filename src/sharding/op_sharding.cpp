// The flat op-sharding problem: validation, evaluate(), explain() and the
// brute-force solver used by tests (the DP lives in frontier_dp.cpp).
#include "planner/sharding/op_sharding.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "op_sharding_internal.hpp"

namespace planner::sharding {

std::string_view cost_term_name(CostTerm t) {
  switch (t) {
    case CostTerm::compute: return "compute";
    case CostTerm::op_comm: return "op_comm";
    case CostTerm::grad_sync: return "grad_sync";
    case CostTerm::reshard: return "reshard";
  }
  return "?";
}

Seconds CostBreakdown::total() const {
  Seconds s;
  for (auto t : terms) s += t;
  return s;
}

CostBreakdown& CostBreakdown::operator+=(const CostBreakdown& o) {
  for (std::size_t i = 0; i < kCostTerms; ++i) terms[i] += o.terms[i];
  return *this;
}

std::string format_seconds(Seconds s) {
  const double v = s.value, a = std::fabs(v);
  if (a == 0.0) return "0 s";
  if (a >= 1.0) return fmt::format("{:.2f} s", v);
  if (a >= 1e-3) return fmt::format("{:.2f} ms", v * 1e3);
  if (a >= 1e-6) return fmt::format("{:.2f} us", v * 1e6);
  return fmt::format("{:.2f} ns", v * 1e9);
}

std::string format_bytes(Bytes b) {
  const double v = b.value, a = std::fabs(v);
  if (a >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", v / (1024.0 * 1024 * 1024));
  if (a >= 1024.0 * 1024) return fmt::format("{:.2f} MiB", v / (1024.0 * 1024));
  if (a >= 1024.0) return fmt::format("{:.2f} KiB", v / 1024.0);
  return fmt::format("{:.0f} B", v);
}

Status ShardingProblem::validate() const {
  auto bad = [](double v) { return !std::isfinite(v) || v < 0.0; };
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto& n = nodes[i];
    if (n.strategies.empty()) return make_error("node {} ({}): no strategies", i, n.name);
    if (n.strategies.size() > 65535) return make_error("node {} ({}): more than 65535 strategies", i, n.name);
    for (const auto& s : n.strategies) {
      for (auto t : s.cost.terms)
        if (bad(t.value)) return make_error("node {} ({}) strategy {}: cost {} is negative or not finite", i, n.name, s.name, t.value);
      if (bad(s.memory.value)) return make_error("node {} ({}) strategy {}: bad memory {}", i, n.name, s.name, s.memory.value);
    }
  }
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const auto& e = edges[i];
    if (e.from >= nodes.size() || e.to >= nodes.size())
      return make_error("edge {} ({}): endpoint {} -> {} outside {} nodes", i, e.name, e.from, e.to, nodes.size());
    if (e.from == e.to) return make_error("edge {} ({}): from == to ({}): fold it into the node", i, e.name, e.from);
    const std::size_t want = nodes[e.from].strategies.size() * nodes[e.to].strategies.size();
    if (e.cost.size() != want) return make_error("edge {} ({}): matrix has {} entries, want {}", i, e.name, e.cost.size(), want);
    for (auto c : e.cost)
      if (bad(c.value)) return make_error("edge {} ({}): entry {} is negative or not finite", i, e.name, c.value);
  }
  if (memory_limit && bad(memory_limit->value)) return make_error("memory limit {} is negative or not finite", memory_limit->value);
  return {};
}

Evaluation evaluate(const ShardingProblem& p, const Choice& c) {
  Evaluation ev;
  if (c.size() != p.nodes.size())
    ev.violations.push_back(fmt::format("choice has {} entries for {} nodes", c.size(), p.nodes.size()));
  auto valid = [&](std::size_t n) { return n < c.size() && c[n] < p.nodes[n].strategies.size(); };
  for (std::size_t n = 0; n < p.nodes.size() && n < c.size(); ++n) {
    if (!valid(n)) {
      ev.violations.push_back(fmt::format("node {} ({}): strategy {} out of range (has {})", n, p.nodes[n].name, c[n],
                                          p.nodes[n].strategies.size()));
      continue;
    }
    const auto& s = p.nodes[n].strategies[c[n]];
    ev.cost += s.cost;
    ev.memory += s.memory;
  }
  for (const auto& e : p.edges) {
    if (e.from >= p.nodes.size() || e.to >= p.nodes.size() || !valid(e.from) || !valid(e.to)) continue;
    const std::size_t idx = c[e.from] * p.nodes[e.to].strategies.size() + c[e.to];
    if (idx < e.cost.size()) ev.cost[CostTerm::reshard] += e.cost[idx];
  }
  ev.total = ev.cost.total();
  if (p.memory_limit && detail::over_limit(ev.memory.value, p.memory_limit->value))
    ev.violations.push_back(fmt::format("memory {} exceeds the limit {}", format_bytes(ev.memory),
                                        format_bytes(*p.memory_limit)));
  return ev;
}

std::string explain(const ShardingProblem& p, const Choice& a, const Choice& b, std::size_t max_lines) {
  const Evaluation ea = evaluate(p, a), eb = evaluate(p, b);
  const double diff = eb.total.value - ea.total.value;
  std::string out = fmt::format("a: {} ({}), b: {} ({}); ", format_seconds(ea.total), format_bytes(ea.memory),
                                format_seconds(eb.total), format_bytes(eb.memory));
  if (diff > 0) out += fmt::format("a is cheaper by {}", format_seconds(Seconds(diff)));
  else if (diff < 0) out += fmt::format("b is cheaper by {}", format_seconds(Seconds(-diff)));
  else out += "equal cost";
  for (const auto* ev : {&ea, &eb})
    for (const auto& v : ev->violations) out += fmt::format("\n  {}: {}", ev == &ea ? "a" : "b", v);
  if (!ea.violations.empty() || !eb.violations.empty()) {
    if (a.size() != p.nodes.size() || b.size() != p.nodes.size()) return out;
  }

  struct Item {
    double delta;
    std::string text;
  };
  std::vector<Item> items;
  auto ok = [&](const Choice& c, std::size_t n) { return n < c.size() && c[n] < p.nodes[n].strategies.size(); };
  for (std::size_t n = 0; n < p.nodes.size(); ++n) {
    if (!ok(a, n) || !ok(b, n) || a[n] == b[n]) continue;
    const auto &sa = p.nodes[n].strategies[a[n]], &sb = p.nodes[n].strategies[b[n]];
    for (std::size_t t = 0; t < kCostTerms; ++t) {
      const double d = sb.cost.terms[t].value - sa.cost.terms[t].value;
      if (d == 0.0) continue;
      items.push_back({d, fmt::format("node {}: {} -> {}: {} {}{}", p.nodes[n].name, sa.name, sb.name,
                                      cost_term_name(static_cast<CostTerm>(t)), d > 0 ? "+" : "",
                                      format_seconds(Seconds(d)))});
    }
    if (sa.memory != sb.memory)
      items.push_back({0.0, fmt::format("node {}: {} -> {}: memory {}{}", p.nodes[n].name, sa.name, sb.name,
                                        sb.memory > sa.memory ? "+" : "", format_bytes(sb.memory - sa.memory))});
  }
  for (const auto& e : p.edges) {
    if (!ok(a, e.from) || !ok(a, e.to) || !ok(b, e.from) || !ok(b, e.to)) continue;
    const std::size_t nt = p.nodes[e.to].strategies.size();
    const double ca_ = e.cost[a[e.from] * nt + a[e.to]].value, cb = e.cost[b[e.from] * nt + b[e.to]].value;
    if (ca_ == cb) continue;
    const double d = cb - ca_;
    items.push_back({d, fmt::format("edge {} -> {} ({}): reshard {}{}", p.nodes[e.from].name, p.nodes[e.to].name,
                                    e.name, d > 0 ? "+" : "", format_seconds(Seconds(d)))});
  }
  // Time differences largest first; memory lines (delta 0) after them.
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& x, const Item& y) { return std::fabs(x.delta) > std::fabs(y.delta); });
  for (std::size_t i = 0; i < items.size() && i < max_lines; ++i) out += "\n  " + items[i].text;
  if (items.size() > max_lines) out += fmt::format("\n  ... {} more", items.size() - max_lines);
  return out;
}

Result<Solution> solve_brute_force(const ShardingProblem& p, std::size_t max_choices) {
  PLANNER_TRY_STATUS(p.validate());
  double count = 1.0;
  for (const auto& n : p.nodes) count *= static_cast<double>(n.strategies.size());
  if (count > static_cast<double>(max_choices))
    return make_error("brute force: {:.0f} choices exceed the limit {}", count, max_choices);
  Choice c(p.nodes.size(), 0), best;
  bool found = false;
  double best_cost = 0.0, min_mem = -1.0;
  while (true) {
    const Evaluation ev = evaluate(p, c);
    if (min_mem < 0 || ev.memory.value < min_mem) min_mem = ev.memory.value;
    if (ev.feasible() && (!found || ev.total.value < best_cost)) {
      best = c;
      best_cost = ev.total.value;
      found = true;
    }
    std::size_t i = 0;
    while (i < c.size() && ++c[i] == p.nodes[i].strategies.size()) c[i++] = 0;
    if (i == c.size()) break;
  }
  if (!found)
    return make_error("no choice fits the memory limit {} (the smallest needs {})", format_bytes(*p.memory_limit),
                      format_bytes(Bytes(min_mem)));
  Solution s;
  s.choice = best;
  s.evaluation = evaluate(p, best);
  return s;
}

}  // namespace planner::sharding
