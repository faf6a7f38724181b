#pragma once
/// One graph op on explicit tensors: the bridge between a graph::Op (type and
/// attributes) and the kernels. The caller owns every tensor and says which
/// output shapes it wants, so a sharded executor runs the same functions on
/// shard shapes (Reshape, Expand, Split and ConstantOfShape take their result
/// shape from the caller, not from shape tables in the graph).
///
/// Supported op types (default ONNX domain, fp32 data, int64 indices):
///   Add Sub Mul Div, Relu Gelu Erf Sigmoid Tanh Sqrt Exp Log Neg Cos Sin,
///   MatMul Gemm, LayerNormalization RMSNormalization Softmax,
///   Gather SoftmaxCrossEntropyLoss ReduceMean ReduceSum,
///   Reshape Flatten Squeeze Unsqueeze Identity Expand Transpose Split Concat
///   Slice Trilu, Constant ConstantOfShape Cast.
/// Not every variant of these: check_supported says which an op needs.

#include <optional>
#include <string_view>
#include <variant>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/graph/graph.hpp"
#include "planner/runtime_cpu/tensor.hpp"

namespace planner::runtime_cpu {

/// A run-time value: fp32 data or integers (ids, labels, shape tables).
using Value = std::variant<Tensor, IndexTensor>;

/// The fp32 tensor of a value, or nullptr (absent or integer).
const Tensor* as_float(const Value* v);
/// The integer tensor of a value, or nullptr (absent or fp32).
const IndexTensor* as_index(const Value* v);
const Shape& value_shape(const Value& v);

/// What the caller wants of one output.
struct OutputSpec {
  Shape shape;
  core::DType dtype = core::DType::f32;
  /// The values of a `Constant` op's output (graph::Tensor::values).
  const graph::ConstantValues* values = nullptr;
};

/// Success when forward_op and backward_op run `op` as the graph has it;
/// else one line naming the op, its type and what the kernels lack: no
/// kernel for the type (or domain), LayerNormalization's Mean or InvStdDev
/// output, SoftmaxCrossEntropyLoss's class weights (input 2), log_prob
/// output or a reduction other than mean, or an omitted output. Asked before
/// anything runs (Interpreter::create, the executor's real_supported), so a
/// variant is refused up front rather than at its first forward.
Status check_supported(const graph::Op& op);
/// Whether check_supported(op) succeeds.
bool is_supported(const graph::Op& op);
/// The value of a constant as the run-time value of dtype `dtype`.
Result<Value> constant_value(const graph::ConstantValues& cv, const Shape& shape, core::DType dtype,
                             std::string_view name);

/// Runs `op` forward. inputs[i] is nullptr for an omitted optional input.
/// Errors (one line naming the op): unsupported type or dtype, shapes that
/// do not fit the op, an attribute outside what the kernels implement.
Result<std::vector<Value>> forward_op(const graph::Op& op, const std::vector<const Value*>& inputs,
                                      const std::vector<OutputSpec>& outputs);

/// Gradients of the inputs of `op`, given its inputs and outputs from the
/// forward run and the gradients of its outputs (nullptr: zero). Entry i is
/// std::nullopt when input i is absent, integer, or needs[i] is false.
Result<std::vector<std::optional<Tensor>>> backward_op(const graph::Op& op, const std::vector<const Value*>& inputs,
                                                       const std::vector<const Value*>& outputs,
                                                       const std::vector<const Tensor*>& output_grads,
                                                       const std::vector<bool>& needs);

}  // namespace planner::runtime_cpu
