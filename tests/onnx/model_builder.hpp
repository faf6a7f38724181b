#pragma once
// A small fluent builder for ONNX models in tests (the idea of ONNX Runtime's
// ModelTestBuilder): inputs, initializers and nodes in a few lines, then
// bytes() for import_bytes.
//
//   ModelBuilder m;
//   m.input("x", kF32, {"batch", 4}).init_f32("w", {4, 8});
//   m.node("MatMul", {"x", "w"}, {"y"});
//   m.output("y");
//   auto r = import_model(m, opts);

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <variant>
#include <vector>

#include <onnx/onnx_pb.h>

#include "planner/onnx/importer.hpp"

namespace planner::testing {

namespace pb = ::onnx;

inline constexpr int kF32 = pb::TensorProto::FLOAT;
inline constexpr int kF16 = pb::TensorProto::FLOAT16;
inline constexpr int kI64 = pb::TensorProto::INT64;
inline constexpr int kI32 = pb::TensorProto::INT32;
inline constexpr int kBool = pb::TensorProto::BOOL;

/// A declared dim: a size or a symbolic name ("" = unnamed unknown dim).
using Dim = std::variant<std::int64_t, std::string>;

/// Attributes of one node, chained: m.node(...).attr("axis", 1).attr("perm", {0, 2, 1}).
class NodeRef {
 public:
  explicit NodeRef(pb::NodeProto* n) : n_(n) {}
  NodeRef& attr(const std::string& name, std::int64_t v) {
    auto* a = add(name, pb::AttributeProto::INT);
    a->set_i(v);
    return *this;
  }
  NodeRef& attr(const std::string& name, int v) { return attr(name, static_cast<std::int64_t>(v)); }
  NodeRef& attr(const std::string& name, double v) {
    auto* a = add(name, pb::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(v));
    return *this;
  }
  NodeRef& attr(const std::string& name, const char* v) {
    auto* a = add(name, pb::AttributeProto::STRING);
    a->set_s(v);
    return *this;
  }
  NodeRef& attr(const std::string& name, std::initializer_list<std::int64_t> v) {
    auto* a = add(name, pb::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
    return *this;
  }
  NodeRef& attr_floats(const std::string& name, std::initializer_list<float> v) {
    auto* a = add(name, pb::AttributeProto::FLOATS);
    for (auto x : v) a->add_floats(x);
    return *this;
  }
  NodeRef& attr(const std::string& name, const pb::TensorProto& t) {
    *add(name, pb::AttributeProto::TENSOR)->mutable_t() = t;
    return *this;
  }
  NodeRef& attr(const std::string& name, const pb::GraphProto& g) {
    *add(name, pb::AttributeProto::GRAPH)->mutable_g() = g;
    return *this;
  }
  NodeRef& domain(const std::string& d) {
    n_->set_domain(d);
    return *this;
  }
  pb::NodeProto& proto() { return *n_; }

 private:
  pb::AttributeProto* add(const std::string& name, pb::AttributeProto::AttributeType type) {
    auto* a = n_->add_attribute();
    a->set_name(name);
    a->set_type(type);
    return a;
  }
  pb::NodeProto* n_;
};

/// Tensor protos for attributes and initializers.
inline pb::TensorProto tensor_i64(const std::string& name, std::vector<std::int64_t> dims,
                                  std::vector<std::int64_t> values) {
  pb::TensorProto t;
  t.set_name(name);
  t.set_data_type(kI64);
  for (auto d : dims) t.add_dims(d);
  for (auto v : values) t.add_int64_data(v);
  return t;
}

inline pb::TensorProto tensor_f32(const std::string& name, std::vector<std::int64_t> dims,
                                  std::vector<float> values = {}) {
  pb::TensorProto t;
  t.set_name(name);
  t.set_data_type(kF32);
  std::int64_t n = 1;
  for (auto d : dims) {
    t.add_dims(d);
    n *= d;
  }
  if (values.empty()) values.assign(static_cast<std::size_t>(n), 0.5f);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return t;
}

class GraphBuilder {
 public:
  GraphBuilder& input(const std::string& name, int elem, std::vector<Dim> dims) {
    value(g_.add_input(), name, elem, dims);
    return *this;
  }
  /// A declared graph output with type and shape.
  GraphBuilder& output(const std::string& name, int elem, std::vector<Dim> dims) {
    value(g_.add_output(), name, elem, dims);
    return *this;
  }
  /// A graph output without a declared type.
  GraphBuilder& output(const std::string& name) {
    g_.add_output()->set_name(name);
    return *this;
  }
  GraphBuilder& value_info(const std::string& name, int elem, std::vector<Dim> dims) {
    value(g_.add_value_info(), name, elem, dims);
    return *this;
  }
  GraphBuilder& init(pb::TensorProto t) {
    *g_.add_initializer() = std::move(t);
    return *this;
  }
  GraphBuilder& init_i64(const std::string& name, std::vector<std::int64_t> dims, std::vector<std::int64_t> values) {
    return init(tensor_i64(name, std::move(dims), std::move(values)));
  }
  /// A float initializer filled with 0.5 (or `values`).
  GraphBuilder& init_f32(const std::string& name, std::vector<std::int64_t> dims, std::vector<float> values = {}) {
    return init(tensor_f32(name, std::move(dims), std::move(values)));
  }
  /// An initializer whose data lives in an external file (never written).
  GraphBuilder& init_external(const std::string& name, std::vector<std::int64_t> dims, const std::string& location,
                              int elem = kF32) {
    auto* t = g_.add_initializer();
    t->set_name(name);
    t->set_data_type(elem);
    for (auto d : dims) t->add_dims(d);
    t->set_data_location(pb::TensorProto::EXTERNAL);
    auto* kv = t->add_external_data();
    kv->set_key("location");
    kv->set_value(location);
    return *this;
  }
  NodeRef node(const std::string& type, std::vector<std::string> inputs, std::vector<std::string> outputs,
               const std::string& name = "") {
    auto* n = g_.add_node();
    n->set_op_type(type);
    if (!name.empty()) n->set_name(name);
    for (auto& i : inputs) n->add_input(i);
    for (auto& o : outputs) n->add_output(o);
    return NodeRef(n);
  }
  pb::GraphProto& proto() { return g_; }

 private:
  static void value(pb::ValueInfoProto* vi, const std::string& name, int elem, const std::vector<Dim>& dims) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* sh = tt->mutable_shape();
    for (const auto& d : dims) {
      auto* dim = sh->add_dim();
      if (auto* v = std::get_if<std::int64_t>(&d)) dim->set_dim_value(*v);
      else if (!std::get<std::string>(d).empty()) dim->set_dim_param(std::get<std::string>(d));
    }
  }
  pb::GraphProto g_;
};

class ModelBuilder : public GraphBuilder {
 public:
  explicit ModelBuilder(int opset = 17, int ir_version = 8) {
    m_.set_ir_version(ir_version);
    m_.set_producer_name("planner-tests");
    opset_import("", opset);
  }
  ModelBuilder& opset_import(const std::string& domain, int version) {
    auto* o = m_.add_opset_import();
    o->set_domain(domain);
    o->set_version(version);
    return *this;
  }
  pb::ModelProto model() const {
    pb::ModelProto m = m_;
    *m.mutable_graph() = const_cast<ModelBuilder*>(this)->proto();
    m.mutable_graph()->set_name("test");
    return m;
  }
  std::string bytes() const { return model().SerializeAsString(); }

 private:
  pb::ModelProto m_;
};

inline Result<onnx::ImportedModel> import_model(const ModelBuilder& m, const onnx::ImportOptions& opts = {}) {
  return onnx::import_bytes(m.bytes(), "test.onnx", std::filesystem::temp_directory_path(), opts);
}

}  // namespace planner::testing
