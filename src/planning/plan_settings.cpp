// A plan file read back as the estimate's inputs (plan_settings.hpp).

#include "planner/planning/plan_settings.hpp"

#include <fmt/format.h>

namespace planner::planning {

Result<PlanSettings> plan_settings(const plan::Plan& p, const std::string& path) {
  PlanSettings s;
  auto& c = s.config;
  const auto& l = p.layout;
  const auto& t = p.training;
  s.devices = p.cluster.devices;
  c.dp = l.dp;
  c.tp = l.tp;
  c.pp = l.pp;
  c.cp = l.cp;
  c.ep = l.ep;
  c.vp = l.vp;
  c.sequence_parallel = l.sequence_parallel;
  c.zero = l.zero;
  c.distributed_optimizer = l.distributed_optimizer;
  c.tp_comm_overlap = l.tp_comm_overlap;
  c.tp_splits_batch = l.tp_splits_batch;
  // The plan's own cut of the layers into chunks.
  for (std::size_t i = 0; i < l.chunks.size(); ++i)
    for (std::size_t j = 0; j < l.chunks[i].ops.size(); ++j)
      s.ops.emplace_back(fmt::format("layout.chunks[{}].ops[{}]", i, j), l.chunks[i].ops[j]);
  bool all_layers = !l.chunks.empty();
  for (const auto& ch : l.chunks) {
    if (ch.last_layer < ch.first_layer) all_layers = false;
    c.layers_per_chunk.push_back(ch.last_layer - ch.first_layer + 1);
  }
  if (!all_layers || l.chunks.size() == 1) c.layers_per_chunk.clear();
  c.micro_batch = t.micro_batch;
  c.global_batch = t.global_batch;
  c.fused_loss = t.fused_loss;
  c.grad_reduce_bytes = t.grad_reduce_bytes;
  for (auto sched : {sim::Schedule::one_f_one_b, sim::Schedule::gpipe, sim::Schedule::interleaved})
    if (l.schedule == sim::schedule_name(sched)) c.schedule = sched;
  c.optimizer = t.optimizer.name == "sgd_momentum" ? cost::Optimizer::sgd_momentum
                : t.optimizer.name == "sgd"        ? cost::Optimizer::sgd
                                                   : cost::Optimizer::adam;
  auto sb = estimate::parse_optimizer_state_dtype(t.optimizer.state_dtype);
  if (!sb) return make_error("{}: training.optimizer.state_dtype: {}", path, sb.error().message);
  c.optimizer_state_bytes = *sb;
  auto mw = estimate::parse_master_weights(t.optimizer.master_weights);
  if (!mw) return make_error("{}: training.optimizer.master_weights: {}", path, mw.error().message);
  c.master_weights = *mw;
  auto fw = estimate::parse_framework(t.framework);
  if (!fw) return make_error("{}: training.framework: {}", path, fw.error().message);
  c.framework = *fw;

  const auto fp8 = t.precision_by_class.find("matmul");
  s.precision = fp8 != t.precision_by_class.end() && fp8->second == "fp8" ? "fp8" : t.precision;
  s.attention = t.attention;
  s.recompute = t.recompute;
  s.recompute_modules = t.recompute_modules;
  s.memory_format = t.memory_format;
  s.model_path = p.model.path;
  s.profile = p.cluster.profile;
  // Overrides recorded as "gpus_per_node=4, inter_node_GBps=100".
  for (std::string_view rest = p.cluster.overrides; !rest.empty();) {
    const auto comma = rest.find(',');
    std::string item(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    item.erase(0, item.find_first_not_of(' '));
    const auto eq = item.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    try {
      if (key == "gpus_per_node") s.gpus_per_node = std::stoi(value);
      if (key == "inter_node_GBps") s.inter_node_GBps = std::stod(value);
      if (key == "nodes_per_leaf") s.nodes_per_leaf = std::stoi(value);
      if (key == "oversubscription") s.oversubscription = std::stod(value);
    } catch (...) {
      return make_error("{}: cluster.overrides: cannot read '{}'", path, item);
    }
    if ((key == "gpus_per_node" && *s.gpus_per_node < 1) || (key == "inter_node_GBps" && !(*s.inter_node_GBps > 0)) ||
        (key == "nodes_per_leaf" && *s.nodes_per_leaf < 1))
      return make_error("{}: cluster.overrides: '{}' must be positive", path, item);
    if (key == "oversubscription" && !(*s.oversubscription >= 1))
      return make_error("{}: cluster.overrides: '{}' must be at least 1", path, item);
  }
  if (s.nodes_per_leaf.has_value() != s.oversubscription.has_value())
    return make_error("{}: cluster.overrides: nodes_per_leaf and oversubscription go together", path);
  for (const auto& [name, v] : p.model.dims) s.dims.push_back(fmt::format("{}={}", name, v));
  s.params_from_inputs = p.model.params_from_inputs;
  return s;
}

Status check_plan_ops(const PlanSettings& s, const std::string& path, const std::string& model,
                      const graph::OpGraph& g) {
  if (s.ops.empty()) return {};
  for (const auto& [where, name] : s.ops)
    if (!g.find_op(name))
      return make_error("{}: {}: '{}' is not an op of {} (a plan for another model, or edited by hand?)", path, where,
                        name, model);
  if (s.ops.size() != g.ops().size())
    return make_error("{}: layout.chunks: the plan places {} ops, {} has {}", path, s.ops.size(), model,
                      g.ops().size());
  return {};
}

}  // namespace planner::planning
