#pragma once
/// The optimizer step's HBM traffic per parameter, shared by the estimate
/// (step.cpp) and the search's lower bound (plansearch/bound.cpp).

#include "planner/cost/memory.hpp"

namespace planner::estimate {

/// Bytes the optimizer step streams through HBM per local parameter element
/// (Adam 38, SGD with momentum 30, plain SGD 22 with fp32 states and master
/// copy; `docs/estimate.md`). `state_bytes` per state element and `master`
/// change the states' and the master copy's share.
double optimizer_bytes_per_param(cost::Optimizer o, double state_bytes = 4.0,
                                 cost::MasterWeights master = cost::MasterWeights::fp32);

}  // namespace planner::estimate
