#pragma once
/// Shape propagation engine of the ONNX importer (private to src/onnx/).
///
/// Every tensor gets an `Info`: element type, static shape, and, for small
/// tensors whose contents are known at import time (shape arithmetic, small
/// constants), the values themselves. Rules compute the outputs of one node
/// from the Infos of its inputs; they are kept in tables, one source file per
/// op family (rules_*.cpp), looked up by (domain, type).
///
/// Design note: rules see only fully shaped inputs (the engine skips or fails
/// a node whose inputs are unknown), so a rule never reasons about symbolic
/// dims. Values are tracked for tensors of at most kMaxTracked elements; this
/// is what resolves Reshape targets built from Shape -> Gather -> Concat
/// chains without ONNX data propagation.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "planner/core/result.hpp"
#include "planner/core/dtype.hpp"

namespace planner::onnx::detail {

namespace pb = ::onnx;

using Shape = std::vector<std::int64_t>;

/// Largest accepted dim (2^40 elements along one axis).
inline constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;
/// Largest tensor whose values are tracked.
inline constexpr std::size_t kMaxTracked = 4096;

/// ONNX element type codes used by the rules (TensorProto::DataType).
enum Elem : int {
  kUndefined = 0, kFloat = 1, kUint8 = 2, kInt8 = 3, kUint16 = 4, kInt16 = 5, kInt32 = 6,
  kInt64 = 7, kString = 8, kBool = 9, kFloat16 = 10, kDouble = 11, kUint32 = 12, kUint64 = 13,
  kComplex64 = 14, kComplex128 = 15, kBfloat16 = 16,
};

bool is_float_elem(int elem);
/// Maps an ONNX element type onto core::DType; nullopt for undefined/unknown codes.
std::optional<core::DType> to_dtype(int elem);
/// Name for messages ("float", "int64", ...).
std::string_view elem_name(int elem);

/// Contents of a small tensor, row-major. Integer and bool tensors use `i`,
/// floating ones `f`.
struct Values {
  bool is_float = false;
  std::vector<std::int64_t> i;
  std::vector<double> f;

  std::size_t size() const { return is_float ? f.size() : i.size(); }
  double d(std::size_t k) const { return is_float ? f[k] : static_cast<double>(i[k]); }
  /// As an integer (floats truncated toward zero, saturated).
  std::int64_t n(std::size_t k) const;
  static Values ints(std::vector<std::int64_t> v);
  static Values floats(std::vector<double> v);
  /// The values converted for element type `elem` (float<->int, bool).
  Values cast_to(int elem) const;
  std::vector<std::int64_t> as_ints() const;
};

/// What is known about one tensor.
struct Info {
  int elem = kUndefined;
  std::optional<Shape> shape;
  /// Present only when shape is known and has at most kMaxTracked elements.
  std::optional<Values> values;
  /// A sequence value (SplitToSequence, SequenceConstruct, ...): its
  /// elements, in order. `shape` then describes them for the graph: stacked,
  /// [count, element dims...], when they share one shape, else flattened,
  /// [total elements]; `elem` is the elements' type.
  bool is_sequence = false;
  std::vector<Info> elements{};
  bool known() const { return shape.has_value(); }
};

// ---------------------------------------------------------------------------
// Shape and value helpers shared by the rules.

/// Product of dims; nullopt on overflow beyond 2^62 or a negative dim.
std::optional<std::int64_t> checked_numel(const Shape& s);
/// Numpy broadcasting of two shapes; nullopt when incompatible.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);
/// Axis in [-rank, rank) normalised to [0, rank); nullopt when out of range.
std::optional<std::size_t> norm_axis(std::int64_t axis, std::size_t rank);
/// Row-major strides of a shape.
std::vector<std::int64_t> strides_of(const Shape& s);
/// `v` (of shape `from`) broadcast to shape `to`; Requires: from broadcasts to to.
Values broadcast_values(const Values& v, const Shape& from, const Shape& to);
/// "[2,3,4]".
std::string shape_str(const Shape& s);

/// Shape of an initializer or attribute tensor; error on negative or huge dims.
Result<Shape> tensor_shape(const pb::TensorProto& t);
/// Values of a tensor proto when it holds at most `cap` elements inline
/// (never external data); nullopt otherwise or when the payload is malformed.
std::optional<Values> tensor_values(const pb::TensorProto& t, std::size_t cap = kMaxTracked);

// ---------------------------------------------------------------------------
// Rules.

enum class RuleStatus {
  ok,       ///< outputs filled (those it could)
  unknown,  ///< cannot tell (missing values, unsupported form): try fallbacks
  error,    ///< the node is inconsistent; `error` says why
};

/// Propagates a subgraph attribute of the current node: given the Infos of the
/// subgraph's formal inputs, returns the Infos of its outputs.
using SubgraphFn = std::function<Result<std::vector<Info>>(const pb::GraphProto&, std::vector<Info>)>;

/// What a rule sees of one node.
struct RuleCtx {
  const pb::NodeProto& node;
  /// Opset version of the node's domain (0 when the model does not import it).
  int opset = 0;
  /// Positional inputs; nullptr for an omitted one. Present inputs are shaped.
  std::vector<const Info*> in;
  /// Positional outputs to fill.
  std::vector<Info> out;
  std::string error;
  /// Set by the engine for nodes with subgraph attributes.
  SubgraphFn run_subgraph;

  RuleCtx(const pb::NodeProto& n, int opset_version) : node(n), opset(opset_version) {}

  bool has(std::size_t i) const { return i < in.size() && in[i] != nullptr; }
  /// Requires: has(i).
  const Shape& shape(std::size_t i) const { return *in[i]->shape; }
  std::size_t rank(std::size_t i) const { return in[i]->shape->size(); }
  int elem(std::size_t i) const { return has(i) ? in[i]->elem : kUndefined; }
  /// Known values of input i, or nullptr.
  const Values* vals(std::size_t i) const {
    return has(i) && in[i]->values ? &*in[i]->values : nullptr;
  }
  /// Values of input i as integers, when known.
  std::optional<std::vector<std::int64_t>> ints(std::size_t i) const;
  /// Scalar (or one-element) integer value of input i, when known.
  std::optional<std::int64_t> scalar(std::size_t i) const;

  const pb::AttributeProto* attr(std::string_view name) const;
  std::optional<std::int64_t> attr_i(std::string_view name) const;
  std::int64_t attr_i(std::string_view name, std::int64_t def) const;
  std::optional<std::vector<std::int64_t>> attr_ints(std::string_view name) const;
  std::optional<double> attr_f(std::string_view name) const;
  std::optional<std::vector<double>> attr_floats(std::string_view name) const;
  std::optional<std::string> attr_s(std::string_view name) const;
  const pb::TensorProto* attr_t(std::string_view name) const;
  const pb::GraphProto* attr_g(std::string_view name) const;

  /// Sets output k (ignored when the node has no such output).
  void set(std::size_t k, Shape s, int elem);
  /// Sets output k to the same shape as input i with element type `elem`
  /// (input i's when kUndefined).
  void same_as(std::size_t k, std::size_t i, int elem = kUndefined);
  /// Attaches values to output k (dropped when too large).
  void set_values(std::size_t k, Values v);

  template <typename... Args>
  RuleStatus fail(fmt::format_string<Args...> f, Args&&... args) {
    error = fmt::format(f, std::forward<Args>(args)...);
    return RuleStatus::error;
  }
};

using RuleFn = RuleStatus (*)(RuleCtx&);

/// One table row: ops of `type` in `domain` ("" = default ONNX domain).
struct ShapeRule {
  std::string_view domain;
  std::string_view type;
  RuleFn fn;
};

// Family tables (one per rules_*.cpp file).
std::span<const ShapeRule> elementwise_rules();
std::span<const ShapeRule> matmul_rules();
std::span<const ShapeRule> conv_rules();
std::span<const ShapeRule> layout_rules();
std::span<const ShapeRule> index_rules();
std::span<const ShapeRule> reduce_rules();
std::span<const ShapeRule> generator_rules();
std::span<const ShapeRule> contrib_rules();
std::span<const ShapeRule> legacy_rules();
std::span<const ShapeRule> control_rules();
std::span<const ShapeRule> sequence_rules();

/// The rule for a node: exact (domain, type), then the default domain, then
/// com.microsoft (exporters declare contrib ops under various domains).
const ShapeRule* find_shape_rule(std::string_view domain, std::string_view type);

/// Shared rule bodies used by several families.
RuleStatus rule_same_shape(RuleCtx& c);
RuleStatus rule_matmul(RuleCtx& c);
RuleStatus rule_gemm(RuleCtx& c);
RuleStatus rule_conv(RuleCtx& c);
RuleStatus rule_layer_norm(RuleCtx& c);
RuleStatus rule_reduce(RuleCtx& c);
RuleStatus rule_concat(RuleCtx& c);
RuleStatus rule_range(RuleCtx& c);
RuleStatus rule_gather_nd(RuleCtx& c);
RuleStatus rule_slice(RuleCtx& c);
RuleStatus rule_upsample_scales(RuleCtx& c, const std::vector<double>& scales);

// ---------------------------------------------------------------------------
// ONNX's own inference, as fallbacks.

/// Runs the node's ONNX schema inference with the (fully shaped) inputs and
/// their known values. Returns one Info per output (unknown where ONNX gives
/// no static shape), or nullopt when no schema applies or it throws.
std::optional<std::vector<Info>> onnx_infer_node(const pb::NodeProto& node, std::string_view domain, int opset,
                                                 const std::vector<const Info*>& in);

}  // namespace planner::onnx::detail
