// Exact elimination of low-degree nodes before the frontier DP (MindSpore's
// cost-graph eliminations) over Pareto lists of (cost, memory), and the
// list algebra they use.
//
//   leaf      a ── x               unary(a)[i] ⊕= ∪_k  e(a,x)[i][k] ⊕ unary(x)[k]   (x := k)
//
//   chain     a ── x ── b    =>    a ════ b
//                                  e'(a,b)[i][j] = ∪_k e(a,x)[i][k] ⊕ unary(x)[k] ⊕ e(x,b)[k][j]
//                                  added (⊕) to any existing a ── b edge
//
//   ⊕ = Minkowski sum (costs and memories add), ∪ = Pareto union; without a
//   memory limit every list is one option and this is min-plus algebra.
//   Each surviving option remembers "x := k" in its provenance.
//
// Repeated until every node left has 0 or 3+ neighbours. A transformer
// block is series-parallel: its reshape/transpose chains, GeLU chains, bias
// Adds and q/k/v branches (three parallel chains merge into one edge, then
// the Split is a chain node itself) all go, and usually the whole graph
// does; the frontier DP solves whatever remains.
#include <algorithm>
#include <cmath>

#include "op_sharding_internal.hpp"

namespace planner::sharding::detail {

bool over_limit(double mem, double limit) { return mem > limit * (1.0 + 1e-12) + 1e-9; }

Factors::Factors(const ShardingProblem& p, double lambda, const SolveOptions& o) {
  limited = p.memory_limit.has_value();
  limit = limited ? p.memory_limit->value : 0.0;
  max_pareto = o.max_pareto;
  const std::size_t n = p.nodes.size();
  size.resize(n);
  unary.resize(n);
  nbr.resize(n);
  gone.assign(n, false);
  for (std::size_t v = 0; v < n; ++v) {
    size[v] = p.nodes[v].strategies.size();
    for (const auto& s : p.nodes[v].strategies)
      unary[v].push_back(List{Opt{s.cost.total().value + lambda * s.memory.value, s.memory.value, 0}});
  }
  for (const auto& e : p.edges) {
    std::vector<List> m;
    m.reserve(e.cost.size());
    for (auto c : e.cost) m.push_back(List{Opt{c.value, 0.0, 0}});
    add_mat(e.from, e.to, std::move(m));
  }
}

List Factors::finish(std::vector<Cand>& c) {
  List out;
  if (c.empty()) return out;
  auto make = [&](const Cand& x) {
    std::uint32_t id = 0;
    const int subs = (x.p[0] != 0) + (x.p[1] != 0) + (x.p[2] != 0);
    if (x.picks || subs > 1) {
      Prov pr;
      std::copy(std::begin(x.p), std::end(x.p), pr.sub);
      pr.node = x.node;
      pr.pick = x.pick;
      pr.picks = x.picks;
      id = static_cast<std::uint32_t>(prov.size());
      prov.push_back(pr);
    } else {
      for (auto s : x.p) id = id ? id : s;
    }
    return Opt{x.cost, x.mem, id};
  };
  if (!limited) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < c.size(); ++i)
      if (c[i].cost < c[best].cost) best = i;
    out.push_back(make(c[best]));
    return out;
  }
  std::erase_if(c, [&](const Cand& x) { return over_limit(x.mem, limit); });
  std::stable_sort(c.begin(), c.end(),
                   [](const Cand& a, const Cand& b) { return a.mem != b.mem ? a.mem < b.mem : a.cost < b.cost; });
  std::vector<const Cand*> keep;
  for (const auto& x : c)
    if (keep.empty() || x.cost < keep.back()->cost) keep.push_back(&x);
  while (keep.size() > max_pareto && keep.size() > 2) {
    // Drop the inner option whose saving over its leaner neighbour is least.
    std::size_t drop = 1;
    for (std::size_t i = 2; i + 1 < keep.size(); ++i)
      if (keep[i - 1]->cost - keep[i]->cost < keep[drop - 1]->cost - keep[drop]->cost) drop = i;
    keep.erase(keep.begin() + static_cast<std::ptrdiff_t>(drop));
    exact = false;
  }
  for (const auto* x : keep) out.push_back(make(*x));
  return out;
}

List Factors::add(const List& x, const List& y) {
  if (x.size() == 1 && y.size() == 1) {
    std::vector<Cand> c{Cand{x[0].cost + y[0].cost, x[0].mem + y[0].mem, {x[0].prov, y[0].prov, 0}}};
    return finish(c);
  }
  std::vector<Cand> c;
  c.reserve(x.size() * y.size());
  for (const auto& a : x)
    for (const auto& b : y) c.push_back(Cand{a.cost + b.cost, a.mem + b.mem, {a.prov, b.prov, 0}});
  return finish(c);
}

const List& Factors::at(std::size_t id, std::size_t a, std::size_t i, std::size_t j) const {
  const Mat& m = mats[id];
  return m.a == a ? m.m[i * size[m.b] + j] : m.m[j * size[a] + i];
}

void Factors::add_mat(std::size_t a, std::size_t b, std::vector<List> m) {
  if (auto it = nbr[a].find(b); it != nbr[a].end()) {
    Mat& old = mats[it->second];
    for (std::size_t i = 0; i < size[a]; ++i)
      for (std::size_t j = 0; j < size[b]; ++j) {
        List& dst = old.a == a ? old.m[i * size[b] + j] : old.m[j * size[a] + i];
        dst = add(dst, m[i * size[b] + j]);
      }
    return;
  }
  nbr[a][b] = nbr[b][a] = mats.size();
  mats.push_back(Mat{a, b, std::move(m), true});
}

void Factors::replay(std::uint32_t p, Choice& c) const {
  std::vector<std::uint32_t> todo{p};
  while (!todo.empty()) {
    const std::uint32_t id = todo.back();
    todo.pop_back();
    if (id == 0) continue;
    const Prov& pr = prov[id];
    if (pr.picks) c[pr.node] = pr.pick;
    for (auto s : pr.sub)
      if (s) todo.push_back(s);
  }
}

namespace {

void drop(Factors& f, std::size_t x) {
  for (const auto& [o, id] : f.nbr[x]) {
    f.mats[id].live = false;
    f.nbr[o].erase(x);
  }
  f.nbr[x].clear();
  f.gone[x] = true;
}

void eliminate_node(Factors& f, std::size_t x) {
  const std::vector<std::pair<std::size_t, std::size_t>> nb(f.nbr[x].begin(), f.nbr[x].end());
  const auto nx = f.size[x];
  auto cand = [&](const Opt& u, const Opt& v, const Opt& w, std::size_t k) {
    return Cand{u.cost + v.cost + w.cost, u.mem + v.mem + w.mem, {u.prov, v.prov, w.prov},
                static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(k), true};
  };
  const Opt zero{};
  std::vector<Cand> c;
  if (nb.size() == 1) {
    const auto [a, ea] = nb[0];
    for (std::size_t i = 0; i < f.size[a]; ++i) {
      c.clear();
      for (std::size_t k = 0; k < nx; ++k)
        for (const auto& u : f.at(ea, a, i, k))
          for (const auto& v : f.unary[x][k]) c.push_back(cand(u, v, zero, k));
      f.unary[a][i] = f.add(f.unary[a][i], f.finish(c));
    }
    drop(f, x);
    return;
  }
  const auto [a, ea] = nb[0];
  const auto [b, eb] = nb[1];
  std::vector<List> m(f.size[a] * f.size[b]);
  for (std::size_t i = 0; i < f.size[a]; ++i)
    for (std::size_t j = 0; j < f.size[b]; ++j) {
      c.clear();
      for (std::size_t k = 0; k < nx; ++k)
        for (const auto& u : f.at(ea, a, i, k))
          for (const auto& v : f.unary[x][k])
            for (const auto& w : f.at(eb, x, k, j)) c.push_back(cand(u, v, w, k));
      m[i * f.size[b] + j] = f.finish(c);
    }
  drop(f, x);
  f.add_mat(a, b, std::move(m));
}

}  // namespace

void eliminate(Factors& f) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (std::size_t x = 0; x < f.size.size(); ++x) {
      if (f.gone[x] || f.nbr[x].empty() || f.nbr[x].size() > 2) continue;
      eliminate_node(f, x);
      changed = true;
    }
  }
}

}  // namespace planner::sharding::detail
