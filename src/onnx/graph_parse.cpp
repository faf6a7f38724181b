// Indexing a GraphProto: tensor names, node inputs/outputs, unique node
// names, outer-scope references of subgraphs, and dependency order.
#include <functional>
#include <unordered_set>

#include "engine.hpp"

namespace planner::onnx::detail {

std::string node_kind(const ParsedNode& n) {
  if (n.domain.empty()) return n.proto->op_type();
  return n.domain + ":" + n.proto->op_type();
}

namespace {

/// Names a graph reads without defining them (outer-scope references),
/// including those of nested subgraphs.
void free_names(const pb::GraphProto& g, std::vector<std::string_view>& out) {
  std::unordered_set<std::string_view> defined;
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& t : g.sparse_initializer()) defined.insert(t.values().name());
  for (const auto& vi : g.input()) defined.insert(vi.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) defined.insert(o);
  std::unordered_set<std::string_view> seen;
  auto note = [&](std::string_view name) {
    if (!name.empty() && !defined.count(name) && seen.insert(name).second) out.push_back(name);
  };
  for (const auto& n : g.node()) {
    for (const auto& i : n.input()) note(i);
    for (const auto& a : n.attribute()) {
      std::vector<std::string_view> sub;
      if (a.has_g()) free_names(a.g(), sub);
      for (const auto& sg : a.graphs()) free_names(sg, sub);
      for (auto s : sub) note(s);
    }
  }
  for (const auto& o : g.output()) note(o.name());
}

bool has_shape(const pb::ValueInfoProto* vi) {
  return vi && vi->type().has_tensor_type() && vi->type().tensor_type().has_shape();
}

std::string normalize_domain(const std::string& d) { return d == "ai.onnx" ? std::string() : d; }

}  // namespace

Result<ParsedGraph> parse_graph(const pb::GraphProto& g, const OpsetMap& opsets, bool allow_outer) {
  ParsedGraph pg;
  pg.proto = &g;
  auto add = [&pg](std::string_view name, Source src) {
    const int id = static_cast<int>(pg.names.size());
    pg.names.push_back(name);
    pg.index.emplace(name, id);
    pg.source.push_back(src);
    pg.init.push_back(nullptr);
    pg.sparse.push_back(nullptr);
    pg.input_decl.push_back(nullptr);
    pg.declared.push_back(nullptr);
    pg.producer.push_back(-1);
    pg.n_consumers.push_back(0);
    pg.is_output.push_back(0);
    return id;
  };
  const std::size_t reserve = static_cast<std::size_t>(g.initializer_size() + g.input_size() + 2 * g.node_size());
  pg.names.reserve(reserve);
  pg.index.reserve(reserve);

  for (const auto& t : g.initializer()) {
    if (t.name().empty()) return make_error("an initializer has no name");
    if (pg.index.count(t.name())) return make_error("initializer '{}' is defined twice", t.name());
    pg.init[static_cast<std::size_t>(add(t.name(), Source::initializer))] = &t;
  }
  for (const auto& t : g.sparse_initializer()) {
    const std::string& name = t.values().name();
    if (name.empty()) return make_error("a sparse initializer has no name");
    if (pg.index.count(name)) return make_error("initializer '{}' is defined twice", name);
    pg.sparse[static_cast<std::size_t>(add(name, Source::initializer))] = &t;
  }
  for (const auto& vi : g.input()) {
    if (vi.name().empty()) return make_error("a graph input has no name");
    auto it = pg.index.find(vi.name());
    if (it != pg.index.end()) {
      auto id = static_cast<std::size_t>(it->second);
      if (pg.source[id] != Source::initializer || pg.input_decl[id])
        return make_error("graph input '{}' is listed twice", vi.name());
      pg.input_decl[id] = &vi;
      pg.inputs.push_back(it->second);
      continue;
    }
    const int id = add(vi.name(), Source::input);
    pg.input_decl[static_cast<std::size_t>(id)] = &vi;
    pg.inputs.push_back(id);
  }

  // Nodes in file order first; outputs before inputs so unsorted lists resolve.
  const int n = g.node_size();
  std::vector<ParsedNode> nodes(static_cast<std::size_t>(n));
  std::unordered_set<std::string> node_names;
  node_names.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto& node = g.node(i);
    auto& pn = nodes[static_cast<std::size_t>(i)];
    pn.proto = &node;
    pn.domain = normalize_domain(node.domain());
    if (auto it = opsets.find(pn.domain); it != opsets.end()) pn.opset = it->second;
    std::string base = node.name().empty() ? fmt::format("{}_{}", node.op_type(), i) : node.name();
    std::string name = base;
    for (int k = 1; !node_names.insert(name).second; ++k) name = fmt::format("{}_{}", base, k);
    pn.name = std::move(name);
    for (const auto& o : node.output()) {
      if (o.empty()) {
        pn.out.push_back(-1);
        continue;
      }
      auto it = pg.index.find(o);
      if (it != pg.index.end()) {
        const auto id = static_cast<std::size_t>(it->second);
        if (pg.source[id] == Source::node)
          return make_error("tensor '{}' is written by op '{}' and op '{}'", o,
                            nodes[static_cast<std::size_t>(pg.producer[id])].name, pn.name);
        return make_error("tensor '{}' is both a graph input or initializer and the output of op '{}' ({})", o, pn.name,
                          node.op_type());
      }
      const int id = add(o, Source::node);
      pg.producer[static_cast<std::size_t>(id)] = i;
      pn.out.push_back(id);
    }
  }
  auto resolve = [&](std::string_view name, const ParsedNode& pn, bool implicit) -> Result<int> {
    auto it = pg.index.find(name);
    if (it != pg.index.end()) return it->second;
    if (allow_outer) return add(name, Source::outer);
    return make_error("op '{}' ({}) reads tensor '{}'{} that no op, graph input or initializer defines", pn.name,
                      pn.proto->op_type(), name, implicit ? " in a subgraph" : "");
  };
  for (auto& pn : nodes) {
    for (const auto& i : pn.proto->input()) {
      if (i.empty()) {
        pn.in.push_back(-1);
        continue;
      }
      PLANNER_TRY(int id, resolve(i, pn, false));
      pn.in.push_back(id);
      ++pg.n_consumers[static_cast<std::size_t>(id)];
    }
    std::vector<std::string_view> free;
    for (const auto& a : pn.proto->attribute()) {
      if (a.has_g()) {
        pn.has_subgraph = true;
        free_names(a.g(), free);
      }
      for (const auto& sg : a.graphs()) {
        pn.has_subgraph = true;
        free_names(sg, free);
      }
    }
    std::unordered_set<int> seen;
    for (auto name : free) {
      PLANNER_TRY(int id, resolve(name, pn, true));
      if (seen.insert(id).second) {
        pn.implicit.push_back(id);
        ++pg.n_consumers[static_cast<std::size_t>(id)];
      }
    }
  }

  // Dependency order: file order, except that an op's producers are emitted
  // (depth first, on demand) right before it. Valid orders stay unchanged and
  // producers an exporter listed late land next to their consumers, which
  // keeps the layers of a model contiguous. Iterative: no recursion depth.
  std::vector<std::uint8_t> state(static_cast<std::size_t>(n), 0);  // 0 new, 1 open, 2 done
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(n));
  auto dep_at = [&](int v, std::size_t k) -> int {  // producer of v's k-th read, -1 if none
    const auto& pn = nodes[static_cast<std::size_t>(v)];
    const int t = k < pn.in.size() ? pn.in[k] : pn.implicit[k - pn.in.size()];
    return t < 0 ? -1 : pg.producer[static_cast<std::size_t>(t)];
  };
  std::vector<std::pair<int, std::size_t>> stack;
  for (int root = 0; root < n; ++root) {
    if (state[static_cast<std::size_t>(root)] != 0) continue;
    state[static_cast<std::size_t>(root)] = 1;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [v, k] = stack.back();
      const auto& pn = nodes[static_cast<std::size_t>(v)];
      if (k < pn.in.size() + pn.implicit.size()) {
        const int p = dep_at(v, k++);
        if (p < 0) continue;
        if (state[static_cast<std::size_t>(p)] == 1) {
          const auto& pp = nodes[static_cast<std::size_t>(p)];
          return make_error("the graph has a cycle through op '{}' ({})", pp.name, pp.proto->op_type());
        }
        if (state[static_cast<std::size_t>(p)] == 0) {
          state[static_cast<std::size_t>(p)] = 1;
          stack.emplace_back(p, 0);
        }
        continue;
      }
      state[static_cast<std::size_t>(v)] = 2;
      order.push_back(v);
      stack.pop_back();
    }
  }
  std::vector<int> new_pos(static_cast<std::size_t>(n));
  pg.nodes.reserve(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    new_pos[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])] = k;
    pg.nodes.push_back(std::move(nodes[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])]));
  }
  for (auto& p : pg.producer)
    if (p >= 0) p = new_pos[static_cast<std::size_t>(p)];

  for (const auto& vi : g.output()) {
    auto it = pg.index.find(vi.name());
    int id;
    if (it != pg.index.end()) id = it->second;
    else if (allow_outer) id = add(vi.name(), Source::outer);
    else return make_error("graph output '{}' is not produced by any op, input or initializer", vi.name());
    pg.outputs.push_back(id);
    pg.is_output[static_cast<std::size_t>(id)] = 1;
    if (!has_shape(pg.declared[static_cast<std::size_t>(id)])) pg.declared[static_cast<std::size_t>(id)] = &vi;
  }
  for (const auto& vi : g.value_info()) {
    auto it = pg.index.find(vi.name());
    if (it != pg.index.end() && !has_shape(pg.declared[static_cast<std::size_t>(it->second)]))
      pg.declared[static_cast<std::size_t>(it->second)] = &vi;
  }
  return pg;
}

}  // namespace planner::onnx::detail
