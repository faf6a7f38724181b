#include "planner/runtime_cpu/optim.hpp"

#include <cassert>
#include <cmath>

namespace planner::runtime_cpu {

void sgd_step(const SgdConfig& c, std::span<float> w, std::span<const float> g, OptimState& s) {
  assert(w.size() == g.size());
  const bool first = s.step == 0;
  ++s.step;
  if (c.momentum != 0.0f && s.m.size() != w.size()) s.m.assign(w.size(), 0.0f);
  for (std::size_t i = 0; i < w.size(); ++i) {
    float d = g[i] + c.weight_decay * w[i];
    if (c.momentum != 0.0f) {
      s.m[i] = first ? d : c.momentum * s.m[i] + d;
      d = s.m[i];
    }
    w[i] -= c.lr * d;
  }
}

void adamw_step(const AdamWConfig& c, std::span<float> w, std::span<const float> g, OptimState& s) {
  assert(w.size() == g.size());
  if (s.m.size() != w.size()) {
    s.m.assign(w.size(), 0.0f);
    s.v.assign(w.size(), 0.0f);
  }
  ++s.step;
  const double t = static_cast<double>(s.step);
  const double bc1 = 1.0 - std::pow(static_cast<double>(c.beta1), t);
  const double bc2 = 1.0 - std::pow(static_cast<double>(c.beta2), t);
  for (std::size_t i = 0; i < w.size(); ++i) {
    s.m[i] = c.beta1 * s.m[i] + (1.0f - c.beta1) * g[i];
    s.v[i] = c.beta2 * s.v[i] + (1.0f - c.beta2) * g[i] * g[i];
    const double mh = s.m[i] / bc1, vh = s.v[i] / bc2;
    w[i] = static_cast<float>(w[i] - c.lr * (mh / (std::sqrt(vh) + c.eps) + c.weight_decay * w[i]));
  }
}

}  // namespace planner::runtime_cpu
