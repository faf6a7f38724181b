// The MILP of a flat op-sharding problem (no CBC here): presolve, columns,
// rows, and the single-node polish applied to CBC's answer.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "milp_internal.hpp"

namespace planner::sharding::milp_detail {

namespace {

// The rule evaluate() uses for "over the memory limit" (src/search's
// detail::over_limit): the MILP and evaluate() must agree on what fits.
bool over_limit(double mem, double limit) { return mem > limit * (1.0 + 1e-12) + 1e-9; }

double node_cost(const ShardingProblem& p, std::size_t n, std::size_t s) {
  return p.nodes[n].strategies[s].cost.total().value;
}

double entry(const ShardingProblem& p, const ProblemEdge& e, std::size_t i, std::size_t j) {
  return e.cost[i * p.nodes[e.to].strategies.size() + j].value;
}

}  // namespace

Result<Model> build_model(const ShardingProblem& p) {
  const std::size_t N = p.nodes.size();
  Model m;
  m.fixed.assign(N, std::nullopt);
  m.xcols.assign(N, {});

  // 1. Memory presolve: a strategy that does not fit even with every other
  //    node at its smallest memory can never be chosen.
  std::vector<std::vector<std::size_t>> live(N);
  std::vector<double> min_mem(N, 0.0);
  double total_min = 0.0;
  for (std::size_t n = 0; n < N; ++n) {
    double lo = std::numeric_limits<double>::infinity();
    for (const auto& s : p.nodes[n].strategies) lo = std::min(lo, s.memory.value);
    min_mem[n] = lo;
    total_min += lo;
  }
  const bool limited = p.memory_limit.has_value();
  const double limit = limited ? p.memory_limit->value : 0.0;
  if (limited && over_limit(total_min, limit))
    return make_error("no choice fits the memory limit {} (the smallest needs {})", format_bytes(*p.memory_limit),
                      format_bytes(Bytes(total_min)));
  double total_max = 0.0;
  for (std::size_t n = 0; n < N; ++n) {
    double hi = 0.0;
    for (std::size_t s = 0; s < p.nodes[n].strategies.size(); ++s) {
      const double mem = p.nodes[n].strategies[s].memory.value;
      if (limited && over_limit(total_min - min_mem[n] + mem, limit)) {
        ++m.dropped_strategies;
        continue;
      }
      live[n].push_back(s);
      hi = std::max(hi, mem);
    }
    total_max += hi;
    if (live[n].size() == 1) m.fixed[n] = live[n][0];
  }
  // The memory row is needed only when some choice of live strategies could
  // exceed the limit.
  const bool memory_row = limited && over_limit(total_max, limit);

  // 2. Unary costs over live strategies; fold edges touching fixed nodes,
  //    merge parallel edges into one block per pair (u < v).
  std::vector<std::vector<double>> unary(N);
  for (std::size_t n = 0; n < N; ++n)
    for (auto s : live[n]) unary[n].push_back(node_cost(p, n, s));
  double constant = 0.0;  // seconds
  std::map<std::pair<std::size_t, std::size_t>, std::vector<double>> pairs;
  for (const auto& e : p.edges) {
    const auto &lf = live[e.from], &lt = live[e.to];
    if (m.fixed[e.from] && m.fixed[e.to]) {
      constant += entry(p, e, *m.fixed[e.from], *m.fixed[e.to]);
      ++m.folded_edges;
    } else if (m.fixed[e.from]) {
      for (std::size_t j = 0; j < lt.size(); ++j) unary[e.to][j] += entry(p, e, *m.fixed[e.from], lt[j]);
      ++m.folded_edges;
    } else if (m.fixed[e.to]) {
      for (std::size_t i = 0; i < lf.size(); ++i) unary[e.from][i] += entry(p, e, lf[i], *m.fixed[e.to]);
      ++m.folded_edges;
    } else {
      const std::size_t u = std::min(e.from, e.to), v = std::max(e.from, e.to);
      auto& mat = pairs[{u, v}];
      mat.resize(live[u].size() * live[v].size(), 0.0);
      for (std::size_t i = 0; i < lf.size(); ++i)
        for (std::size_t j = 0; j < lt.size(); ++j) {
          const double c = entry(p, e, lf[i], lt[j]);
          if (u == e.from) mat[i * live[v].size() + j] += c;
          else mat[j * live[v].size() + i] += c;
        }
    }
  }
  // A constant pair adds its value and couples nothing.
  std::vector<int> degree(N, 0);
  for (auto it = pairs.begin(); it != pairs.end();) {
    const auto& mat = it->second;
    if (std::all_of(mat.begin(), mat.end(), [&](double c) { return c == mat.front(); })) {
      constant += mat.front();
      ++m.constant_pairs;
      it = pairs.erase(it);
    } else {
      ++degree[it->first.first];
      ++degree[it->first.second];
      ++it;
    }
  }
  // Without a memory row, a free node coupled to nothing takes its cheapest
  // strategy (the lowest index on ties).
  if (!memory_row)
    for (std::size_t n = 0; n < N; ++n) {
      if (m.fixed[n] || degree[n] > 0) continue;
      const std::size_t best = static_cast<std::size_t>(
          std::min_element(unary[n].begin(), unary[n].end()) - unary[n].begin());
      m.fixed[n] = live[n][best];
      unary[n] = {unary[n][best]};
    }
  for (std::size_t n = 0; n < N; ++n)
    if (m.fixed[n]) constant += unary[n][0];

  // 3. Columns and rows. Each node's and pair's smallest coefficient moves to
  //    the constant (one-hot rows make that exact), so coefficients are >= 0.
  auto add_row = [&](double lo, double hi) {
    m.row_lo.push_back(lo);
    m.row_hi.push_back(hi);
    return static_cast<int>(m.row_lo.size() - 1);
  };
  auto add_col = [&](double obj, bool integer) {
    m.obj.push_back(obj);
    m.integer.push_back(integer);
    return static_cast<int>(m.obj.size() - 1);
  };
  for (std::size_t n = 0; n < N; ++n) {
    if (m.fixed[n]) continue;
    const double lo = *std::min_element(unary[n].begin(), unary[n].end());
    constant += lo;
    const int row = add_row(1.0, 1.0);
    for (std::size_t i = 0; i < live[n].size(); ++i) {
      const int col = add_col((unary[n][i] - lo) * kTimeScale, true);
      m.xcols[n].emplace_back(live[n][i], col);
      m.entries.push_back({row, col, 1.0});
    }
  }
  for (auto& [key, mat] : pairs) {
    Model::Block b;
    b.u = key.first;
    b.v = key.second;
    b.su = live[b.u];
    b.sv = live[b.v];
    b.first_col = static_cast<int>(m.obj.size());
    const double lo = *std::min_element(mat.begin(), mat.end());
    constant += lo;
    for (double c : mat) add_col((c - lo) * kTimeScale, false);
    // sum_j y[i][j] = x[u][i] for every i; sum_i y[i][j] = x[v][j] for every
    // j but the last (implied: both sides sum to 1).
    const std::size_t nu = b.su.size(), nv = b.sv.size();
    for (std::size_t i = 0; i < nu; ++i) {
      const int row = add_row(0.0, 0.0);
      for (std::size_t j = 0; j < nv; ++j) m.entries.push_back({row, b.first_col + static_cast<int>(i * nv + j), 1.0});
      m.entries.push_back({row, m.xcols[b.u][i].second, -1.0});
    }
    for (std::size_t j = 0; j + 1 < nv; ++j) {
      const int row = add_row(0.0, 0.0);
      for (std::size_t i = 0; i < nu; ++i) m.entries.push_back({row, b.first_col + static_cast<int>(i * nv + j), 1.0});
      m.entries.push_back({row, m.xcols[b.v][j].second, -1.0});
    }
    m.blocks.push_back(std::move(b));
  }
  if (memory_row) {
    // sum (mem - min) x <= limit - sum min, in MiB.
    m.memory_row = add_row(-std::numeric_limits<double>::infinity(), (limit - total_min) * kMemoryScale);
    for (std::size_t n = 0; n < N; ++n)
      for (auto [s, col] : m.xcols[n]) {
        const double d = p.nodes[n].strategies[s].memory.value - min_mem[n];
        if (d != 0.0) m.entries.push_back({m.memory_row, col, d * kMemoryScale});
      }
  }
  m.constant = constant * kTimeScale;
  return m;
}

double model_objective(const Model& m, const ShardingProblem& p, const Choice& c) {
  const auto x = columns_of(m, c);
  if (x.empty() && m.columns() > 0) return std::numeric_limits<double>::quiet_NaN();
  double z = m.constant;
  for (std::size_t k = 0; k < x.size(); ++k) z += m.obj[k] * x[k];
  return z / kTimeScale;
}

std::vector<double> columns_of(const Model& m, const Choice& c) {
  const std::size_t N = m.fixed.size();
  if (c.size() != N) return {};
  std::vector<double> x(m.columns(), 0.0);
  std::vector<int> pos(N, -1);  // index into xcols[n] of the chosen strategy
  for (std::size_t n = 0; n < N; ++n) {
    if (m.fixed[n]) {
      if (c[n] != *m.fixed[n]) return {};
      continue;
    }
    for (std::size_t i = 0; i < m.xcols[n].size(); ++i)
      if (m.xcols[n][i].first == c[n]) pos[n] = static_cast<int>(i);
    if (pos[n] < 0) return {};
    x[static_cast<std::size_t>(m.xcols[n][static_cast<std::size_t>(pos[n])].second)] = 1.0;
  }
  for (const auto& b : m.blocks)
    x[static_cast<std::size_t>(b.first_col) + static_cast<std::size_t>(pos[b.u]) * b.sv.size() +
      static_cast<std::size_t>(pos[b.v])] = 1.0;
  return x;
}

Choice start_choice(const Model& m, const ShardingProblem& p) {
  Choice c(p.nodes.size(), 0);
  for (std::size_t n = 0; n < c.size(); ++n) {
    if (m.fixed[n]) {
      c[n] = *m.fixed[n];
      continue;
    }
    const auto& st = p.nodes[n].strategies;
    for (std::size_t s = 1; s < st.size(); ++s)
      if (st[s].memory.value < st[c[n]].memory.value) c[n] = s;
  }
  polish(m, p, c);
  return c;
}

void polish(const Model& m, const ShardingProblem& p, Choice& c) {
  const std::size_t N = p.nodes.size();
  // Incident edges per node.
  std::vector<std::vector<std::size_t>> inc(N);
  for (std::size_t k = 0; k < p.edges.size(); ++k) {
    inc[p.edges[k].from].push_back(k);
    inc[p.edges[k].to].push_back(k);
  }
  // The cost node n adds with strategy s, others as in c.
  auto local = [&](std::size_t n, std::size_t s) {
    double z = node_cost(p, n, s);
    for (auto k : inc[n]) {
      const auto& e = p.edges[k];
      z += e.from == n ? entry(p, e, s, c[e.to]) : entry(p, e, c[e.from], s);
    }
    return z;
  };
  const Evaluation start = evaluate(p, c);
  double total = start.total.value, best = total, mem = start.memory.value;
  const bool limited = p.memory_limit.has_value();
  const double limit = limited ? p.memory_limit->value : 0.0;
  for (int sweep = 0; sweep < 64; ++sweep) {
    bool moved = false;
    for (std::size_t n = 0; n < N; ++n) {
      if (m.fixed[n]) continue;
      const std::size_t S = p.nodes[n].strategies.size(), cur = c[n];
      const double here = local(n, cur), tol = 1e-12 * std::max(std::fabs(best), 1e-300);
      const double mem_here = p.nodes[n].strategies[cur].memory.value;
      std::vector<double> d(S, std::numeric_limits<double>::infinity());
      double dmin = 0.0;
      for (std::size_t s = 0; s < S; ++s) {
        if (limited && over_limit(mem - mem_here + p.nodes[n].strategies[s].memory.value, limit)) continue;
        d[s] = local(n, s) - here;
        dmin = std::min(dmin, d[s]);
      }
      std::size_t pick = cur;
      if (dmin < -tol) {  // improve: the lowest index among the best
        for (std::size_t s = 0; s < S; ++s)
          if (d[s] <= dmin + tol) {
            pick = s;
            break;
          }
      } else {  // tie: a lower index at (about) the same total
        for (std::size_t s = 0; s < cur; ++s)
          if (d[s] <= tol && total + d[s] <= best + tol) {
            pick = s;
            break;
          }
      }
      if (pick == cur) continue;
      total += d[pick];
      mem += p.nodes[n].strategies[pick].memory.value - mem_here;
      c[n] = pick;
      best = std::min(best, total);
      moved = true;
    }
    if (!moved) break;
  }
}

}  // namespace planner::sharding::milp_detail
