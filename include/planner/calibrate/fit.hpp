#pragma once
/// Calibration fits: measured times -> the numbers a cluster profile holds.
///
/// Design note. `planner calibrate` times real kernels (sgemm, a STREAM-like
/// triad) and real collectives, or reads nccl-tests tables, and turns those
/// times into the profile's parameters with the functions below. They are
/// pure (no MPI, no BLAS, no clock), so tests feed them synthetic
/// measurements made from known parameters and check that the parameters
/// come back (docs/calibrate.md has the formulas).
///
///   kernel rates:  r(x) = x / t(x);  peak = max r;  e(x) = r(x) / peak
///   line:          t = a + b x      (least squares, relative error)
///   collective:    t(S) = steps*alpha + factor*S / (B e(S))
///                  alpha = a / steps, e(S) solved so that the cost model
///                  (cluster::collective_time) reproduces every t(S)
///
/// Architecture invariant: no MPI, BLAS or clock here; only cluster and core.

#include <optional>
#include <span>
#include <vector>

#include "planner/cluster/collective.hpp"
#include "planner/cluster/profile.hpp"
#include "planner/core/result.hpp"
#include "planner/core/units.hpp"

namespace planner::calibrate {

/// One measurement: a size (FLOPs, bytes moved, message bytes) and the time
/// one call took.
struct Sample {
  double x = 0;
  Seconds time;
};

/// t = intercept + slope * x.
struct LineFit {
  Seconds intercept;
  double slope = 0;  ///< seconds per unit of x
};

/// Weighted least squares of t = a + b x with weights 1/t^2 (each point's
/// relative error counts alike, so small sizes set the intercept and large
/// ones the slope). Requires (checked): at least two samples with distinct
/// x, every x and t finite and > 0.
Result<LineFit> fit_line(std::span<const Sample> samples);

/// A rate table: peak = the best rate x/t seen, and per distinct x (sorted)
/// the row (x, rate / peak). Duplicate x keep their fastest time.
struct RateTable {
  double peak = 0;  ///< x per second (FLOP/s, B/s)
  std::vector<cluster::EfficiencyTable::Row> rows;
};

/// Requires (checked): at least one sample; every x and t finite and > 0.
Result<RateTable> rate_table(std::span<const Sample> samples);

/// One sgemm measurement by shape.
struct GemmSample {
  int m = 0, n = 0, k = 0;
  Seconds time;
};

/// The GEMM part of a device profile, fitted to the cost model's
///   t(m,n,k) = 2mnk / (peak * table(2mnk) * skinny(min(m,n,k)))
/// over square and skinny measurements together. peak = the best rate seen.
///   table   the upper envelope of r/peak against 2mnk: a row at each
///           sample faster (as a fraction of peak) than every sample with
///           fewer FLOPs; interpolated between, so it never falls
///   skinny  per min dim d, the geometric mean over the samples of that d of
///           r / (peak * table(2mnk)), which is <= 1
/// On a CPU a [d x N] x [N x N] product can beat a cube of the same FLOPs
/// (a factor > 1 no table may hold), so the two tables cannot reproduce
/// every shape; max_error says by how much they miss.
struct GemmTables {
  double peak = 0;  ///< FLOP/s
  std::vector<cluster::EfficiencyTable::Row> efficiency;  ///< x = 2mnk
  std::vector<cluster::EfficiencyTable::Row> skinny;      ///< x = min dim
  /// Largest |model / measured - 1| over every sample.
  double max_error = 0;
};

/// `square`: m = n = k; `skinny`: m = d, n = k = N (the same N for all).
/// Requires (checked): at least one square sample; skinny samples share
/// n = k, with d <= n; every time > 0.
Result<GemmTables> fit_gemm(std::span<const GemmSample> square, std::span<const GemmSample> skinny);

/// How a collective's time scales in the ring formulas of
/// cluster/collective.hpp on one level of n ranks:
///   t = steps * alpha + factor * S / (B e(S))
/// all_reduce: factor 2(n-1)/n, steps 2(n-1); all_gather, reduce_scatter:
/// (n-1)/n, n-1; broadcast: 1, n-1; all_to_all: (n-1)/n, 1; send_recv: 1, 1.
struct CollectiveShape {
  double factor = 1;
  double steps = 1;
};
/// Requires: n >= 2.
CollectiveShape collective_shape(core::Collective kind, int n);

/// Per-step latency of a collective on one level of n ranks: the intercept
/// of fit_line over its samples divided by steps, clamped to
/// [0, 0.99 * min t / steps] so that every sample keeps a positive
/// bandwidth term. Requires (checked): n >= 2, fit_line's requirements.
Result<Seconds> fit_latency(core::Collective kind, int n, std::span<const Sample> samples);

/// The best bus bandwidth left after latency, factor * S / (t - steps *
/// alpha), over the samples whose time is at least half bandwidth term
/// (all samples when none is): latency-bound samples, whose remainder is
/// mostly noise, do not set it. Its maximum over the collectives of a level
/// is the level's bandwidth B; a latency-bound sample that would need e > 1
/// is capped (solve_table counts it).
/// Requires: alpha from fit_latency (so t - steps * alpha > 0).
double best_bus_bandwidth(core::Collective kind, int n, Seconds alpha, std::span<const Sample> samples);

/// The table of one collective at one level, solved so that
/// cluster::collective_time reproduces every sample.
struct SolvedTable {
  std::vector<cluster::EfficiencyTable::Row> rows;
  /// Samples that even efficiency 1 cannot make fast enough (capped at 1)
  /// or that efficiency 1e-6 still makes too fast (floored at 1e-6).
  int capped = 0;
  int floored = 0;
};

/// For each sample S in increasing order (duplicates keep the fastest),
/// finds e in [1e-6, 1] such that collective_time(net with level `level`'s
/// table for `kind` = the rows solved so far + (S, e), kind, S, where) =
/// t(S), by bisection on log e (time falls as e grows). Rows at larger S do
/// not change the table below them, so the finished table reproduces every
/// sample the model can reach. `kind` all_reduce solves the ring table,
/// the others the level's per-collective table. The other levels keep their
/// tables; where they alone make the model slower or faster than t(S), the
/// row is capped at 1 or floored at 1e-6 and counted.
/// Requires (checked): level < net.levels.size(), the placement valid for
/// net, at least one sample.
Result<SolvedTable> solve_table(cluster::Interconnect net, std::size_t level, core::Collective kind,
                                cluster::Placement where, std::span<const Sample> samples);

/// Sets the table `solve_table` solves (ring for all_reduce, else the
/// per-collective table, with `latency` when given).
void set_table(cluster::Level& level, core::Collective kind, cluster::EfficiencyTable table,
               std::optional<Seconds> latency);

}  // namespace planner::calibrate
