#pragma once
/// Turning a propagated ParsedGraph into a graph::OpGraph (private to src/onnx/):
/// tensor roles, the OpGraph itself, batch axes, and the costs of control-flow
/// ops from their subgraphs.

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "engine.hpp"
#include "planner/core/glob.hpp"
#include "planner/graph/graph.hpp"

namespace planner::onnx::detail {

using planner::glob_match;  // '*' and '?' globs (core/glob.hpp)

/// Role of an outer-scope tensor as the enclosing graph sees it.
using OuterRoleFn = std::function<graph::TensorRole(std::string_view)>;
/// Whether a graph input (by name) is a trainable weight.
using ParamInputFn = std::function<bool(std::string_view)>;

/// Roles of every tensor of `pg`:
///  - float initializers are parameters, except BatchNormalization running
///    statistics (inputs 3 and 4), which are constants; other initializers
///    are constants;
///  - graph inputs `param_input` accepts are parameters, other graph inputs
///    are inputs (subgraph formal inputs: activations);
///  - node outputs computed only from constants (no graph-input ancestor, no
///    parameter ancestor) are parameters when floating and consumed as a
///    weight (Conv/MatMul/Gemm/normalisation/embedding weight slots),
///    constants otherwise; all other node outputs are activations.
std::vector<graph::TensorRole> assign_roles(const ParsedGraph& pg, const std::vector<Info>& infos,
                                            const ParamInputFn& param_input, bool is_subgraph,
                                            const OuterRoleFn& outer_role);

/// Whether tensor `t` is kept in the OpGraph (read by an op, a graph output,
/// an op output, or a used graph input).
bool keep_tensor(const ParsedGraph& pg, std::size_t t);

struct BuiltGraph {
  graph::OpGraph graph;
  /// OpGraph tensor per ParsedGraph tensor (nullopt when dropped).
  std::vector<std::optional<graph::TensorId>> tensor_id;
};

/// Builds the OpGraph: ops in pg.nodes order (already topological), control
/// flow ops with their outer-scope reads appended after their ONNX inputs.
Result<BuiltGraph> build_graph(const ParsedGraph& pg, const std::vector<Info>& infos,
                               const std::vector<graph::TensorRole>& roles);

/// Batch axis (graph::Tensor::batch_axis) of every input and activation of
/// `b`, from the real propagation `infos` and the probe `probe` (the batch
/// dims perturbed; lenient, so unknown where it could not follow): layout ops
/// by structure, other ops by the probe, the rest inherited; then constants
/// the batch was written into (see batch_axes.cpp).
void set_batch_axes(BuiltGraph& b, const ParsedGraph& pg, const std::vector<Info>& infos,
                    const std::vector<Info>& probe);

/// Rebinds a graph imported at its static batch b0 to batch n: every batched
/// tensor's batch axis is scaled by n / b0 (a flattened [b0*S, h] becomes
/// [n*S, h]); ops are annotated after this, so their costs follow. Refused,
/// with the op or tensor named, when some size does not follow the batch: a
/// float activation without a batch axis written from a batched input by an
/// op that does not reduce over the batch (a MoE capacity or a TopK count
/// computed from the batch as a constant), a parameter holding the batch, or
/// a batch-axis dim that is not a multiple of b0.
Status rebind_static_batch(graph::OpGraph& g, std::int64_t b0, std::int64_t n);

/// Fills op_class and cost of every If/Loop/Scan op of `built` from its
/// subgraphs (If: the costlier branch, or the taken one when the condition is
/// known; Loop: body x trip count; Scan: body x sequence length), each
/// subgraph imported into its own OpGraph and costed by ops::annotate.
/// Kinds without semantics found in subgraphs are added to `unknown`.
Status cost_control_flow(BuiltGraph& built, const ParsedGraph& pg, const std::vector<Info>& infos,
                         const std::vector<graph::TensorRole>& roles, const Scope* parent, const RunOptions& opt,
                         std::map<std::string, int>& unknown, int depth = 0);

}  // namespace planner::onnx::detail
