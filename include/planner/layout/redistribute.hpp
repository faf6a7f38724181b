#pragma once
/// Redistribution: the collectives that turn a tensor laid out one way into
/// the same tensor laid out another way, derived mechanically from the two
/// TensorLayouts (MindSpore's redistribution operator list, GSPMD's
/// resharding), one step per mesh axis move.
///
/// Per axis, from -> to:
///   partial    -> replicated   all_reduce     over the axis
///   partial    -> split(d)     reduce_scatter over the axis, scattering dim d
///   split(d)   -> replicated   all_gather     over the axis, gathering dim d
///   replicated -> split(d)     local_slice    (no communication)
///   split(a)   -> split(b)     all_to_all     (gathers dim a, scatters dim b)
///   replicated -> partial      local_slice without a dim: the member with
///                              coordinate 0 keeps the value, the others hold
///                              zeros (no communication)
///   split(d)   -> partial      all_gather, then the local split above
/// When several axes split one dim their order matters ([dp*tp] != [tp*dp]):
/// an axis stays in place only inside the longest common prefix of the two
/// lists; axes after it leave from the minor end (all_gather or all_to_all)
/// and new ones are appended in target order (local_slice, reduce_scatter or
/// all_to_all). A reordering such as [dp*tp] -> [tp*dp] thus costs gathers of
/// tp and dp, then two slices ("gather then slice").
///
/// Order of steps (deterministic; first applicable move wins, repeated):
///   1. local_slice      a replicated axis the target splits next on a dim
///   2. reduce_scatter   a partial axis the target splits next on a dim
///   3. all_to_all       an axis leaving one dim that another dim takes next
///   4. all_reduce       a partial axis the target replicates
///   5. all_gather       an axis leaving a dim (axes the target does not split
///                       first, lower dims first)
///   6. local_slice      axes the target makes partial, at the end
/// Shrinking moves come first so collectives carry the least data; every
/// intermediate layout is valid for the shape. Ties break by dim, then by
/// mesh axis order. Axes of size 1 move no data and produce no step.
///
/// Message size convention (CommStep::bytes, per device), the S of the
/// BRIEF §3 formulas and of cluster::collective_time:
///   all_reduce      the buffer each device reduces (its local size)
///   all_gather      the FULL gathered output each device ends with
///                   (n x its local size before the step)
///   reduce_scatter  the FULL input each device starts with
///                   (n x its local size after the step)
///   all_to_all      each device's whole local buffer (same before and after)
///   local_slice     0
/// send_recv and broadcast are never produced here (pipeline transfers and
/// weight broadcasts use them); local_slice is the step without a collective
/// (CommKind's nullopt).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "planner/core/collective.hpp"
#include "planner/core/units.hpp"
#include "planner/core/dtype.hpp"
#include "planner/layout/mesh.hpp"
#include "planner/layout/tensor_layout.hpp"

namespace planner::layout {

/// What a step of a redistribution does: a collective over the step's axis,
/// or none (nullopt): a local slice, which moves no data between devices.
using CommKind = std::optional<core::Collective>;
/// The local step (no communication).
inline constexpr CommKind kLocalSlice = std::nullopt;

/// Name of a kind: the collective's name ("all_reduce", "all_gather", ...),
/// "local_slice" for the local step.
std::string_view comm_kind_name(CommKind kind);
/// True for kinds that move no data between devices (the local slice).
inline bool is_local(CommKind kind) { return !kind; }

/// One step: a collective run concurrently by every group of `axis`.
struct CommStep {
  CommKind kind = kLocalSlice;
  MeshAxis axis;
  /// Members of each group (mesh size of `axis`).
  int group_size = 1;
  /// Per-device message size, by the convention in the header note.
  Bytes bytes;
  /// Dim whose split over `axis` is removed (all_gather: the dim gathered;
  /// all_to_all: the dim concatenated). Absent for other kinds.
  std::optional<int> gather_dim;
  /// Dim newly split over `axis` (reduce_scatter, local_slice, all_to_all:
  /// the dim cut into group_size pieces, piece k to coordinate k). Absent for
  /// all_reduce, all_gather, and a local_slice that makes the tensor partial.
  std::optional<int> scatter_dim;
  /// The layout after this step.
  TensorLayout result;
  friend bool operator==(const CommStep&, const CommStep&) = default;
};

/// The steps from `from` to `to`, in order (empty when equal).
/// Requires: from.validate(shape, mesh) and to.validate(shape, mesh) ok.
std::vector<CommStep> redistribute(const TensorLayout& from, const TensorLayout& to,
                                   std::span<const std::int64_t> shape, core::DType dtype,
                                   const DeviceMesh& mesh);

/// Sum of the steps' bytes.
Bytes total_bytes(std::span<const CommStep> steps);

/// One line for logs: `all_gather(tp x4) dim 1: 1024 B -> [dp,-]`.
std::string to_string(const CommStep& step, const DeviceMesh& mesh);

}  // namespace planner::layout
