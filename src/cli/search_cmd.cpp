// planner search MODEL.onnx --devices N: the fastest layout that fits, as a
// plan file (docs/plan-format.md), with a short summary on stdout.

#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "planner/cli/command.hpp"
#include "planner/cli/import_flags.hpp"
#include "planner/cli/plan_build.hpp"
#include "planner/cli/train_flags.hpp"
#include "planner/core/io.hpp"
#include "planner/core/sha256.hpp"
#include "planner/plansearch/search.hpp"

namespace planner::cli {
namespace {

struct SearchArgs {
  std::string model;
  ImportFlags import;
  TrainFlags train;
  int devices = 0;
  std::int64_t global_batch = 0;
  std::string fix;
  std::string framework = "megatron";
  double max_memory_fraction = 1.0;
  double time_limit = 60;
  int threads = 0;
  std::size_t top_k = 5;
  int max_micro_batch = 16;
  bool json = false;
  std::string output;
  bool force = false;
  bool exact = false;
  bool tp_comm_overlap = false, fused_loss = false;
  int grad_reduce_bytes = 0;
  std::string optimizer = "adam";
  std::string hints_file;
  CLI::Option* global_batch_opt = nullptr;
  CLI::Option* threads_opt = nullptr;
};

std::string why_lost(const plansearch::Scored& alt, const plansearch::Scored& best) {
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
      {"data-parallel sync", (a.dp_exposed - b.dp_exposed).value},
      {"optimizer step", (a.optimizer - b.optimizer).value}};
  const auto* worst = &diffs.front();
  for (const auto& d : diffs)
    if (d.second > worst->second) worst = &d;
  return fmt::format("+{:.1f} % step time, most from {} (+{:.3g} s)", pct, worst->first, worst->second);
}

int run_search(SearchArgs& a) {
  if (a.devices < 1) return fail("search", fmt::format("--devices must be at least 1 (got {})", a.devices));
  if (a.devices > estimate::kMaxDevices)
    return fail("search", fmt::format("--devices {} is above the planner's limit of {} devices", a.devices,
                                      estimate::kMaxDevices));
  if (a.global_batch_opt->count() > 0 && a.global_batch < 1)
    return fail("search", fmt::format("--global-batch must be at least 1 (got {})", a.global_batch));
  if (a.threads_opt->count() > 0 && a.threads < 1)
    return fail("search", fmt::format("--threads must be at least 1 (got {})", a.threads));
  if (a.max_micro_batch < 1)
    return fail("search", fmt::format("--max-micro-batch must be at least 1 (got {})", a.max_micro_batch));
  if (!(a.max_memory_fraction > 0 && a.max_memory_fraction <= 1))
    return fail("search", fmt::format("--max-memory-fraction must be in (0, 1] (got {})", a.max_memory_fraction));
  if (!(a.time_limit > 0)) return fail("search", "--time-limit must be positive");
  auto fw = estimate::parse_framework(a.framework);
  if (!fw) return fail("search", "--framework: " + fw.error().message);
  auto fixed = plansearch::parse_fixed(a.fix);
  if (!fixed) return fail("search", fixed.error().message);
  if (a.train.recompute_opt && a.train.recompute_opt->count() > 0) {
    // --recompute given: pinned, as --fix recompute=... would.
    auto r = plansearch::parse_fixed("recompute=" + a.train.recompute);
    if (!r) return fail("search", "--recompute: " + r.error().message);
    fixed->recompute = r->recompute;
  }
  auto profile = a.train.load();
  if (!profile) return fail("search", profile.error().message);
  auto opts = a.import.options();
  if (!opts) return fail("search", opts.error().message);

  // The output is checked before any work.
  const std::filesystem::path out = a.output.empty() ? std::filesystem::path("plan.json") : std::filesystem::path(a.output);
  const auto mode = a.force ? io::Overwrite::replace : io::Overwrite::refuse;
  if (auto st = io::check_writable(out, mode); !st) return fail("search", st.error().message);

  // Import once at an unlikely batch (a prime) to learn whether the file's
  // batch is static: a static batch does not follow --batch.
  constexpr std::int64_t kProbeBatch = 9973;
  auto probe_opts = *opts;
  if (!probe_opts.batch) probe_opts.batch = kProbeBatch;
  auto probe = onnx::import_file(a.model, probe_opts);
  if (!probe) return fail("search", probe.error().message);
  const std::int64_t probed = graph_batch(probe->graph);
  const bool static_batch = probed != *probe_opts.batch;
  plansearch::Space space;
  space.devices = a.devices;
  space.devices_per_node = profile->devices_per_node > 0 ? profile->devices_per_node : 8;
  space.framework = *fw;
  space.base.tp_comm_overlap = a.tp_comm_overlap;
  space.base.fused_loss = a.fused_loss;
  space.base.grad_reduce_bytes = a.grad_reduce_bytes;
  if (!a.hints_file.empty()) {
    auto text = io::read_file(a.hints_file);
    if (!text) return fail("search", text.error().message);
    auto hints = estimate::parse_hints(*text, a.hints_file);
    if (!hints) return fail("search", hints.error().message);
    space.base.hints = std::move(hints).value();
  }
  if (a.grad_reduce_bytes != 0 && a.grad_reduce_bytes != 2 && a.grad_reduce_bytes != 4)
    return fail("search", fmt::format("--grad-reduce-bytes must be 2 or 4 (got {})", a.grad_reduce_bytes));
  if (a.optimizer == "adam") space.optimizer = cost::Optimizer::adam;
  else if (a.optimizer == "sgd") space.optimizer = cost::Optimizer::sgd_momentum;
  else if (a.optimizer == "sgd-plain") space.optimizer = cost::Optimizer::sgd;
  else return fail("search", fmt::format("--optimizer '{}' is not one of adam, sgd, sgd-plain", a.optimizer));
  space.fixed = *fixed;
  space.max_memory_fraction = a.max_memory_fraction;
  space.max_micro_batch = a.max_micro_batch;
  if (opts->batch || static_batch) {
    // A batch the user bound, or one the file fixes: the micro-batch.
    const int mb = static_cast<int>(opts->batch ? *opts->batch : probed);
    if (space.fixed.micro_batch && *space.fixed.micro_batch != mb)
      return fail("search", fmt::format("--fix mb={} differs from the model's batch {}", *space.fixed.micro_batch, mb));
    space.fixed.micro_batch = mb;
  }
  space.global_batch = a.global_batch > 0 ? a.global_batch
                                          : static_cast<std::int64_t>(space.fixed.micro_batch.value_or(1)) * a.devices;

  // Every layout runs at least B / (N x largest micro-batch) micro-batches.
  const std::int64_t largest_mb = space.fixed.micro_batch.value_or(space.max_micro_batch);
  if (space.global_batch / (static_cast<std::int64_t>(a.devices) * std::max(1, static_cast<int>(largest_mb))) >
      estimate::kMaxMicroBatches)
    return fail("search", fmt::format("--global-batch {} needs more than {} micro-batches per step on {} devices "
                                      "(micro-batch at most {}): above the planner's limit",
                                      space.global_batch, estimate::kMaxMicroBatches, a.devices, largest_mb));

  std::map<int, std::unique_ptr<onnx::ImportedModel>> graphs;
  if (static_batch || opts->batch)
    graphs[static_cast<int>(probed)] = std::make_unique<onnx::ImportedModel>(std::move(probe).value());
  auto graph_at = [&](int mb) -> Result<const graph::OpGraph*> {
    auto it = graphs.find(mb);
    if (it == graphs.end()) {
      auto o = *opts;
      o.batch = mb;
      PLANNER_TRY(onnx::ImportedModel m, onnx::import_file(a.model, o));
      it = graphs.emplace(mb, std::make_unique<onnx::ImportedModel>(std::move(m))).first;
    }
    return &it->second->graph;
  };
  const bool fused = *fw == estimate::Framework::megatron || *fw == estimate::Framework::megatron_legacy ||
                     *fw == estimate::Framework::deepspeed;
  std::map<cost::RecomputePolicy, std::unique_ptr<cost::ProfileCostModel>> models;
  auto model_for = [&](cost::RecomputePolicy rc) -> Result<const cost::CostModel*> {
    auto it = models.find(rc);
    if (it == models.end()) {
      TrainFlags t = a.train;
      t.recompute = std::string(cost::recompute_name(rc));
      PLANNER_TRY(cost::ProfileCostModel m, t.cost_model(*profile, fused));
      it = models.emplace(rc, std::make_unique<cost::ProfileCostModel>(std::move(m))).first;
    }
    return it->second.get();
  };

  plansearch::Options so;
  const estimate::ShardingSolver exact = milp_solver();
  if (a.exact) so.solver = &exact;
  so.time_limit_s = a.time_limit;
  so.threads = a.threads > 0 ? a.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  so.top_k = std::max<std::size_t>(1, a.top_k);
  const bool tty = isatty(fileno(stderr)) != 0 && !a.json;
  if (tty)
    so.progress = [](std::size_t done, std::size_t total) {
      fmt::print(stderr, "\rsearching: {}/{} layouts", done, total);
      std::fflush(stderr);
    };
  auto found = plansearch::search(space, graph_at, model_for, so);
  if (tty) fmt::print(stderr, "\r\033[K");
  if (!found) return fail("search", found.error().message);
  const auto& r = *found;
  const auto& best = r.best.front();
  const auto git = graphs.find(best.candidate.config.micro_batch);
  std::vector<std::string> notes = git != graphs.end() ? git->second->report.notes : std::vector<std::string>{};
  std::erase_if(notes, [&](const std::string& n) { return n.find(fmt::format("--batch {}", kProbeBatch)) != std::string::npos; });
  if (static_batch)
    notes.push_back(fmt::format("the model's batch is static ({}): the micro-batch is fixed to it", probed));

  // The winner again with advice off and the plan details.
  auto sha = sha256_file(a.model);
  if (!sha) return fail("search", sha.error().message);
  PlanSources src{"search", a.model, *sha, *opts, *profile, a.train.precision,
                  std::string(cost::recompute_name(best.candidate.recompute)), a.train.attention};
  // No wall-clock time in the plan: the same inputs give the same bytes.
  src.search_time_s = 0;
  src.layouts_scored = static_cast<std::int64_t>(r.scored);
  src.lower_bound_s = r.complete ? r.speed_of_light.value : r.lower_bound.value;
  for (std::size_t i = 1; i < r.best.size(); ++i)
    src.alternatives.push_back({plansearch::describe(r.best[i].candidate), r.best[i].estimate.step_time.value,
                                r.best[i].estimate.fits, why_lost(r.best[i], best)});
  src.import.batch = best.candidate.config.micro_batch;
  auto plan = build_plan(best.estimate, src);
  if (!plan) return fail("search", plan.error().message);
  if (auto st = plan::validate(*plan); !st) return fail("search", "internal: the plan does not validate: " + st.error().message);
  if (auto st = io::write_file(out, plan::to_json(*plan), mode); !st) return fail("search", st.error().message);

  const auto& e = best.estimate;
  if (a.json) {
    nlohmann::json j;
    j["format"] = "planner.search/v1";
    j["plan_file"] = out.string();
    j["layout"] = plansearch::describe(best.candidate);
    j["step_time_s"] = e.step_time.value;
    j["mfu"] = e.mfu;
    j["peak_memory_bytes"] = e.peak_stage().peak().value;
    j["capacity_bytes"] = e.capacity.value;
    j["speed_of_light_s"] = r.speed_of_light.value;
    // The best step any layout of the searched space can reach (the best
    // found, when the space was exhausted); the plan's prediction records
    // the speed of light, the bound for any plan.
    j["space_lower_bound_s"] = r.lower_bound.value;
    j["complete"] = r.complete;
    j["layouts"] = {{"enumerated", r.enumerated}, {"pruned_memory", r.pruned_memory}, {"pruned_bound", r.pruned_bound},
                    {"scored", r.scored}, {"failed", r.failed}};
    j["search_time_s"] = r.elapsed_s;
    nlohmann::json alts = nlohmann::json::array();
    for (const auto& alt : src.alternatives)
      alts.push_back({{"layout", alt.layout}, {"step_time_s", alt.step_time_s}, {"why", alt.why}});
    j["alternatives"] = alts;
    fmt::print("{}\n", j.dump(2));
    return kExitOk;
  }
  fmt::print("model        {} ({:.4g} B parameters)\n", a.model, static_cast<double>(e.parameters) / 1e9);
  fmt::print("cluster      {} x {} ({} per node), global batch {}\n", a.devices, profile->name,
             space.devices_per_node, space.global_batch);
  fmt::print("best layout  {}\n", plansearch::describe(best.candidate));
  fmt::print("step time    {:.4g} s, {:.1f} model TFLOP/s per device, MFU {:.1f} %\n", e.step_time.value,
             e.model_tflops_per_device, 100 * e.mfu);
  fmt::print("memory       {:.2f} GiB of {:.2f} GiB on the fullest stage\n", e.peak_stage().peak().value / 1073741824.0,
             e.capacity.value / 1073741824.0);
  fmt::print("bound        speed of light {:.4g} s (gap {:.1f} %){}\n", r.speed_of_light.value,
             100 * (e.step_time.value / r.speed_of_light.value - 1),
             r.complete ? ", search space exhausted" : fmt::format(", stopped at --time-limit: best possible >= {:.4g} s", r.lower_bound.value));
  fmt::print("searched     {} layouts: {} pruned by memory, {} by bound, {} scored ({} failed) in {:.2f} s\n",
             r.enumerated, r.pruned_memory, r.pruned_bound, r.scored, r.failed, r.elapsed_s);
  if (!src.alternatives.empty()) fmt::print("runners-up\n");
  for (const auto& alt : src.alternatives) fmt::print("  {:.4g} s  {}  ({})\n", alt.step_time_s, alt.layout, alt.why);
  fmt::print("plan         {}\n", out.string());
  for (const auto& n : notes) fmt::print("note: {}\n", n);
  return kExitOk;
}

}  // namespace

Runner setup_search(CLI::App& sub) {
  auto a = std::make_shared<SearchArgs>();
  sub.add_option("model", a->model, "ONNX model file")->required();
  a->import.add_to(sub);
  a->train.add_to(sub);
  sub.add_option("--devices", a->devices, "Number of devices N")->required();
  a->global_batch_opt = sub.add_option("--global-batch", a->global_batch, "Global batch (default: the model's batch x N)");
  sub.add_option("--fix", a->fix, "Pin degrees or settings: tp=8,pp=4,dp=..,cp=..,vp=..,mb=..,zero=..,recompute=..,schedule=..,sp=0|1");
  sub.add_option("--framework", a->framework, "megatron | megatron-legacy | deepspeed | fsdp | ddp")->capture_default_str();
  sub.add_option("--max-memory-fraction", a->max_memory_fraction, "Fraction of device memory a plan may use")->capture_default_str();
  sub.add_option("--max-micro-batch", a->max_micro_batch, "Largest micro-batch tried")->capture_default_str();
  sub.add_option("--time-limit", a->time_limit, "Seconds before the search stops with its best plan")->capture_default_str();
  a->threads_opt = sub.add_option("--threads", a->threads, "Threads (default: all cores)");
  sub.add_option("--top-k", a->top_k, "Layouts reported (the best and the runners-up)")->capture_default_str();
  sub.add_flag("--json", a->json, "Print the summary as JSON (planner.search/v1)");
  sub.add_option("-o,--output", a->output, "Plan file to write (default plan.json; replaced only with --force)");
  sub.add_flag("--force", a->force, "Replace an existing plan file");
  sub.add_option("--hints", a->hints_file, "Fix the strategies of named ops; the search chooses the rest (docs/hints-format.md)");
  sub.add_option("--optimizer", a->optimizer, "adam | sgd (momentum) | sgd-plain")->capture_default_str();
  sub.add_flag("--tp-comm-overlap", a->tp_comm_overlap, "Tensor-parallel collectives overlapped with their GEMMs");
  sub.add_flag("--fused-loss", a->fused_loss, "Fused cross-entropy kernel (no fp32 copy of the logits)");
  sub.add_option("--grad-reduce-bytes", a->grad_reduce_bytes, "Bytes per reduced gradient element, 2 or 4");
  sub.add_flag("--exact", a->exact, "Solve every op-level sharding exactly (MILP with COIN-OR CBC)");
  return [a]() -> int { return run_search(*a); };
}

}  // namespace planner::cli
