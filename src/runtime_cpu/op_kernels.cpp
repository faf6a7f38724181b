// graph::Op -> kernels: attribute and shape checks, then the kernel calls.
#include "planner/runtime_cpu/op_kernels.hpp"

#include "planner/runtime_cpu/op_attrs.hpp"

namespace planner::runtime_cpu {

using namespace detail;

const Tensor* as_float(const Value* v) { return v ? std::get_if<Tensor>(v) : nullptr; }
const IndexTensor* as_index(const Value* v) { return v ? std::get_if<IndexTensor>(v) : nullptr; }
const Shape& value_shape(const Value& v) {
  return std::holds_alternative<Tensor>(v) ? std::get<Tensor>(v).shape : std::get<IndexTensor>(v).shape;
}


Status check_supported(const graph::Op& op) {
  const auto kind = kind_of(op);
  if (!kind)
    return make_error("op '{}' ({}): no CPU kernel for this op type", op.name, graph::op_kind(op));
  if (auto why = unsupported_variant(op, *kind)) return op_error(op, *why);
  return Status::success();
}

bool is_supported(const graph::Op& op) { return check_supported(op).ok(); }

Result<Value> constant_value(const graph::ConstantValues& cv, const Shape& shape, core::DType dtype,
                             std::string_view name) {
  if (static_cast<std::int64_t>(cv.size()) != numel(shape))
    return make_error("constant '{}' holds {} values for shape {}", name, cv.size(), shape_str(shape));
  if (dtype == core::DType::f32 || dtype == core::DType::f64) {
    Tensor t(shape);
    for (std::size_t k = 0; k < cv.size(); ++k)
      t.data[k] = static_cast<float>(cv.is_float ? cv.floats[k] : static_cast<double>(cv.ints[k]));
    return Value(std::move(t));
  }
  if (is_index_dtype(dtype)) {
    IndexTensor t{shape, std::vector<std::int64_t>(cv.size())};
    for (std::size_t k = 0; k < cv.size(); ++k)
      t.data[k] = cv.is_float ? static_cast<std::int64_t>(cv.floats[k]) : cv.ints[k];
    return Value(std::move(t));
  }
  return make_error("constant '{}' has dtype {}; the CPU kernels run fp32 and integers only", name,
                    core::dtype_name(dtype));
}


}  // namespace planner::runtime_cpu
