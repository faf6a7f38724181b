#pragma once
/// Activations kept for backward, computed from the graph (BRIEF §2,
/// Korthikanti et al. 2022 section 4).
///
/// Per op, the tensors its backward needs (saved-for-backward rules, one per
/// op class, in src/cost/saved.cpp):
///   MatMul/Gemm/Conv   operand i when the other operand needs a gradient
///   elementwise        none (Add, Sub, Neg, Cast, ...), the input (Gelu,
///                      Erf, ...), the output (Relu, Sigmoid, Tanh, Exp,
///                      ...), Mul/Div as autograd does (a*b keeps b for da)
///   Dropout            a 1-byte mask per element
///   normalisation      the input + f32 mean and 1/std per row (8 B)
///   Softmax            the output
///   views, copies      nothing; Gather keeps its (integer) indices
///   attention, unfused the pattern ops' own rules (s x s probabilities)
///   attention, flash   q, k, v, o and the f32 log-sum-exp (b a sq 4 B)
///   cross-entropy      the fp32 log-probs: the loss buffer (reported apart)
/// Each tensor is counted once, at the size of its producer's compute
/// precision (graph tensors are f32), and only when it is an activation or a
/// graph input (parameters are counted as weights, constants not at all).
///
/// Two rules make the graph count what a framework keeps:
///  - Aliases: views, Transpose and Split produce views in PyTorch, so a
///    tensor reached through them is the storage it views (counted once).
///  - Fused elementwise regions (fuse_elementwise): chains of elementwise ops
///    joined by tensors that one op writes and exactly one op reads run as one
///    kernel (a tensor read twice, like the residual stream, is materialised
///    and ends the chain). A tensor written inside a region is never
///    materialised; when a member op saves one, the region keeps the
///    materialised tensors it is computed from instead. So GeLU spelled as
///    Div, Erf, Add, Mul, Mul keeps its input (8sbh) like one Gelu op, not
///    the three tensors (24sbh) an op-by-op count gives, and RMSNorm spelled
///    as Mul, ReduceMean, Add, Sqrt, Div, Mul keeps x and the row means.
///
/// Recompute: selective drops what the ops of each attention pattern save
/// except the pattern's inputs (the s x s tensors); full keeps, for ops of a
/// layer (op.layer), only the activations entering the layer from outside
/// (its input, 2sbh). Ops outside layers (embedding, final norm, LM head,
/// loss) keep theirs under every policy. Backward of a recomputed layer
/// rematerialises what was dropped: recompute_working_set, the largest such
/// amount of one layer.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "planner/core/units.hpp"
#include "planner/cost/compute.hpp"
#include "planner/cost/precision.hpp"
#include "planner/graph/graph.hpp"

namespace planner::cost {

/// What one saved item is.
enum class SavedKind : std::uint8_t {
  tensor,        ///< a graph tensor (or the storage it views)
  dropout_mask,  ///< 1 byte per element of the dropout's output
  norm_stats,    ///< f32 mean and 1/std per normalised row
  logsumexp,     ///< FlashAttention's f32 statistics, b x heads x sq
  attention_probs,  ///< s x s probabilities of a one-op attention run unfused
};
/// The enumerator's name, e.g. "dropout_mask".
std::string_view saved_kind_name(SavedKind k);

/// One tensor kept from forward to backward.
struct SavedItem {
  SavedKind kind = SavedKind::tensor;
  /// The tensor (alias root) for SavedKind::tensor; the op's output 0 for
  /// the others.
  std::optional<graph::TensorId> tensor;
  /// The first op that saves it.
  graph::OpId saver;
  /// Layer of the saver; nullopt outside repeated blocks.
  std::optional<int> layer;
  Bytes bytes;
};

/// How activations are counted.
struct ActivationOptions {
  PrecisionPolicy precision;
  AttentionMode attention = AttentionMode::flash;
  RecomputePolicy recompute = RecomputePolicy::none;
  /// What selective recompute drops (only read under selective).
  RecomputeModules modules;
  /// Treat connected elementwise ops as one fused kernel (see above).
  bool fuse_elementwise = true;
};

/// Activations of one micro-batch (the graph's batch), one device.
struct ActivationReport {
  /// Sum of `items`: what stays in memory from forward to backward, without
  /// the loss buffer.
  Bytes total;
  /// Per layer index (op.layer), for pipeline stages to sum.
  std::map<int, Bytes> per_layer;
  /// Items saved by ops outside repeated blocks (embedding, final norm, LM head).
  Bytes outside_layers;
  /// fp32 (loss precision) log-probabilities of the cross-entropy, b*s*V
  /// elements: Megatron's and PyTorch's loss buffer. Kept apart from `total`.
  Bytes loss_buffer;
  /// Largest amount one layer rematerialises in backward under the recompute
  /// policy (0 under none).
  Bytes recompute_working_set;
  /// Every item, in op order.
  std::vector<SavedItem> items;
};

/// Counts the activations kept for backward.
/// Requires: ops::annotate(g) ran; graph::analyze(g) for patterns and layers.
ActivationReport saved_activations(const graph::OpGraph& g, const ActivationOptions& options);

/// saved_activations(g, options), computed once per graph and options and
/// kept with the graph (OpGraph::derived): what the estimates of a search,
/// which all ask the same few questions of one graph, read.
std::shared_ptr<const ActivationReport> shared_saved_activations(const graph::OpGraph& g,
                                                                 const ActivationOptions& options);

/// The tensor whose storage `t` views: follows Reshape, Squeeze, Unsqueeze,
/// Flatten, Identity, Transpose and Split back to the first tensor written by
/// another op (or a graph input).
graph::TensorId alias_root(const graph::OpGraph& g, graph::TensorId t);

}  // namespace planner::cost
