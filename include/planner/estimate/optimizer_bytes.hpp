#pragma once
/// The optimizer step's HBM traffic per parameter, shared by the estimate
/// (step.cpp) and the search's lower bound (plansearch/bound.cpp).

#include "planner/cost/memory.hpp"

namespace planner::estimate {

/// Bytes the optimizer step streams through HBM per local parameter element
/// (Adam 38, SGD with momentum 30, plain SGD 22; `docs/estimate.md`).
double optimizer_bytes_per_param(cost::Optimizer o);

}  // namespace planner::estimate
