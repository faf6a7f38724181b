#pragma once
/// Private to modelgen: a thin builder over onnx::GraphProto that names
/// nodes and tensors, declares weights (external data or inline random
/// values) and caches integer tables and float constants.
///
/// Naming: node(scope, type) names the node "<scope>/<type>" (then
/// "<scope>/<type>_1", ... when repeated) and its outputs
/// "<node name>_output_<i>". A weight for scope "layers.3/attn/qkv" is
/// "layers.3.attn.qkv.weight" (param_name()).

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

namespace planner::modelgen::detail {

using Dims = std::vector<std::int64_t>;

/// How a weight is initialised when with_weights is on.
enum class Init { normal, ones, zeros };

onnx::AttributeProto attr(const std::string& name, std::int64_t v);
onnx::AttributeProto attr(const std::string& name, float v);
onnx::AttributeProto attr(const std::string& name, const Dims& v);
onnx::AttributeProto attr(const std::string& name, const std::string& v);
onnx::AttributeProto attr(const std::string& name, const onnx::TensorProto& v);

/// "layers.3/attn/qkv" -> "layers.3.attn.qkv".
std::string param_name(const std::string& scope);

class Builder {
 public:
  Builder(std::string data_location, bool with_weights, std::uint64_t seed);

  /// Graph inputs and outputs (elem_type: onnx::TensorProto::FLOAT, INT64).
  std::string input(const std::string& name, int elem_type, const Dims& dims);
  void output(const std::string& name, int elem_type, const Dims& dims);

  /// A trainable FLOAT weight named `name` of shape `dims`.
  std::string weight(const std::string& name, const Dims& dims, Init init = Init::normal);
  /// `scope` + ".weight"/".bias" via param_name().
  std::string weight_of(const std::string& scope, const char* suffix, const Dims& dims,
                        Init init = Init::normal);

  /// INT64 initializer with inline data. Cached by contents when `name` is
  /// empty (then named "const.i64.<values>" or "const.i64.<hash>").
  std::string ints(const Dims& dims, const std::vector<std::int64_t>& values,
                   const std::string& name = "");
  /// 1-D INT64 vector (shapes, axes, starts, TopK sizes).
  std::string vec(const std::vector<std::int64_t>& values) { return ints({static_cast<std::int64_t>(values.size())}, values); }
  /// 0-D INT64 scalar.
  std::string scalar_i(std::int64_t v) { return ints({}, {v}); }

  /// FLOAT constant from a `Constant` node placed before every other node;
  /// the output tensor is called `name`. Cached by name.
  std::string constant(const std::string& name, const Dims& dims, const std::vector<float>& values);
  std::string scalar(const std::string& name, float v) { return constant(name, {}, {v}); }

  /// Adds a node; returns its output names.
  std::vector<std::string> node(const std::string& scope, const std::string& type,
                                const std::vector<std::string>& inputs, int num_outputs = 1,
                                std::vector<onnx::AttributeProto> attrs = {});
  /// Single-output node.
  std::string op(const std::string& scope, const std::string& type,
                 const std::vector<std::string>& inputs,
                 std::vector<onnx::AttributeProto> attrs = {}) {
    return node(scope, type, inputs, 1, std::move(attrs))[0];
  }
  /// Renames the output `from` of the last node added to `to` (graph outputs
  /// such as "loss"). Requires: `from` is an output of the last node.
  std::string rename_last_output(const std::string& from, const std::string& to);

  std::int64_t parameter_count() const { return parameter_count_; }
  std::int64_t node_count() const { return static_cast<std::int64_t>(prologue_.size() + body_.size()); }
  std::int64_t initializer_count() const { return graph_.initializer_size(); }
  /// True when a parameter count or byte offset overflowed int64.
  bool overflowed() const { return overflow_; }

  /// Moves the graph into `model` (prologue nodes first, then the body).
  /// with_weights: fills every FLOAT initializer with random data.
  void finish(onnx::ModelProto& model);

 private:
  onnx::GraphProto graph_;
  std::vector<onnx::NodeProto> prologue_;
  std::vector<onnx::NodeProto> body_;
  std::unordered_map<std::string, int> node_names_;
  std::map<std::string, std::string> int_cache_;
  std::map<std::string, std::string> const_cache_;
  std::vector<Init> inits_;  ///< per FLOAT initializer, in order
  std::string data_location_;
  bool with_weights_;
  std::uint64_t seed_;
  std::int64_t parameter_count_ = 0;
  std::int64_t offset_ = 0;
  bool overflow_ = false;
};

}  // namespace planner::modelgen::detail
