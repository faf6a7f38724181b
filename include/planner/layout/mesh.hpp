#pragma once
/// The device mesh: N devices arranged as a grid of named axes ("dp", "tp",
/// "pp", "cp", "ep", ...). Ranks are numbered row-major with the LAST axis
/// varying fastest, so in `mesh(dp=4,tp=8)` the 8 ranks of one tensor-parallel
/// group are consecutive and fill a node before any other axis does.
///
/// Topology: devices 0..k-1 form node 0, k..2k-1 node 1, ... (k =
/// devices_per_node). For each axis the mesh records how many ranks of one of
/// its collective groups share a node (`ranks_per_node`); every group of the
/// axis must be split evenly over the nodes it touches, which is what the
/// collective cost model (`cluster::Placement`) expects.
///
///   mesh(dp=4,tp=2;per_node=4)      rank = 2*dp + tp
///     node 0: r0 r1 r2 r3           tp groups {0,1} {2,3} ...: 2 ranks/node
///     node 1: r4 r5 r6 r7           dp groups {0,2,4,6} ...:  2 ranks/node,
///                                   spanning 2 nodes (AxisLevel::mixed)
///
/// Text form: `mesh(dp=4,tp=2)` (all devices in one node) or
/// `mesh(dp=4,tp=2;per_node=4)`; see docs/layout-grammar.md.

#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "planner/core/result.hpp"

namespace planner::layout {

/// Strong id of a mesh axis: its index in the mesh, outermost (slowest) first.
class MeshAxis {
 public:
  constexpr MeshAxis() = default;
  constexpr explicit MeshAxis(int index) : index_(index) {}
  /// Position of the axis in its mesh, 0-based.
  constexpr int index() const { return index_; }
  friend constexpr auto operator<=>(MeshAxis, MeshAxis) = default;
  friend constexpr bool operator==(MeshAxis, MeshAxis) = default;

 private:
  int index_ = 0;
};

/// A mesh has at most this many axes (partial-sum sets are bitmasks).
inline constexpr int kMaxMeshAxes = 16;

/// One axis as given to DeviceMesh::create: a name ([A-Za-z_][A-Za-z0-9_]*,
/// unique within the mesh) and a size >= 1.
struct AxisSpec {
  std::string name;
  int size = 1;
};

/// Where the groups of one axis sit relative to nodes.
enum class AxisLevel : std::uint8_t {
  intra_node,  ///< every group lies inside one node (level 0)
  inter_node,  ///< every member of a group is on a different node (level 1)
  mixed,       ///< groups span several nodes with several ranks on each
};

/// Name of an AxisLevel: "intra_node", "inter_node", "mixed".
std::string_view axis_level_name(AxisLevel level);

/// An immutable grid of devices with named axes and a node size.
class DeviceMesh {
 public:
  /// A mesh of one device and no axes (`mesh()`).
  DeviceMesh();

  /// Builds a mesh. `devices_per_node` absent (or >= devices()) puts every
  /// device in one node. Errors (one line) on: more than kMaxMeshAxes axes, a
  /// bad or duplicate name, a size < 1, more than 2^31-1 devices,
  /// devices_per_node < 1 or not dividing devices() when smaller, or an axis
  /// whose groups are not spread evenly over nodes.
  static Result<DeviceMesh> create(std::vector<AxisSpec> axes,
                                   std::optional<int> devices_per_node = std::nullopt);

  /// Parses the canonical text form (`mesh(dp=4,tp=2;per_node=4)`); spaces
  /// between tokens are allowed. Errors name the column.
  static Result<DeviceMesh> parse(std::string_view text);

  /// Number of axes.
  int num_axes() const { return static_cast<int>(axes_.size()); }
  /// All axes, outermost first.
  std::vector<MeshAxis> axes() const;
  /// Total number of devices (product of the axis sizes; 1 with no axes).
  int devices() const { return devices_; }
  /// Devices per node, normalised to at most devices().
  int devices_per_node() const { return devices_per_node_; }
  /// Number of nodes the mesh occupies.
  int nodes() const { return devices_ / devices_per_node_; }

  /// Requires: axis.index() < num_axes().
  const std::string& name(MeshAxis axis) const { return at(axis).name; }
  /// Requires: axis.index() < num_axes().
  int size(MeshAxis axis) const { return at(axis).size; }
  /// Rank distance between neighbours along the axis (product of the sizes of
  /// the axes after it). Requires: valid axis.
  int stride(MeshAxis axis) const { return at(axis).stride; }
  /// Ranks of one group of the axis that share a node (1..size).
  int ranks_per_node(MeshAxis axis) const { return at(axis).ranks_per_node; }
  /// Nodes one group of the axis touches: size / ranks_per_node.
  int nodes_spanned(MeshAxis axis) const { return size(axis) / ranks_per_node(axis); }
  /// Level of the axis; a size-1 axis is intra_node.
  AxisLevel level(MeshAxis axis) const;
  /// The axis with this name, if any.
  std::optional<MeshAxis> find(std::string_view name) const;

  /// Rank of the device at these coordinates (one per axis, outermost first).
  /// Requires: coords.size() == num_axes(), 0 <= coords[i] < size(i).
  int rank_of(std::span<const int> coords) const;
  /// Coordinates of a rank. Requires: 0 <= rank < devices().
  std::vector<int> coords_of(int rank) const;
  /// One coordinate of a rank. Requires: valid axis and rank.
  int coord(int rank, MeshAxis axis) const { return (rank / stride(axis)) % size(axis); }
  /// The ranks of the collective group along `axis` that contains `rank`, in
  /// order of their coordinate on the axis. Requires: valid axis and rank.
  std::vector<int> group_ranks(MeshAxis axis, int rank) const;
  /// Node of a rank.
  int node_of(int rank) const { return rank / devices_per_node_; }

  friend bool operator==(const DeviceMesh& a, const DeviceMesh& b);

 private:
  struct Axis {
    std::string name;
    int size = 1;
    int stride = 1;
    int ranks_per_node = 1;
    friend bool operator==(const Axis&, const Axis&) = default;
  };
  const Axis& at(MeshAxis axis) const;

  std::vector<Axis> axes_;
  int devices_ = 1;
  int devices_per_node_ = 1;
};

/// Canonical text: `mesh(dp=4,tp=2)`, plus `;per_node=K` when the mesh spans
/// more than one node. DeviceMesh::parse reads it back to an equal mesh.
std::string to_string(const DeviceMesh& mesh);

}  // namespace planner::layout

template <>
struct std::hash<planner::layout::MeshAxis> {
  std::size_t operator()(planner::layout::MeshAxis a) const noexcept {
    return std::hash<int>{}(a.index());
  }
};
