#pragma once
/// TensorLayout: how one tensor is spread over a DeviceMesh (the "tensor map"
/// of MindSpore's tensor_layout, the value-type spirit of XLA's HloSharding).
/// See layout.hpp for the module's design note and docs/layout-grammar.md for
/// the text form.
///
/// Encoded state, per mesh axis, exactly one role:
///   - split:      the axis appears in the list of exactly one tensor dim;
///   - partial:    the axis is in the partial set: the tensor is the SUM of
///                 the pieces held along that axis (a pending reduction);
///   - replicated: neither: every member of the axis's groups holds the same.
/// A dim split over axes [a1, a2, ..., ak] (major first) is cut into
/// n = size(a1)*...*size(ak) equal blocks; the device with coordinates
/// (c1..ck) on those axes holds block c1*size(a2)*..*size(ak) + ... + ck
/// (mixed radix, a1 most significant). So [dp,tp] != [tp,dp].
///
/// The value itself does not enforce the one-role rule or divisibility:
/// validate() does, so that invalid layouts can still be printed in errors.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/layout/mesh.hpp"

namespace planner::layout {

/// Global tensor shape (graph::Tensor::shape); every dim >= 0.
using Shape = std::span<const std::int64_t>;

/// The rectangle of the global tensor that one device holds.
struct Block {
  std::vector<std::int64_t> offset;  ///< first index of the block, per dim
  std::vector<std::int64_t> extent;  ///< block size per dim (= local shape)
  friend bool operator==(const Block&, const Block&) = default;
};

/// Sharding of one tensor over a mesh: per dim an ordered list of mesh axes,
/// plus the set of axes over which it is a partial sum.
class TensorLayout {
 public:
  /// Rank 0 (a scalar), replicated.
  TensorLayout() = default;

  /// Every dim whole on every device. Requires: rank >= 0.
  static TensorLayout replicated(int rank);
  /// Replicated except `dim`, split over `axis`. Requires: 0 <= dim < rank.
  static TensorLayout split(int rank, int dim, MeshAxis axis);
  /// Replicated data that is a partial sum over `axis`.
  static TensorLayout partial(int rank, MeshAxis axis);

  /// A copy with `axis` appended to `dim`'s list (as its minor, fastest
  /// axis): with_split(0, dp).with_split(0, tp) is [dp*tp,...].
  /// Requires: 0 <= dim < rank(), 0 <= axis.index() < kMaxMeshAxes.
  TensorLayout with_split(int dim, MeshAxis axis) const;
  /// A copy with `axis` added to the partial set.
  TensorLayout with_partial(MeshAxis axis) const;
  /// A copy with `axis` removed from whichever role it has (replicated).
  TensorLayout without(MeshAxis axis) const;

  /// Number of tensor dims.
  int rank() const { return static_cast<int>(dims_.size()); }
  /// Axes splitting `dim`, major first; empty = whole. Requires: valid dim.
  std::span<const MeshAxis> dim_axes(int dim) const { return dims_[static_cast<std::size_t>(dim)]; }
  /// True when the tensor is a partial sum over `axis`.
  bool is_partial(MeshAxis axis) const { return (partial_ >> axis.index()) & 1U; }
  /// Partial axes in mesh order.
  std::vector<MeshAxis> partial_axes() const;
  /// Partial set as a bitmask (bit i = axis i).
  std::uint32_t partial_mask() const { return partial_; }
  /// The dim `axis` splits, if any (the first, if an invalid layout has more).
  std::optional<int> split_dim(MeshAxis axis) const;
  /// True when no dim is split and nothing is partial.
  bool is_replicated() const;

  /// Checks the layout against a shape and mesh. Errors (one line, naming
  /// the dim and axis): rank mismatch; an axis outside the mesh; an axis
  /// used twice (in one dim, in two dims, or split and partial); a dim whose
  /// size the product of its axes' sizes does not divide.
  Status validate(Shape shape, const DeviceMesh& mesh) const;
  /// The shape-free part of validate(): axes inside the mesh, one role each.
  Status validate_structure(const DeviceMesh& mesh) const;

  /// Number of blocks `dim` is cut into. Requires: valid dim and axes.
  std::int64_t shard_count(int dim, const DeviceMesh& mesh) const;
  /// Shape every device holds. Requires: validate(shape, mesh).ok().
  std::vector<std::int64_t> local_shape(Shape shape, const DeviceMesh& mesh) const;
  /// Which block of the global tensor `rank` holds (its addend of it when
  /// partial). Requires: validate(shape, mesh).ok(), 0 <= rank < devices.
  Block local_block(Shape shape, const DeviceMesh& mesh, int rank) const;

  /// Hash consistent with ==.
  std::size_t hash() const;
  friend bool operator==(const TensorLayout&, const TensorLayout&) = default;

 private:
  std::vector<std::vector<MeshAxis>> dims_;
  std::uint32_t partial_ = 0;
};

/// The canonical text form (docs/layout-grammar.md): `[dp*tp,-]partial(cp)`,
/// `[-,tp]`, `[]` for a replicated scalar. Partial axes print in mesh order.
/// An axis outside the mesh prints as `#i` (such text does not parse).
std::string to_string(const TensorLayout& layout, const DeviceMesh& mesh);

/// Parses the canonical text form; spaces between tokens and partial axes in
/// any order are accepted. Errors (one line) name the column: syntax, an
/// unknown axis name, an axis used twice. Shape checks are validate()'s job.
Result<TensorLayout> parse_layout(std::string_view text, const DeviceMesh& mesh);

/// MindSpore `shard()` strategy of one tensor: per dim the number of blocks,
/// e.g. [dp,-] on mesh(dp=4,tp=2) gives (4,1). Partial sets are dropped (a
/// strategy cannot express them).
std::vector<std::int64_t> to_shard_strategy(const TensorLayout& layout, const DeviceMesh& mesh);

/// The layout whose strategy is `counts`, when exactly one assignment of
/// mesh axes (of size > 1) to dims gives these counts; several axes on one
/// dim are taken in mesh order. Errors name the strategy and, when
/// ambiguous, two candidate layouts; none is partial.
Result<TensorLayout> from_shard_strategy(std::span<const std::int64_t> counts, const DeviceMesh& mesh);

}  // namespace planner::layout

template <>
struct std::hash<planner::layout::TensorLayout> {
  std::size_t operator()(const planner::layout::TensorLayout& l) const noexcept { return l.hash(); }
};
