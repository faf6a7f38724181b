#pragma once
/// The op layer's reading of a graph::Op: its kind, and the attribute and
/// shape helpers shared by runtime_cpu's op_kernels.cpp, op_forward.cpp and
/// op_backward.cpp and by runtime_cuda's GPU op layer (gpu_ops.cpp), so that
/// both read every attribute the same way. Helpers, not an interface: the
/// `detail` namespace says so.

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "planner/runtime_cpu/elementwise.hpp"
#include "planner/runtime_cpu/gemm.hpp"
#include "planner/runtime_cpu/op_kernels.hpp"
#include "planner/runtime_cpu/shape_ops.hpp"

namespace planner::runtime_cpu::detail {

using Inputs = std::vector<const Value*>;
using Grads = std::vector<std::optional<Tensor>>;

enum class Kind {
  binary, unary, matmul, gemm, layer_norm, rms_norm, softmax, gather, cross_entropy, reduce, reshape, expand,
  transpose, split, concat, slice, trilu, constant, constant_of_shape, cast,
};

struct KindEntry {
  std::string_view type;
  Kind kind;
};

inline constexpr std::array kKinds{
    KindEntry{"Add", Kind::binary}, KindEntry{"Sub", Kind::binary}, KindEntry{"Mul", Kind::binary},
    KindEntry{"Div", Kind::binary}, KindEntry{"Relu", Kind::unary}, KindEntry{"Gelu", Kind::unary},
    KindEntry{"Erf", Kind::unary}, KindEntry{"Sigmoid", Kind::unary}, KindEntry{"Tanh", Kind::unary},
    KindEntry{"Sqrt", Kind::unary}, KindEntry{"Exp", Kind::unary}, KindEntry{"Log", Kind::unary},
    KindEntry{"Neg", Kind::unary}, KindEntry{"Cos", Kind::unary}, KindEntry{"Sin", Kind::unary},
    KindEntry{"MatMul", Kind::matmul}, KindEntry{"Gemm", Kind::gemm},
    KindEntry{"LayerNormalization", Kind::layer_norm}, KindEntry{"RMSNormalization", Kind::rms_norm},
    KindEntry{"Softmax", Kind::softmax}, KindEntry{"Gather", Kind::gather},
    KindEntry{"SoftmaxCrossEntropyLoss", Kind::cross_entropy}, KindEntry{"ReduceMean", Kind::reduce},
    KindEntry{"ReduceSum", Kind::reduce}, KindEntry{"Reshape", Kind::reshape}, KindEntry{"Flatten", Kind::reshape},
    KindEntry{"Squeeze", Kind::reshape}, KindEntry{"Unsqueeze", Kind::reshape}, KindEntry{"Identity", Kind::reshape},
    KindEntry{"Expand", Kind::expand}, KindEntry{"Transpose", Kind::transpose}, KindEntry{"Split", Kind::split},
    KindEntry{"Concat", Kind::concat}, KindEntry{"Slice", Kind::slice}, KindEntry{"Trilu", Kind::trilu},
    KindEntry{"Constant", Kind::constant}, KindEntry{"ConstantOfShape", Kind::constant_of_shape},
    KindEntry{"Cast", Kind::cast},
};

inline std::optional<Kind> kind_of(const graph::Op& op) {
  if (!op.domain.empty() && op.domain != "ai.onnx") return std::nullopt;
  for (const auto& e : kKinds)
    if (e.type == op.type) return e.kind;
  return std::nullopt;
}

inline BinaryOp binary_of(std::string_view t) {
  if (t == "Add") return BinaryOp::add;
  if (t == "Sub") return BinaryOp::sub;
  if (t == "Mul") return BinaryOp::mul;
  return BinaryOp::div;
}

inline UnaryOp unary_of(std::string_view t) {
  if (t == "Relu") return UnaryOp::relu;
  if (t == "Gelu") return UnaryOp::gelu;
  if (t == "Erf") return UnaryOp::erf;
  if (t == "Sigmoid") return UnaryOp::sigmoid;
  if (t == "Tanh") return UnaryOp::tanh;
  if (t == "Sqrt") return UnaryOp::sqrt;
  if (t == "Exp") return UnaryOp::exp;
  if (t == "Log") return UnaryOp::log;
  if (t == "Neg") return UnaryOp::neg;
  if (t == "Cos") return UnaryOp::cos;
  return UnaryOp::sin;
}

inline Error op_error(const graph::Op& op, const std::string& why) { return make_error("op '{}' ({}): {}", op.name, op.type, why); }

/// Why the op layer cannot run `op`, a known kind, as the graph has it, or
/// std::nullopt when it can: an output or input beyond what the kernels
/// compute (LayerNormalization's Mean and InvStdDev outputs,
/// SoftmaxCrossEntropyLoss's class weights, log_prob output or a reduction
/// other than mean), or an omitted output (the interpreters write every
/// output). One phrase naming the input, output or attribute, for op_error.
/// runtime_cpu::check_supported and the GPU op layer both ask it, so the two
/// refuse the same variants before anything runs.
inline std::optional<std::string> unsupported_variant(const graph::Op& op, Kind kind) {
  const auto present = [](const auto& slots, std::size_t i) { return i < slots.size() && slots[i].has_value(); };
  if (kind == Kind::layer_norm) {
    constexpr std::array<std::string_view, 3> kOut{"Y", "Mean", "InvStdDev"};
    for (std::size_t i = 1; i < op.outputs.size(); ++i)
      if (present(op.outputs, i))
        return fmt::format("output {} ({}) is not implemented (the kernels compute output 0, Y, only)", i,
                           i < kOut.size() ? kOut[i] : std::string_view("extra"));
  }
  if (kind == Kind::cross_entropy) {
    if (present(op.inputs, 2)) return std::string("input 2 (class weights) is not implemented");
    if (present(op.outputs, 1))
      return std::string("output 1 (log_prob) is not implemented (the kernels compute the loss only)");
    const std::string reduction = op.attr_string("reduction").value_or("mean");
    if (reduction != "mean") return fmt::format("reduction '{}' is not implemented (mean only)", reduction);
  }
  for (std::size_t i = 0; i < op.outputs.size(); ++i)
    if (!op.outputs[i])
      return fmt::format("output {} is omitted (an empty name), which the interpreters do not support", i);
  return std::nullopt;
}

inline std::optional<std::size_t> norm_axis(std::int64_t a, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (a < -r || a >= r) return std::nullopt;
  return static_cast<std::size_t>(a < 0 ? a + r : a);
}

inline Result<std::size_t> axis_attr(const graph::Op& op, std::string_view name, std::int64_t dflt, std::size_t rank) {
  const std::int64_t a = op.attr_int(name).value_or(dflt);
  auto n = norm_axis(a, rank);
  if (!n) return op_error(op, fmt::format("{} {} is out of range for rank {}", name, a, rank));
  return *n;
}

inline Result<const Tensor*> float_in(const graph::Op& op, const Inputs& in, std::size_t i) {
  if (i >= in.size() || !in[i]) return op_error(op, fmt::format("input {} is missing", i));
  if (const Tensor* t = as_float(in[i])) return t;
  return op_error(op, fmt::format("input {} is an integer tensor; the kernels take fp32 here", i));
}

inline Result<const IndexTensor*> index_in(const graph::Op& op, const Inputs& in, std::size_t i) {
  if (i >= in.size() || !in[i]) return op_error(op, fmt::format("input {} is missing", i));
  if (const IndexTensor* t = as_index(in[i])) return t;
  return op_error(op, fmt::format("input {} must be an integer tensor", i));
}

inline bool is_index_dtype(core::DType t) {
  using core::DType;
  return t == DType::i64 || t == DType::i32 || t == DType::i16 || t == DType::i8 || t == DType::u8 ||
         t == DType::u16 || t == DType::u32 || t == DType::u64 || t == DType::boolean;
}

inline Status check_shape(const graph::Op& op, const Shape& got, const OutputSpec& want) {
  if (got == want.shape) return Status::success();
  return op_error(op, fmt::format("computes shape {} but the output is {}", shape_str(got), shape_str(want.shape)));
}

/// Reduction axes: attribute "axes" (opset < 18 ReduceMean) or input 1;
/// none means all axes unless noop_with_empty_axes.
inline Result<std::vector<std::size_t>> reduce_axes(const graph::Op& op, const Inputs& in, std::size_t rank) {
  std::vector<std::int64_t> raw;
  if (auto a = op.attr_ints("axes")) raw = *a;
  else if (in.size() > 1 && in[1]) {
    PLANNER_TRY(const IndexTensor* t, index_in(op, in, 1));
    raw = t->data;
  }
  std::vector<std::size_t> axes;
  if (raw.empty()) {
    if (op.attr_int("noop_with_empty_axes").value_or(0) != 0) return axes;
    for (std::size_t d = 0; d < rank; ++d) axes.push_back(d);
    return axes;
  }
  for (auto a : raw) {
    auto n = norm_axis(a, rank);
    if (!n) return op_error(op, fmt::format("axis {} is out of range for rank {}", a, rank));
    axes.push_back(*n);
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

inline Result<std::vector<std::size_t>> perm_of(const graph::Op& op, std::size_t rank) {
  std::vector<std::size_t> perm(rank);
  if (auto p = op.attr_ints("perm")) {
    if (p->size() != rank) return op_error(op, "perm has the wrong length");
    std::vector<bool> seen(rank, false);
    for (std::size_t i = 0; i < rank; ++i) {
      auto n = norm_axis((*p)[i], rank);
      if (!n || seen[*n]) return op_error(op, "perm is not a permutation");
      seen[*n] = true;
      perm[i] = *n;
    }
  } else {
    for (std::size_t i = 0; i < rank; ++i) perm[i] = rank - 1 - i;
  }
  return perm;
}

/// ONNX Slice semantics (negative starts/ends count from the end; clamped).
inline Result<SliceBox> slice_box(const graph::Op& op, const Inputs& in, const Shape& shape) {
  PLANNER_TRY(const IndexTensor* starts, index_in(op, in, 1));
  PLANNER_TRY(const IndexTensor* ends, index_in(op, in, 2));
  const std::size_t n = starts->data.size(), r = shape.size();
  if (ends->data.size() != n) return op_error(op, "starts and ends differ in length");
  std::vector<std::int64_t> axes(n), steps(n, 1);
  for (std::size_t i = 0; i < n; ++i) axes[i] = static_cast<std::int64_t>(i);
  if (in.size() > 3 && in[3]) {
    PLANNER_TRY(const IndexTensor* a, index_in(op, in, 3));
    if (a->data.size() != n) return op_error(op, "axes differs in length from starts");
    axes = a->data;
  }
  if (in.size() > 4 && in[4]) {
    PLANNER_TRY(const IndexTensor* s, index_in(op, in, 4));
    if (s->data.size() != n) return op_error(op, "steps differs in length from starts");
    steps = s->data;
  }
  SliceBox box{Shape(r, 0), Shape(r, 1), shape};
  for (std::size_t i = 0; i < n; ++i) {
    auto ax = norm_axis(axes[i], r);
    if (!ax) return op_error(op, fmt::format("slice axis {} is out of range", axes[i]));
    const std::int64_t dim = shape[*ax], step = steps[i];
    if (step == 0) return op_error(op, "slice step 0");
    std::int64_t s = starts->data[i], e = ends->data[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (step > 0) {
      s = std::clamp<std::int64_t>(s, 0, dim);
      e = std::clamp<std::int64_t>(e, 0, dim);
      box.out[*ax] = std::max<std::int64_t>(0, (e - s + step - 1) / step);
    } else {
      s = std::clamp<std::int64_t>(s, 0, dim - 1);
      e = std::clamp<std::int64_t>(e, -1, dim - 1);
      box.out[*ax] = std::max<std::int64_t>(0, (s - e + (-step) - 1) / (-step));
    }
    box.start[*ax] = s;
    box.step[*ax] = step;
  }
  return box;
}

inline GemmAttrs gemm_attrs(const graph::Op& op) {
  GemmAttrs g;
  g.trans_a = op.attr_int("transA").value_or(0) != 0;
  g.trans_b = op.attr_int("transB").value_or(0) != 0;
  g.alpha = static_cast<float>(op.attr_float("alpha").value_or(1.0));
  g.beta = static_cast<float>(op.attr_float("beta").value_or(1.0));
  return g;
}

inline std::optional<std::int64_t> ignore_index_of(const graph::Op& op) { return op.attr_int("ignore_index"); }


}  // namespace planner::runtime_cpu::detail
