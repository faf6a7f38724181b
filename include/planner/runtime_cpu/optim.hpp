#pragma once
/// Optimizers, one tensor at a time (a sharded run updates its shard with
/// the same call: every rule is elementwise).
///
/// SGD with momentum mu and weight decay wd (coupled, as torch.optim.SGD):
///   g' = g + wd w;  v = mu v + g' (v = g' at the first step);  w = w - lr v
/// (mu = 0: w = w - lr g'.)
///
/// AdamW (Loshchilov and Hutter, decoupled weight decay, as torch.optim.AdamW),
/// step t = 1, 2, ...:
///   m = b1 m + (1 - b1) g,   v = b2 v + (1 - b2) g^2
///   mh = m / (1 - b1^t),     vh = v / (1 - b2^t)
///   w = w - lr (mh / (sqrt(vh) + eps) + wd w)
/// The decay reads w before the update, so it does not see the gradient.

#include <cstdint>
#include <span>
#include <vector>

namespace planner::runtime_cpu {

struct SgdConfig {
  float lr = 0.01f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
};

struct AdamWConfig {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;
};

/// Per-tensor optimizer state: the momentum buffer (SGD) or both moments
/// (AdamW), sized on first use, and the step count.
struct OptimState {
  std::vector<float> m, v;
  std::int64_t step = 0;
};

/// Requires: w.size() == g.size().
void sgd_step(const SgdConfig& c, std::span<float> w, std::span<const float> g, OptimState& s);
void adamw_step(const AdamWConfig& c, std::span<float> w, std::span<const float> g, OptimState& s);

}  // namespace planner::runtime_cpu
