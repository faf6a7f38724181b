// Memory of one device: model state (optimizer, ZeRO, distributed
// optimizer), activations, buffers and reserve. Formulas in memory.hpp.

#include "planner/cost/memory.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "planner/cost/activations.hpp"
#include "planner/ops/semantics.hpp"
#include "saved.hpp"

namespace planner::cost {
namespace {

using graph::OpId;
using graph::TensorId;

// Ops a parameter passes through unchanged before the op that reads it.
bool is_pass_through(const graph::Op& op) {
  return op.type == "Cast" || op.type == "CastLike" || op.type == "Identity" || op.type == "Transpose";
}

// Ops that read only a tensor's shape, not its values.
bool reads_shape_only(const graph::Op& op) { return op.type == "Shape" || op.type == "Size"; }

void readers(const graph::OpGraph& g, TensorId t, std::vector<OpId>& out, int depth) {
  for (auto c : g.tensor(t).consumers) {
    const auto& op = g.op(c);
    if (reads_shape_only(op)) continue;
    if (depth < 4 && is_pass_through(op) && !op.outputs.empty() && op.outputs[0]) {
      readers(g, *op.outputs[0], out, depth + 1);
    } else {
      out.push_back(c);
    }
  }
}

}  // namespace

std::vector<OpId> parameter_readers(const graph::OpGraph& g, TensorId t) {
  std::vector<OpId> ops;
  readers(g, t, ops, 0);
  return ops;
}

bool is_kept_fp32(const graph::OpGraph& g, TensorId t, const PrecisionPolicy& policy) {
  const auto ops = parameter_readers(g, t);
  if (ops.empty()) return policy.keeps_fp32(graph::OpClass::other);  // read by nothing: the default
  return std::any_of(ops.begin(), ops.end(), [&](OpId id) { return policy.keeps_fp32(g.op(id).op_class); });
}

namespace {

// 16-bit weights of the largest layer (ZeRO-3 gathers one layer at a time);
// a parameter belongs to the layer of its first reader, or stands alone.
Bytes largest_layer_weights(const graph::OpGraph& g, const PrecisionPolicy& policy) {
  std::map<int, Bytes> per_layer;
  Bytes largest;
  for (std::uint32_t i = 0; i < g.num_tensors(); ++i) {
    const auto& t = g.tensor(TensorId{i});
    if (t.role != graph::TensorRole::parameter || !core::is_floating(t.dtype)) continue;
    const Bytes b(static_cast<double>(t.numel()) * (is_kept_fp32(g, TensorId{i}, policy) ? 4.0 : 2.0));
    std::optional<int> layer;
    for (auto c : t.consumers)
      if (g.op(c).layer) {
        layer = g.op(c).layer;
        break;
      }
    if (layer) per_layer[*layer] += b;
    else largest = std::max(largest, b);
  }
  for (const auto& [l, b] : per_layer) largest = std::max(largest, b);
  return largest;
}

// A tensor only the cross-entropy reads (the logits). Under a fused loss
// it lives on as the loss buffer, whose gradient the loss writes in place,
// so the op producing it holds no transient beyond the loss buffer.
// Views and casts on the way (Reshape, Cast) are followed.
bool feeds_loss(const graph::OpGraph& g, TensorId t, int depth = 0) {
  const auto& c = g.tensor(t).consumers;
  return !c.empty() && std::all_of(c.begin(), c.end(), [&](OpId id) {
    const auto& op = g.op(id);
    if (op.op_class == graph::OpClass::loss) return true;
    const bool view = detail::is_alias_op(op) || op.type == "Cast";
    return view && depth < 4 && op.outputs.size() == 1 && op.outputs[0] && feeds_loss(g, *op.outputs[0], depth + 1);
  });
}

// Under fused kernels (Megatron's FusedScaleMaskSoftmax, bias-GeLU,
// bias-dropout-add): an elementwise op all of whose consumers are
// same-sized elementwise or softmax ops runs inside their kernel, so its
// output is never written on its own.
bool inside_fused_chain(const graph::OpGraph& g, const graph::Op& op) {
  if (op.op_class != graph::OpClass::elementwise || op.outputs.size() != 1 || !op.outputs[0]) return false;
  const auto& t = g.tensor(*op.outputs[0]);
  if (t.consumers.empty()) return false;
  return std::all_of(t.consumers.begin(), t.consumers.end(), [&](OpId id) {
    const auto& c = g.op(id);
    if (c.op_class != graph::OpClass::elementwise && c.op_class != graph::OpClass::softmax) return false;
    const auto* out = g.output(c, 0);
    return out && out->numel() == t.numel();
  });
}

// Largest transient of one op: its floating outputs, plus the gradients of
// its inputs (activations only: parameter gradients live in the gradient
// buffer) while its backward runs. A flash pattern counts o and dq, dk, dv.
// Under fused kernels a fused softmax writes its input gradient in place of
// its output gradient (Megatron scaled_masked_softmax backward), and ops
// inside a fused chain hold nothing of their own.
std::pair<Bytes, std::string> compute_largest_temporary(const graph::OpGraph& g, const ComputeContext& ctx,
                                                        bool fused_loss) {
  const ops::GradMask grad = ops::gradient_mask(g);
  Bytes best;
  std::string name;
  auto consider = [&](Bytes b, const std::string& n) {
    if (b > best) {
      best = b;
      name = n;
    }
  };
  const bool flash = ctx.attention() == AttentionMode::flash;
  for (const auto& op : g.ops()) {
    const core::Precision p = ctx.precision().of(op);
    const graph::FusedPattern* pat = nullptr;
    if (op.fused_group && static_cast<std::size_t>(*op.fused_group) < g.fused.size())
      pat = &g.fused[static_cast<std::size_t>(*op.fused_group)];
    if (flash && pat && pat->ops.size() > 1) {
      if (&g.op(pat->ops.front()) != &op) continue;
      const auto& ctx_mm = g.op(pat->ops.back());
      const core::Precision pa = ctx.precision().of(graph::OpClass::attention);
      Bytes b;
      for (const auto* t : {g.input(op, 0), g.input(op, 1), g.input(ctx_mm, 1), g.output(ctx_mm, 0)})
        if (t) b += bytes_at(*t, pa);
      consider(b, op.name + " (flash attention)");
      continue;
    }
    if (detail::is_alias_op(op)) continue;
    // The loss's backward writes the logits' gradient into its saved
    // probabilities in place (Megatron's vocab-parallel cross-entropy, fused
    // cross-entropy kernels): the loss buffer already counts it.
    if (op.op_class == graph::OpClass::loss) continue;
    if (flash && feeds_only_flash_masks(op, g)) continue;  // never runs under a flash kernel
    const bool fused = ctx.fuse_elementwise();
    if (fused && inside_fused_chain(g, op)) continue;
    const bool in_place = fused && op.op_class == graph::OpClass::softmax;
    Bytes b;
    for (const auto& t : op.outputs)
      if (t && core::is_floating(g.tensor(*t).dtype) && !(fused_loss && feeds_loss(g, *t))) b += bytes_at(g.tensor(*t), p);
    if (!in_place)
      for (const auto& t : op.inputs)
        // A view of a parameter (a tied LM head's transposed embedding) has
        // its gradient in the gradient buffer too.
        if (t && t->value < grad.size() && grad[t->value] && g.tensor(*t).role != graph::TensorRole::parameter &&
            g.tensor(alias_root(g, *t)).role != graph::TensorRole::parameter)
          b += bytes_at(g.tensor(*t), p);
    consider(b, op.name);
  }
  return {best, name};
}

// Key of the largest transient among the graph's derived values: what
// compute_largest_temporary reads of the context.
struct TemporaryKey {
  PrecisionPolicy precision;
  AttentionMode attention;
  bool fuse_elementwise = false;
  bool fused_loss = false;
  friend bool operator==(const TemporaryKey&, const TemporaryKey&) = default;
};

std::pair<Bytes, std::string> largest_temporary(const graph::OpGraph& g, const ComputeContext& ctx, bool fused_loss) {
  const TemporaryKey key{ctx.precision(), ctx.attention(), ctx.fuse_elementwise(), fused_loss};
  return *g.derived<TemporaryKey, std::pair<Bytes, std::string>>(
      key, [&] { return compute_largest_temporary(g, ctx, fused_loss); });
}

}  // namespace

std::string_view optimizer_name(Optimizer o) {
  switch (o) {
    case Optimizer::adam: return "adam";
    case Optimizer::sgd_momentum: return "sgd_momentum";
    case Optimizer::sgd: return "sgd";
  }
  return "adam";
}

std::string_view sharding_name(StateSharding s) {
  switch (s) {
    case StateSharding::none: return "none";
    case StateSharding::zero1: return "zero1";
    case StateSharding::zero2: return "zero2";
    case StateSharding::zero3: return "zero3";
    case StateSharding::distributed_optimizer: return "distributed_optimizer";
  }
  return "none";
}

std::string_view memory_kind_name(MemoryKind k) {
  switch (k) {
    case MemoryKind::weights: return "weights";
    case MemoryKind::gradients: return "gradients";
    case MemoryKind::optimizer_states: return "optimizer_states";
    case MemoryKind::gathered_weights: return "gathered_weights";
    case MemoryKind::activations: return "activations";
    case MemoryKind::loss_buffer: return "loss_buffer";
    case MemoryKind::recompute_working_set: return "recompute_working_set";
    case MemoryKind::temporary: return "temporary";
    case MemoryKind::cuda_context: return "cuda_context";
    case MemoryKind::communicator: return "communicator";
    case MemoryKind::fragmentation: return "fragmentation";
  }
  return "weights";
}

std::string_view master_weights_name(MasterWeights m) {
  switch (m) {
    case MasterWeights::fp32: return "fp32";
    case MasterWeights::remainder: return "remainder";
    case MasterWeights::none: return "none";
  }
  return "fp32";
}

std::string optimizer_label(const OptimizerSetup& s) {
  std::string extra;
  if (s.state_bytes < 4.0 && s.optimizer != Optimizer::sgd) extra = "bf16 states";
  if (s.master != MasterWeights::fp32) {
    if (!extra.empty()) extra += ", ";
    extra += s.master == MasterWeights::none ? "no master copy" : "16-bit master remainders";
  }
  const std::string name(optimizer_name(s.optimizer));
  return extra.empty() ? name : fmt::format("{} ({})", name, extra);
}

double state_elements(Optimizer o) {
  switch (o) {
    case Optimizer::adam: return 2.0;
    case Optimizer::sgd_momentum: return 1.0;
    case Optimizer::sgd: return 0.0;
  }
  return 2.0;
}

double master_weight_bytes(MasterWeights m) {
  switch (m) {
    case MasterWeights::fp32: return 4.0;
    case MasterWeights::remainder: return 2.0;
    case MasterWeights::none: return 0.0;
  }
  return 4.0;
}

StateBytes state_bytes_per_param(Optimizer o, bool kept_fp32, bool fp32_grads, double state_bytes,
                                 MasterWeights master) {
  const double count = state_elements(o);
  if (kept_fp32) return {4.0, 4.0, 4.0 * count};
  // 16-bit weight; its master copy (if any) joins the optimizer states.
  return {2.0, fp32_grads ? 4.0 : 2.0, master_weight_bytes(master) + state_bytes * count};
}

namespace {
struct ParamCountsKey {
  PrecisionPolicy policy;
  friend bool operator==(const ParamCountsKey&, const ParamCountsKey&) = default;
};
}  // namespace

ParamCounts count_parameters(const graph::OpGraph& g, const PrecisionPolicy& policy) {
  // Kept with the graph per policy (each estimate of a search asks).
  return *g.derived<ParamCountsKey, ParamCounts>(ParamCountsKey{policy}, [&] {
    ParamCounts c;
    for (std::uint32_t i = 0; i < g.num_tensors(); ++i) {
      const auto& t = g.tensor(TensorId{i});
      if (t.role != graph::TensorRole::parameter || !core::is_floating(t.dtype)) continue;
      (is_kept_fp32(g, TensorId{i}, policy) ? c.fp32 : c.low_precision) += static_cast<double>(t.numel());
    }
    return c;
  });
}

ModelState model_state(const ParamCounts& params, const OptimizerSetup& s) {
  const double d = std::max(1, s.data_parallel);
  const bool dist = s.sharding == StateSharding::distributed_optimizer;
  const double w_div = s.sharding == StateSharding::zero3 ? d : 1.0;
  const double g_div = (s.sharding == StateSharding::zero2 || s.sharding == StateSharding::zero3) ? d : 1.0;
  const double o_div = s.sharding == StateSharding::none ? 1.0 : d;
  ModelState m;
  for (const auto& [n, fp32] : {std::pair{params.low_precision, false}, std::pair{params.fp32, true}}) {
    const StateBytes b =
        state_bytes_per_param(s.optimizer, fp32, s.fp32_grads || (dist && !s.grads_16bit), s.state_bytes, s.master);
    m.weights += Bytes(n * b.weight / w_div);
    m.gradients += Bytes(n * b.gradient / g_div);
    m.optimizer_states += Bytes(n * b.optimizer / o_div);
  }
  return m;
}

Bytes MemoryBreakdown::total() const {
  return weights + gradients + optimizer_states + gathered_weights + activations + loss_buffer +
         recompute_working_set + temporary + cuda_context + communicator + fragmentation;
}

std::vector<MemoryItem> MemoryBreakdown::largest_items() const {
  std::vector<MemoryItem> items{
      {MemoryKind::weights, weights, fmt::format("weights ({})", state_label)},
      {MemoryKind::gradients, gradients, fmt::format("gradients ({})", state_label)},
      {MemoryKind::optimizer_states, optimizer_states, fmt::format("optimizer states ({})", state_label)},
      {MemoryKind::gathered_weights, gathered_weights, "ZeRO-3 gathered weights of the largest layer (x2 with prefetch)"},
      {MemoryKind::activations, activations, "activations kept for backward (all micro-batches in flight)"},
      {MemoryKind::loss_buffer, loss_buffer, "cross-entropy log-probabilities (b*s*V)"},
      {MemoryKind::recompute_working_set, recompute_working_set, "activations one layer rematerialises in backward"},
      {MemoryKind::temporary, temporary, fmt::format("largest op transient: {}", temporary_op)},
      {MemoryKind::cuda_context, cuda_context, "CUDA context and kernel images"},
      {MemoryKind::communicator, communicator, "communicator (NCCL) buffers"},
      {MemoryKind::fragmentation, fragmentation, "allocator fragmentation"},
  };
  std::erase_if(items, [](const MemoryItem& i) { return i.bytes.value <= 0; });
  std::stable_sort(items.begin(), items.end(), [](const MemoryItem& a, const MemoryItem& b) { return a.bytes > b.bytes; });
  return items;
}

MemoryBreakdown memory(const graph::OpGraph& g, const ComputeContext& ctx, const MemorySetup& setup) {
  MemoryBreakdown m;
  const auto& opt = setup.optimizer;
  const double pshare = setup.share.parameters, ashare = setup.share.activations;
  const ModelState state = model_state(count_parameters(g, ctx.precision()), opt);
  m.weights = state.weights * pshare;
  m.gradients = state.gradients * pshare;
  m.optimizer_states = state.optimizer_states * pshare;
  m.state_label = fmt::format("{}, {}{}", optimizer_label(opt), sharding_name(opt.sharding),
                              opt.sharding == StateSharding::none ? std::string()
                                                                  : fmt::format(" over d={}", opt.data_parallel));
  if (opt.sharding == StateSharding::zero3 && opt.data_parallel > 1)
    m.gathered_weights = largest_layer_weights(g, ctx.precision()) * 2.0 * pshare;

  ActivationOptions ao;
  ao.precision = ctx.precision();
  ao.attention = ctx.attention();
  ao.recompute = ctx.recompute();
  ao.modules = ctx.recompute_modules();
  ao.fuse_elementwise = setup.fuse_elementwise;
  m.per_micro_batch = saved_activations(g, ao);
  const double in_flight = std::max(1, setup.in_flight_micro_batches);
  m.activations = m.per_micro_batch.total * ashare * in_flight;
  m.loss_buffer = m.per_micro_batch.loss_buffer * ashare * in_flight;
  m.recompute_working_set = m.per_micro_batch.recompute_working_set * ashare;
  auto [temp, temp_op] = largest_temporary(g, ctx, setup.fused_loss);
  m.temporary = temp * ashare;
  m.temporary_op = std::move(temp_op);

  m.cuda_context = ctx.device().context_memory;
  if (setup.communicator) m.communicator = ctx.device().communicator_memory;
  const Bytes allocated = m.weights + m.gradients + m.optimizer_states + m.gathered_weights + m.activations +
                          m.loss_buffer + m.recompute_working_set + m.temporary;
  m.fragmentation = allocated * setup.fragmentation.value_or(fragmentation_over_allocated(ctx.device()));
  return m;
}

double fragmentation_over_allocated(const cluster::DeviceProfile& device) {
  if (!device.allocator_fragmentation) return kDefaultFragmentation;
  const double f = *device.allocator_fragmentation;
  return f / (1.0 - f);
}

}  // namespace planner::cost
