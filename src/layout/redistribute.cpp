#include "planner/layout/redistribute.hpp"

#include <algorithm>
#include <cassert>

namespace planner::layout {

std::string_view comm_kind_name(CommKind kind) { return kind ? core::to_string(*kind) : "local_slice"; }

namespace {

// The search state: the current layout against the fixed target.
class Planner {
 public:
  Planner(const TensorLayout& from, const TensorLayout& to, std::span<const std::int64_t> shape,
          core::DType dtype, const DeviceMesh& mesh)
      : cur_(from), to_(to), shape_(shape), elem_(static_cast<double>(core::dtype_size(dtype))), mesh_(mesh) {}

  std::vector<CommStep> run() {
    while (slice() || reduce_scatter() || all_to_all() || all_reduce() || all_gather() || make_partial()) {
    }
    assert(cur_ == to_);
    return std::move(steps_);
  }

 private:
  int rank() const { return cur_.rank(); }

  // Length of the longest common prefix of cur[d] and to[d].
  std::size_t lcp(int d) const {
    auto a = cur_.dim_axes(d);
    auto b = to_.dim_axes(d);
    std::size_t k = 0;
    while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
    return k;
  }
  // The axis the target appends next to dim d, once cur[d] is a prefix of it.
  std::optional<MeshAxis> next_target(int d) const {
    std::size_t n = cur_.dim_axes(d).size();
    if (lcp(d) != n || n >= to_.dim_axes(d).size()) return std::nullopt;
    return to_.dim_axes(d)[n];
  }
  // The minor axis of dim d when it must leave (it lies past the prefix).
  std::optional<MeshAxis> leaving(int d) const {
    auto a = cur_.dim_axes(d);
    if (a.size() <= lcp(d)) return std::nullopt;
    return a.back();
  }
  bool is_replicated_axis(MeshAxis a) const { return !cur_.is_partial(a) && !cur_.split_dim(a); }

  Bytes local_bytes() const {
    double n = 1;
    for (std::int64_t x : cur_.local_shape(shape_, mesh_)) n *= static_cast<double>(x);
    return Bytes(n * elem_);
  }

  // Records a step (unless the axis has size 1) and moves to `next`.
  void emit(CommKind kind, MeshAxis a, Bytes bytes, std::optional<int> gather, std::optional<int> scatter,
            TensorLayout next) {
    cur_ = std::move(next);
    if (mesh_.size(a) == 1) return;
    steps_.push_back(CommStep{kind, a, mesh_.size(a), bytes, gather, scatter, cur_});
  }
  double group(MeshAxis a) const { return static_cast<double>(mesh_.size(a)); }

  bool slice() {
    for (int d = 0; d < rank(); ++d) {
      auto a = next_target(d);
      if (!a || !is_replicated_axis(*a)) continue;
      emit(kLocalSlice, *a, Bytes(0), std::nullopt, d, cur_.with_split(d, *a));
      return true;
    }
    return false;
  }
  bool reduce_scatter() {
    for (int d = 0; d < rank(); ++d) {
      auto a = next_target(d);
      if (!a || !cur_.is_partial(*a)) continue;
      emit(core::Collective::reduce_scatter, *a, local_bytes(), std::nullopt, d, cur_.without(*a).with_split(d, *a));
      return true;
    }
    return false;
  }
  bool all_to_all() {
    for (int d = 0; d < rank(); ++d) {
      auto a = leaving(d);
      if (!a) continue;
      auto target = to_.split_dim(*a);
      if (!target || *target == d || next_target(*target) != a) continue;
      emit(core::Collective::all_to_all, *a, local_bytes(), d, *target, cur_.without(*a).with_split(*target, *a));
      return true;
    }
    return false;
  }
  bool all_reduce() {
    for (MeshAxis a : cur_.partial_axes()) {
      if (to_.is_partial(a) || to_.split_dim(a)) continue;
      emit(core::Collective::all_reduce, a, local_bytes(), std::nullopt, std::nullopt, cur_.without(a));
      return true;
    }
    return false;
  }
  bool all_gather() {
    // First axes the target does not split (they must be gathered anyway),
    // then any leaving axis (a split cycle such as [dp,tp] -> [tp,dp]).
    for (bool any : {false, true}) {
      for (int d = 0; d < rank(); ++d) {
        auto a = leaving(d);
        if (!a || (!any && to_.split_dim(*a))) continue;
        emit(core::Collective::all_gather, *a, local_bytes() * group(*a), d, std::nullopt, cur_.without(*a));
        return true;
      }
    }
    return false;
  }
  bool make_partial() {
    for (MeshAxis a : to_.partial_axes()) {
      if (cur_.is_partial(a)) continue;
      assert(is_replicated_axis(a));
      emit(kLocalSlice, a, Bytes(0), std::nullopt, std::nullopt, cur_.with_partial(a));
      return true;
    }
    return false;
  }

  TensorLayout cur_;
  const TensorLayout& to_;
  std::span<const std::int64_t> shape_;
  double elem_;
  const DeviceMesh& mesh_;
  std::vector<CommStep> steps_;
};

}  // namespace

std::vector<CommStep> redistribute(const TensorLayout& from, const TensorLayout& to,
                                   std::span<const std::int64_t> shape, core::DType dtype,
                                   const DeviceMesh& mesh) {
  assert(from.validate(shape, mesh).ok());
  assert(to.validate(shape, mesh).ok());
  return Planner(from, to, shape, dtype, mesh).run();
}

Bytes total_bytes(std::span<const CommStep> steps) {
  Bytes total;
  for (const CommStep& s : steps) total += s.bytes;
  return total;
}

std::string to_string(const CommStep& step, const DeviceMesh& mesh) {
  std::string where;
  if (step.gather_dim && step.scatter_dim)
    where = fmt::format(" dim {}->{}", *step.gather_dim, *step.scatter_dim);
  else if (step.gather_dim)
    where = fmt::format(" dim {}", *step.gather_dim);
  else if (step.scatter_dim)
    where = fmt::format(" dim {}", *step.scatter_dim);
  else if (step.kind == kLocalSlice)
    where = " partial";
  return fmt::format("{}({} x{}){}: {:.0f} B -> {}", comm_kind_name(step.kind), mesh.name(step.axis),
                     step.group_size, where, step.bytes.value, to_string(step.result, mesh));
}

}  // namespace planner::layout
