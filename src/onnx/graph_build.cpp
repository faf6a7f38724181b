// ParsedGraph + Infos + roles -> graph::OpGraph; costs of control-flow ops
// from their subgraphs.
#include "build.hpp"
#include "planner/ops/semantics.hpp"

namespace planner::onnx::detail {

bool keep_tensor(const ParsedGraph& pg, std::size_t t) {
  return pg.n_consumers[t] > 0 || pg.source[t] == Source::node || pg.is_output[t];
}

namespace {

std::optional<graph::AttrValue> convert_attr(const pb::AttributeProto& a) {
  using T = pb::AttributeProto;
  switch (a.type()) {
    case T::INT: return graph::AttrValue(static_cast<std::int64_t>(a.i()));
    case T::FLOAT: return graph::AttrValue(static_cast<double>(a.f()));
    case T::STRING: return graph::AttrValue(a.s());
    case T::INTS: return graph::AttrValue(std::vector<std::int64_t>(a.ints().begin(), a.ints().end()));
    case T::FLOATS: return graph::AttrValue(std::vector<double>(a.floats().begin(), a.floats().end()));
    case T::STRINGS: return graph::AttrValue(std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case T::TENSOR: {
      // Scalar tensors (ConstantOfShape's fill value, ...) as numbers.
      auto v = tensor_values(a.t(), 1);
      if (!v || v->size() != 1) return std::nullopt;
      if (v->is_float) return graph::AttrValue(v->f[0]);
      return graph::AttrValue(v->i[0]);
    }
    default:
      break;
  }
  // Untyped attributes (old exporters leave `type` unset): infer from content.
  if (a.ints_size() > 0) return graph::AttrValue(std::vector<std::int64_t>(a.ints().begin(), a.ints().end()));
  if (a.floats_size() > 0) return graph::AttrValue(std::vector<double>(a.floats().begin(), a.floats().end()));
  if (a.has_i()) return graph::AttrValue(static_cast<std::int64_t>(a.i()));
  if (a.has_f()) return graph::AttrValue(static_cast<double>(a.f()));
  if (a.has_s()) return graph::AttrValue(a.s());
  return std::nullopt;
}

}  // namespace

Result<BuiltGraph> build_graph(const ParsedGraph& pg, const std::vector<Info>& infos,
                               const std::vector<graph::TensorRole>& roles) {
  BuiltGraph b;
  b.tensor_id.resize(pg.size());
  for (std::size_t t = 0; t < pg.size(); ++t) {
    if (!keep_tensor(pg, t)) continue;
    const Info& info = infos[t];
    if (!info.shape)
      return make_error("tensor '{}' has no static shape", pg.names[t]);  // strict propagation prevents this
    graph::Tensor x;
    x.name = std::string(pg.names[t]);
    x.dtype = to_dtype(info.elem).value_or(core::DType::f32);
    x.shape = *info.shape;
    x.role = roles[t];
    x.external_data = pg.init[t] && pg.init[t]->data_location() == pb::TensorProto::EXTERNAL;
    // Small constants keep their values (graph::kMaxConstantValues; the
    // importer tracks values up to kMaxTracked, the same bound).
    static_assert(kMaxTracked == static_cast<std::size_t>(graph::kMaxConstantValues));
    const bool is_constant_node = pg.source[t] == Source::node && pg.producer[t] >= 0 &&
                                  pg.nodes[static_cast<std::size_t>(pg.producer[t])].proto->op_type() == "Constant";
    if ((pg.source[t] == Source::initializer || is_constant_node) && info.values) {
      graph::ConstantValues cv;
      cv.is_float = info.values->is_float;
      cv.ints = info.values->i;
      cv.floats = info.values->f;
      x.values = std::move(cv);
    }
    b.tensor_id[t] = b.graph.add_tensor(std::move(x));
  }
  for (const auto& node : pg.nodes) {
    graph::Op op;
    op.name = node.name;
    op.type = node.proto->op_type();
    op.domain = node.domain;
    for (int t : node.in) {
      if (t < 0) op.inputs.emplace_back(std::nullopt);
      else op.inputs.emplace_back(b.tensor_id[static_cast<std::size_t>(t)]);
    }
    for (int t : node.implicit) op.inputs.emplace_back(b.tensor_id[static_cast<std::size_t>(t)]);
    for (int t : node.out) {
      if (t < 0) op.outputs.emplace_back(std::nullopt);
      else op.outputs.emplace_back(b.tensor_id[static_cast<std::size_t>(t)]);
    }
    for (const auto& a : node.proto->attribute())
      if (auto v = convert_attr(a)) op.attrs.emplace(a.name(), std::move(*v));
    b.graph.add_op(std::move(op));
  }
  for (int t : pg.inputs)
    if (pg.source[static_cast<std::size_t>(t)] == Source::input && b.tensor_id[static_cast<std::size_t>(t)])
      b.graph.graph_inputs.push_back(*b.tensor_id[static_cast<std::size_t>(t)]);
  for (int t : pg.outputs)
    if (b.tensor_id[static_cast<std::size_t>(t)]) b.graph.graph_outputs.push_back(*b.tensor_id[static_cast<std::size_t>(t)]);
  return b;
}

namespace {

graph::OpCost scaled(graph::OpCost c, double k) {
  c.forward_flops *= k;
  c.backward_flops *= k;
  c.forward_bytes_read *= k;
  c.forward_bytes_written *= k;
  c.backward_bytes_read *= k;
  c.backward_bytes_written *= k;
  return c;
}

double weight(const graph::OpCost& c) {
  return c.forward_flops.value + c.backward_flops.value + 1e-3 * (c.forward_bytes_read.value + c.forward_bytes_written.value);
}

/// Imports one subgraph into its own OpGraph and returns its summed cost.
Result<graph::OpCost> subgraph_cost(const pb::GraphProto& g, std::vector<Info> formal, const ParsedGraph& outer_pg,
                                    const std::vector<Info>& outer_infos, const std::vector<graph::TensorRole>& outer_roles,
                                    const Scope* outer_parent, const RunOptions& opt, std::map<std::string, int>& unknown,
                                    int depth) {
  if (depth > 16) return make_error("control flow nested more than 16 deep");
  Scope here{&outer_pg, &outer_infos, outer_parent};
  PLANNER_TRY(SubgraphRun run, run_subgraph(g, std::move(formal), here, opt));
  OuterRoleFn outer_role = [&outer_pg, &outer_roles](std::string_view name) {
    auto it = outer_pg.index.find(name);
    return it == outer_pg.index.end() ? graph::TensorRole::activation : outer_roles[static_cast<std::size_t>(it->second)];
  };
  auto roles = assign_roles(run.graph, run.infos, nullptr, true, outer_role);
  PLANNER_TRY(BuiltGraph built, build_graph(run.graph, run.infos, roles));
  for (const auto& [k, v] : ops::annotate(built.graph)) unknown[k] += v;
  PLANNER_TRY_STATUS(cost_control_flow(built, run.graph, run.infos, roles, &here, opt, unknown, depth));
  graph::OpCost total;
  for (const auto& op : built.graph.ops()) total += op.cost;
  return total;
}

}  // namespace

Status cost_control_flow(BuiltGraph& built, const ParsedGraph& pg, const std::vector<Info>& infos,
                         const std::vector<graph::TensorRole>& roles, const Scope* parent, const RunOptions& opt,
                         std::map<std::string, int>& unknown, int depth) {
  for (std::size_t i = 0; i < pg.nodes.size(); ++i) {
    const ParsedNode& node = pg.nodes[i];
    if (!node.has_subgraph) continue;
    const std::string& type = node.proto->op_type();
    if (type != "If" && type != "Loop" && type != "Scan") continue;
    graph::Op& op = built.graph.op(graph::OpId{static_cast<std::uint32_t>(i)});
    RuleCtx ctx(*node.proto, node.opset);
    for (int t : node.in) ctx.in.push_back(t >= 0 ? &infos[static_cast<std::size_t>(t)] : nullptr);
    auto fail = [&](const std::string& why) {
      return make_error("op '{}' ({}): cannot cost its subgraph: {}", node.name, type, why);
    };
    auto cost_of = [&](const pb::GraphProto& g, std::vector<Info> formal) {
      return subgraph_cost(g, std::move(formal), pg, infos, roles, parent, opt, unknown, depth + 1);
    };
    graph::OpCost cost;
    if (type == "If") {
      const auto* then_g = ctx.attr_g("then_branch");
      const auto* else_g = ctx.attr_g("else_branch");
      if (!then_g || !else_g) return fail("missing branch");
      std::optional<bool> cond;
      if (auto* v = ctx.vals(0); v && v->size() == 1) cond = v->d(0) != 0;
      if (cond) {
        auto c = cost_of(*cond ? *then_g : *else_g, {});
        if (!c.ok()) return fail(c.error().message);
        cost = *c;
      } else {
        auto t = cost_of(*then_g, {});
        if (!t.ok()) return fail(t.error().message);
        auto e = cost_of(*else_g, {});
        if (!e.ok()) return fail(e.error().message);
        cost = weight(*t) >= weight(*e) ? *t : *e;
      }
    } else if (type == "Loop") {
      const auto* body = ctx.attr_g("body");
      if (!body) return fail("missing body");
      auto trips = ctx.has(0) ? ctx.scalar(0) : std::nullopt;
      if (!trips) return fail("the trip count is not a known constant");
      // The body costed at iteration 0 (its number known, so a body picking
      // its piece of a sequence by it has shapes), times the trip count.
      std::vector<Info> formal{Info{kInt64, Shape{}, Values::ints({0})}, Info{kBool, Shape{}, std::nullopt}};
      for (std::size_t k = 2; k < ctx.in.size(); ++k) {
        if (!ctx.has(k)) return fail("a loop-carried input is omitted");
        Info c = *ctx.in[k];
        c.values.reset();
        formal.push_back(std::move(c));
      }
      auto c = cost_of(*body, std::move(formal));
      if (!c.ok()) return fail(c.error().message);
      cost = scaled(*c, static_cast<double>(std::max<std::int64_t>(*trips, 0)));
    } else {  // Scan
      const auto* body = ctx.attr_g("body");
      if (!body) return fail("missing body");
      const std::int64_t m = ctx.attr_i("num_scan_inputs", 0);
      if (m <= 0 || static_cast<std::size_t>(m) > ctx.in.size()) return fail("bad num_scan_inputs");
      const std::size_t n_state = ctx.in.size() - static_cast<std::size_t>(m);
      auto axes = ctx.attr_ints("scan_input_axes").value_or(std::vector<std::int64_t>(static_cast<std::size_t>(m), 0));
      std::vector<Info> formal;
      std::int64_t seq = 0;
      for (std::size_t k = 0; k < ctx.in.size(); ++k) {
        if (!ctx.has(k)) return fail("an input is omitted");
        Info c = *ctx.in[k];
        c.values.reset();
        if (k >= n_state) {
          auto ax = norm_axis(k - n_state < axes.size() ? axes[k - n_state] : 0, c.shape->size());
          if (!ax) return fail("scan axis out of range");
          seq = (*c.shape)[*ax];
          c.shape->erase(c.shape->begin() + static_cast<std::ptrdiff_t>(*ax));
        }
        formal.push_back(std::move(c));
      }
      auto c = cost_of(*body, std::move(formal));
      if (!c.ok()) return fail(c.error().message);
      cost = scaled(*c, static_cast<double>(seq));
    }
    op.cost = cost;
    op.op_class = graph::OpClass::control_flow;
  }
  return Status::success();
}

}  // namespace planner::onnx::detail
