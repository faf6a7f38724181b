// The frontier DP over the nodes elimination left (design note in
// include/planner/sharding/op_sharding.hpp).
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
#include <set>
#include <vector>

#include "op_sharding_internal.hpp"

namespace planner::sharding::detail {
namespace {

struct Entry {
  double cost = 0.0;
  double mem = 0.0;
  std::uint32_t parent = 0;
  std::uint32_t prov = 0;
  std::uint16_t pick = 0;
};

/// A live node the processed node neighbours: its place in the key, the
/// matrix between them, the node.
struct Link {
  std::size_t pos, mat, other;
};

constexpr std::size_t kFnvBasis = 1469598103934665603ull;
constexpr std::size_t kFnvPrime = 1099511628211ull;

/// The states of one step, in the order they were first reached: bucket i
/// holds the key keys[i * width, (i + 1) * width) (one strategy per live
/// node) and its entries (one, or a Pareto list: memory ascending, cost
/// descending). An open-addressing index finds a key's bucket.
struct Layer {
  std::size_t width = 0;
  std::vector<std::uint16_t> keys;
  std::vector<std::vector<Entry>> entries;
  std::vector<std::size_t> hashes;
  /// Per slot: the hash's top 32 bits, then bucket + 1 in the low 32 bits; 0 = empty.
  std::vector<std::uint64_t> slots;

  std::size_t size() const { return entries.size(); }
  const std::uint16_t* key(std::size_t i) const { return keys.data() + i * width; }

  /// The bucket of key `k` whose FNV hash is `h`, added when new.
  std::vector<Entry>& find_or_add(const std::uint16_t* k, std::size_t h) {
    if ((entries.size() + 1) * 2 > slots.size()) rehash(std::max<std::size_t>(64, slots.size() * 2));
    const std::size_t mask = slots.size() - 1;
    const std::size_t m = mix(h);
    const std::uint64_t tag = static_cast<std::uint64_t>(m >> 32) << 32;
    for (std::size_t i = m & mask;; i = (i + 1) & mask) {
      const std::uint64_t at = slots[i];
      if (at == 0) {
        slots[i] = tag | static_cast<std::uint32_t>(entries.size() + 1);
        keys.insert(keys.end(), k, k + width);
        hashes.push_back(h);
        entries.emplace_back();
        return entries.back();
      }
      const std::size_t b = static_cast<std::uint32_t>(at) - 1;
      if ((at >> 32) == (tag >> 32) && hashes[b] == h && std::equal(k, k + width, key(b))) return entries[b];
    }
  }

 private:
  static std::size_t mix(std::size_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
  }
  void rehash(std::size_t n) {
    slots.assign(n, 0);
    for (std::size_t b = 0; b < hashes.size(); ++b) {
      const std::size_t m = mix(hashes[b]);
      std::size_t i = m & (n - 1);
      while (slots[i] != 0) i = (i + 1) & (n - 1);
      slots[i] = (static_cast<std::uint64_t>(m >> 32) << 32) | static_cast<std::uint32_t>(b + 1);
    }
  }
};

/// Most live nodes the graph order may leave before the DP looks for a
/// narrower order (order_nodes). A transformer stack stays at 1-4; an MoE
/// layer in graph order keeps every expert's branch live until their Concat.
constexpr std::size_t kWideFrontier = 16;
/// Most work (nodes x sum of degrees) order_nodes may take.
constexpr double kOrderWork = 2e8;

/// Largest frontier of processing the nodes in `seq` (indices into `adj`):
/// a processed node stays live until its last neighbour is processed.
std::size_t frontier_width(const std::vector<std::vector<std::size_t>>& adj, const std::vector<std::size_t>& seq) {
  const std::size_t n = adj.size();
  std::vector<std::size_t> at(n, 0);
  for (std::size_t k = 0; k < n; ++k) at[seq[k]] = k;
  std::vector<std::ptrdiff_t> diff(n + 1, 0);
  for (std::size_t v = 0; v < n; ++v) {
    std::size_t last = at[v];
    for (std::size_t u : adj[v]) last = std::max(last, at[u]);
    if (last > at[v]) {  // live on the steps at[v] .. last - 1
      ++diff[at[v]];
      --diff[last];
    }
  }
  std::size_t width = 0;
  std::ptrdiff_t live = 0;
  for (std::size_t k = 0; k < n; ++k) width = std::max(width, static_cast<std::size_t>(live += diff[k]));
  return width;
}

/// A processing order that keeps the frontier narrow: greedily the node
/// whose processing grows the live set least (it joins the frontier when it
/// has an unprocessed neighbour; every frontier node whose last unprocessed
/// neighbour it is leaves), among the unprocessed neighbours of processed
/// nodes (else the first unprocessed node); ties by graph order, so the
/// order is deterministic. The DP is exact in any order (the factors are
/// undirected); the order only sets its state count. For an MoE layer it
/// processes the experts' Concat as soon as two branches wait on it, after
/// which each branch leaves the frontier when it ends.
std::vector<std::size_t> order_nodes(const std::vector<std::vector<std::size_t>>& adj) {
  const std::size_t n = adj.size();
  std::vector<std::size_t> seq, rem(n);
  seq.reserve(n);
  std::vector<bool> done(n, false), in_front(n, false);
  for (std::size_t v = 0; v < n; ++v) rem[v] = adj[v].size();
  std::set<std::size_t> cand;
  std::size_t first_left = 0;
  while (seq.size() < n) {
    std::size_t pick = n;
    std::ptrdiff_t best = 0;
    for (std::size_t c : cand) {
      std::ptrdiff_t d = rem[c] > 0 ? 1 : 0;
      for (std::size_t u : adj[c])
        if (in_front[u] && rem[u] == 1) --d;
      if (pick == n || d < best) {
        pick = c;
        best = d;
      }
    }
    if (pick == n) {
      while (done[first_left]) ++first_left;
      pick = first_left;
    }
    done[pick] = true;
    cand.erase(pick);
    seq.push_back(pick);
    for (std::size_t u : adj[pick]) {
      if (--rem[u] == 0 && in_front[u]) in_front[u] = false;
      if (!done[u]) cand.insert(u);
    }
    if (rem[pick] > 0) in_front[pick] = true;
  }
  return seq;
}

class Dp {
 public:
  Dp(Factors& f, const SolveOptions& o) : f_(f), o_(o) {
    for (std::size_t v = 0; v < f.size.size(); ++v)
      if (!f.gone[v]) core_.push_back(v);
    reorder();
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
    Layer cur;
    cur.entries.emplace_back(1, Entry{});
    cur.hashes.push_back(kFnvBasis);
    std::vector<std::size_t> live;  // core positions
    std::vector<std::vector<Entry>> steps;
    steps.reserve(n);
    std::vector<std::vector<Link>> step_links;  // per step, without a memory limit
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t v = core_[k];
      std::vector<std::uint32_t> base(cur.size());
      std::uint32_t total = 0;
      for (std::size_t i = 0; i < cur.size(); ++i) {
        base[i] = total;
        total += static_cast<std::uint32_t>(cur.entries[i].size());
      }
      std::vector<Link> links;
      for (const auto& [other, id] : f_.nbr[v]) {
        const auto it = std::find_if(live.begin(), live.end(), [&](std::size_t p) { return core_[p] == other; });
        if (it != live.end()) links.push_back({static_cast<std::size_t>(it - live.begin()), id, other});
      }
      if (!f_.limited) step_links.push_back(links);
      std::vector<std::size_t> keep_pos, next_live;
      for (std::size_t i = 0; i < live.size(); ++i)
        if (last_use_[live[i]] > k) {
          keep_pos.push_back(i);
          next_live.push_back(live[i]);
        }
      const bool keep_k = last_use_[k] > k;
      if (keep_k) next_live.push_back(k);
      stats.max_frontier = std::max(stats.max_frontier, next_live.size());

      Layer next;
      next.width = next_live.size();
      std::vector<std::uint16_t> nkey(next_live.size());
      for (std::size_t si = 0; si < cur.size(); ++si) {
        const std::uint16_t* key = cur.key(si);
        const std::vector<Entry>& ents = cur.entries[si];
        // FNV over the kept part once per state; the node's own strategy last.
        std::size_t h0 = kFnvBasis;
        for (std::size_t j = 0; j < keep_pos.size(); ++j) {
          nkey[j] = key[keep_pos[j]];
          h0 = (h0 ^ nkey[j]) * kFnvPrime;
        }
        auto bucket = [&](std::size_t s) -> std::vector<Entry>& {
          std::size_t h = h0;
          if (keep_k) {
            nkey.back() = static_cast<std::uint16_t>(s);
            h = (h ^ nkey.back()) * kFnvPrime;
          }
          return next.find_or_add(nkey.data(), h);
        };
        if (!f_.limited) {
          // One option per list: sum the costs in the order add() would, and
          // leave the provenance to the read-back (no arena entry per state).
          for (std::size_t s = 0; s < f_.size[v]; ++s) {
            const List& u = f_.unary[v][s];
            if (u.empty()) continue;
            double cost = u[0].cost, mem = u[0].mem;
            bool ok = true;
            for (const Link& l : links) {
              const List& x = f_.at(l.mat, l.other, key[l.pos], s);
              if (x.empty()) {
                ok = false;
                break;
              }
              cost = cost + x[0].cost;
              mem = mem + x[0].mem;
            }
            if (!ok) continue;
            auto& b = bucket(s);
            for (std::size_t ei = 0; ei < ents.size(); ++ei) {
              const Entry& e = ents[ei];
              insert(b, Entry{e.cost + cost, e.mem + mem, base[si] + static_cast<std::uint32_t>(ei), 0,
                              static_cast<std::uint16_t>(s)});
            }
          }
          continue;
        }
        for (std::size_t s = 0; s < f_.size[v]; ++s) {
          List contrib = f_.unary[v][s];
          for (const Link& l : links) {
            if (contrib.empty()) break;
            contrib = f_.add(contrib, f_.at(l.mat, l.other, key[l.pos], s));
          }
          if (contrib.empty()) continue;
          std::vector<Entry>* b = nullptr;
          for (std::size_t ei = 0; ei < ents.size(); ++ei) {
            const Entry& e = ents[ei];
            for (const Opt& o : contrib) {
              const double m = e.mem + o.mem;
              if (f_.limited && over_limit(m + suffix_[k + 1], f_.limit)) continue;
              if (!b) b = &bucket(s);
              insert(*b, Entry{e.cost + o.cost, m, base[si] + static_cast<std::uint32_t>(ei), o.prov,
                               static_cast<std::uint16_t>(s)});
            }
          }
        }
      }
      std::size_t count = 0;
      for (const auto& b : next.entries) count += b.size();
      if (count > o_.max_states) {
        beam(next);
        count = std::min(count, o_.max_states);
      }
      if (next.size() == 0)
        return make_error("no choice fits the memory limit {} (nothing left at node {})", format_bytes(Bytes(f_.limit)), v);
      stats.peak_states = std::max(stats.peak_states, count);
      std::vector<Entry> flat;
      flat.reserve(count);
      for (const auto& b : next.entries) flat.insert(flat.end(), b.begin(), b.end());
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
      std::vector<std::uint16_t> pick(n, 0);
      for (std::size_t k = n; k-- > 0;) {
        const Entry& e = steps[k][idx];
        pick[k] = e.pick;
        choice[core_[k]] = e.pick;
        f_.replay(e.prov, choice);
        idx = e.parent;
      }
      if (!f_.limited) {
        // The eliminated nodes each step's lists assumed, at the picks made.
        std::vector<std::size_t> pos(f_.size.size(), 0);
        for (std::size_t k = 0; k < n; ++k) pos[core_[k]] = k;
        for (std::size_t k = n; k-- > 0;) {
          const std::size_t v = core_[k];
          auto replay = [&](const List& x) {
            if (!x.empty()) f_.replay(x[0].prov, choice);
          };
          replay(f_.unary[v][pick[k]]);
          for (const Link& l : step_links[k]) replay(f_.at(l.mat, l.other, pick[pos[l.other]], pick[k]));
        }
      }
    }
    return {};
  }

 private:
  /// Graph order, unless its frontier is wider than kWideFrontier and
  /// order_nodes finds a narrower one.
  void reorder() {
    const std::size_t n = core_.size();
    std::vector<std::size_t> index(f_.size.size(), 0);
    for (std::size_t k = 0; k < n; ++k) index[core_[k]] = k;
    // Elimination keeps nbr to the remaining nodes, one entry per neighbour.
    std::vector<std::vector<std::size_t>> adj(n);
    for (std::size_t k = 0; k < n; ++k)
      for (const auto& [other, mat] : f_.nbr[core_[k]]) adj[k].push_back(index[other]);
    std::vector<std::size_t> graph_order(n);
    for (std::size_t k = 0; k < n; ++k) graph_order[k] = k;
    const std::size_t width = frontier_width(adj, graph_order);
    if (width <= kWideFrontier) return;
    // order_nodes costs up to n x (sum of degrees); past kOrderWork the
    // graph order stays (a lowered MoE block: ~400 nodes, ~10^6).
    std::size_t degrees = 0;
    for (const auto& a : adj) degrees += a.size();
    if (static_cast<double>(n) * static_cast<double>(degrees) > kOrderWork) return;
    const auto seq = order_nodes(adj);
    if (frontier_width(adj, seq) >= width) return;
    std::vector<std::size_t> reordered(n);
    for (std::size_t k = 0; k < n; ++k) reordered[k] = core_[seq[k]];
    core_ = std::move(reordered);
  }

  void insert(std::vector<Entry>& v, const Entry& e) {
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
  void beam(Layer& next) {
    f_.exact = false;
    struct Ref { double cost; std::size_t b, e; };
    std::vector<Ref> refs;
    Ref lean{0, 0, 0};
    double lean_mem = std::numeric_limits<double>::infinity();
    for (std::size_t b = 0; b < next.size(); ++b)
      for (std::size_t e = 0; e < next.entries[b].size(); ++e) {
        refs.push_back({next.entries[b][e].cost, b, e});
        if (next.entries[b][e].mem < lean_mem) {
          lean_mem = next.entries[b][e].mem;
          lean = refs.back();
        }
      }
    std::nth_element(refs.begin(), refs.begin() + static_cast<std::ptrdiff_t>(o_.max_states - 1), refs.end(),
                     [](const Ref& a, const Ref& b) { return a.cost < b.cost; });
    refs.resize(o_.max_states);
    if (std::none_of(refs.begin(), refs.end(), [&](const Ref& r) { return r.b == lean.b && r.e == lean.e; }))
      refs.back() = lean;
    std::sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) { return a.b != b.b ? a.b < b.b : a.e < b.e; });
    Layer kept;
    kept.width = next.width;
    std::size_t last = static_cast<std::size_t>(-1);
    for (const Ref& r : refs) {
      if (r.b != last) {
        kept.keys.insert(kept.keys.end(), next.key(r.b), next.key(r.b) + next.width);
        kept.hashes.push_back(next.hashes[r.b]);
        kept.entries.emplace_back();
        last = r.b;
      }
      kept.entries.back().push_back(next.entries[r.b][r.e]);
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

}  // namespace planner::sharding::detail
