// Calibration fits (fit.hpp): rates, lines, latencies and collective tables.

#include "planner/calibrate/fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace planner::calibrate {
namespace {

using core::Collective;

Status check_samples(std::span<const Sample> samples, std::size_t at_least, std::string_view what) {
  if (samples.size() < at_least)
    return make_error("{}: need at least {} measurement(s), got {}", what, at_least, samples.size());
  for (const Sample& s : samples)
    if (!std::isfinite(s.x) || !(s.x > 0) || !std::isfinite(s.time.value) || !(s.time.value > 0))
      return make_error("{}: measurement (size {}, time {} s) is not finite and positive", what, s.x, s.time.value);
  return Status::success();
}

/// Sorted by x, one sample per x (the fastest).
std::vector<Sample> distinct(std::span<const Sample> samples) {
  std::map<double, double> best;
  for (const Sample& s : samples) {
    auto [it, fresh] = best.emplace(s.x, s.time.value);
    if (!fresh) it->second = std::min(it->second, s.time.value);
  }
  std::vector<Sample> out;
  for (const auto& [x, t] : best) out.push_back({x, Seconds(t)});
  return out;
}

}  // namespace

Result<LineFit> fit_line(std::span<const Sample> samples) {
  PLANNER_TRY_STATUS(check_samples(samples, 2, "line fit"));
  // Minimise sum w (a + b x - t)^2 with w = 1/t^2: the normal equations.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Sample& s : samples) {
    const double w = 1.0 / (s.time.value * s.time.value);
    sw += w;
    sx += w * s.x;
    sy += w * s.time.value;
    sxx += w * s.x * s.x;
    sxy += w * s.x * s.time.value;
  }
  const double det = sw * sxx - sx * sx;
  if (!(std::abs(det) > 1e-300 * std::max(1.0, sw * sxx)) || !std::isfinite(det))
    return make_error("line fit: the sizes do not vary (all {} measurements at one size)", samples.size());
  const double b = (sw * sxy - sx * sy) / det;
  const double a = (sy - b * sx) / sw;
  return LineFit{Seconds(a), b};
}

Result<RateTable> rate_table(std::span<const Sample> samples) {
  PLANNER_TRY_STATUS(check_samples(samples, 1, "rate table"));
  RateTable out;
  const auto d = distinct(samples);
  for (const Sample& s : d) out.peak = std::max(out.peak, s.x / s.time.value);
  for (const Sample& s : d) out.rows.push_back({s.x, std::min(1.0, s.x / s.time.value / out.peak)});
  return out;
}

Result<GemmTables> fit_gemm(std::span<const GemmSample> square, std::span<const GemmSample> skinny) {
  if (square.empty()) return make_error("gemm fit: no square measurement");
  auto flops = [](const GemmSample& g) { return 2.0 * g.m * g.n * g.k; };
  auto check = [&](const GemmSample& g) -> Status {
    if (g.m < 1 || g.n < 1 || g.k < 1 || !(g.time.value > 0) || !std::isfinite(g.time.value))
      return make_error("gemm fit: measurement {}x{}x{} in {} s is not positive", g.m, g.n, g.k, g.time.value);
    return Status::success();
  };
  std::vector<GemmSample> all;
  for (const auto& g : square) {
    PLANNER_TRY_STATUS(check(g));
    if (g.m != g.n || g.n != g.k) return make_error("gemm fit: {}x{}x{} is not square", g.m, g.n, g.k);
    all.push_back(g);
  }
  for (const auto& g : skinny) {
    PLANNER_TRY_STATUS(check(g));
    if (g.n != skinny.front().n || g.k != g.n || g.m > g.n)
      return make_error("gemm fit: skinny shape {}x{}x{} is not [d x N] x [N x N] with d <= N = {}", g.m, g.k, g.n,
                        skinny.front().n);
    all.push_back(g);
  }
  GemmTables out;
  for (const auto& g : all) out.peak = std::max(out.peak, flops(g) / g.time.value);
  std::stable_sort(all.begin(), all.end(), [&](const GemmSample& x, const GemmSample& y) { return flops(x) < flops(y); });
  // The efficiency table: the upper envelope of r/peak against FLOPs (rows
  // only where a sample beats every smaller one).
  cluster::EfficiencyTable table{{}, "flops"};
  double running = 0;
  for (const auto& g : all) {
    const double e = flops(g) / g.time.value / out.peak;
    if (e < running) continue;
    running = e;
    if (!table.rows.empty() && table.rows.back().x == flops(g)) table.rows.back().y = e;
    else table.rows.push_back({flops(g), e});
  }
  // The skinny factor: per min dim, the geometric mean of what the samples
  // of that min dim reach below the envelope (<= 1 by construction).
  std::map<int, std::pair<double, int>> logs;
  for (const auto& g : all) {
    const double v = flops(g) / g.time.value / (out.peak * table.interpolate(flops(g)));
    auto& [sum, count] = logs[std::min({g.m, g.n, g.k})];
    sum += std::log(std::min(1.0, v));
    ++count;
  }
  cluster::EfficiencyTable thin{{}, "min_dim"};
  for (const auto& [d, sc] : logs) thin.rows.push_back({static_cast<double>(d), std::exp(sc.first / sc.second)});
  for (const auto& g : all) {
    const double model = flops(g) / (out.peak * table.interpolate(flops(g)) * thin.interpolate(std::min({g.m, g.n, g.k})));
    out.max_error = std::max(out.max_error, std::abs(model / g.time.value - 1));
  }
  out.efficiency = table.rows;
  out.skinny = thin.rows;
  return out;
}

CollectiveShape collective_shape(Collective kind, int n) {
  const double r = n;
  switch (kind) {
    case Collective::all_reduce: return {2 * (r - 1) / r, 2 * (r - 1)};
    case Collective::all_gather:
    case Collective::reduce_scatter: return {(r - 1) / r, r - 1};
    case Collective::broadcast: return {1, r - 1};
    case Collective::all_to_all: return {(r - 1) / r, 1};
    case Collective::send_recv: return {1, 1};
  }
  return {1, 1};
}

Result<Seconds> fit_latency(Collective kind, int n, std::span<const Sample> samples) {
  if (n < 2) return make_error("{}: latency needs at least 2 ranks, got {}", core::to_string(kind), n);
  PLANNER_TRY(LineFit line, fit_line(samples));
  const CollectiveShape shape = collective_shape(kind, n);
  double t_min = samples.front().time.value;
  for (const Sample& s : samples) t_min = std::min(t_min, s.time.value);
  const double alpha = std::clamp(line.intercept.value / shape.steps, 0.0, 0.99 * t_min / shape.steps);
  return Seconds(alpha);
}

double best_bus_bandwidth(Collective kind, int n, Seconds alpha, std::span<const Sample> samples) {
  const CollectiveShape shape = collective_shape(kind, n);
  // Samples where latency is at most half the time; all when there are none.
  double best = 0, best_any = 0;
  for (const Sample& s : samples) {
    const double left = s.time.value - shape.steps * alpha.value;
    if (!(left > 0)) continue;
    best_any = std::max(best_any, shape.factor * s.x / left);
    if (left >= 0.5 * s.time.value) best = std::max(best, shape.factor * s.x / left);
  }
  return best > 0 ? best : best_any;
}

void set_table(cluster::Level& level, Collective kind, cluster::EfficiencyTable table,
               std::optional<Seconds> latency) {
  table.x_name = "message_bytes";
  if (kind == Collective::all_reduce) {
    level.ring.efficiency = std::move(table);
    if (latency) level.latency = *latency;
    return;
  }
  level.per_collective[static_cast<std::size_t>(kind)] = cluster::CollectiveOverride{std::move(table), latency};
}

Result<SolvedTable> solve_table(cluster::Interconnect net, std::size_t level, Collective kind,
                                cluster::Placement where, std::span<const Sample> samples) {
  if (level >= net.levels.size())
    return make_error("solve_table: level {} out of range ({} levels)", level, net.levels.size());
  PLANNER_TRY_STATUS(check_samples(samples, 1, core::to_string(kind)));
  cluster::Level& target = net.levels[level];
  if (kind == Collective::all_reduce && (target.tree || target.nvls))
    return make_error("solve_table: level '{}' has a tree or nvls table; remove it before fitting all_reduce",
                      target.name);
  const std::optional<Seconds> latency =
      kind == Collective::all_reduce ? std::nullopt
                                     : std::optional<Seconds>(target.latency_for(kind));
  SolvedTable out;
  // The rows solved so far plus the candidate at `bytes`: a placement over
  // several levels also reads this table at smaller sizes (the
  // hierarchical all-reduce's outer phase at S/p), which are then the
  // rows already solved, exactly as in the finished table.
  auto time_at = [&](double e, double bytes) -> Result<double> {
    cluster::EfficiencyTable t;
    t.rows = out.rows;
    t.rows.push_back({bytes, e});
    set_table(target, kind, std::move(t), latency);
    PLANNER_TRY(cluster::CollectiveCost c, cluster::collective_time(net, kind, Bytes(bytes), where));
    return c.time.value;
  };
  constexpr double kFloor = 1e-6;
  for (const Sample& s : distinct(samples)) {
    PLANNER_TRY(double fastest, time_at(1.0, s.x));
    PLANNER_TRY(double slowest, time_at(kFloor, s.x));
    double e = 0;
    if (fastest >= s.time.value) {
      e = 1.0;
      out.capped += fastest > s.time.value * (1 + 1e-9);
    } else if (slowest <= s.time.value) {
      e = kFloor;
      ++out.floored;
    } else {
      double lo = std::log(kFloor), hi = 0;  // t(lo) > t > t(hi)
      for (int i = 0; i < 100 && hi - lo > 1e-13; ++i) {
        const double mid = 0.5 * (lo + hi);
        PLANNER_TRY(double t, time_at(std::exp(mid), s.x));
        (t > s.time.value ? lo : hi) = mid;
      }
      e = std::exp(0.5 * (lo + hi));
    }
    out.rows.push_back({s.x, e});
  }
  return out;
}

}  // namespace planner::calibrate
