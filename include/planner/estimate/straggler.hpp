#pragma once
/// The synchronous step as the slowest of N devices.
///
/// Every device of a synchronous data/tensor/pipeline-parallel step waits
/// for the others at its collectives, so the step lasts as long as its
/// slowest device. With per-device step times independent and normal,
/// T_i ~ N(mu, (cv mu)^2) (cv: the profile's device.step_time_cv, the spread
/// of same-model GPUs), the step is max_i T_i:
///
///   E[step]   = mu (1 + cv E[Z_(N)])         E[Z_(N)]: expected maximum of
///   p-th pct  = mu (1 + cv Phi^-1(p^(1/N)))  N standard normals
///
/// E[Z_(N)] = 0 (N = 1), 0.5642 (2), 1.4236 (8), 3.2482 (1024); it grows
/// like sqrt(2 ln N) (the usual bound) but stays below it.
///
/// Architecture invariant: pure arithmetic, no model or profile types.

namespace planner::estimate {

/// E[max of n independent standard normals]. Requires n >= 1.
double expected_max_std_normal(int n);

/// The q-quantile (0 < q < 1) of the maximum of n independent standard
/// normals: Phi^-1(q^(1/n)). Requires n >= 1.
double max_std_normal_quantile(int n, double q);

/// The standard normal quantile Phi^-1(p), 0 < p < 1.
double std_normal_quantile(double p);

}  // namespace planner::estimate
