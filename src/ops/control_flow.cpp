// Control flow: If, Loop, Scan, SequenceMap.
//
// The ONNX importer costs these from their bodies and marks them with
// op_class = OpClass::control_flow; annotate() then leaves them alone
// (importer_costed()). These rows only serve an op that reaches the table
// unmarked: it is costed from its boundary tensors like an op without a rule
// (fallback_cost: memory-bound, known = false), since its bodies are unseen.
#include <array>

#include "rule_util.hpp"

namespace planner::ops {
namespace {

using graph::OpClass;
using graph::OpCost;

OpCost boundary(const CostQuery& q) { return fallback_cost(q.op, q.g, q.grad); }

constexpr std::array kRules{
    OpRule{"", "If", OpClass::control_flow, &boundary},
    OpRule{"", "Loop", OpClass::control_flow, &boundary},
    OpRule{"", "Scan", OpClass::control_flow, &boundary},
    OpRule{"", "SequenceMap", OpClass::control_flow, &boundary},
};

}  // namespace

std::span<const OpRule> control_flow_rules() { return kRules; }

}  // namespace planner::ops
