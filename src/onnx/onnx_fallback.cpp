// ONNX's own shape inference as a fallback for ops without a rule:
//  - per node, with the node's fully shaped inputs and known input values
//    handed to the op schema's inference function;
//  - whole model (no data propagation, non-strict), on a shape-only copy.
// ONNX data propagation is never enabled: libonnx 1.12 crashes in it on some
// training graphs.
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "engine.hpp"

namespace planner::onnx::detail {

namespace {

void fill_type(pb::TypeProto& tp, const Info& info) {
  auto* tt = tp.mutable_tensor_type();
  tt->set_elem_type(info.elem);
  auto* sh = tt->mutable_shape();
  for (auto d : *info.shape) sh->add_dim()->set_dim_value(d);
}

bool fill_data(pb::TensorProto& t, const Info& info) {
  const Values& v = *info.values;
  t.set_data_type(info.elem);
  for (auto d : *info.shape) t.add_dims(d);
  switch (info.elem) {
    case kInt64:
      for (std::size_t k = 0; k < v.size(); ++k) t.add_int64_data(v.n(k));
      return true;
    case kInt32: case kInt16: case kInt8: case kUint8: case kUint16: case kBool:
      for (std::size_t k = 0; k < v.size(); ++k) t.add_int32_data(static_cast<std::int32_t>(v.n(k)));
      return true;
    case kUint32: case kUint64:
      for (std::size_t k = 0; k < v.size(); ++k) t.add_uint64_data(static_cast<std::uint64_t>(v.n(k)));
      return true;
    case kFloat:
      for (std::size_t k = 0; k < v.size(); ++k) t.add_float_data(static_cast<float>(v.d(k)));
      return true;
    case kDouble:
      for (std::size_t k = 0; k < v.size(); ++k) t.add_double_data(v.d(k));
      return true;
    default:
      return false;
  }
}

}  // namespace

std::optional<Info> static_info(const pb::TypeProto& tp) {
  if (!tp.has_tensor_type()) return std::nullopt;
  const auto& tt = tp.tensor_type();
  if (!tt.has_shape()) return std::nullopt;
  Info r;
  r.elem = tt.elem_type();
  Shape s;
  for (const auto& d : tt.shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0) return std::nullopt;
    s.push_back(d.dim_value());
  }
  r.shape = std::move(s);
  return r;
}

std::optional<std::vector<Info>> onnx_infer_node(const pb::NodeProto& node, std::string_view domain, int opset,
                                                 const std::vector<const Info*>& in) {
  if (opset <= 0) return std::nullopt;
  const pb::OpSchema* schema = nullptr;
  try {
    schema = pb::OpSchemaRegistry::Schema(node.op_type(), opset, std::string(domain));
  } catch (...) {
    return std::nullopt;
  }
  if (!schema || !schema->has_type_and_shape_inference_function()) return std::nullopt;
  const int n_in = node.input_size(), n_out = node.output_size();
  if (n_in < schema->min_input() || n_in > schema->max_input()) return std::nullopt;
  if (n_out < schema->min_output() || n_out > schema->max_output()) return std::nullopt;
  for (const auto& a : node.attribute())
    if (a.has_g() || a.graphs_size() > 0) return std::nullopt;  // subgraphs need a graph inferencer

  std::vector<pb::TypeProto> types(in.size());
  std::vector<pb::TensorProto> data(in.size());
  std::unordered_map<std::string, pb::TypeProto*> type_by_name;
  std::unordered_map<std::string, const pb::TensorProto*> data_by_name;
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (!in[k] || !in[k]->shape || k >= static_cast<std::size_t>(n_in)) continue;
    const std::string& name = node.input(static_cast<int>(k));
    fill_type(types[k], *in[k]);
    type_by_name[name] = &types[k];
    if (in[k]->values && fill_data(data[k], *in[k])) data_by_name[name] = &data[k];
  }
  pb::NodeProto copy = node;
  const std::unordered_map<std::string, const pb::SparseTensorProto*> no_sparse;
  std::vector<Info> out(static_cast<std::size_t>(n_out));
  try {
    pb::shape_inference::InferenceContextImpl ctx(copy, type_by_name, data_by_name, no_sparse, nullptr, nullptr);
    schema->GetTypeAndShapeInferenceFunction()(ctx);
    for (int k = 0; k < n_out; ++k) {
      const pb::TypeProto* t = ctx.getOutputType(static_cast<std::size_t>(k));
      if (!t) continue;
      if (auto i = static_info(*t)) out[static_cast<std::size_t>(k)] = std::move(*i);
      else if (t->has_tensor_type()) out[static_cast<std::size_t>(k)].elem = t->tensor_type().elem_type();
    }
  } catch (...) {
    return std::nullopt;
  }
  return out;
}

std::unordered_map<std::string, Info> onnx_infer_model(const pb::ModelProto& model, const ParsedGraph& pg,
                                                       const std::vector<Info>& infos) {
  std::unordered_map<std::string, Info> result;
  pb::ModelProto m;
  m.set_ir_version(model.ir_version());
  *m.mutable_opset_import() = model.opset_import();
  *m.mutable_functions() = model.functions();
  const pb::GraphProto& g = model.graph();
  pb::GraphProto* out = m.mutable_graph();
  out->set_name(g.name());
  for (const auto& node : pg.nodes) *out->add_node() = *node.proto;
  for (const auto& t : g.initializer()) {
    pb::TensorProto* c = out->add_initializer();
    c->set_name(t.name());
    c->set_data_type(t.data_type());
    *c->mutable_dims() = t.dims();
    if (tensor_values(t)) {
      *c = t;
    }
  }
  for (const auto& in : g.input()) {
    pb::ValueInfoProto* vi = out->add_input();
    *vi = in;
    auto it = pg.index.find(in.name());
    if (it != pg.index.end() && infos[static_cast<std::size_t>(it->second)].shape) {
      vi->clear_type();
      fill_type(*vi->mutable_type(), infos[static_cast<std::size_t>(it->second)]);
    }
  }
  *out->mutable_output() = g.output();
  *out->mutable_value_info() = g.value_info();
  try {
    pb::ShapeInferenceOptions options(/*check_type=*/false, /*strict_mode=*/0, /*data_prop=*/false);
    pb::shape_inference::InferShapes(m, pb::OpSchemaRegistry::Instance(), options);
  } catch (...) {
    // Non-strict mode still throws on some merge errors; keep what was inferred.
  }
  for (const auto& vi : m.graph().value_info())
    if (auto i = static_info(vi.type())) result.emplace(vi.name(), std::move(*i));
  for (const auto& vi : m.graph().output())
    if (auto i = static_info(vi.type())) result.emplace(vi.name(), std::move(*i));
  return result;
}

}  // namespace planner::onnx::detail
