#include "planner/runtime_cpu/tensor.hpp"

#include <cassert>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace planner::runtime_cpu {

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

Shape strides_of(const Shape& s) {
  Shape st(s.size(), 1);
  for (std::size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

Tensor::Tensor(Shape s) : shape(std::move(s)), data(static_cast<std::size_t>(numel(shape)), 0.0f) {}

Tensor::Tensor(Shape s, std::vector<float> values) : shape(std::move(s)), data(std::move(values)) {
  assert(static_cast<std::int64_t>(data.size()) == numel(shape));
}

}  // namespace planner::runtime_cpu
