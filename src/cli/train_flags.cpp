// Shared flags of the commands that cost a training setup.

#include "planner/cli/train_flags.hpp"

#include <fmt/format.h>

#include "planner/sharding_milp/milp.hpp"

namespace planner::cli {

void TrainFlags::add_to(CLI::App& app) {
  profile_opt = app.add_option("--profile", profile, "Cluster profile: a name in cost_profiles/ or a JSON file")
      ->capture_default_str();
  gpus_opt = app.add_option("--gpus-per-node", gpus_per_node, "Devices per node, when the cluster differs from the profile");
  inter_opt = app.add_option("--inter-node-GBps", inter_node_GBps,
                             "Total NIC bandwidth per node in GB/s (one direction), when it differs from the profile");
  leaf_opt = app.add_option("--nodes-per-leaf", nodes_per_leaf,
                            "Nodes under one leaf switch of an oversubscribed fabric (with --oversubscription)");
  over_opt = app.add_option("--oversubscription", oversubscription,
                            "Leaf downlink over uplink bandwidth, e.g. 2 for 2:1 (with --nodes-per-leaf; 1 = non-blocking)");
  app.add_option("--precision", precision,
                 "bf16 | fp16 | fp8 | tf32 | fp32 | auto (bf16, else fp16, else fp32: the first the profile's device "
                 "has a GEMM peak for)")
      ->capture_default_str();
  app.add_option("--attention", attention,
                 "flash | unfused | auto (flash where the profile has a fused-attention kernel and the precision is "
                 "16-bit or fp8)")
      ->capture_default_str();
  recompute_opt = app.add_option("--recompute", recompute, "none | selective | full")->capture_default_str();
  app.add_option("--recompute-modules", recompute_modules,
                 "What selective recompute recomputes, Megatron-Core's --recompute-modules: core_attn (the "
                 "default), layernorm, moe_act, comma-separated");
  app.add_option("--memory-format", memory_format,
                 "Convolution activations: nchw (PyTorch's default; tensor-core convolutions pay layout "
                 "transposes) | nhwc (channels_last)")
      ->capture_default_str();
}

namespace {

// The profile with the flags' overrides applied, nothing resolved.
Result<cluster::ClusterProfile> load_overridden(const TrainFlags& f) {
  PLANNER_TRY(cluster::ClusterProfile p, cluster::load_profile(f.profile, cluster::default_profiles_dir(nullptr)));
  cluster::ProfileOverrides o;
  auto given = [](const CLI::Option* opt) { return opt && opt->count() > 0; };
  if (f.force_gpus || given(f.gpus_opt)) {
    if (f.gpus_per_node < 1) return Error{fmt::format("--gpus-per-node must be at least 1 (got {})", f.gpus_per_node)};
    o.gpus_per_node = f.gpus_per_node;
  }
  if (f.force_inter || given(f.inter_opt)) {
    if (!(f.inter_node_GBps > 0)) return Error{fmt::format("--inter-node-GBps must be positive (got {})", f.inter_node_GBps)};
    o.inter_node_GBps = f.inter_node_GBps;
  }
  const bool leaf = f.force_fabric || given(f.leaf_opt), over = f.force_fabric || given(f.over_opt);
  if (leaf != over)
    return Error{fmt::format("{} needs {} (the fabric's leaves and their ratio go together)",
                             leaf ? "--nodes-per-leaf" : "--oversubscription", leaf ? "--oversubscription" : "--nodes-per-leaf")};
  if (leaf) {
    if (f.nodes_per_leaf < 1) return Error{fmt::format("--nodes-per-leaf must be at least 1 (got {})", f.nodes_per_leaf)};
    if (!(f.oversubscription >= 1))
      return Error{fmt::format("--oversubscription must be at least 1 (1 = non-blocking; got {})", f.oversubscription)};
    o.nodes_per_leaf = f.nodes_per_leaf;
    o.oversubscription = f.oversubscription;
  }
  if (o.any()) return cluster::apply_overrides(std::move(p), o);
  return p;
}

}  // namespace

std::string fabric_note(const cluster::ClusterProfile& profile) {
  const auto& x = profile.interconnect.inter_node();
  if (!x.nodes_per_leaf || !x.oversubscription) return "";
  return fmt::format("; leaves of {} node{}, {}:1 oversubscribed", *x.nodes_per_leaf, *x.nodes_per_leaf == 1 ? "" : "s",
                     *x.oversubscription);
}

DeviceDefaults device_defaults(const cluster::DeviceProfile& device, const std::string& precision) {
  DeviceDefaults d{precision, "flash", "", ""};
  if (precision == "auto") {
    d.precision = "bf16";  // a device with no peak at all: the cost model names what is missing
    for (const char* name : {"bf16", "fp16", "fp32"}) {
      auto prec = core::parse_precision(name);
      if (prec && device.peak(*prec).ok()) {
        d.precision = name;
        break;
      }
    }
    if (d.precision != "bf16")
      d.precision_note = fmt::format("precision {}: the profile's device '{}' has no {} GEMM peak", d.precision,
                                     device.name, d.precision == "fp16" ? "bf16" : "bf16 or fp16");
  }
  if (!device.attention) {
    d.attention = "unfused";
    d.attention_note =
        fmt::format("attention unfused: the profile's device '{}' has no fused-attention kernel", device.name);
  } else if (d.precision == "fp32" || d.precision == "tf32") {
    d.attention = "unfused";
    d.attention_note = fmt::format("attention unfused: flash attention needs 16-bit or fp8, the precision is {}",
                                   d.precision);
  }
  return d;
}

Result<cluster::ClusterProfile> TrainFlags::load() {
  PLANNER_TRY(cluster::ClusterProfile p, load_overridden(*this));
  const DeviceDefaults d = device_defaults(p.device, precision);
  std::string note;
  if (precision == "auto") {
    precision = d.precision;
    note = d.precision_note;
  }
  if (attention == "auto") {
    attention = d.attention;
    if (!d.attention_note.empty()) note += (note.empty() ? "" : "; ") + d.attention_note;
  }
  defaults_note = note;
  return p;
}

estimate::ShardingSolver milp_solver() {
  return [](const sharding::ShardingProblem& p) -> Result<sharding::Solution> {
    PLANNER_TRY(sharding::MilpResult r, sharding::solve_milp(p));
    return r.solution;
  };
}

Result<cost::PrecisionPolicy> precision_policy(const std::string& name) {
  if (name == "bf16") return cost::PrecisionPolicy::mixed(core::Precision::bf16);
  if (name == "fp16") return cost::PrecisionPolicy::mixed(core::Precision::fp16);
  if (name == "fp8") {
    // Transformer Engine's recipes: the layers' GEMMs in fp8, the LM head
    // (Megatron's output layer) and anything else outside them in bf16.
    auto p = cost::PrecisionPolicy::mixed(core::Precision::bf16);
    p.set(graph::OpClass::matmul, core::Precision::fp8);
    p.fp8_in_layers_only(true);
    return p;
  }
  if (name == "tf32") return cost::PrecisionPolicy::uniform(core::Precision::tf32);
  if (name == "fp32") return cost::PrecisionPolicy::uniform(core::Precision::fp32);
  return Error{fmt::format("--precision '{}' is not one of bf16, fp16, fp8, tf32, fp32, auto", name)};
}

Result<cost::ProfileCostModel> TrainFlags::cost_model(cluster::ClusterProfile p, bool fused_kernels,
                                                      bool executor_kernels) const {
  PLANNER_TRY(cost::PrecisionPolicy policy, precision_policy(precision));
  cost::AttentionMode att;
  if (attention == "flash") att = cost::AttentionMode::flash;
  else if (attention == "unfused") att = cost::AttentionMode::unfused;
  else return Error{fmt::format("--attention '{}' is not one of flash, unfused, auto", attention)};
  cost::RecomputePolicy rc;
  if (recompute == "none") rc = cost::RecomputePolicy::none;
  else if (recompute == "selective") rc = cost::RecomputePolicy::selective;
  else if (recompute == "full") rc = cost::RecomputePolicy::full;
  else return Error{fmt::format("--recompute '{}' is not one of none, selective, full", recompute)};
  bool channels_last = false;
  if (memory_format == "nhwc") channels_last = true;
  else if (memory_format != "nchw")
    return Error{fmt::format("--memory-format '{}' is not one of nchw, nhwc", memory_format)};
  PLANNER_TRY(auto model,
              cost::ProfileCostModel::create(std::move(p), std::move(policy), att, rc, fused_kernels, channels_last));
  model.set_executor_kernels(executor_kernels);
  if (!recompute_modules.empty()) {
    auto m = cost::RecomputeModules::parse(recompute_modules);
    if (!m) return Error{"--recompute-modules: " + m.error().message};
    model.set_recompute_modules(*m);
  }
  return model;
}

std::string TrainFlags::modules_text() const {
  if (recompute_modules.empty()) return "";
  auto m = cost::RecomputeModules::parse(recompute_modules);
  return m && !m->is_default() ? m->text() : "";
}

Status TrainFlags::check_recompute_modules(std::optional<cost::RecomputePolicy> pinned) const {
  if (recompute_modules.empty()) return {};
  auto m = cost::RecomputeModules::parse(recompute_modules);
  if (!m) return Error{"--recompute-modules: " + m.error().message};
  if (pinned && *pinned != cost::RecomputePolicy::selective)
    return Error{fmt::format("--recompute-modules needs selective recompute (recompute is {}): the modules are what "
                             "selective recompute recomputes",
                             cost::recompute_name(*pinned))};
  return {};
}

}  // namespace planner::cli
