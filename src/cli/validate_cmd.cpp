// mpirun -n N planner validate MODEL.onnx [search flags] [--candidates K]
// [--baseline SPEC]... [--steps S] [--warmup W] [--rounds R] [--mode M]
// [-o validation.json] [--force] [--min-tau T] [--max-regret X]: searches
// the model as `planner search` would (same flags), takes the K best
// distinct layouts it scored and the baselines (each the best layout of its
// own pinned space; default pure data parallelism, dp=N), runs every one on
// the executor (real mode where supported, replay otherwise), interleaved
// over rounds, and sets the measured step times against the predicted ones:
// errors, speedups over the first baseline, ranks, Kendall tau and regret
// (validate/validate.hpp; docs/validate-format.md). Exit 0 when it ran, 1
// when a --min-tau / --max-regret threshold is violated, 2 for bad input.
// With --backend cuda, one GPU per rank (the GPU real mode for a one-device
// plan of one micro-batch per step, else the replay on the GPUs).

#include <algorithm>
#include <fstream>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "planner/cli/command.hpp"
#include "planner/cli/flag_names.hpp"
#include "planner/cli/search_flags.hpp"
#include "planner/cli/terminal.hpp"
#include "planner/cli/validate_exec.hpp"
#include "planner/core/io.hpp"
#include "planner/core/sha256.hpp"
#include "planner/planning/candidates.hpp"
#include "planner/report/report.hpp"
#include "planner/runtime_cpu/host_memory.hpp"
#include "planner/runtime_mpi/mpi_session.hpp"
#include "planner/validate/validate.hpp"
#include "launch.hpp"

namespace planner::cli {
namespace {

struct ValidateArgs {
  std::string model;
  SearchFlags search;
  std::size_t candidates = 3;
  double min_gap_pct = 3;  // --min-gap: candidates' predicted times at least this far apart
  std::vector<std::string> baselines;
  std::vector<std::string> plans;  // --plan: candidates from files instead of the search
  int steps = 3, warmup = 1, rounds = 3;
  std::string mode = "auto";
  std::string backend = "cpu";
  double timeout_s = 300;
  std::string output;
  std::string report;  // --report: the first row's plan as HTML with the predicted-against-measured chart
  bool force = false;
  double min_tau = 0, max_regret = 0;
  CLI::Option* min_tau_opt = nullptr;
  CLI::Option* max_regret_opt = nullptr;
};

// MemTotal / ranks on this host, bytes (0 when unknown): the replay's limit.
double replay_memory_limit(int world) {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  double kib = 0, total = 0;
  while (in >> key >> kib >> unit)
    if (key == "MemTotal:") total = kib * 1024.0;
  int local = world;
  if (const char* s = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"); s && std::atoi(s) > 0) local = std::atoi(s);
  return total / local;
}

// A time in the unit that suits it.
std::string show_time(double s) {
  if (s >= 1) return fmt::format("{:.4g} s", s);
  if (s >= 1e-3) return fmt::format("{:.4g} ms", s * 1e3);
  return fmt::format("{:.4g} us", s * 1e6);
}

// One row to run: the table's row and, when it has one, its plan.
struct Layout {
  validate::Row row;
  std::optional<plan::Plan> plan;
  std::vector<int> key;  // planning::distinct_key
};

// The layouts the search made candidate plans of (SearchRequest::
// candidate_plans, with its gap), as rows.
std::vector<Layout> candidate_rows(const planning::SearchFound& found) {
  std::vector<Layout> out;
  const auto& best = found.outcome.best;
  for (const auto& [i, plan] : found.candidates) {
    Layout l;
    l.row.name = out.empty() ? "best" : fmt::format("candidate {}", out.size() + 1);
    l.row.role = "candidate";
    l.row.layout = search::describe(best[i].candidate);
    l.row.predicted_s = best[i].estimate.step_time.value;
    l.key = planning::distinct_key(best[i].candidate);
    l.plan = plan;
    out.push_back(std::move(l));
  }
  return out;
}

// --plan files as the candidates, in the order given (the first stands
// for the search's choice). Errors: unreadable or invalid plans, or a plan
// for another number of devices than ranks.
Result<std::vector<Layout>> plan_rows(const std::vector<std::string>& files, const std::string& model, int ranks) {
  std::vector<Layout> out;
  PLANNER_TRY(const std::string model_sha, sha256_file(model));
  for (const auto& f : files) {
    PLANNER_TRY(std::string text, io::read_file(f));
    PLANNER_TRY(plan::Plan p, plan::from_json(text, f));
    if (auto st = plan::validate(p); !st) return make_error("{}: {}", f, st.error().message);
    if (!p.model.sha256.empty() && p.model.sha256 != model_sha)
      return make_error("{}: the plan's model.sha256 {} differs from {}'s {}", f, p.model.sha256.substr(0, 12), model,
                        model_sha.substr(0, 12));
    if (p.cluster.devices != ranks)
      return make_error("{}: the plan has {} devices (cluster.devices) but {} ranks were started", f,
                        p.cluster.devices, ranks);
    const auto& l = p.layout;
    Layout row;
    row.row.name = fmt::format("plan {}", out.size() + 1);
    row.row.role = "candidate";
    row.row.layout = fmt::format("{}: dp={} tp={} pp={}{}{} micro-batch={} {}{} recompute={}", f, l.dp, l.tp, l.pp,
                                 l.cp > 1 ? fmt::format(" cp={}", l.cp) : "", l.vp > 1 ? fmt::format(" vp={}", l.vp) : "",
                                 p.training.micro_batch, l.schedule, l.zero > 0 ? fmt::format(" zero={}", l.zero) : "",
                                 p.training.recompute);
    row.row.predicted_s = p.prediction.step_time_s;
    row.plan = std::move(p);  // key left empty: a baseline is never merged into a plan file's row
    out.push_back(std::move(row));
  }
  return out;
}

// Adds the baseline `spec` (its own search); a baseline that does not fit
// or cannot be searched is a row that is not run. Returns the index of the
// row that stands for it (an existing row when its layout is one already
// listed). Errors: a bad spec (bad input).
Result<std::size_t> add_baseline(std::vector<Layout>& rows, const std::string& spec, std::size_t number,
                                 const ValidateArgs& a, const SearchSetup& setup) {
  auto parsed = search::parse_fixed(spec);
  if (!parsed) {
    std::string msg = parsed.error().message;
    if (msg.starts_with("`fix`")) msg = msg.substr(5);  // parse_fixed names the --fix list; this is a baseline
    if (msg.starts_with(":")) msg = msg.substr(1);
    return make_error("--baseline '{}': {}", spec, msg.starts_with(" ") ? msg.substr(1) : msg);
  }
  SearchSetup bs = setup;
  bs.fixed = planning::baseline_space(*parsed, setup.fixed);
  ProgressLine quiet(false);
  auto found = search_best_plan(a.search, bs, a.model, quiet);
  const std::string name = fmt::format("baseline {}", number);
  if (!found) {
    Layout l;
    l.row.name = name;
    l.row.role = "baseline";
    l.row.spec = spec;
    l.row.layout = spec;
    // The search's `fix` is the baseline's pins here.
    std::string m = found.error().message;
    if (auto at = m.find("`fix`"); at != std::string::npos) m.replace(at, 5, "the baseline's pins");
    l.row.note = "not run: " + m;
    rows.push_back(std::move(l));
    return rows.size() - 1;
  }
  const auto& best = found->outcome.best.front();
  const auto key = planning::distinct_key(best.candidate);
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].plan && rows[i].key == key) {
      auto& note = rows[i].row.note;
      note += fmt::format("{}also {} ({})", note.empty() ? "" : "; ", name, spec);
      return i;
    }
  Layout l;
  l.row.name = name;
  l.row.role = "baseline";
  l.row.spec = spec;
  l.row.layout = search::describe(best.candidate);
  l.row.predicted_s = best.estimate.step_time.value;
  l.key = key;
  l.plan = std::move(found->plan);
  rows.push_back(std::move(l));
  return rows.size() - 1;
}

// Every rank searched on its own: check that they all hold the same plans
// (a --time-limit hit on one rank only would break that). 0 when they agree.
Result<bool> ranks_agree(runtime::Communicator& world, const std::vector<Layout>& rows) {
  std::string all;
  for (const auto& l : rows) all += l.plan ? plan::to_json(*l.plan) : l.row.note;
  const std::string h = sha256_hex(all);
  // 48 bits of the digest as three 16-bit integers, exact in f32.
  float mine[3], root[3];
  for (int i = 0; i < 3; ++i) mine[i] = root[i] = static_cast<float>(std::stoi(h.substr(4 * i, 4), nullptr, 16));
  PLANNER_TRY_STATUS(world.broadcast(root, 3, core::DType::f32, 0));
  float differs[1] = {std::equal(mine, mine + 3, root) ? 0.0f : 1.0f};
  PLANNER_TRY_STATUS(world.all_reduce(differs, 1, core::DType::f32, runtime::ReduceOp::max));
  return differs[0] == 0.0f;
}

void print_table(const ValidateArgs& a, int ranks, const std::vector<validate::Row>& rows, const validate::Summary& s,
                 const std::string& baseline_spec) {
  const std::string choice = a.plans.empty() ? "the search's choice" : "plan 1";
  fmt::print("planner validate: {} on {} ranks (backend {}): {} rounds x {} steps after {} warm-up, interleaved\n",
             a.model, ranks, a.backend, a.rounds, a.steps, a.warmup);
  fmt::print("{:>2}  {:<12} {:<6} {:>11} {:>11} {:>7} {:>8} {:>14} {:>9}  {}\n", "#", "row", "mode", "predicted",
             "measured", "spread", "error", "speedup p/m", "rank p/m", "layout");
  auto num = [](const std::optional<double>& v, const char* f) {
    return v ? fmt::format(fmt::runtime(f), *v) : std::string("-");
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const auto& st = s.rows[i];
    const std::string speedup = fmt::format("{} / {}", num(st.predicted_speedup, "{:.2f}"), num(st.measured_speedup, "{:.2f}"));
    const std::string rank = st.measured_rank ? fmt::format("{} / {}", *st.predicted_rank, *st.measured_rank) : "-";
    fmt::print("{:>2}  {:<12} {:<6} {:>11} {:>11} {:>7} {:>8} {:>14} {:>9}  {}\n", i + 1, r.name,
               r.mode.empty() ? "-" : r.mode, r.predicted_s > 0 ? show_time(r.predicted_s) : "-",
               st.measured_s ? show_time(*st.measured_s) : "-", num(st.spread_pct, "{:.1f} %"),
               num(st.error_pct, "{:+.1f} %"), speedup, rank, r.layout);
  }
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (!rows[i].note.empty()) fmt::print("note: row {} ({}): {}\n", i + 1, rows[i].name, with_flags(rows[i].note));
  if (!s.other_mode_rows.empty()) {
    std::string list;
    for (auto i : s.other_mode_rows) list += fmt::format("{}{}", list.empty() ? "" : ", ", i + 1);
    fmt::print("note: row(s) {} measured in another mode than the {} rows: timed, not ranked against them\n", list,
               s.ranked_mode.empty() ? "other" : s.ranked_mode);
  }
  if (s.tau)
    fmt::print("tau          {:.3f} (Kendall tau-b of the predicted against the measured order, {} rows)\n", *s.tau,
               s.measured_rows);
  else
    fmt::print("tau          undefined ({} measured row(s), or every time tied)\n", s.measured_rows);
  if (s.regret)
    fmt::print("regret       {:.3f} (the predicted-best, row {}, measured {}; the measured-best, row {}, {})\n",
               *s.regret, *s.predicted_best + 1, show_time(*s.rows[*s.predicted_best].measured_s),
               *s.measured_best + 1, show_time(*s.rows[*s.measured_best].measured_s));
  if (s.baseline && *s.baseline == 0)
    fmt::print("speedup      {} is the baseline ({})\n", choice, baseline_spec);
  else if (s.baseline && s.choice_measured_speedup)
    fmt::print("speedup      {} measured {:.2f} times faster than the baseline ({}) (predicted {:.2f})\n", choice,
               *s.choice_measured_speedup, baseline_spec, s.choice_predicted_speedup.value_or(0));
  else if (s.baseline)
    fmt::print("speedup      {} ran in another mode than the baseline ({}, {}): not compared\n", choice, baseline_spec,
               s.ranked_mode);
  else
    fmt::print("speedup      no baseline was measured\n");
}

int run_validate(ValidateArgs& a, const CLI::App& sub) {
  const Verbosity verbosity = verbosity_of(sub);
  auto session = runtime::MpiSession::init(nullptr, nullptr);
  if (!session) return fail("validate", session.error().message);
  (void)runtime_cpu::retain_freed_memory();  // a refusal only costs speed (header)
  runtime::MpiSession& s = **session;
  s.install_crash_reporter("planner validate: error: ");
  const int rank = s.world_rank(), world_size = s.world_size();
  auto world = s.world(Seconds(a.timeout_s > 0 ? a.timeout_s : 300.0));
  if (!world) {
    if (rank == 0) fail("validate", world.error().message);
    return kExitBadInput;
  }
  // Bad input: every rank finds the same error; rank 0 prints it.
  auto bad = [&](const std::string& msg) {
    if (rank == 0) fail("validate", msg);
    world->reset();
    return kExitBadInput;
  };
  // Flags (every rank finds the same error).
  validate::Thresholds t;
  if (a.min_tau_opt->count() > 0) t.min_tau = a.min_tau;
  if (a.max_regret_opt->count() > 0) t.max_regret = a.max_regret;
  if (auto st = validate::check_thresholds(t); !st) return bad(st.error().message);
  if (a.candidates < 1) return bad("--candidates must be at least 1");
  if (!(a.min_gap_pct >= 0 && a.min_gap_pct < 100))
    return bad(fmt::format("--min-gap must be a percentage in [0, 100) (got {})", a.min_gap_pct));
  if (a.steps < 1) return bad(fmt::format("--steps must be at least 1 (got {})", a.steps));
  if (a.warmup < 0) return bad(fmt::format("--warmup must be at least 0 (got {})", a.warmup));
  if (a.rounds < 1) return bad(fmt::format("--rounds must be at least 1 (got {})", a.rounds));
  if (!(a.timeout_s > 0)) return bad(fmt::format("--timeout must be positive (got {:g})", a.timeout_s));
  if (a.backend != "cpu" && a.backend != "cuda") return bad(fmt::format("--backend '{}' is not cpu or cuda", a.backend));
#ifndef PLANNER_WITH_CUDA
  if (a.backend == "cuda") return bad(std::string(launch::kNoCudaBuild));
#endif
  auto mode = parse_exec_mode(a.mode);
  if (!mode) return bad(mode.error().message);

  if (a.search.devices_opt->count() == 0) a.search.devices = world_size;
  if (a.search.devices != world_size)
    return bad(fmt::format("--devices {} differs from the {} ranks started; run it with mpirun -n {}", a.search.devices,
                           world_size, a.search.devices));
  if (a.search.threads_opt->count() == 0)
    a.search.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / world_size);
  const std::size_t alternatives_kept = a.search.top_k > 0 ? a.search.top_k - 1 : 0;
  // Runners-up to choose the candidates from: with a gap, a ladder of K
  // layouts reaches further down the search's order.
  a.search.top_k = std::max(a.search.top_k, (a.min_gap_pct > 0 ? 64 : 8) * a.candidates);
  a.search.candidate_plans = a.candidates;
  a.search.candidate_min_gap = a.min_gap_pct / 100;
  auto setup = prepare_search(a.search);
  if (!setup) return bad(setup.error().message);
  const auto out_mode = a.force ? io::Overwrite::replace : io::Overwrite::refuse;
  if (!a.output.empty())
    if (auto st = io::check_writable(a.output, out_mode); !st) return bad(st.error().message);
  if (!a.report.empty())
    if (auto st = io::check_writable(a.report, out_mode); !st) return bad("--report: " + st.error().message);

  Result<std::vector<Layout>> layouts = std::vector<Layout>{};
  if (!a.plans.empty()) {
    layouts = plan_rows(a.plans, a.model, world_size);
    // The baselines train the plans' global batch unless told otherwise.
    if (layouts && !layouts->empty() && a.search.global_batch_opt->count() == 0)
      a.search.global_batch = layouts->front().plan->training.global_batch;
  } else {
    ProgressLine progress(rank == 0 && progress_wanted(sub));
    auto found = search_best_plan(a.search, *setup, a.model, progress);
    progress.finish();
    if (!found) return bad(found.error().message);
    // The best plan lists the runners-up --top-k asked for, not the 8 x K kept here.
    auto& alts = found->plan.prediction.alternatives;
    if (alts.size() > alternatives_kept) alts.resize(alternatives_kept);
    layouts = candidate_rows(*found);
  }
  if (!layouts) return bad(layouts.error().message);
  auto& rows = *layouts;
  const std::vector<std::string> specs =
      a.baselines.empty() ? std::vector<std::string>{fmt::format("dp={}", world_size)} : a.baselines;
  std::optional<std::size_t> first_baseline;
  for (std::size_t b = 0; b < specs.size(); ++b) {
    auto at = add_baseline(rows, specs[b], b + 1, a, *setup);
    if (!at) return bad(at.error().message);
    if (!first_baseline) first_baseline = *at;
  }
  auto agree = ranks_agree(**world, rows);
  if (!agree) {
    fmt::print(stderr, "planner validate: error: {}\n", agree.error().message);
    s.abort_job(3);
  }
  if (!*agree)
    return bad("the ranks' searches chose different layouts (a --time-limit reached on some ranks only?): raise "
               "--time-limit or pin the space with --fix");

  // --backend cuda: this rank's GPU and NCCL over the ranks (every rank
  // fails alike when any has no GPU).
  launch::CudaRun cuda;
  ExecDevice gpu;
  if (a.backend == "cuda") {
    auto opened = launch::open_cuda(**world, Seconds(a.timeout_s));
    if (!opened) return bad(opened.error().message);
    cuda = std::move(*opened);
    gpu = ExecDevice{cuda.index, cuda.device.get(), cuda.world.get()};
  }

  // Each plan made ready on this rank; a plan the executor cannot take, or
  // whose replay would not fit in memory, is reported and not run.
  std::vector<std::unique_ptr<Runnable>> ready(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].plan) continue;
    auto r = prepare_runnable(*rows[i].plan, a.model, rank, *mode, gpu);
    if (!r) {
      auto& note = rows[i].row.note;
      note = "not run: " + r.error().message + (note.empty() ? "" : "; " + note);
      continue;
    }
    ready[i] = std::make_unique<Runnable>(std::move(*r));
  }
  double limit = replay_memory_limit(world_size);
  std::string limit_from = "MemTotal / ranks";
  if (cuda.device) {
    auto mem = cuda.device->memory();
    limit = mem ? mem->free.value : 0;
    limit_from = "the GPU's free memory";
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    float need[1] = {ready[i] && !ready[i]->real ? static_cast<float>(ready[i]->program.memory_bytes()) : 0.0f};
    if (auto st = (*world)->all_reduce(need, 1, core::DType::f32, runtime::ReduceOp::max); !st) {
      fmt::print(stderr, "planner validate: error: {}\n", st.error().message);
      s.abort_job(3);
    }
    if (limit > 0 && need[0] > limit) {
      auto& note = rows[i].row.note;
      note = fmt::format("not run: the replay needs {:.2f} GiB on a rank, more than {} ({:.2f} GiB){}",
                         need[0] / 1073741824.0, limit_from, limit / 1073741824.0, note.empty() ? "" : "; " + note);
      ready[i].reset();
    }
  }
  std::vector<std::size_t> runnable;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (ready[i]) {
      runnable.push_back(i);
      rows[i].row.mode = ready[i]->real ? "real" : "replay";
      if (!ready[i]->why_replay.empty())
        rows[i].row.note += (rows[i].row.note.empty() ? "" : "; ") + ("replay: " + ready[i]->why_replay);
    }
  if (verbosity == Verbosity::verbose && rank == 0)
    fmt::print(stderr, "planner validate: {} rows, {} to run, {} rounds\n", rows.size(), runnable.size(), a.rounds);
  auto measured = validate::run_interleaved(runnable.size(), a.rounds, [&](std::size_t k) {
    return run_once(*ready[runnable[k]], **world, a.steps, a.warmup, gpu);
  });
  if (!measured) {
    fmt::print(stderr, "planner validate: error: {}\n", measured.error().message);
    s.abort_job(3);
  }
  for (std::size_t k = 0; k < runnable.size(); ++k) rows[runnable[k]].row.rounds_s = (*measured)[k];

  std::optional<plan::Plan> first_plan;
  if (!rows.empty()) first_plan = rows.front().plan;
  std::vector<validate::Row> table;
  for (auto& l : rows) table.push_back(std::move(l.row));
  const auto summary = validate::summarize(table, first_baseline, 0);
  const auto checks = validate::gate(summary, t);
  const bool passed = std::all_of(checks.begin(), checks.end(), [](const auto& c) { return c.passed; });
  int rc = passed ? kExitOk : kExitViolation;
  if (rank == 0) {
    if (!a.output.empty()) {
      validate::RunInfo info{a.model,  world_size, setup->profile.name, a.backend,
                             a.steps,  a.warmup,  a.rounds,
                             a.plans.empty() ? a.candidates : a.plans.size(),
                             a.plans.empty() ? std::optional<double>(a.min_gap_pct) : std::nullopt,
                             launch::hostname(), launch::utc_now()};
      if (auto st = io::write_file(a.output, validate::to_json(info, table, summary, checks), out_mode); !st)
        rc = fail("validate", st.error().message);
    }
    if (!a.report.empty() && first_plan) {
      std::vector<report::ValidationPoint> points;
      for (std::size_t i = 0; i < table.size(); ++i)
        points.push_back({table[i].name, table[i].layout, table[i].predicted_s,
                          summary.rows[i].measured_s.value_or(0.0), table[i].role == "baseline"});
      if (auto st = io::write_file(a.report, report::html_report(*first_plan, points), out_mode); !st)
        rc = fail("validate", st.error().message);
    }
    if (verbosity != Verbosity::quiet) print_table(a, world_size, table, summary, specs.front());
    for (const auto& c : checks)
      if (!c.passed || verbosity != Verbosity::quiet) fmt::print("{}  {}\n", c.passed ? "ok  " : "FAIL", c.text);
    if (verbosity != Verbosity::quiet) {
      if (!checks.empty())
        fmt::print("validate     {}: {} of {} threshold(s) violated\n", passed ? "passed" : "failed",
                   std::count_if(checks.begin(), checks.end(), [](const auto& c) { return !c.passed; }),
                   checks.size());
      if (!a.output.empty() && rc != kExitBadInput) fmt::print("wrote {}\n", a.output);
      if (!a.report.empty() && first_plan && rc != kExitBadInput) fmt::print("wrote {}\n", a.report);
    }
  }
  cuda.world.reset();
  cuda.device.reset();
  world->reset();
  return rc;
}

}  // namespace

Runner setup_validate(CLI::App& sub) {
  auto a = std::make_shared<ValidateArgs>();
  sub.add_option("model", a->model, "ONNX model file (searched as `planner search` would)")->required();
  // The candidates run on planner's own executor: predict them as it runs
  // (fp32, unfused ops, a gradient accumulation pass, dp sync after the
  // flush: estimate::Framework::executor) unless --framework says otherwise.
  a->search.framework = "executor";
  a->search.add_to(sub, /*devices_required=*/false);
  sub.add_option("--candidates", a->candidates, "Distinct layouts of the search to run (the best first)")
      ->capture_default_str();
  sub.add_option("--min-gap", a->min_gap_pct,
                 "Percent: each candidate after the best is predicted at least this much slower than the one before "
                 "(a closer pair's measured order is the host's noise; 0: every distinct layout)")
      ->capture_default_str();
  sub.add_option("--baseline", a->baselines,
                 "A baseline layout, e.g. tp=2,pp=1 (repeatable; default dp=N: pure data parallelism); speedups are "
                 "over the first")
      ->allow_extra_args(false);  // one SPEC per --baseline: a model after it stays the model
  sub.add_option("--plan", a->plans,
                 "Run these plan files as the candidates instead of the search's (repeatable; the first stands for the "
                 "choice; baselines are still searched)")
      ->allow_extra_args(false);
  sub.add_option("--steps", a->steps, "Measured steps per run")->capture_default_str();
  sub.add_option("--warmup", a->warmup, "Warm-up steps before each run's measured steps")->capture_default_str();
  sub.add_option("--rounds", a->rounds, "Rounds, each running every layout once (interleaved)")->capture_default_str();
  sub.add_option("--mode", a->mode, "auto (real mode where supported, else replay) | real | replay")
      ->capture_default_str();
  sub.add_option("--backend", a->backend,
                 "Backend: cpu (OpenBLAS, MPI) | cuda (one GPU per rank: the GPU real mode for a one-device plan of "
                 "one micro-batch per step, else the replay on the GPUs; a build with the cuda preset)")
      ->capture_default_str();
  sub.add_option("--timeout", a->timeout_s, "Deadline of every communication call, seconds")->capture_default_str();
  sub.add_option("-o,--output", a->output, "Write the table as JSON (planner.validate/v1)");
  sub.add_option("--report", a->report,
                 "Write the first row's plan as an HTML report with a predicted-against-measured chart of every row");
  sub.add_flag("--force", a->force, "Replace existing output files");
  a->min_tau_opt = sub.add_option("--min-tau", a->min_tau, "Gate: Kendall tau at least this (exit 1 otherwise)");
  a->max_regret_opt =
      sub.add_option("--max-regret", a->max_regret, "Gate: regret (a ratio >= 1) at most this (exit 1 otherwise)");
  return [a, &sub]() -> int { return run_validate(*a, sub); };
}

}  // namespace planner::cli
