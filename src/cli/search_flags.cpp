// The layout search shared by `planner search` and `planner check`: flags,
// the imports per micro-batch, the cost models per recompute policy, and the
// best layout built into a plan.

#include "planner/cli/search_flags.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "planner/cli/plan_build.hpp"
#include "planner/core/io.hpp"
#include "planner/core/sha256.hpp"

namespace planner::cli {
namespace {

std::string why_lost(const search::Scored& alt, const search::Scored& best) {
  const auto& a = alt.estimate;
  const auto& b = best.estimate;
  const double pct = 100.0 * (a.step_time.value / b.step_time.value - 1.0);
  // The component that grew most.
  const std::vector<std::pair<const char*, double>> diffs = {
      {"compute", (a.compute - b.compute).value},
      {"recompute", (a.recompute - b.recompute).value},
      {"model-parallel communication", (a.model_parallel.total() - b.model_parallel.total()).value},
      {"pipeline bubble", (a.bubble - b.bubble).value},
      {"ZeRO-3 gathers", (a.zero3_exposed - b.zero3_exposed).value},
      {"gradient accumulation passes", (a.grad_accumulation - b.grad_accumulation).value},
      {"data-parallel sync", (a.dp_exposed - b.dp_exposed).value},
      {"optimizer step", (a.optimizer - b.optimizer).value}};
  const auto* worst = &diffs.front();
  for (const auto& d : diffs)
    if (d.second > worst->second) worst = &d;
  return fmt::format("+{:.1f} % step time, most from {} (+{:.3g} s)", pct, worst->first, worst->second);
}

}  // namespace

void SearchFlags::add_to(CLI::App& sub, bool devices_required, const std::string& memory_help) {
  import.add_to(sub);
  train.add_to(sub);
  devices_opt = sub.add_option("--devices", devices, "Number of devices N");
  if (devices_required) devices_opt->required();
  global_batch_opt = sub.add_option("--global-batch", global_batch, "Global batch (default: the model's batch x N)");
  sub.add_option("--fix", fix, "Pin degrees or settings: tp=8,pp=4,dp=..,cp=..,ep=..,vp=..,mb=..,zero=..,recompute=..,schedule=..,sp=0|1");
  sub.add_option("--framework", framework, "megatron | megatron-legacy | deepspeed | fsdp | ddp")->capture_default_str();
  sub.add_option("--max-memory-fraction", max_memory_fraction, memory_help)->capture_default_str();
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
  PLANNER_TRY(cluster::ClusterProfile profile, a.train.load());
  PLANNER_TRY(onnx::ImportOptions opts, a.import.options());
  return SearchSetup{*fw, std::move(fixed), std::move(profile), std::move(opts)};
}

Result<SearchFound> search_best_plan(const SearchFlags& a, const SearchSetup& setup, const std::string& model,
                                     ProgressLine& progress) {
  const auto& opts = setup.import;
  const auto& profile = setup.profile;
  // Import once at an unlikely batch (a prime) to learn whether the file's
  // batch is static. The importer rebinds a static batch to --batch (scaling
  // the batch axes) unless some size does not follow the batch: only such a
  // model keeps its batch, and then the micro-batch is pinned to it.
  constexpr std::int64_t kProbeBatch = 9973;
  auto probe_opts = opts;
  if (!probe_opts.batch) probe_opts.batch = kProbeBatch;
  progress.set(fmt::format("importing {}", model));
  PLANNER_TRY(onnx::ImportedModel probe, onnx::import_file(model, probe_opts));
  const std::int64_t probed = graph_batch(probe.graph);
  const std::optional<std::int64_t> static_batch = probe.report.static_batch;
  const bool pinned = probed != *probe_opts.batch;  // a batch that does not follow --batch
  std::string why_pinned;
  for (const auto& n : probe.report.notes)
    if (auto k = n.find("(cannot rebind: "); k != std::string::npos && why_pinned.empty()) why_pinned = n.substr(k);
  search::Space space;
  space.devices = a.devices;
  space.devices_per_node = profile.devices_per_node > 0 ? profile.devices_per_node : 8;
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
  space.max_micro_batch = a.max_micro_batch;
  if (opts.batch || pinned) {
    // A batch the user bound, or one the file fixes: the micro-batch.
    const int mb = static_cast<int>(pinned ? probed : *opts.batch);
    if (space.fixed.micro_batch && *space.fixed.micro_batch != mb)
      return make_error("--fix mb={} differs from the model's batch {}", *space.fixed.micro_batch, mb);
    space.fixed.micro_batch = mb;
  } else if (static_batch && !(a.max_micro_batch_opt && a.max_micro_batch_opt->count() > 0)) {
    // A rebindable static batch: the file's batch is one of the micro-batches tried.
    space.max_micro_batch =
        static_cast<int>(std::clamp<std::int64_t>(*static_batch, space.max_micro_batch, std::int64_t{1} << 30));
  }
  // The model's batch (bound, static or 1) x N.
  const std::int64_t model_batch = space.fixed.micro_batch ? *space.fixed.micro_batch : static_batch.value_or(1);
  space.global_batch = a.global_batch > 0 ? a.global_batch : model_batch * a.devices;
  // Every layout runs at least B / (N x largest micro-batch) micro-batches.
  const std::int64_t largest_mb = space.fixed.micro_batch.value_or(space.max_micro_batch);
  if (space.global_batch / (static_cast<std::int64_t>(a.devices) * std::max(1, static_cast<int>(largest_mb))) >
      estimate::kMaxMicroBatches)
    return make_error("--global-batch {} needs more than {} micro-batches per step on {} devices (micro-batch at most "
                      "{}): above the planner's limit",
                      space.global_batch, estimate::kMaxMicroBatches, a.devices, largest_mb);

  std::map<int, std::unique_ptr<onnx::ImportedModel>> graphs;
  if (pinned || opts.batch) graphs[static_cast<int>(probed)] = std::make_unique<onnx::ImportedModel>(std::move(probe));
  auto graph_at = [&](int mb) -> Result<const graph::OpGraph*> {
    auto it = graphs.find(mb);
    if (it == graphs.end()) {
      auto o = opts;
      o.batch = mb;
      PLANNER_TRY(onnx::ImportedModel m, onnx::import_file(model, o));
      it = graphs.emplace(mb, std::make_unique<onnx::ImportedModel>(std::move(m))).first;
    }
    return &it->second->graph;
  };
  const bool fused = estimate::fuses_elementwise(setup.framework);
  std::map<cost::RecomputePolicy, std::unique_ptr<cost::ProfileCostModel>> models;
  auto model_for = [&](cost::RecomputePolicy rc) -> Result<const cost::CostModel*> {
    auto it = models.find(rc);
    if (it == models.end()) {
      TrainFlags t = a.train;
      t.recompute = std::string(cost::recompute_name(rc));
      PLANNER_TRY(cost::ProfileCostModel m, t.cost_model(profile, fused));
      it = models.emplace(rc, std::make_unique<cost::ProfileCostModel>(std::move(m))).first;
    }
    return it->second.get();
  };

  search::Options so;
  const estimate::ShardingSolver exact = milp_solver();
  if (a.exact) so.solver = &exact;
  so.time_limit_s = a.time_limit;
  so.threads = a.threads > 0 ? a.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  so.top_k = std::max<std::size_t>(1, a.top_k);
  so.progress = [&progress](std::size_t done, std::size_t total) {
    progress.set(fmt::format("searching: {}/{} layouts", done, total));
  };
  progress.set("searching");
  PLANNER_TRY(search::Outcome r, search::search(space, graph_at, model_for, so));
  const auto& best = r.best.front();
  const auto git = graphs.find(best.candidate.config.micro_batch);
  std::vector<std::string> notes = git != graphs.end() ? git->second->report.notes : std::vector<std::string>{};
  std::erase_if(notes, [&](const std::string& n) {
    return n.find(fmt::format("--batch {}", kProbeBatch)) != std::string::npos ||
           n.find("the model's batch is static") != std::string::npos;
  });
  // A micro-batch the search could not choose is always announced, with why.
  if (pinned)
    notes.push_back(fmt::format("the model's batch is static ({}): the micro-batch is fixed to it {}", probed,
                                !why_pinned.empty() ? why_pinned
                                : static_batch     ? std::string("(the importer could not rebind it)")
                                                   : std::string("(its data inputs lead with different static dims, "
                                                                 "so none is the batch to rebind)")));
  else if (static_batch && !opts.batch)
    notes.push_back(fmt::format("the model's batch is static ({}): the graph is rebound to each micro-batch tried "
                                "(batch axes scaled){}",
                                *static_batch,
                                a.global_batch > 0 ? std::string()
                                                   : fmt::format("; global batch {} x {} devices", *static_batch, a.devices)));
  else if (static_batch && *opts.batch != *static_batch)
    notes.push_back(fmt::format("the model's batch is static ({}): rebound to --batch {} (batch axes scaled)",
                                *static_batch, *opts.batch));
  if (!pinned && opts.batch)
    notes.push_back(fmt::format("the micro-batch is fixed to --batch {}; leave --batch out to search micro-batches",
                                *opts.batch));

  // The winner again with advice off and the plan details.
  PLANNER_TRY(std::string sha, sha256_file(model));
  PlanSources src{"search", model, sha, opts, profile, a.train.precision,
                  std::string(cost::recompute_name(best.candidate.recompute)), a.train.attention};
  src.memory_format = a.train.memory_format;
  // No wall-clock time in the plan: the same inputs give the same bytes.
  src.search_time_s = 0;
  src.layouts_scored = static_cast<std::int64_t>(r.scored);
  src.lower_bound_s = r.lower_bound.value;
  for (std::size_t i = 1; i < r.best.size(); ++i)
    src.alternatives.push_back({search::describe(r.best[i].candidate), r.best[i].estimate.step_time.value,
                                r.best[i].estimate.fits, why_lost(r.best[i], best)});
  src.import.batch = best.candidate.config.micro_batch;
  PLANNER_TRY(plan::Plan plan, build_plan(best.estimate, src));
  if (auto st = plan::validate(plan); !st) return Error{"internal: the plan does not validate: " + st.error().message};
  return SearchFound{std::move(plan), std::move(r), space.devices_per_node, space.global_batch, std::move(notes)};
}

}  // namespace planner::cli
