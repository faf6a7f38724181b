// planner search MODEL.onnx --devices N: the fastest layout that fits, as a
// plan file (docs/plan-format.md), with a short summary on stdout.

#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "planner/cli/command.hpp"
#include "planner/cli/flag_names.hpp"
#include "planner/cli/plan_files.hpp"
#include "planner/cli/search_flags.hpp"
#include "planner/cli/terminal.hpp"
#include "planner/cli/train_flags.hpp"
#include "planner/core/io.hpp"

namespace planner::cli {
namespace {

struct SearchArgs {
  std::string model;
  SearchFlags search;
  bool json = false;
  std::string output;
  bool force = false;
  std::string trace;  // --trace: Chrome trace of the chosen plan's step
};

int run_search(SearchArgs& a, const CLI::App& sub) {
  auto setup = prepare_search(a.search);
  if (!setup) return fail("search", setup.error().message);

  // The output is checked before any work.
  const std::filesystem::path out = a.output.empty() ? std::filesystem::path("plan.json") : std::filesystem::path(a.output);
  const auto mode = a.force ? io::Overwrite::replace : io::Overwrite::refuse;
  if (auto st = io::check_writable(out, mode); !st) return fail("search", st.error().message);
  if (!a.trace.empty())
    if (auto st = io::check_writable(a.trace, mode); !st) return fail("search", st.error().message);

  const Verbosity verbosity = verbosity_of(sub);
  ProgressLine progress(progress_wanted(sub, !a.json));
  auto found = search_best_plan(a.search, *setup, a.model, progress);
  progress.finish();
  if (!found) return fail("search", found.error().message);
  const auto& r = found->outcome;
  const auto& best = r.best.front();
  if (auto st = io::write_file(out, plan::to_json(found->plan), mode); !st) return fail("search", st.error().message);
  if (!a.trace.empty())
    if (auto st = write_trace(found->plan, a.trace, mode); !st) return fail("search", st.error().message);
  if (verbosity == Verbosity::verbose) {
    fmt::print(stderr, "planner search: {} layouts scored in {:.2f} s with {} failed\n", r.scored, r.elapsed_s, r.failed);
    for (const auto& f : r.failures) fmt::print(stderr, "planner search: failed: {}\n", f);
  }

  const auto& e = best.estimate;
  const auto& alternatives = found->plan.prediction.alternatives;
  if (a.json) {
    nlohmann::json j;
    j["format"] = "planner.search/v1";
    j["plan_file"] = out.string();
    j["layout"] = search::describe(best.candidate, found->plan.training.recompute_modules);
    j["training"] = {{"precision", a.search.train.precision}, {"attention", a.search.train.attention}};
    if (!a.search.train.defaults_note.empty()) j["training"]["defaults_note"] = a.search.train.defaults_note;
    j["step_time_s"] = e.step_time.value;
    j["mfu"] = e.mfu;
    j["peak_memory_bytes"] = e.peak_stage().peak().value;  // reserved (with fragmentation)
    j["allocated_memory_bytes"] = e.peak_stage().allocated().value;
    j["capacity_bytes"] = e.capacity.value;
    j["speed_of_light_s"] = r.speed_of_light.value;
    // A lower bound on the best step any layout of the searched space can
    // reach (the smallest layout bound; the plan's prediction records it too).
    j["space_lower_bound_s"] = r.lower_bound.value;
    j["complete"] = r.complete;
    j["layouts"] = {{"enumerated", r.enumerated}, {"pruned_memory", r.pruned_memory}, {"pruned_bound", r.pruned_bound},
                    {"pruned_twin", r.pruned_twin}, {"scored", r.scored}, {"unfit", r.unfit}, {"failed", r.failed}};
    j["search_time_s"] = r.elapsed_s;
    // A failed layout is a bug or an input error, never a normal outcome:
    // say which and why (the first few distinct errors, with a layout each).
    if (!r.failures.empty()) j["failures"] = r.failures;
    {
      // What the enumerated layouts span (search::space_ranges).
      const auto& sp = r.space;
      nlohmann::json space;
      space["tp"] = sp.tp;
      space["cp"] = sp.cp;
      space["pp"] = sp.pp;
      space["dp"] = sp.dp;
      space["ep"] = sp.ep;
      space["micro_batch"] = sp.micro_batch;
      nlohmann::json pv = nlohmann::json::array(), ss = nlohmann::json::array(), sch = nlohmann::json::array(),
                     rc = nlohmann::json::array();
      for (const auto& [pp, vp] : sp.pp_vp) pv.push_back({pp, vp});
      for (const auto& [zero, distopt] : sp.state_sharding) ss.push_back({{"zero", zero}, {"distributed_optimizer", distopt}});
      for (auto x : sp.schedules) sch.push_back(sim::schedule_name(x));
      for (auto x : sp.recompute) rc.push_back(cost::recompute_name(x));
      space["pp_vp"] = pv;
      space["state_sharding"] = ss;
      space["schedules"] = sch;
      space["recompute"] = rc;
      space["sequence_parallel_with_tp"] = sp.sequence_parallel;
      space["stage_cuts"] = sp.stage_cuts;
      j["space"] = space;
    }
    nlohmann::json alts = nlohmann::json::array();
    for (const auto& alt : alternatives)
      alts.push_back({{"layout", alt.layout}, {"step_time_s", alt.step_time_s}, {"why", alt.why}});
    j["alternatives"] = alts;
    fmt::print("{}\n", j.dump(2));
    return kExitOk;
  }
  // --quiet: the plan file is the result; no summary.
  if (verbosity == Verbosity::quiet) return kExitOk;
  fmt::print("model        {} ({:.4g} B parameters)\n", a.model, static_cast<double>(e.parameters) / 1e9);
  fmt::print("cluster      {} x {} ({} per node{}), global batch {}\n", a.search.devices, setup->profile.name,
             found->devices_per_node, fabric_note(setup->profile), found->global_batch);
  fmt::print("best layout  {}\n", search::describe(best.candidate, found->plan.training.recompute_modules));
  if (!a.search.train.defaults_note.empty()) fmt::print("defaults     {}\n", a.search.train.defaults_note);
  fmt::print("step time    {:.4g} s, {:.1f} model TFLOP/s per device, MFU {:.1f} %\n", e.step_time.value,
             e.model_tflops_per_device, 100 * e.mfu);
  fmt::print("memory       {:.2f} GiB of {:.2f} GiB on the fullest stage\n", e.peak_stage().peak().value / 1073741824.0,
             e.capacity.value / 1073741824.0);
  fmt::print("bound        {:.4g} s (gap {:.1f} %; speed of light {:.4g} s){}\n", r.lower_bound.value,
             100 * (e.step_time.value / r.lower_bound.value - 1), r.speed_of_light.value,
             r.complete ? ", search space exhausted" : ", stopped at --time-limit");
  const std::string twins =
      r.pruned_twin ? fmt::format(", {} by a fitting data-parallel twin", r.pruned_twin) : std::string();
  fmt::print("searched     {} layouts: {} pruned by memory, {} by bound{}, {} scored ({} did not fit, {} failed) in {:.2f} s\n",
             r.enumerated, r.pruned_memory, r.pruned_bound, twins, r.scored, r.unfit, r.failed, r.elapsed_s);
  if (!alternatives.empty()) fmt::print("runners-up\n");
  for (const auto& alt : alternatives) fmt::print("  {:.4g} s  {}  ({})\n", alt.step_time_s, alt.layout, alt.why);
  fmt::print("plan         {}\n", out.string());
  for (const auto& n : found->notes) fmt::print("note: {}\n", with_flags(n));
  return kExitOk;
}

}  // namespace

Runner setup_search(CLI::App& sub) {
  auto a = std::make_shared<SearchArgs>();
  sub.add_option("model", a->model, "ONNX model file")->required();
  a->search.add_to(sub, /*devices_required=*/true);
  sub.add_flag("--json", a->json, "Print the summary as JSON (planner.search/v1)");
  sub.add_option("-o,--output", a->output, "Plan file to write (default plan.json; replaced only with --force)");
  sub.add_flag("--force", a->force, "Replace an existing plan or trace file");
  sub.add_option("--trace", a->trace, "Also write the chosen plan's step as a Chrome trace (Perfetto, chrome://tracing)");
  return [a, &sub]() -> int { return run_search(*a, sub); };
}

}  // namespace planner::cli
