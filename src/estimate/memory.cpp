// Memory per pipeline rank: local (sharded) parameters and their model
// state, activations of the micro-batches the schedule keeps in flight,
// the loss buffer on the last stage, and the reserves (docs/estimate.md).

#include <algorithm>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "internal.hpp"
#include "planner/estimate/optimizer_bytes.hpp"

namespace planner::estimate::detail {
namespace {

using graph::OpId;
using graph::TensorId;

cost::ActivationOptions activation_options(const cost::CostModel& model, cost::RecomputePolicy recompute,
                                           std::optional<cost::RecomputeModules> modules = std::nullopt) {
  cost::ActivationOptions ao;
  ao.precision = model.context().precision();
  ao.attention = model.context().attention();
  ao.recompute = recompute;
  ao.modules = modules.value_or(model.context().recompute_modules());
  return ao;
}

// Local share of one saved item: its tensor's layout, else the share of the
// work of the op saving it (tensors inside a fused unit), else whole.
double item_fraction(const Layout& L, const graph::OpGraph& g, const cost::SavedItem& item) {
  if (item.tensor && item.tensor->value < L.layout_of_tensor.size() && L.layout_of_tensor[item.tensor->value])
    return local_fraction(L, g, *item.tensor);
  if (const auto* s = L.strategy_of_op[item.saver.value]) return s->compute_fraction;
  return 1.0;
}

bool grads_in_fp32(const ParallelConfig& c, const cost::CostModel& model) {
  // The gradient buffer is held in the dtype it is reduced in: Megatron-Core
  // allocates its main-grad buffer in fp32 only with grad_reduce_in_fp32
  // (NeMo: optim.grad_sync_dtype), FSDP reduces in its reduce_dtype.
  if (c.grad_reduce_bytes > 0 && c.framework != Framework::fsdp && c.framework != Framework::ddp)
    return c.grad_reduce_bytes >= 4;
  const bool fp16 = model.context().precision().default_precision() == core::Precision::fp16;
  switch (c.framework) {
    case Framework::megatron: return true;
    case Framework::megatron_legacy:
    case Framework::deepspeed: return !fp16;
    case Framework::fsdp:
    case Framework::ddp:
    case Framework::executor: return false;  // fp32 parameters (autocast) or 16-bit: 16 B per parameter either way
  }
  return true;
}

// Per floating parameter (ascending id): its reader (param_reader) and
// whether the policy keeps it in fp32; computed once per graph and policy.
struct ParamInfo {
  TensorId tensor;
  std::optional<OpId> reader;
  bool fp32 = false;
};
struct ParamInfoKey {
  cost::PrecisionPolicy policy;
  friend bool operator==(const ParamInfoKey&, const ParamInfoKey&) = default;
};

std::shared_ptr<const std::vector<ParamInfo>> params_of(const graph::OpGraph& g, const cost::PrecisionPolicy& policy) {
  return g.derived<ParamInfoKey, std::vector<ParamInfo>>(ParamInfoKey{policy}, [&] {
    std::vector<ParamInfo> out;
    for (std::uint32_t i = 0; i < g.num_tensors(); ++i) {
      const TensorId t{i};
      const auto& tensor = g.tensor(t);
      if (tensor.role != graph::TensorRole::parameter || !core::is_floating(tensor.dtype)) continue;
      out.push_back(ParamInfo{t, param_reader(g, t), cost::is_kept_fp32(g, t, policy)});
    }
    return out;
  });
}

}  // namespace

std::vector<Bytes> chunk_activations(const graph::OpGraph& g, const cost::CostModel& model, const Layout& L,
                                     cost::RecomputePolicy recompute, std::optional<cost::RecomputeModules> modules) {
  std::vector<Bytes> per(static_cast<std::size_t>(L.chunks));
  const auto rep = cost::shared_saved_activations(g, activation_options(model, recompute, modules));
  for (const auto& item : rep->items)
    per[static_cast<std::size_t>(L.chunk_of_op[item.saver.value])] += item.bytes * item_fraction(L, g, item);
  return per;
}

std::vector<StageMemory> stage_memory(const graph::OpGraph& g, const cost::CostModel& model, const ParallelConfig& c,
                                      const Layout& L, cost::RecomputePolicy recompute,
                                      const std::vector<double>& in_flight, const std::vector<Bytes>& peak_activation,
                                      std::optional<cost::RecomputeModules> modules) {
  const auto& policy = model.context().precision();
  const int pp = c.pp;
  std::vector<StageMemory> out(static_cast<std::size_t>(pp));
  std::vector<cost::ParamCounts> counts(static_cast<std::size_t>(pp));
  // Expert parameters under expert parallelism (already divided by ep),
  // their states sharded over the dp*cp/ep ranks holding the same experts.
  std::vector<cost::ParamCounts> expert_counts(static_cast<std::size_t>(pp));
  // 16-bit bytes of each layer's local parameters per rank (ZeRO-3 gathers).
  std::vector<std::map<int, double>> layer_bytes(static_cast<std::size_t>(pp));
  const bool zero3 = c.state_sharding() == cost::StateSharding::zero3 && c.dp * c.cp > 1;  // reads layer_bytes
  for (const auto& info : *params_of(g, policy)) {
    const TensorId t = info.tensor;
    const auto i = t.value;
    const auto& tensor = g.tensor(t);
    const auto& reader = info.reader;
    const int chunk = reader ? L.chunk_of_op[reader->value] : 0;
    const auto rank = static_cast<std::size_t>(chunk % pp);
    const bool expert = c.ep > 1 && is_expert_op(L, reader);
    const double local = static_cast<double>(tensor.numel()) * local_fraction(L, g, t) / (expert ? c.ep : 1);
    const bool fp32 = info.fp32;
    auto& into = expert ? expert_counts[rank] : counts[rank];
    (fp32 ? into.fp32 : into.low_precision) += local;
    // A tied weight's copies on other pipeline ranks hold weights, gradients
    // and optimizer states of their own.
    for (int copy : param_copy_chunks(g, L, t, pp)) {
      auto& other = counts[static_cast<std::size_t>(copy % pp)];
      (fp32 ? other.fp32 : other.low_precision) += local;
    }
    if (!zero3) continue;
    const int layer = reader && g.op(*reader).layer ? *g.op(*reader).layer : -1 - static_cast<int>(i);
    layer_bytes[rank][layer] += local * (fp32 ? 4.0 : 2.0);
  }

  // Activations of one micro-batch per chunk, and the reserves the cost
  // model computes for the whole graph (context, communicator, temporary).
  const auto rep_memo = cost::shared_saved_activations(g, activation_options(model, recompute, modules));
  const auto& rep = *rep_memo;
  const auto rep_none = recompute == cost::RecomputePolicy::none
                            ? rep_memo
                            : cost::shared_saved_activations(g, activation_options(model, cost::RecomputePolicy::none));
  double full = 0, local = 0;
  for (const auto& item : rep_none->items) {
    full += item.bytes.value;
    local += item.bytes.value * item_fraction(L, g, item);
  }
  const double act_share = full > 0 ? local / full : 1.0;
  cost::MemorySetup base_setup;
  base_setup.share.activations = act_share;
  base_setup.fused_loss = c.fused_loss;
  const cost::MemoryBreakdown base = model.memory(g, base_setup);

  // The loss buffer: the logits' local share (vocabulary-parallel loss).
  double loss_share = 1.0;
  for (const auto& op : g.ops())
    if (op.op_class == graph::OpClass::loss && !op.inputs.empty() && op.inputs[0]) {
      loss_share = local_fraction(L, g, *op.inputs[0]);
      break;
    }
  const int last_rank = (L.chunks - 1) % pp;

  cost::OptimizerSetup opt;
  opt.optimizer = c.optimizer;
  opt.sharding = c.state_sharding();
  opt.data_parallel = c.dp * c.cp;
  opt.fp32_grads = grads_in_fp32(c, model);
  opt.grads_16bit = c.grad_reduce_bytes == 2;
  opt.state_bytes = c.optimizer_state_bytes;
  opt.master = c.master_weights;
  for (int r = 0; r < pp; ++r) {
    auto& sm = out[static_cast<std::size_t>(r)];
    auto& m = sm.breakdown;
    sm.stage = r;
    const auto& dense = counts[static_cast<std::size_t>(r)];
    const auto& experts = expert_counts[static_cast<std::size_t>(r)];
    sm.parameters = dense.total() + experts.total();
    sm.in_flight = in_flight[static_cast<std::size_t>(r)];
    cost::ModelState st = cost::model_state(dense, opt);
    if (experts.total() > 0) {
      cost::OptimizerSetup eo = opt;
      eo.data_parallel = std::max(1, opt.data_parallel / c.ep);
      const cost::ModelState es = cost::model_state(experts, eo);
      st.weights += es.weights;
      st.gradients += es.gradients;
      st.optimizer_states += es.optimizer_states;
    }
    m.weights = st.weights;
    m.gradients = st.gradients;
    // DeepSpeed's BF16Optimizer keeps the bf16 gradients and an fp32
    // accumulation buffer for every local parameter: 2 + 4 bytes.
    m.gradients += Bytes(framework_gradient_bytes(c, policy.default_precision()) *
                         (dense.low_precision + experts.low_precision));
    m.optimizer_states = st.optimizer_states;
    m.state_label = fmt::format("{}, {}{}", cost::optimizer_label(opt), cost::sharding_name(opt.sharding),
                                opt.sharding == cost::StateSharding::none ? std::string()
                                                                          : fmt::format(" over d={}", opt.data_parallel));
    if (experts.total() > 0 && opt.sharding != cost::StateSharding::none)
      m.state_label += fmt::format(", experts over d={}", std::max(1, opt.data_parallel / c.ep));
    if (opt.sharding == cost::StateSharding::zero3 && opt.data_parallel > 1) {
      double largest = 0;
      for (const auto& [layer, b] : layer_bytes[static_cast<std::size_t>(r)]) largest = std::max(largest, b);
      // The layer in use and the one prefetched; DeepSpeed ZeRO-3 fetches on
      // demand (step.cpp), so only the layer in use.
      m.gathered_weights = Bytes((c.framework == Framework::deepspeed ? 1.0 : 2.0) * largest);
    }
    // Activations: what the simulated schedule holds at this rank's peak.
    m.activations = peak_activation[static_cast<std::size_t>(r)];
    if (r == last_rank) {
      const double held = c.schedule == sim::Schedule::gpipe ? static_cast<double>(c.micro_batches()) : 1.0;
      m.loss_buffer = rep.loss_buffer * loss_share * held * (c.fused_loss ? 0.5 : 1.0);
    }
    m.recompute_working_set = rep.recompute_working_set * act_share;
    m.temporary = base.temporary;
    m.temporary_op = base.temporary_op;
    m.cuda_context = base.cuda_context;
    m.communicator = base.communicator;
    const Bytes allocated = m.weights + m.gradients + m.optimizer_states + m.gathered_weights + m.activations +
                            m.loss_buffer + m.recompute_working_set + m.temporary;
    m.fragmentation = allocated * model.fragmentation();
  }
  return out;
}

}  // namespace planner::estimate::detail

namespace planner::estimate {

SavedBytes saved_bytes(const graph::OpGraph& g, const cost::CostModel& model, cost::RecomputePolicy recompute) {
  const auto rep = cost::shared_saved_activations(g, detail::activation_options(model, recompute));
  return SavedBytes{rep->total, rep->loss_buffer};
}

}  // namespace planner::estimate
