#pragma once
// Private to runtime_cpu: index helpers shared by the kernels.

#include <cmath>
#include <cstdint>
#include <vector>

#include "planner/runtime_cpu/tensor.hpp"

namespace planner::runtime_cpu::detail {

/// std::exp(v), with the arguments whose result rounds to +0 in double
/// (below -745.2; the smallest subnormal is exp(-744.44)) answered without
/// calling it: glibc's exp takes a slow underflow path (and sets errno)
/// there, which masked scores (-1e4, -inf) hit on every masked element.
/// Bit-identical to std::exp.
inline double exp_or_zero(double v) { return v < -746.0 ? 0.0 : std::exp(v); }

/// For each flat index of `out`, the flat index of `in` that numpy
/// broadcasting reads (shapes aligned on the right, dims of 1 repeated).
/// Requires: `in` broadcasts to `out`.
std::vector<std::int64_t> broadcast_map(const Shape& in, const Shape& out);

/// Broadcast reads of one or two inputs as runs along the last axis of
/// `out`, without a per-element index map: for each run, the flat offset in
/// `out`, each input's flat offset of the run's first element and its stride
/// along the run (0 where that input is broadcast, else 1), and the run's
/// length (out's last dim; 1 for a scalar). Requires: every input broadcasts
/// to `out`.
struct BroadcastRuns {
  BroadcastRuns(const Shape& out, const Shape& in0, const Shape& in1);
  template <class F>
  void each(F&& f) const {  // f(out_offset, in0_offset, in0_stride, in1_offset, in1_stride, length)
    const std::size_t r = out_.size();
    if (numel(out_) == 0) return;
    const std::int64_t len = r == 0 ? 1 : out_[r - 1];
    const std::int64_t rows = len == 0 ? 0 : numel(out_) / len;
    std::vector<std::int64_t> idx(r, 0);
    std::int64_t p0 = 0, p1 = 0;
    for (std::int64_t row = 0; row < rows; ++row) {
      f(row * len, p0, r == 0 ? 0 : st0_[r - 1], p1, r == 0 ? 0 : st1_[r - 1], len);
      for (std::size_t d = r - 1; d-- > 0;) {  // odometer over the axes before the last
        if (++idx[d] < out_[d]) {
          p0 += st0_[d];
          p1 += st1_[d];
          break;
        }
        p0 -= st0_[d] * (out_[d] - 1);
        p1 -= st1_[d] * (out_[d] - 1);
        idx[d] = 0;
      }
    }
  }

 private:
  Shape out_, st0_, st1_;
};

/// Splits `shape` at `axis` into outer (product before), n (shape[axis]) and
/// inner (product after).
struct AxisSplit {
  std::int64_t outer = 1, n = 1, inner = 1;
};
AxisSplit split_at(const Shape& shape, std::size_t axis);

inline std::size_t uz(std::int64_t v) { return static_cast<std::size_t>(v); }

}  // namespace planner::runtime_cpu::detail
