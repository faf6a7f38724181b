// Constants, shape queries and generators. None has a gradient.
//
//   Constant, Shape, Size: no cost at all (folded into initializers or
//     answered from static shapes).
//   ConstantOfShape, Range, EyeLike, RandomNormal, RandomUniform,
//   RandomNormalLike, RandomUniformLike, Bernoulli, Multinomial: write their
//     output (bytes(Y)); 0 FLOPs; they read no tensor data (a *Like op reads
//     only its input's shape; Multinomial and Bernoulli read their input).
// Class constant: gradient_mask() does not propagate through these ops.
#include <array>

#include "rule_util.hpp"

namespace planner::ops {
namespace {

using namespace detail;
using graph::OpClass;

OpCost nothing(const CostQuery&) { return OpCost{}; }

OpCost generate(const CostQuery& q) {
  OpCost c;
  c.forward_bytes_written = outputs_bytes(q);
  return c;
}

OpCost sample(const CostQuery& q) {
  OpCost c;
  c.forward_flops = Flops(numel(q.out(0)));
  c.forward_bytes_read = inputs_bytes(q);
  c.forward_bytes_written = outputs_bytes(q);
  return c;
}

constexpr std::array kRules{
    OpRule{"", "Constant", OpClass::constant, &nothing},
    OpRule{"", "Shape", OpClass::constant, &nothing},
    OpRule{"", "Size", OpClass::constant, &nothing},
    OpRule{"", "ConstantOfShape", OpClass::constant, &generate},
    OpRule{"", "Range", OpClass::constant, &generate},
    OpRule{"", "EyeLike", OpClass::constant, &generate},
    OpRule{"", "RandomNormal", OpClass::constant, &generate},
    OpRule{"", "RandomUniform", OpClass::constant, &generate},
    OpRule{"", "RandomNormalLike", OpClass::constant, &generate},
    OpRule{"", "RandomUniformLike", OpClass::constant, &generate},
    OpRule{"", "Bernoulli", OpClass::constant, &sample},
    OpRule{"", "Multinomial", OpClass::constant, &sample},
};

}  // namespace

std::span<const OpRule> constant_rules() { return kRules; }

}  // namespace planner::ops
