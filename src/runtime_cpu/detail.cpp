#include "detail.hpp"

#include <cassert>

namespace planner::runtime_cpu::detail {

std::vector<std::int64_t> broadcast_map(const Shape& in, const Shape& out) {
  assert(in.size() <= out.size());
  const std::size_t r = out.size(), off = r - in.size();
  // Stride of `in` seen from each output axis: 0 where broadcast.
  Shape ist = strides_of(in), st(r, 0);
  for (std::size_t d = 0; d < in.size(); ++d) st[d + off] = in[d] == 1 ? 0 : ist[d];
  std::vector<std::int64_t> map(uz(numel(out)));
  Shape idx(r, 0);
  std::int64_t pos = 0;
  for (std::size_t k = 0; k < map.size(); ++k) {
    map[k] = pos;
    for (std::size_t d = r; d-- > 0;) {  // odometer, last axis fastest
      if (++idx[d] < out[d]) {
        pos += st[d];
        break;
      }
      pos -= st[d] * (out[d] - 1);
      idx[d] = 0;
    }
  }
  return map;
}

namespace {

// Stride of `in` seen from each axis of `out`: 0 where broadcast.
Shape broadcast_strides(const Shape& in, const Shape& out) {
  assert(in.size() <= out.size());
  const std::size_t off = out.size() - in.size();
  Shape ist = strides_of(in), st(out.size(), 0);
  for (std::size_t d = 0; d < in.size(); ++d) st[d + off] = in[d] == 1 ? 0 : ist[d];
  return st;
}

}  // namespace

BroadcastRuns::BroadcastRuns(const Shape& out, const Shape& in0, const Shape& in1)
    : out_(out), st0_(broadcast_strides(in0, out)), st1_(broadcast_strides(in1, out)) {}

AxisSplit split_at(const Shape& shape, std::size_t axis) {
  AxisSplit s;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (d < axis) s.outer *= shape[d];
    else if (d == axis) s.n = shape[d];
    else s.inner *= shape[d];
  }
  return s;
}

}  // namespace planner::runtime_cpu::detail
