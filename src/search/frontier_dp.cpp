// The frontier DP over the nodes elimination left (design note in
// include/planner/search/op_sharding.hpp).
//
// One step processes node k:
//
//     states before              node k's strategies          states after
//   (live = {u, v})                                         (live = {v, k})
//   key [u=1, v=0] --+--> s=0: unary(k,0) ⊕ e(u,k)[1][0] ⊕ e(v,k)[0][0] --> [v=0, k=0]
//                    +--> s=1: unary(k,1) ⊕ e(u,k)[1][1] ⊕ e(v,k)[0][1] --> [v=0, k=1]
//   key [u=0, v=0] --+--> ...                                             (merged: the
//                                                                          cheapest, or
//                                                                          the Pareto set)
//   u leaves the frontier at k (k was its last neighbour); k stays because a
//   later node neighbours it. Each entry keeps (cost, memory, parent entry,
//   strategy, provenance of the eliminated nodes it assumed), so the optimum
//   is read back from the last step.
#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "op_sharding_internal.hpp"

namespace planner::search::detail {
namespace {

using Key = std::vector<std::uint16_t>;

struct KeyHash {
  std::size_t operator()(const Key& k) const noexcept {
    std::size_t h = 1469598103934665603ull;
    for (auto v : k) h = (h ^ v) * 1099511628211ull;
    return h;
  }
};

struct Entry {
  double cost = 0.0;
  double mem = 0.0;
  std::uint32_t parent = 0;
  std::uint32_t prov = 0;
  std::uint16_t pick = 0;
};

struct Bucket {
  Key key;
  std::vector<Entry> entries;  // one, or Pareto: memory ascending, cost descending
};

class Dp {
 public:
  Dp(Factors& f, const SolveOptions& o) : f_(f), o_(o) {
    for (std::size_t v = 0; v < f.size.size(); ++v)
      if (!f.gone[v]) core_.push_back(v);
    const std::size_t n = core_.size();
    std::vector<std::size_t> pos(f.size.size(), 0);
    for (std::size_t k = 0; k < n; ++k) pos[core_[k]] = k;
    last_use_.assign(n, 0);
    // Lower bound on the memory every position from k on still adds.
    std::vector<double> add(n + 1, 0.0);
    for (std::size_t k = 0; k < n; ++k) {
      last_use_[k] = k;
      double m = std::numeric_limits<double>::infinity();
      for (const auto& l : f.unary[core_[k]])
        if (!l.empty()) m = std::min(m, l.front().mem);
      add[k] += std::isfinite(m) ? m : 0.0;
    }
    for (const auto& mat : f.mats) {
      if (!mat.live) continue;
      const std::size_t a = pos[mat.a], b = pos[mat.b];
      last_use_[a] = std::max(last_use_[a], b);
      last_use_[b] = std::max(last_use_[b], a);
      double m = std::numeric_limits<double>::infinity();
      for (const auto& l : mat.m)
        if (!l.empty()) m = std::min(m, l.front().mem);
      add[std::max(a, b)] += std::isfinite(m) ? m : 0.0;
    }
    suffix_.assign(n + 1, 0.0);
    for (std::size_t k = n; k-- > 0;) suffix_[k] = suffix_[k + 1] + add[k];
  }

  Status run(Choice& choice, Solution& stats) {
    const std::size_t n = core_.size();
    if (f_.limited && over_limit(suffix_[0], f_.limit))
      return make_error("no choice fits the memory limit {} (the smallest needs {})", format_bytes(Bytes(f_.limit)),
                        format_bytes(Bytes(suffix_[0])));
    std::vector<Bucket> cur(1);
    cur[0].entries.push_back(Entry{});
    std::vector<std::size_t> live;  // core positions
    std::vector<std::vector<Entry>> steps;
    steps.reserve(n);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t v = core_[k];
      std::vector<std::uint32_t> base(cur.size());
      std::uint32_t total = 0;
      for (std::size_t i = 0; i < cur.size(); ++i) {
        base[i] = total;
        total += static_cast<std::uint32_t>(cur[i].entries.size());
      }
      struct Link { std::size_t pos, mat, other; };
      std::vector<Link> links;
      for (const auto& [other, id] : f_.nbr[v]) {
        const auto it = std::find_if(live.begin(), live.end(), [&](std::size_t p) { return core_[p] == other; });
        if (it != live.end()) links.push_back({static_cast<std::size_t>(it - live.begin()), id, other});
      }
      std::vector<std::size_t> keep_pos, next_live;
      for (std::size_t i = 0; i < live.size(); ++i)
        if (last_use_[live[i]] > k) {
          keep_pos.push_back(i);
          next_live.push_back(live[i]);
        }
      const bool keep_k = last_use_[k] > k;
      if (keep_k) next_live.push_back(k);
      stats.max_frontier = std::max(stats.max_frontier, next_live.size());

      std::unordered_map<Key, std::size_t, KeyHash> index;
      std::vector<Bucket> next;
      Key nkey(next_live.size());
      for (std::size_t si = 0; si < cur.size(); ++si) {
        const Bucket& st = cur[si];
        for (std::size_t j = 0; j < keep_pos.size(); ++j) nkey[j] = st.key[keep_pos[j]];
        for (std::size_t s = 0; s < f_.size[v]; ++s) {
          List contrib = f_.unary[v][s];
          for (const Link& l : links) {
            if (contrib.empty()) break;
            contrib = f_.add(contrib, f_.at(l.mat, l.other, st.key[l.pos], s));
          }
          if (contrib.empty()) continue;
          if (keep_k) nkey.back() = static_cast<std::uint16_t>(s);
          Bucket* b = nullptr;
          for (std::size_t ei = 0; ei < st.entries.size(); ++ei) {
            const Entry& e = st.entries[ei];
            for (const Opt& o : contrib) {
              const double m = e.mem + o.mem;
              if (f_.limited && over_limit(m + suffix_[k + 1], f_.limit)) continue;
              if (!b) {
                auto [it, fresh] = index.try_emplace(nkey, next.size());
                if (fresh) next.push_back(Bucket{nkey, {}});
                b = &next[it->second];
              }
              insert(*b, Entry{e.cost + o.cost, m, base[si] + static_cast<std::uint32_t>(ei), o.prov,
                               static_cast<std::uint16_t>(s)});
            }
          }
        }
      }
      std::size_t count = 0;
      for (const auto& b : next) count += b.entries.size();
      if (count > o_.max_states) {
        beam(next);
        count = std::min(count, o_.max_states);
      }
      if (next.empty())
        return make_error("no choice fits the memory limit {} (nothing left at node {})", format_bytes(Bytes(f_.limit)), v);
      stats.peak_states = std::max(stats.peak_states, count);
      std::vector<Entry> flat;
      flat.reserve(count);
      for (const auto& b : next) flat.insert(flat.end(), b.entries.begin(), b.entries.end());
      steps.push_back(std::move(flat));
      cur = std::move(next);
      live = std::move(next_live);
    }
    if (!steps.empty()) {
      const auto& last = steps.back();
      std::size_t best = 0;
      for (std::size_t i = 1; i < last.size(); ++i)
        if (last[i].cost < last[best].cost) best = i;
      std::uint32_t idx = static_cast<std::uint32_t>(best);
      for (std::size_t k = n; k-- > 0;) {
        const Entry& e = steps[k][idx];
        choice[core_[k]] = e.pick;
        f_.replay(e.prov, choice);
        idx = e.parent;
      }
    }
    return {};
  }

 private:
  void insert(Bucket& b, const Entry& e) {
    auto& v = b.entries;
    if (!f_.limited) {
      if (v.empty()) v.push_back(e);
      else if (e.cost < v[0].cost) v[0] = e;
      return;
    }
    for (const auto& x : v)
      if (x.mem <= e.mem && x.cost <= e.cost) return;  // dominated
    std::erase_if(v, [&](const Entry& x) { return x.mem >= e.mem && x.cost >= e.cost; });
    v.insert(std::upper_bound(v.begin(), v.end(), e, [](const Entry& a, const Entry& x) { return a.mem < x.mem; }), e);
    if (v.size() > o_.max_pareto && v.size() > 2) {
      std::size_t drop = 1;
      for (std::size_t i = 2; i + 1 < v.size(); ++i)
        if (v[i - 1].cost - v[i].cost < v[drop - 1].cost - v[drop].cost) drop = i;
      v.erase(v.begin() + static_cast<std::ptrdiff_t>(drop));
      f_.exact = false;
    }
  }

  // Keeps the max_states cheapest entries, plus the leanest one (so that a
  // memory-feasible completion survives).
  void beam(std::vector<Bucket>& next) {
    f_.exact = false;
    struct Ref { double cost; std::size_t b, e; };
    std::vector<Ref> refs;
    Ref lean{0, 0, 0};
    double lean_mem = std::numeric_limits<double>::infinity();
    for (std::size_t b = 0; b < next.size(); ++b)
      for (std::size_t e = 0; e < next[b].entries.size(); ++e) {
        refs.push_back({next[b].entries[e].cost, b, e});
        if (next[b].entries[e].mem < lean_mem) {
          lean_mem = next[b].entries[e].mem;
          lean = refs.back();
        }
      }
    std::nth_element(refs.begin(), refs.begin() + static_cast<std::ptrdiff_t>(o_.max_states - 1), refs.end(),
                     [](const Ref& a, const Ref& b) { return a.cost < b.cost; });
    refs.resize(o_.max_states);
    if (std::none_of(refs.begin(), refs.end(), [&](const Ref& r) { return r.b == lean.b && r.e == lean.e; }))
      refs.back() = lean;
    std::sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) { return a.b != b.b ? a.b < b.b : a.e < b.e; });
    std::vector<Bucket> kept;
    for (const Ref& r : refs) {
      if (kept.empty() || kept.back().key != next[r.b].key) kept.push_back(Bucket{next[r.b].key, {}});
      kept.back().entries.push_back(next[r.b].entries[r.e]);
    }
    next = std::move(kept);
  }

  Factors& f_;
  const SolveOptions& o_;
  std::vector<std::size_t> core_;
  std::vector<std::size_t> last_use_;
  std::vector<double> suffix_;
};

}  // namespace

Status frontier_dp(Factors& f, const SolveOptions& o, Choice& choice, Solution& stats) {
  return Dp(f, o).run(choice, stats);
}

}  // namespace planner::search::detail
