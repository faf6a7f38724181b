#pragma once
/// ONNX importer: ModelProto -> graph::OpGraph with a static shape on every
/// tensor, per-op costs (through `ops`), trainable parameters marked.
///
/// Pipeline (src/onnx/):
///   read + size check (>= 2 GiB single file: refused, points to external data)
///   -> parse ModelProto (protobuf) -> bind symbolic dims (--dim, --batch)
///   -> topological sort (a cycle names an op on it)
///   -> ONNX shape inference WITHOUT data propagation (it crashes on some graphs)
///   -> own propagation in topo order with small-integer value tracking
///      (Shape/Gather/Concat/Div/.. chains feeding Reshape, Slice, Expand, Range)
///   -> graph::OpGraph, ops::annotate, parameters, batch axes,
///      attention patterns and repeated blocks (graph::analyze).
/// Initializers held as external data are never opened: only dims and dtype
/// are used, so a model whose .data file is absent imports.
///
/// Roles: float initializers are parameters, except scalars (epsilons,
/// scales) and BatchNormalization running statistics, which are constants;
/// float tensors computed only from constants and read as a weight
/// (Conv/MatMul/Gemm/normalisation/embedding slots) are parameters too.
/// Batch axes: Transposes and reshapes move the batch by structure (a batch
/// merged into or split out of another axis is followed); other ops by a
/// second, lenient propagation with the batch dims perturbed (the axis whose
/// size moved), or by inheriting an input's where that probe cannot follow;
/// constants the batch was written into (a class token expanded to it) are
/// batched where they meet a batched tensor (src/onnx/batch_axes.cpp).
/// Control-flow ops (If/Loop/Scan) read their outer-scope tensors through
/// extra inputs appended after their ONNX inputs, and carry the cost of
/// their subgraphs (op_class control_flow).

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/graph/graph.hpp"

namespace planner::onnx {

struct ImportOptions {
  /// --dim NAME=VALUE: binds symbolic dims by name. NAME may also be
  /// "TENSOR:AXIS" to bind an unnamed dim of a graph input.
  std::map<std::string, std::int64_t> dims;
  /// --batch N: binds the leading dim of every graph input feeding activations
  /// (its symbolic name everywhere it appears, unless --dim binds that name).
  /// A model whose data inputs all lead with the same static dim b0 (and none
  /// with a symbolic one) has a static batch b0: it is imported at b0 and
  /// rebound to N by scaling every activation's batch axis by N / b0 (a
  /// note says so). Reductions over the batch (BatchNormalization running
  /// statistics, reduced losses, means over the batch axis) are batch-free.
  /// Where a size does not follow the batch (any other float activation
  /// without a batch axis written from a batched one, such as a MoE capacity
  /// computed from the batch as a constant), the static dims are kept and
  /// the note says why.
  std::optional<std::int64_t> batch;
  /// --params-from-inputs PATTERN (glob, '*' and '?'): graph inputs that are
  /// trainable weights (training graphs that take weights as inputs).
  std::vector<std::string> params_from_inputs;
};

/// A declared shape (graph output or value_info) that disagrees with the computed one.
struct ShapeDisagreement {
  std::string tensor;
  std::vector<std::int64_t> declared;  ///< -1 for a symbolic/unknown declared dim
  std::vector<std::int64_t> computed;
};

struct ImportReport {
  std::vector<ShapeDisagreement> disagreements;
  /// Op kinds without semantics, with counts (also in graph::totals()).
  std::map<std::string, int> unknown_ops;
  /// Notes worth showing the user (e.g. "3 initializers hold external data").
  std::vector<std::string> notes;
  /// The file's static batch (ImportOptions::batch), when it has one.
  std::optional<std::int64_t> static_batch;
  /// True when that static batch was rebound to ImportOptions::batch.
  bool batch_rebound = false;
};

struct ImportedModel {
  graph::OpGraph graph;
  ImportReport report;
  std::string path;
};

/// Largest single .onnx file protobuf can parse.
inline constexpr std::uint64_t kMaxProtoBytes = (1ull << 31) - 1;

/// Imports a model file. Errors are one line naming the file and the op,
/// tensor or field at fault, plus the flag that would fix it when one would.
Result<ImportedModel> import_file(const std::filesystem::path& path, const ImportOptions& opts);

/// Imports serialized ModelProto bytes (fuzzing, tests). `label` names the
/// source in errors; `base_dir` is where external data would live.
Result<ImportedModel> import_bytes(std::string_view bytes, std::string_view label,
                                   const std::filesystem::path& base_dir, const ImportOptions& opts);

}  // namespace planner::onnx
