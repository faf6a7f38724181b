// Repeated-block detection.
//
// Every op gets a structural signature: its kind, attributes, the shapes and
// dtypes of its tensors, the roles of its inputs, and the kinds of the ops
// producing its inputs (one level up). Names never count. In topological
// order the layers of a deep model then read as a tandem repeat:
//
//     emb emb add | ln mm .. add ln mm .. add | ln mm .. add | ... | ln mm loss
//                 |<------- period P ------->|<---- P ---->|
//
// A run where sig[i] == sig[i+P] for consecutive i covers floor((L+P)/P)
// copies; the run then extends over edge ops whose own signature (without
// neighbours) still repeats. Candidate periods come from the gaps between repeated signatures;
// the run covering the most ops wins (ties: the shorter period), its ops are
// numbered as layers, and the search repeats on what is left (ResNet stages
// of different widths are separate runs). A block must hold a parameter, so
// shape-arithmetic chains are not mistaken for layers, and consecutive copies
// must be chained (copy i+1 reads what copy i wrote).
//
// Shape-computation ops (every output computed from constants alone: Constant
// nodes, shape arithmetic on them) are left out of the sequence and of the
// layers: exporters share such a constant between layers, so the first layer
// holds one the others read from it (torch's static Llama export), and a
// count that differs by one would break the repeat.

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>

#include "planner/graph/analysis.hpp"

namespace planner::graph {
namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  // splitmix64 step over the combined value: deterministic across platforms.
  std::uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t hash_str(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::uint64_t hash_shape(const Tensor& t) {
  std::uint64_t h = mix(static_cast<std::uint64_t>(t.dtype), t.shape.size());
  for (auto d : t.shape) h = mix(h, static_cast<std::uint64_t>(d));
  return h;
}

std::uint64_t hash_attr(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> std::uint64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::int64_t>) return mix(1, static_cast<std::uint64_t>(x));
        else if constexpr (std::is_same_v<T, double>) return mix(2, std::hash<double>{}(x));
        else if constexpr (std::is_same_v<T, std::string>) return mix(3, hash_str(x));
        else {
          std::uint64_t h = 4;
          for (const auto& e : x) {
            if constexpr (std::is_same_v<std::decay_t<decltype(e)>, std::string>) h = mix(h, hash_str(e));
            else if constexpr (std::is_same_v<std::decay_t<decltype(e)>, double>) h = mix(h, std::hash<double>{}(e));
            else h = mix(h, static_cast<std::uint64_t>(e));
          }
          return h;
        }
      },
      v);
}

std::uint64_t op_local_hash(const OpGraph& g, const Op& op) {
  std::uint64_t h = mix(hash_str(op.domain), hash_str(op.type));
  for (const auto& [k, v] : op.attrs) h = mix(mix(h, hash_str(k)), hash_attr(v));
  for (const auto& in : op.inputs) {
    if (!in) { h = mix(h, 7); continue; }
    const auto& t = g.tensor(*in);
    // Data is data: a graph input and an activation of one shape read alike
    // (the first layer reads the input, the others the previous layer).
    const bool weight = t.role == TensorRole::parameter || t.role == TensorRole::constant;
    h = mix(mix(h, hash_shape(t)), weight ? static_cast<std::uint64_t>(t.role) + 1 : 0);
  }
  for (const auto& out : op.outputs) h = mix(h, out ? hash_shape(g.tensor(*out)) : 7);
  return h;
}

// An op computing from constants alone: it reads no input, activation or
// parameter, and writes only constants.
bool shape_computation(const OpGraph& g, const Op& op) {
  for (const auto& in : op.inputs)
    if (in && g.tensor(*in).role != TensorRole::constant) return false;
  for (const auto& out : op.outputs)
    if (out && g.tensor(*out).role != TensorRole::constant) return false;
  return true;
}

bool holds_parameter(const OpGraph& g, const Op& op) {
  for (const auto& in : op.inputs)
    if (in && g.tensor(*in).role == TensorRole::parameter) return true;
  return false;
}

struct Run {
  std::size_t start = 0;   // position in the segment order
  std::size_t period = 0;
  std::size_t copies = 0;
  std::size_t coverage() const { return period * copies; }
};

// Best tandem repeat in sig[lo, hi) (positions into `sig`).
// The cut between two copies at position q, within [begin, end): how many
// distinct tensors written before q are read at or after it, and by how many
// reads in all.
struct Cut {
  std::size_t tensors = 0;
  std::size_t reads = 0;
};
// The ops the repeat is searched over, in order: positions -> op ids, and
// each op's position (-1 for a shape-computation op left out).
struct Seq {
  const OpGraph& g;
  std::vector<std::uint32_t> ids;
  std::vector<std::int64_t> pos_of;
};
Cut cut_at(const Seq& sq, std::size_t begin, std::size_t q, std::size_t end) {
  const OpGraph& g = sq.g;
  Cut cut;
  for (std::size_t k = begin; k < q; ++k)
    for (const auto& out : g.op(OpId{sq.ids[k]}).outputs) {
      if (!out) continue;
      std::size_t reads = 0;
      for (auto c : g.tensor(*out).consumers) {
        const auto pc = sq.pos_of[c.value];
        if (pc >= 0 && static_cast<std::size_t>(pc) >= q && static_cast<std::size_t>(pc) < end) ++reads;
      }
      if (reads) { ++cut.tensors; cut.reads += reads; }
    }
  return cut;
}

// A span of (end-begin) ops holding whole copies plus a few extra ops can be
// cut into copies at several phases. The layer boundary is where the fewest
// tensors cross (the residual stream alone); among those, where that stream
// is read most (a layer reads its input in several places: the norm and the
// residual add); then a block that starts with a parameter-holding op; then
// the earliest.
std::size_t best_phase(const Seq& g, const std::vector<char>& has_param, std::size_t begin,
                       std::size_t end, std::size_t period) {
  const std::size_t copies = (end - begin) / period;
  const std::size_t extra = (end - begin) - copies * period;
  std::size_t best = begin;
  Cut best_cut;
  bool best_param = false;
  for (std::size_t s = begin; s <= begin + extra; ++s) {
    const Cut cut = cut_at(g, s, s + period, s + 2 * period);
    const bool param = has_param[s] != 0;
    const bool better =
        s == begin || cut.tensors < best_cut.tensors ||
        (cut.tensors == best_cut.tensors &&
         (cut.reads > best_cut.reads || (cut.reads == best_cut.reads && param && !best_param)));
    if (better) {
      best = s;
      best_cut = cut;
      best_param = param;
    }
  }
  return best;
}

std::optional<Run> best_run(const Seq& g, const std::vector<std::uint64_t>& sig,
                            const std::vector<std::uint64_t>& local,
                            const std::vector<char>& has_param, std::size_t lo, std::size_t hi) {
  if (hi - lo < 4) return std::nullopt;
  // Votes for candidate periods: gaps between consecutive equal signatures.
  std::unordered_map<std::uint64_t, std::size_t> last;
  std::map<std::size_t, std::size_t> votes;
  for (std::size_t i = lo; i < hi; ++i) {
    auto [it, fresh] = last.try_emplace(sig[i], i);
    if (!fresh) {
      ++votes[i - it->second];
      it->second = i;
    }
  }
  std::vector<std::pair<std::size_t, std::size_t>> cands(votes.begin(), votes.end());
  std::sort(cands.begin(), cands.end(), [](auto a, auto b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (cands.size() > 12) cands.resize(12);

  std::optional<Run> best;
  // Prefix count of parameter-holding ops, to require one per block.
  std::vector<std::size_t> pref(hi - lo + 1, 0);
  for (std::size_t i = lo; i < hi; ++i) pref[i - lo + 1] = pref[i - lo] + (has_param[i] ? 1 : 0);
  for (auto [period, _] : cands) {
    if (period < 2 || period * 2 > hi - lo) continue;
    std::size_t i = lo;
    while (i + period < hi) {
      if (sig[i] != sig[i + period]) { ++i; continue; }
      std::size_t a = i;
      while (i + period < hi && sig[i] == sig[i + period]) ++i;
      // Ops a .. i+period-1 match their copy one period on. The ops at the
      // run's edges differ only in their neighbours (the first layer reads
      // the embedding, not a previous layer): extend over equal local shapes.
      std::size_t begin = a, end = i + period;
      while (begin > lo && local[begin - 1] == local[begin - 1 + period]) --begin;
      Run r{begin, period, (end - begin) / period};
      r.start = best_phase(g, has_param, begin, end, period);
      // Layers form a chain: copy 1 must read something copy 0 wrote (two
      // parallel look-alike branches, like T5's two position biases, are not layers).
      if (r.copies >= 2 && pref[r.start - lo + period] - pref[r.start - lo] > 0 &&
          cut_at(g, r.start, r.start + period, r.start + 2 * period).tensors > 0) {
        if (!best || r.coverage() > best->coverage() ||
            (r.coverage() == best->coverage() && r.period < best->period))
          best = r;
      }
    }
  }
  return best;
}

}  // namespace

void find_repeated_blocks(OpGraph& g) {
  g.blocks.clear();
  const std::size_t n = g.num_ops();
  for (auto& op : g.mutable_ops()) {
    op.layer.reset();
    op.outside_layers = false;
  }
  if (n < 4) return;

  std::vector<std::uint64_t> local(n), sig(n);
  std::vector<char> has_param(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Op& op = g.op(OpId{static_cast<std::uint32_t>(i)});
    local[i] = op_local_hash(g, op);
    has_param[i] = holds_parameter(g, op) ? 1 : 0;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const Op& op = g.op(OpId{static_cast<std::uint32_t>(i)});
    std::uint64_t h = local[i];
    for (const auto& in : op.inputs) {
      if (!in) continue;
      const auto& prod = g.tensor(*in).producer;
      h = mix(h, prod ? local[prod->value] : 11);
    }
    sig[i] = h;
  }

  // The sequence searched: every op but the shape computations.
  Seq sq{g, {}, std::vector<std::int64_t>(n, -1)};
  for (std::size_t i = 0; i < n; ++i)
    if (!shape_computation(g, g.op(OpId{static_cast<std::uint32_t>(i)}))) {
      sq.pos_of[i] = static_cast<std::int64_t>(sq.ids.size());
      sq.ids.push_back(static_cast<std::uint32_t>(i));
    }
  const std::size_t m = sq.ids.size();
  std::vector<std::uint64_t> local_s(m), sig_s(m);
  std::vector<char> has_param_s(m);
  for (std::size_t k = 0; k < m; ++k) {
    local_s[k] = local[sq.ids[k]];
    sig_s[k] = sig[sq.ids[k]];
    has_param_s[k] = has_param[sq.ids[k]];
  }

  // Greedy: take the best run, then search the segments around it.
  struct Segment { std::size_t lo, hi; };
  std::vector<Segment> todo{{0, m}};
  std::vector<Run> runs;
  constexpr std::size_t kMaxRuns = 256;
  while (!todo.empty() && runs.size() < kMaxRuns) {
    auto seg = todo.back();
    todo.pop_back();
    auto r = best_run(sq, sig_s, local_s, has_param_s, seg.lo, seg.hi);
    if (!r) continue;
    runs.push_back(*r);
    todo.push_back({seg.lo, r->start});
    todo.push_back({r->start + r->coverage(), seg.hi});
  }
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.start < b.start; });

  int layer = 0;
  for (const auto& r : runs) {
    RepeatedBlocks b;
    b.count = static_cast<int>(r.copies);
    b.ops_per_block = static_cast<int>(r.period);
    b.first_layer = layer;
    std::string sigtext;
    for (std::size_t k = 0; k < r.period && k < 64; ++k) {
      if (k) sigtext += ',';
      sigtext += op_kind(g.op(OpId{sq.ids[r.start + k]}));
    }
    if (r.period > 64) sigtext += ",...";
    b.signature = std::move(sigtext);
    for (std::size_t c = 0; c < r.copies; ++c, ++layer)
      for (std::size_t k = 0; k < r.period; ++k)
        g.op(OpId{sq.ids[r.start + c * r.period + k]}).layer = layer;
    g.blocks.push_back(std::move(b));
  }
  if (!g.blocks.empty())
    for (auto& op : g.mutable_ops()) op.outside_layers = !op.layer.has_value();
}

}  // namespace planner::graph
