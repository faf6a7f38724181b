#pragma once
/// transitional: remove after merge. Element types are core::DType
/// (planner/core/dtype.hpp); these names remain only for the sources being
/// split concurrently (executor real*, runtime_cpu, runtime_cuda), which still
/// spell graph::DType and graph::dtype_size.

#include "planner/core/dtype.hpp"

namespace planner::graph {

using DType = core::DType;  // transitional: remove after merge
using core::dtype_name;     // transitional: remove after merge
using core::dtype_size;     // transitional: remove after merge
using core::is_floating;    // transitional: remove after merge

}  // namespace planner::graph
