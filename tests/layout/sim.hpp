#pragma once
// Test helper: a distributed tensor simulated with real integer arrays, one
// per device, and the collectives of CommStep applied to them as an MPI
// program would. Independent of redistribute()'s bookkeeping: it reads only
// a step's kind, axis and dims, and checks its group_size and bytes.

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "planner/core/dtype.hpp"
#include "planner/layout/redistribute.hpp"

namespace planner::layout::testing {

/// A dense row-major int64 array.
struct Array {
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> data;
  friend bool operator==(const Array&, const Array&) = default;
};

inline std::int64_t numel(const std::vector<std::int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
}

/// The global tensor 1, 2, 3, ... (distinct values, so misplacement shows).
inline Array iota_array(std::vector<std::int64_t> shape) {
  Array a{std::move(shape), {}};
  a.data.resize(static_cast<std::size_t>(numel(a.shape)));
  std::iota(a.data.begin(), a.data.end(), 1);
  return a;
}

/// Elements [start, start+len) of `a` along `dim`.
inline Array take(const Array& a, int dim, std::int64_t start, std::int64_t len) {
  std::size_t d = static_cast<std::size_t>(dim);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < d; ++i) outer *= a.shape[i];
  for (std::size_t i = d + 1; i < a.shape.size(); ++i) inner *= a.shape[i];
  Array r{a.shape, {}};
  r.shape[d] = len;
  for (std::int64_t o = 0; o < outer; ++o) {
    auto first = a.data.begin() + (o * a.shape[d] + start) * inner;
    r.data.insert(r.data.end(), first, first + len * inner);
  }
  return r;
}

/// Piece k of n equal pieces of `a` along `dim`. Requires: n divides it.
inline Array piece(const Array& a, int dim, int n, int k) {
  std::int64_t len = a.shape[static_cast<std::size_t>(dim)] / n;
  return take(a, dim, k * len, len);
}

/// Concatenation along `dim`. Requires: parts agree on the other dims.
inline Array concat(const std::vector<Array>& parts, int dim) {
  std::size_t d = static_cast<std::size_t>(dim);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < d; ++i) outer *= parts[0].shape[i];
  for (std::size_t i = d + 1; i < parts[0].shape.size(); ++i) inner *= parts[0].shape[i];
  Array r{parts[0].shape, {}};
  r.shape[d] = 0;
  for (const Array& p : parts) r.shape[d] += p.shape[d];
  for (std::int64_t o = 0; o < outer; ++o)
    for (const Array& p : parts) {
      auto first = p.data.begin() + o * p.shape[d] * inner;
      r.data.insert(r.data.end(), first, first + p.shape[d] * inner);
    }
  return r;
}

/// The block of `global` that `layout` assigns to `rank`.
inline Array block_of(const Array& global, const TensorLayout& layout, const DeviceMesh& mesh, int rank) {
  Block b = layout.local_block(global.shape, mesh, rank);
  Array r = global;
  for (int d = 0; d < layout.rank(); ++d)
    r = take(r, d, b.offset[static_cast<std::size_t>(d)], b.extent[static_cast<std::size_t>(d)]);
  return r;
}

/// Index of `rank` among the members of its partial group (mixed radix over
/// the partial axes) and the rank of the group's first member.
inline std::pair<int, int> partial_index(const TensorLayout& layout, const DeviceMesh& mesh, int rank) {
  int index = 0, leader = rank;
  for (MeshAxis a : layout.partial_axes()) {
    int c = mesh.coord(rank, a);
    index = index * mesh.size(a) + c;
    leader -= c * mesh.stride(a);
  }
  return {index, leader};
}

/// One array per device holding `global` laid out as `layout`. Partial axes
/// split each value into pseudo-random addends, the last member taking the
/// remainder, so only a real reduction recovers it.
inline std::vector<Array> distribute(const Array& global, const TensorLayout& layout, const DeviceMesh& mesh) {
  int members = 1;
  for (MeshAxis a : layout.partial_axes()) members *= mesh.size(a);
  std::vector<Array> out;
  for (int r = 0; r < mesh.devices(); ++r) {
    Array a = block_of(global, layout, mesh, r);
    auto [index, leader] = partial_index(layout, mesh, r);
    auto addend = [&, leader = leader](int j, std::size_t e) {
      return static_cast<std::int64_t>((j + 1) * 7919 + static_cast<int>(e) * 104729 + leader * 31) % 101 - 50;
    };
    for (std::size_t e = 0; e < a.data.size(); ++e) {
      if (index < members - 1) {
        a.data[e] = addend(index, e);
      } else {
        for (int j = 0; j < members - 1; ++j) a.data[e] -= addend(j, e);
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

inline Array sum(const std::vector<Array>& parts) {
  Array r = parts[0];
  for (std::size_t i = 1; i < parts.size(); ++i)
    for (std::size_t e = 0; e < r.data.size(); ++e) r.data[e] += parts[i].data[e];
  return r;
}

/// Applies one step to every group of its axis. Returns "" or what was
/// wrong (a shape mismatch, a wrong group size or message size).
inline std::string apply(std::vector<Array>& dev, const CommStep& s, const DeviceMesh& mesh,
                         core::DType dtype) {
  const int n = mesh.size(s.axis);
  if (s.group_size != n) return fmt::format("group size {} != {}", s.group_size, n);
  const double esize = static_cast<double>(core::dtype_size(dtype));
  auto bytes_of = [&](const Array& a) { return static_cast<double>(a.data.size()) * esize; };
  std::vector<Array> next = dev;
  for (int leader = 0; leader < mesh.devices(); ++leader) {
    if (mesh.coord(leader, s.axis) != 0) continue;
    std::vector<int> g = mesh.group_ranks(s.axis, leader);
    std::vector<Array> in;
    for (int r : g) in.push_back(dev[static_cast<std::size_t>(r)]);
    for (const Array& a : in)
      if (a.shape != in[0].shape) return "group members hold different shapes";
    double expect = 0;
    if (is_local(s.kind)) {
        if (s.gather_dim) return "local_slice with gather_dim";
        for (int k = 0; k < n; ++k) {
          Array& out = next[static_cast<std::size_t>(g[static_cast<std::size_t>(k)])];
          if (s.scatter_dim) {
            if (in[0].shape[static_cast<std::size_t>(*s.scatter_dim)] % n != 0) return "local_slice: indivisible";
            out = piece(in[static_cast<std::size_t>(k)], *s.scatter_dim, n, k);
          } else if (k > 0) {
            std::fill(out.data.begin(), out.data.end(), 0);
          }
        }
    } else switch (*s.kind) {
      case core::Collective::all_reduce: {
        if (s.gather_dim || s.scatter_dim) return "all_reduce with a dim";
        Array t = sum(in);
        for (int r : g) next[static_cast<std::size_t>(r)] = t;
        expect = bytes_of(t);
        break;
      }
      case core::Collective::all_gather: {
        if (!s.gather_dim || s.scatter_dim) return "all_gather needs exactly gather_dim";
        Array t = concat(in, *s.gather_dim);
        for (int r : g) next[static_cast<std::size_t>(r)] = t;
        expect = bytes_of(t);
        break;
      }
      case core::Collective::reduce_scatter: {
        if (!s.scatter_dim || s.gather_dim) return "reduce_scatter needs exactly scatter_dim";
        Array t = sum(in);
        if (t.shape[static_cast<std::size_t>(*s.scatter_dim)] % n != 0) return "reduce_scatter: indivisible";
        for (int k = 0; k < n; ++k) next[static_cast<std::size_t>(g[static_cast<std::size_t>(k)])] = piece(t, *s.scatter_dim, n, k);
        expect = bytes_of(t);
        break;
      }
      case core::Collective::all_to_all: {
        if (!s.scatter_dim || !s.gather_dim) return "all_to_all needs both dims";
        if (in[0].shape[static_cast<std::size_t>(*s.scatter_dim)] % n != 0) return "all_to_all: indivisible";
        for (int j = 0; j < n; ++j) {
          std::vector<Array> received;
          for (int i = 0; i < n; ++i) received.push_back(piece(in[static_cast<std::size_t>(i)], *s.scatter_dim, n, j));
          next[static_cast<std::size_t>(g[static_cast<std::size_t>(j)])] = concat(received, *s.gather_dim);
        }
        expect = bytes_of(in[0]);
        break;
      }
      case core::Collective::send_recv:
      case core::Collective::broadcast: return "redistribute produced send_recv or broadcast";
    }
    if (s.bytes.value != expect) return fmt::format("bytes {} != expected {}", s.bytes.value, expect);
  }
  dev = std::move(next);
  return "";
}

/// "" when the devices hold `global` laid out as `layout` (partial groups
/// summing to their block), else the first device and what differs.
inline std::string check(const std::vector<Array>& dev, const Array& global, const TensorLayout& layout,
                         const DeviceMesh& mesh) {
  auto want_shape = layout.local_shape(global.shape, mesh);
  // Sum each partial group into its first member's slot.
  std::vector<Array> total(dev.size());
  for (int r = 0; r < mesh.devices(); ++r) {
    const Array& a = dev[static_cast<std::size_t>(r)];
    if (a.shape != want_shape) return fmt::format("rank {}: local shape [{}]", r, fmt::join(a.shape, ","));
    Array& t = total[static_cast<std::size_t>(partial_index(layout, mesh, r).second)];
    if (t.data.empty()) {
      t = a;
    } else {
      for (std::size_t e = 0; e < a.data.size(); ++e) t.data[e] += a.data[e];
    }
  }
  for (int r = 0; r < mesh.devices(); ++r) {
    if (partial_index(layout, mesh, r).first != 0) continue;
    if (total[static_cast<std::size_t>(r)].data != block_of(global, layout, mesh, r).data)
      return fmt::format("rank {}: values differ from the target block", r);
  }
  return "";
}

}  // namespace planner::layout::testing
