// solve_milp(): the model of milp_model.cpp handed to CBC through its
// standard driver (CbcMain0/CbcMain1: CBC's own presolve, cuts and
// heuristics, as the `cbc` command line and PuLP use them), read back,
// polished and checked against evaluate().
#include "planner/sharding_milp/milp.hpp"

#include <chrono>
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include <CbcModel.hpp>
#include <CbcSolver.hpp>
#include <CoinMessageHandler.hpp>
#include <OsiClpSolverInterface.hpp>
#include <fmt/format.h>

#include "milp_internal.hpp"

namespace planner::sharding {

namespace {

using milp_detail::Model;

// CBC 2.10's driver keeps global state (parameter tables, signal handling).
std::mutex& cbc_mutex() {
  static std::mutex m;
  return m;
}

int no_callback(CbcModel*, int) { return 0; }

struct CbcOutcome {
  std::vector<double> x;  // empty: no feasible solution
  bool optimal = false;
  bool abandoned = false;
  bool infeasible = false;
  double bound = 0;  // scaled, without the constant
};

// Runs CBC on `m` with the memory row's upper bound `memory_rhs` (when the
// model has one), starting from `start_x` (the x columns of a feasible choice).
CbcOutcome run_cbc(const Model& m, double memory_rhs, const std::vector<double>& start_x, const MilpOptions& o) {
  const int ncols = static_cast<int>(m.columns()), nrows = static_cast<int>(m.rows());
  // Column-major matrix.
  std::vector<CoinBigIndex> start(static_cast<std::size_t>(ncols) + 1, 0);
  for (const auto& e : m.entries) ++start[static_cast<std::size_t>(e.col) + 1];
  for (int c = 0; c < ncols; ++c) start[c + 1] += start[c];
  std::vector<int> index(m.entries.size());
  std::vector<double> value(m.entries.size());
  std::vector<CoinBigIndex> fill(start.begin(), start.end() - 1);
  for (const auto& e : m.entries) {
    const auto at = static_cast<std::size_t>(fill[static_cast<std::size_t>(e.col)]++);
    index[at] = e.row;
    value[at] = e.value;
  }
  std::vector<double> lo(static_cast<std::size_t>(ncols), 0.0), hi(static_cast<std::size_t>(ncols), 1.0);
  std::vector<double> rlo = m.row_lo, rhi = m.row_hi;
  if (m.memory_row >= 0) rhi[static_cast<std::size_t>(m.memory_row)] = memory_rhs;

  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(ncols, nrows, start.data(), index.data(), value.data(), lo.data(), hi.data(), m.obj.data(),
                     rlo.data(), rhi.data());
  // Names: CBC matches a MIP start by column name.
  for (int c = 0; c < ncols; ++c) {
    if (m.integer[static_cast<std::size_t>(c)]) solver.setInteger(c);
    solver.setColName(c, fmt::format("c{}", c));
  }

  CbcModel model(solver);
  if (!start_x.empty()) {
    std::vector<std::pair<std::string, double>> mip_start;
    for (int c = 0; c < ncols; ++c)
      if (m.integer[static_cast<std::size_t>(c)])
        mip_start.emplace_back(fmt::format("c{}", c), start_x[static_cast<std::size_t>(c)]);
    model.setMIPStart(mip_start);
  }
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  CbcSolverUsefulData data;
  data.noPrinting_ = true;
  data.useSignalHandler_ = false;
  CbcMain0(model, data);
  // Logging off; time limit; gaps; a tiny cutoff increment (microseconds) so
  // solutions better by more than 1e-7 us are still sought; threads in the
  // repeatable mode (100 + n).
  const std::string sec = fmt::format("{}", o.time_limit_s), ratio = fmt::format("{}", o.relative_gap),
                    threads = fmt::format("{}", o.threads > 1 ? 100 + o.threads : 0);
  std::vector<const char*> argv = {"planner-milp", "-log",       "0",      "-slog",    "0",
                                   "-sec",         sec.c_str(),  "-ratio", ratio.c_str(),
                                   "-allow",       "1e-7",       "-increment", "1e-7",
                                   "-threads",     threads.c_str(), "-solve", "-quit"};
  CbcMain1(static_cast<int>(argv.size()), argv.data(), model, no_callback, data);

  CbcOutcome out;
  out.optimal = model.isProvenOptimal();
  out.abandoned = model.isAbandoned();
  out.infeasible = model.isProvenInfeasible();
  out.bound = model.getBestPossibleObjValue();
  if (const double* x = model.bestSolution()) out.x.assign(x, x + ncols);
  return out;
}

// The strategy each node's x columns select (the largest value).
Choice read_choice(const Model& m, const std::vector<double>& x) {
  Choice c(m.fixed.size(), 0);
  for (std::size_t n = 0; n < c.size(); ++n) {
    if (m.fixed[n]) {
      c[n] = *m.fixed[n];
      continue;
    }
    double best = -1;
    for (auto [s, col] : m.xcols[n])
      if (x[static_cast<std::size_t>(col)] > best + 1e-9) {
        best = x[static_cast<std::size_t>(col)];
        c[n] = s;
      }
  }
  return c;
}

}  // namespace

Result<MilpResult> solve_milp(const ShardingProblem& p, const MilpOptions& options) {
  PLANNER_TRY_STATUS(p.validate());
  if (!(options.time_limit_s > 0)) return make_error("milp: time limit {} s is not positive", options.time_limit_s);
  if (options.threads < 1) return make_error("milp: threads {} < 1", options.threads);
  if (!(options.relative_gap >= 0)) return make_error("milp: relative gap {} is negative", options.relative_gap);
  PLANNER_TRY(Model m, milp_detail::build_model(p));

  MilpResult r;
  r.variables = m.columns();
  r.constraints = m.rows();
  Choice c(p.nodes.size(), 0);
  if (m.columns() == 0) {
    // The presolve fixed every node.
    for (std::size_t n = 0; n < c.size(); ++n) c[n] = *m.fixed[n];
    r.optimal = true;
    r.lower_bound = Seconds(m.constant / milp_detail::kTimeScale);
  } else {
    std::lock_guard<std::mutex> lock(cbc_mutex());
    const auto t0 = std::chrono::steady_clock::now();
    double rhs = m.memory_row >= 0 ? m.row_hi[static_cast<std::size_t>(m.memory_row)] : 0.0;
    // The MIP start: always feasible, so a time limit still returns a choice.
    const Choice start = milp_detail::start_choice(m, p);
    const std::vector<double> start_x = milp_detail::columns_of(m, start);
    bool from_cbc = false;
    // CBC accepts a memory row violated within its tolerances; evaluate()
    // does not. Should that happen, the row is tightened by the excess and
    // CBC runs again (a few times at most).
    for (int attempt = 0; attempt < 4; ++attempt) {
      const CbcOutcome out = run_cbc(m, rhs, start_x, options);
      if (out.abandoned)
        return make_error("milp: CBC gave up (numerical trouble; {} variables, {} constraints)", m.columns(), m.rows());
      // Every coefficient is >= 0 after the presolve's shifts: 0 bounds the
      // rest of the objective when CBC has no bound. (CBC stopped by the time
      // limit in its preprocessing may call the model infeasible; the start
      // shows it is not, and its bound then means nothing.)
      const bool no_bound = out.x.empty() && (out.infeasible || !(out.bound < 1e30));
      r.lower_bound = Seconds(((no_bound ? 0.0 : std::max(out.bound, 0.0)) + m.constant) / milp_detail::kTimeScale);
      if (out.x.empty()) break;  // stopped (time limit) before any solution: the start stands
      c = read_choice(m, out.x);
      const Evaluation ev = evaluate(p, c);
      if (ev.feasible()) {
        from_cbc = true;
        r.optimal = out.optimal;
        break;
      }
      if (m.memory_row < 0) break;
      const double excess = (ev.memory.value - p.memory_limit->value) * milp_detail::kMemoryScale;
      rhs -= excess + 1e-6 * std::max(1.0, std::fabs(rhs));
    }
    // CBC's answer, unless it has none or the start is better (CBC stopped
    // before it had read it).
    const double zs = evaluate(p, start).total.value;
    if (!from_cbc || zs < evaluate(p, c).total.value - 1e-12 * zs) {
      c = start;
      r.optimal = false;
    }
    r.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  // Ties toward lower strategy indices; CBC's tolerances repaired.
  milp_detail::polish(m, p, c);
  r.solution.choice = c;
  r.solution.evaluation = evaluate(p, c);
  // CBC's "optimal" with a gap > 0 means "within the gap": only a closed gap
  // counts then (CBC's absolute gap is 1e-7 us = 1e-13 s).
  const double total_s = r.solution.evaluation.total.value;
  if (options.relative_gap > 0 && r.optimal)
    r.optimal = total_s - r.lower_bound.value <= 1e-9 * std::fabs(total_s) + 1e-13;
  r.solution.exact = r.optimal;
  if (!r.solution.evaluation.feasible())
    return make_error("milp: internal error: the polished choice is infeasible: {}",
                      r.solution.evaluation.violations.front());
  const double z = milp_detail::model_objective(m, p, c), total = r.solution.evaluation.total.value;
  if (!(std::fabs(z - total) <= 1e-9 * std::fabs(total) + 1e-18))
    return make_error("milp: internal error: model objective {} differs from evaluate() {}", z, total);
  r.objective = Seconds(z);
  return r;
}

}  // namespace planner::sharding
