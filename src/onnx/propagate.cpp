// The propagation driver: one pass over a ParsedGraph in dependency order.
// Per node: our rule (with concrete values), then ONNX's per-node inference,
// then ONNX's whole-model inference, then the declared shape; the first
// that gives a static shape wins. Strict runs fail at the first output no
// source resolves, naming the op, the tensor and, where one exists, the flag
// that would fix it.
#include "engine.hpp"

namespace planner::onnx::detail {

Result<Info> bind_declared(const pb::ValueInfoProto& vi, const Bindings& b, bool suggest_batch) {
  const auto& tp = vi.type();
  if (!tp.has_tensor_type())
    return make_error("tensor '{}' is not a plain tensor (sequence, map and optional values are not supported)",
                      vi.name());
  const auto& tt = tp.tensor_type();
  if (!tt.has_shape()) return make_error("tensor '{}' declares no shape (its rank is unknown)", vi.name());
  Info r;
  r.elem = tt.elem_type();
  Shape s;
  s.reserve(static_cast<std::size_t>(tt.shape().dim_size()));
  for (int k = 0; k < tt.shape().dim_size(); ++k) {
    const auto& d = tt.shape().dim(k);
    if (d.has_dim_value()) {
      if (d.dim_value() < 0 || d.dim_value() > kMaxDim)
        return make_error("tensor '{}' dim {} is {} (outside 0..2^40)", vi.name(), k, d.dim_value());
      s.push_back(d.dim_value());
      continue;
    }
    if (k == 0)
      if (auto it = b.leading.find(vi.name()); it != b.leading.end()) {
        s.push_back(it->second);
        continue;
      }
    const std::string& p = d.dim_param();
    if (!p.empty())
      if (auto it = b.dims.find(p); it != b.dims.end()) {
        s.push_back(it->second);
        continue;
      }
    if (auto it = b.dims.find(fmt::format("{}:{}", vi.name(), k)); it != b.dims.end()) {
      s.push_back(it->second);
      continue;
    }
    const char* batch_hint = k == 0 && suggest_batch ? " or --batch N" : "";
    if (!p.empty())
      return make_error("tensor '{}' dim '{}' is symbolic: bind it with --dim {}=N{}", vi.name(), p, p, batch_hint);
    return make_error("tensor '{}' dim {} has no size: bind it with --dim {}:{}=N{}", vi.name(), k, vi.name(), k,
                      batch_hint);
  }
  r.shape = std::move(s);
  return r;
}

namespace {

const Info* lookup_outer(const Scope* s, std::string_view name) {
  for (; s; s = s->parent) {
    auto it = s->graph->index.find(name);
    if (it != s->graph->index.end()) return &(*s->infos)[static_cast<std::size_t>(it->second)];
  }
  return nullptr;
}

Status check_dims(const Shape& s, const ParsedNode& node, std::string_view tensor) {
  for (auto d : s)
    if (d < 0 || d > kMaxDim)
      return make_error("op '{}' ({}) gives output '{}' the shape {}: dim outside 0..2^40", node.name, node_kind(node),
                        tensor, shape_str(s));
  if (!checked_numel(s))
    return make_error("op '{}' ({}) gives output '{}' the shape {}: too many elements", node.name, node_kind(node),
                      tensor, shape_str(s));
  return Status::success();
}

}  // namespace

Status propagate(const ParsedGraph& pg, std::vector<Info>& infos, const Scope* parent, const RunOptions& opt) {
  for (std::size_t id = 0; id < pg.size(); ++id) {
    if (pg.source[id] == Source::initializer) {
      if (const auto* t = pg.init[id]) {
        PLANNER_TRY(Shape s, tensor_shape(*t));
        infos[id].elem = t->data_type();
        infos[id].shape = std::move(s);
        infos[id].values = tensor_values(*t);
      } else if (const auto* sp = pg.sparse[id]) {
        Shape s(sp->dims().begin(), sp->dims().end());
        for (auto d : s)
          if (d < 0 || d > kMaxDim) return make_error("sparse initializer '{}' has dim {}", pg.names[id], d);
        infos[id].elem = sp->values().data_type();
        infos[id].shape = std::move(s);
      }
    } else if (pg.source[id] == Source::outer) {
      const Info* o = lookup_outer(parent, pg.names[id]);
      if (!o && !opt.lenient)
        return make_error("a subgraph reads tensor '{}' that no enclosing graph defines", pg.names[id]);
      if (o) infos[id] = *o;
    }
  }

  for (const ParsedNode& node : pg.nodes) {
    RuleCtx ctx(*node.proto, node.opset);
    ctx.in.assign(node.in.size(), nullptr);
    int unknown_input = -1;
    for (std::size_t k = 0; k < node.in.size(); ++k) {
      const int t = node.in[k];
      if (t < 0) continue;
      const Info& i = infos[static_cast<std::size_t>(t)];
      if (!i.shape) {
        unknown_input = t;
        break;
      }
      ctx.in[k] = &i;
    }
    if (unknown_input >= 0) {
      if (opt.lenient) continue;
      return make_error("op '{}' ({}) reads tensor '{}' whose shape is unknown", node.name, node_kind(node),
                        pg.names[static_cast<std::size_t>(unknown_input)]);
    }
    ctx.out.resize(node.out.size());
    if (node.has_subgraph) {
      Scope here{&pg, &infos, parent};
      ctx.run_subgraph = [&opt, here](const pb::GraphProto& g, std::vector<Info> formal) -> Result<std::vector<Info>> {
        PLANNER_TRY(auto run, run_subgraph(g, std::move(formal), here, opt));
        return run.outputs();
      };
    }
    const ShapeRule* rule = find_shape_rule(node.domain, node.proto->op_type());
    const RuleStatus st = rule ? rule->fn(ctx) : RuleStatus::unknown;
    std::string reason;
    if (st == RuleStatus::error) {
      // The node is inconsistent as our rule reads it: no fallback papers over that.
      if (opt.lenient) continue;
      std::string_view first_out = "?";
      for (int t : node.out)
        if (t >= 0) {
          first_out = pg.names[static_cast<std::size_t>(t)];
          break;
        }
      return make_error("op '{}' ({}): cannot determine the shape of output '{}': {}", node.name, node_kind(node),
                        first_out, ctx.error);
    } else if (st == RuleStatus::unknown) {
      reason = rule ? "it depends on values not known at import time"
                    : "no shape rule for this op and ONNX shape inference could not infer it";
    }
    auto first_missing = [&]() -> int {
      for (std::size_t k = 0; k < node.out.size(); ++k)
        if (node.out[k] >= 0 && !ctx.out[k].shape) return static_cast<int>(k);
      return -1;
    };
    std::optional<std::vector<Info>> onnx_out;
    if (first_missing() >= 0) {
      onnx_out = onnx_infer_node(*node.proto, node.domain, node.opset, ctx.in);
      if (onnx_out)
        for (std::size_t k = 0; k < ctx.out.size() && k < onnx_out->size(); ++k)
          if (!ctx.out[k].shape && (*onnx_out)[k].shape) ctx.out[k] = (*onnx_out)[k];
    }
    if (first_missing() >= 0 && !opt.lenient && opt.whole_model) {
      if (const auto* wm = opt.whole_model())
        for (std::size_t k = 0; k < ctx.out.size(); ++k) {
          if (node.out[k] < 0 || ctx.out[k].shape) continue;
          auto it = wm->find(std::string(pg.names[static_cast<std::size_t>(node.out[k])]));
          if (it != wm->end()) ctx.out[k] = it->second;
        }
    }
    std::string hint;
    if (first_missing() >= 0) {
      for (std::size_t k = 0; k < ctx.out.size(); ++k) {
        if (node.out[k] < 0 || ctx.out[k].shape) continue;
        const auto* decl = pg.declared[static_cast<std::size_t>(node.out[k])];
        if (!decl) continue;
        auto r = bind_declared(*decl, *opt.bindings, false);
        if (r.ok()) ctx.out[k] = std::move(*r);
        else if (hint.empty() && r.error().message.find("--dim") != std::string::npos)
          hint = "; its declared shape would do: " + r.error().message;
      }
    }
    if (const int k = first_missing(); k >= 0 && !opt.lenient) {
      return make_error("op '{}' ({}): cannot determine the shape of output '{}': {}{}", node.name, node_kind(node),
                        pg.names[static_cast<std::size_t>(node.out[static_cast<std::size_t>(k)])], reason, hint);
    }
    for (std::size_t k = 0; k < node.out.size(); ++k) {
      const int t = node.out[k];
      if (t < 0) continue;
      Info& o = ctx.out[k];
      if (!o.shape) continue;  // lenient run
      if (o.elem == kUndefined && onnx_out && k < onnx_out->size()) o.elem = (*onnx_out)[k].elem;
      if (o.elem == kUndefined)
        if (const auto* decl = pg.declared[static_cast<std::size_t>(t)]; decl && decl->type().has_tensor_type())
          o.elem = decl->type().tensor_type().elem_type();
      if (o.elem == kUndefined) o.elem = ctx.elem(0) != kUndefined ? ctx.elem(0) : kFloat;
      if (auto s = check_dims(*o.shape, node, pg.names[static_cast<std::size_t>(t)]); !s.ok()) {
        if (opt.lenient) continue;
        return s.error();
      }
      if (o.values && o.values->size() > kMaxTracked) o.values.reset();
      infos[static_cast<std::size_t>(t)] = std::move(o);
    }
  }
  return Status::success();
}

std::vector<Info> SubgraphRun::outputs() const {
  std::vector<Info> r;
  r.reserve(graph.outputs.size());
  for (int id : graph.outputs) r.push_back(infos[static_cast<std::size_t>(id)]);
  return r;
}

Result<SubgraphRun> run_subgraph(const pb::GraphProto& g, std::vector<Info> formal, const Scope& outer,
                                 const RunOptions& opt) {
  SubgraphRun run;
  PLANNER_TRY(run.graph, parse_graph(g, *opt.opsets, true));
  run.infos.resize(run.graph.size());
  std::size_t k = 0;
  for (int id : run.graph.inputs) {
    const auto idx = static_cast<std::size_t>(id);
    if (run.graph.source[idx] == Source::initializer) continue;
    if (k < formal.size()) {
      run.infos[idx] = std::move(formal[k++]);
      continue;
    }
    PLANNER_TRY(run.infos[idx], bind_declared(*run.graph.input_decl[idx], *opt.bindings, false));
  }
  RunOptions sub = opt;
  sub.whole_model = nullptr;
  PLANNER_TRY_STATUS(propagate(run.graph, run.infos, &outer, sub));
  return run;
}

}  // namespace planner::onnx::detail
