#pragma once
// Tensor parallelism of the real mode (real.cpp; docs/executor.md, "Real mode
// and --check"). Private to the executor module.
//
// Design note. Every tensor has one view on the tp axis: replicated (every tp
// rank holds it whole) or split along one dim (rank r holds its share). The
// plan fixes the views at the ports of single-op units (strategies[].inputs,
// .outputs); the views inside fused patterns (attention) and of ops without
// a unit follow from their inputs by the rules of derive_outputs(), which
// also refuse every split an op's kernel cannot run on its share (a split
// normalised or reduced axis, a split Gather table or loss, ...). An op's
// output may also be a partial sum (a row-parallel MatMul).
//
//   producer's output view --convert--> stored view --port--> consumer input
//     partial  -> replicated: all-reduce (backward: identity)
//     split    -> replicated: all-gather when a consumer reads it whole
//                             (backward: the rank's block of the gradient)
//     replicated -> split at a port: the rank's block (backward: the block's
//                             gradient scattered into zeros, a partial sum)
//
// Gradients of a replicated tensor come in two kinds: whole (from an op every
// tp rank runs whole) and partial sums (from an op whose work is shared out,
// e.g. the input of a column-parallel MatMul); the partial ones are
// all-reduced over tp once, just before the gradient is used (its producer's
// backward, a pipeline send, the parameter's accumulator). This is Megatron's
// f/g pair of operators derived per tensor instead of written per layer.
//
// Shares are contiguous blocks except behind a Split along a split axis
// (a fused QKV projection): rank r must hold block r of each output, so the
// Split's input, and upstream of it the bias and the weight columns, hold
// permuted indices (an IndexMap), found by walking back from the Split.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/graph/graph.hpp"
#include "planner/plan/plan.hpp"
#include "planner/runtime/communicator.hpp"
#include "planner/runtime_cpu/op_kernels.hpp"

namespace planner::executor::real_detail {

/// How the tp ranks hold a tensor, or see it at an op's port.
struct TpView {
  enum class Kind : std::uint8_t { replicated, split, partial };
  Kind kind = Kind::replicated;
  int dim = -1;  ///< split: the dim the tp axis splits
  static TpView rep() { return {}; }
  static TpView split_at(int d) { return {Kind::split, d}; }
  static TpView part() { return {Kind::partial, -1}; }
  bool is_split() const { return kind == Kind::split; }
  friend bool operator==(const TpView&, const TpView&) = default;
};
/// "replicated", "split(2)", "partial".
std::string view_name(const TpView& v);

/// Per tp rank, the global indices along the split dim it holds, in local
/// order. Empty: contiguous blocks (rank r holds [r n/t, (r + 1) n/t)).
using IndexMap = std::vector<std::vector<std::int64_t>>;

struct TpPort {
  TpView view;
  IndexMap map;
};
struct TpOpInfo {
  std::vector<TpPort> in, out;
  /// The op's work is shared out over tp: the gradient of an input it reads
  /// replicated is a partial sum.
  bool split = false;
};
/// The tp views of a plan on its graph (tp = 1: everything replicated).
struct TpLayout {
  int tp = 1;
  std::vector<TpView> stored;        ///< per tensor id: how its value is kept
  std::vector<IndexMap> stored_map;  ///< per tensor id (split views only)
  std::vector<TpOpInfo> ops;         ///< per op id
};

/// Derives the views. Errors (one line) name the op, its strategy and why the
/// real mode cannot run it.
/// A layout of `degree` shares with every tensor stored whole and every op's
/// views unset (the start of derive_tp_layout and derive_cp_layout).
TpLayout whole_layout(const graph::OpGraph& g, int degree);

Result<TpLayout> derive_tp_layout(const plan::Plan& p, const graph::OpGraph& g);

/// The views of context parallelism (layout.cp > 1, tp = 1): the cp group in
/// the tp role, the sequence split from the token ids on (real_cp.cpp).
Result<TpLayout> derive_cp_layout(const plan::Plan& p, const graph::OpGraph& g);

/// Output views of `op` from its input views (nullopt entries: absent
/// inputs); `declared`: the plan's output views when it has them (Reshape
/// needs them to tell where the split lands). Error: the reason only.
Result<std::vector<TpView>> derive_outputs(const graph::Op& op, const graph::OpGraph& g,
                                           const std::vector<std::optional<TpView>>& in,
                                           const std::vector<TpView>& declared, int tp);

/// The shape rank `r` holds under view `v` (split: dim / t).
runtime_cpu::Shape local_shape(const runtime_cpu::Shape& full, const TpView& v, int t);
/// The indices along a dim of size n that tp rank r of t holds under map m.
std::vector<std::int64_t> held_indices(const IndexMap& m, std::int64_t n, int t, int r);
/// The map of a Split's input split along the Split's own axis: rank r holds
/// block r of every output, output k starting at sizes[0] + ... + sizes[k-1].
/// Requires: every size divisible by t.
IndexMap split_input_map(const std::vector<std::int64_t>& sizes, int t);
/// Whether a row-major reshape of `in` split t ways on dim a into `out` split
/// on dim b keeps every rank's block (same elements before the split dim,
/// both split dims divisible by t).
bool reshape_keeps_blocks(const runtime_cpu::Shape& in, int a, const runtime_cpu::Shape& out, int b, int t);
/// The entries of x at indices `idx` along `dim`.
runtime_cpu::Value take(const runtime_cpu::Value& x, int dim, std::span<const std::int64_t> idx);
/// full[.., idx[j], ..] += part[.., j, ..] along `dim`.
void put_add(runtime_cpu::Tensor& full, int dim, std::span<const std::int64_t> idx, const runtime_cpu::Tensor& part);

/// What one tp rank does at run time with a TpLayout.
class TpRank {
 public:
  TpRank(const TpLayout& l, const graph::OpGraph& g, int tp_rank, runtime::Communicator* comm)
      : l_(l), g_(g), r_(tp_rank), comm_(comm) {}
  int tp() const { return l_.tp; }
  int rank() const { return r_; }
  /// The stored shape of a tensor on this rank.
  runtime_cpu::Shape shape(graph::TensorId id) const;
  std::int64_t numel(graph::TensorId id) const;
  /// A parameter's share of its whole value.
  runtime_cpu::Tensor shard(graph::TensorId id, const runtime_cpu::Tensor& whole) const;
  /// Input port `i` of op `o` reads a block of a replicated value: the block
  /// (else nullopt, read the stored value as it is).
  std::optional<runtime_cpu::Value> port_input(graph::OpId o, std::size_t i, const runtime_cpu::Value& stored) const;
  /// Output k of op o as the kernel should make it (local shape).
  runtime_cpu::Shape out_shape(graph::OpId o, std::size_t k) const;
  /// Output k of op o, as made, into its stored view (all-reduce, all-gather).
  /// Returns whether it converted (the caller keeps `made` for the backward).
  Result<bool> store_output(graph::OpId o, std::size_t k, const runtime_cpu::Value& made, runtime_cpu::Value& stored);
  /// The gradient of output k of op o in the view the op made it, from the
  /// stored view's gradient (nullopt: use it as it is).
  /// A reduce-scattered partial sum gets the whole gradient (all-gather).
  Result<std::optional<runtime_cpu::Tensor>> out_grad(graph::OpId o, std::size_t k,
                                                      const runtime_cpu::Tensor& stored) const;
  enum class Contribution : std::uint8_t { whole, partial, scatter };
  /// How input i's gradient from op o joins the tensor's gradient: as it is,
  /// as a partial sum, or scattered from a block into a partial sum.
  Contribution contribution(graph::OpId o, std::size_t i) const;
  /// The partial-sum gradient of a replicated tensor, of its whole shape.
  runtime_cpu::Tensor scatter(graph::OpId o, std::size_t i, const runtime_cpu::Tensor& block) const;
  /// Folds `partial` (all-reduced over tp) into `whole`. Every tp rank calls
  /// it for the same tensors in the same order.
  Status finalize(std::optional<runtime_cpu::Tensor>& whole, std::optional<runtime_cpu::Tensor>& partial);
  /// Sums `x` over the tp group, in place.
  Status all_reduce(std::vector<float>& x);
  /// forward_op / backward_op, except for a vocabulary-parallel Gather (the
  /// table split along its rows: ids outside this rank's rows look up
  /// zeros, their gradients are dropped) and a vocabulary-parallel
  /// SoftmaxCrossEntropyLoss (scores split along the classes: the row max,
  /// the sum of exponentials and the target score all-reduced over tp, the
  /// loss whole on every rank, each rank the gradient of its classes), and a
  /// batch-split SoftmaxCrossEntropyLoss (tp_splits_batch: each rank's mean
  /// over its rows / tp, a partial sum; its gradient / tp), and a
  /// row-parallel Gemm with a bias (added on tp rank 0 only).
  Result<std::vector<runtime_cpu::Value>> forward(graph::OpId o, const std::vector<const runtime_cpu::Value*>& in,
                                                  const std::vector<runtime_cpu::OutputSpec>& specs) const;
  Result<std::vector<std::optional<runtime_cpu::Tensor>>> backward(
      graph::OpId o, const std::vector<const runtime_cpu::Value*>& in,
      const std::vector<const runtime_cpu::Value*>& outs, const std::vector<const runtime_cpu::Tensor*>& dout,
      const std::vector<bool>& needs) const;
  /// Whole values of `params` from this rank's flat shares (flat order =
  /// params, local sizes) into `full` (whole sizes); a tp collective.
  Status gather_full(const std::vector<graph::TensorId>& params, std::span<const float> local,
                     std::vector<float>& full);

 private:
  /// The whole tensor from every rank's block `part` (split along `dim`,
  /// rows as `map` assigns them): an all-gather, straight into the whole
  /// when the blocks lie end to end in rank order.
  Result<runtime_cpu::Tensor> gather_whole(const runtime_cpu::Tensor& part, const runtime_cpu::Shape& full_shape,
                                           int dim, const IndexMap& map) const;

  const TpLayout& l_;
  const graph::OpGraph& g_;
  bool masked_lookup(graph::OpId o) const;
  bool vocab_loss(graph::OpId o) const;
  bool batch_loss(graph::OpId o) const;
  bool split_mean(graph::OpId o) const;
  bool partial_bias(graph::OpId o) const;
  Status vocab_rows(const runtime_cpu::Tensor& x, const runtime_cpu::IndexTensor& labels, std::vector<double>& lse,
                    std::vector<double>& target) const;

  int r_;
  runtime::Communicator* comm_;
};

}  // namespace planner::executor::real_detail
