// The layout search shared by `planner search` and `planner check`: flags,
// the imports per micro-batch, the cost models per recompute policy, and the
// best layout built into a plan.

#include "planner/cli/search_flags.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "planner/core/io.hpp"

namespace planner::cli {
void SearchFlags::add_to(CLI::App& sub, bool devices_required, const std::string& memory_help) {
  import.add_to(sub);
  train.add_to(sub);
  devices_opt = sub.add_option("--devices", devices, "Number of devices N");
  if (devices_required) devices_opt->required();
  global_batch_opt = sub.add_option("--global-batch", global_batch, "Global batch (default: the model's batch x N)");
  sub.add_option("--fix", fix, "Pin degrees or settings: tp=8,pp=4,dp=..,cp=..,ep=..,vp=..,mb=..,zero=..,recompute=..,schedule=..,sp=0|1");
  sub.add_option("--framework", framework, "megatron | megatron-legacy | deepspeed | fsdp | ddp | executor (planner's own executor: planner run, validate)")->capture_default_str();
  sub.add_option("--max-memory-fraction", max_memory_fraction, memory_help)->capture_default_str();
  sub.add_option("--memory-margin", memory_margin,
                 "Fraction of device memory a plan leaves free for what the memory prediction misses "
                 "(default: the profile's device.memory_margin_fraction)");
  max_micro_batch_opt = sub.add_option("--max-micro-batch", max_micro_batch,
                                       "Largest micro-batch tried (default 16, or the model's static batch when larger)")
                            ->capture_default_str();
  sub.add_option("--time-limit", time_limit, "Seconds before the search stops with its best plan")->capture_default_str();
  threads_opt = sub.add_option("--threads", threads, "Threads (default: all cores)");
  sub.add_option("--top-k", top_k, "Layouts reported (the best and the runners-up)")->capture_default_str();
  sub.add_option("--hints", hints_file, "Fix the strategies of named ops; the search chooses the rest (docs/hints-format.md)");
  sub.add_option("--optimizer", optimizer, "adam | sgd (momentum) | sgd-plain")->capture_default_str();
  sub.add_flag("--tp-comm-overlap", tp_comm_overlap, "Tensor-parallel collectives overlapped with their GEMMs");
  sub.add_flag("--fused-loss", fused_loss, "Fused cross-entropy kernel (no fp32 copy of the logits)");
  sub.add_option("--grad-reduce-bytes", grad_reduce_bytes, "Bytes per reduced gradient element, 2 or 4");
  sub.add_option("--optimizer-state-dtype", optimizer_state_dtype,
                 "Optimizer states of 16-bit parameters: fp32 | bf16")
      ->capture_default_str();
  sub.add_option("--master-weights", master_weights,
                 "Master copy of 16-bit parameters: fp32 | remainder (16-bit) | none")
      ->capture_default_str();
  sub.add_flag("--exact", exact, "Solve every op-level sharding exactly (MILP with COIN-OR CBC)");
}

Result<SearchSetup> prepare_search(SearchFlags& a) {
  if (a.devices < 1) return make_error("--devices must be at least 1 (got {})", a.devices);
  if (a.devices > estimate::kMaxDevices)
    return make_error("--devices {} is above the planner's limit of {} devices", a.devices, estimate::kMaxDevices);
  if (a.global_batch_opt && a.global_batch_opt->count() > 0 && a.global_batch < 1)
    return make_error("--global-batch must be at least 1 (got {})", a.global_batch);
  if (a.threads_opt && a.threads_opt->count() > 0 && a.threads < 1)
    return make_error("--threads must be at least 1 (got {})", a.threads);
  if (a.max_micro_batch < 1) return make_error("--max-micro-batch must be at least 1 (got {})", a.max_micro_batch);
  if (!(a.max_memory_fraction > 0 && a.max_memory_fraction <= 1))
    return make_error("--max-memory-fraction must be in (0, 1] (got {})", a.max_memory_fraction);
  if (a.memory_margin && !(*a.memory_margin >= 0 && *a.memory_margin < 1))
    return make_error("--memory-margin must be in [0, 1) (got {})", *a.memory_margin);
  if (!(a.time_limit > 0)) return Error{"--time-limit must be positive"};
  auto fw = estimate::parse_framework(a.framework);
  if (!fw) return Error{"--framework: " + fw.error().message};
  PLANNER_TRY(search::Fixed fixed, search::parse_fixed(a.fix));
  if (a.train.recompute_opt && a.train.recompute_opt->count() > 0) {
    // --recompute given: pinned, as --fix recompute=... would.
    auto r = search::parse_fixed("recompute=" + a.train.recompute);
    if (!r) return Error{"--recompute: " + r.error().message};
    fixed.recompute = r->recompute;
  }
  if (auto st = a.train.check_recompute_modules(fixed.recompute); !st) return st.error();
  PLANNER_TRY(cluster::ClusterProfile profile, a.train.load());
  PLANNER_TRY(onnx::ImportOptions opts, a.import.options());
  return SearchSetup{*fw, std::move(fixed), std::move(profile), std::move(opts)};
}

Result<planning::SearchFound> search_best_plan(const SearchFlags& a, const SearchSetup& setup, const std::string& model,
                                               ProgressLine& progress) {
  const auto& profile = setup.profile;
  planning::SearchRequest req;
  req.model = model;
  req.import = setup.import;
  req.profile = {profile.name, profile.content_hash, profile.overrides};
  search::Space& space = req.space;
  space.devices = a.devices;
  space.devices_per_node = profile.devices_per_node;
  space.framework = setup.framework;
  space.base.tp_comm_overlap = a.tp_comm_overlap;
  space.base.fused_loss = a.fused_loss;
  space.base.grad_reduce_bytes = a.grad_reduce_bytes;
  if (!a.hints_file.empty()) {
    PLANNER_TRY(std::string text, io::read_file(a.hints_file));
    PLANNER_TRY(space.base.hints, estimate::parse_hints(text, a.hints_file));
  }
  if (a.grad_reduce_bytes != 0 && a.grad_reduce_bytes != 2 && a.grad_reduce_bytes != 4)
    return make_error("--grad-reduce-bytes must be 2 or 4 (got {})", a.grad_reduce_bytes);
  {
    auto sb = estimate::parse_optimizer_state_dtype(a.optimizer_state_dtype);
    if (!sb.ok()) return make_error("--optimizer-state-dtype: {}", sb.error().message);
    space.base.optimizer_state_bytes = *sb;
    auto mw = estimate::parse_master_weights(a.master_weights);
    if (!mw.ok()) return make_error("--master-weights: {}", mw.error().message);
    space.base.master_weights = *mw;
  }
  if (a.optimizer == "adam") space.optimizer = cost::Optimizer::adam;
  else if (a.optimizer == "sgd") space.optimizer = cost::Optimizer::sgd_momentum;
  else if (a.optimizer == "sgd-plain") space.optimizer = cost::Optimizer::sgd;
  else return make_error("--optimizer '{}' is not one of adam, sgd, sgd-plain", a.optimizer);
  space.fixed = setup.fixed;
  space.max_memory_fraction = a.max_memory_fraction;
  space.memory_margin = a.memory_margin;
  space.max_micro_batch = a.max_micro_batch;
  req.max_micro_batch_given = a.max_micro_batch_opt && a.max_micro_batch_opt->count() > 0;
  req.global_batch = a.global_batch;

  const bool fused = estimate::fuses_elementwise(setup.framework);
  const bool own = estimate::runs_executor_kernels(setup.framework);
  req.cost_model = [&a, &profile, fused, own](cost::RecomputePolicy rc) -> Result<cost::ProfileCostModel> {
    TrainFlags t = a.train;
    t.recompute = std::string(cost::recompute_name(rc));
    return t.cost_model(profile, fused, own);
  };
  if (a.exact) req.solver = milp_solver();
  req.options.time_limit_s = a.time_limit;
  req.options.threads = a.threads > 0 ? a.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  req.options.top_k = std::max<std::size_t>(1, a.top_k);
  req.candidate_plans = a.candidate_plans;
  req.candidate_min_gap = a.candidate_min_gap;
  req.precision = a.train.precision;
  req.attention = a.train.attention;
  req.memory_format = a.train.memory_format;
  req.recompute_modules = a.train.modules_text();
  req.recompute_modules_given = !a.train.recompute_modules.empty();
  req.status = [&progress](const std::string& s) { progress.set(s); };
  return planning::search_plan(std::move(req));
}

}  // namespace planner::cli
