#pragma once
// Test helper: every structurally valid TensorLayout of a given rank on a
// mesh (each axis replicated, partial, or splitting one dim, in every order
// within a dim), as MindSpore's layout tests enumerate power-of-two meshes.

#include <algorithm>
#include <vector>

#include "planner/layout/tensor_layout.hpp"

namespace planner::layout::testing {

namespace detail {

// Emits every order of the axes within each dim.
inline void emit_orders(const std::vector<std::vector<MeshAxis>>& per_dim, std::size_t d, TensorLayout cur,
                        std::vector<TensorLayout>& out) {
  if (d == per_dim.size()) {
    out.push_back(cur);
    return;
  }
  std::vector<MeshAxis> axes = per_dim[d];
  std::sort(axes.begin(), axes.end());
  do {
    TensorLayout next = cur;
    for (MeshAxis a : axes) next = next.with_split(static_cast<int>(d), a);
    emit_orders(per_dim, d + 1, next, out);
  } while (std::next_permutation(axes.begin(), axes.end()));
}

// role[i]: -2 replicated, -1 partial, d >= 0 splits dim d.
inline void assign(const DeviceMesh& mesh, int rank, bool with_partial, std::vector<int>& role,
                   std::vector<TensorLayout>& out) {
  std::size_t i = role.size();
  if (static_cast<int>(i) == mesh.num_axes()) {
    std::vector<std::vector<MeshAxis>> per_dim(static_cast<std::size_t>(rank));
    TensorLayout base = TensorLayout::replicated(rank);
    for (std::size_t a = 0; a < role.size(); ++a) {
      if (role[a] == -1) base = base.with_partial(MeshAxis(static_cast<int>(a)));
      if (role[a] >= 0) per_dim[static_cast<std::size_t>(role[a])].emplace_back(static_cast<int>(a));
    }
    emit_orders(per_dim, 0, base, out);
    return;
  }
  for (int r = -2; r < rank; ++r) {
    if (r == -1 && !with_partial) continue;
    role.push_back(r);
    assign(mesh, rank, with_partial, role, out);
    role.pop_back();
  }
}

}  // namespace detail

/// All layouts of `rank` on `mesh`, partial sets included when asked.
inline std::vector<TensorLayout> all_layouts(const DeviceMesh& mesh, int rank, bool with_partial = true) {
  std::vector<TensorLayout> out;
  std::vector<int> role;
  detail::assign(mesh, rank, with_partial, role, out);
  return out;
}

/// The layouts of all_layouts() that validate against `shape`.
inline std::vector<TensorLayout> valid_layouts(const DeviceMesh& mesh, std::span<const std::int64_t> shape,
                                               bool with_partial = true) {
  std::vector<TensorLayout> out;
  for (auto& l : all_layouts(mesh, static_cast<int>(shape.size()), with_partial))
    if (l.validate(shape, mesh).ok()) out.push_back(l);
  return out;
}

}  // namespace planner::layout::testing
