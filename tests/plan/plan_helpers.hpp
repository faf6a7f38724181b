#pragma once
// A small valid plan for the plan tests: GPT-like, 2 layers, 8 devices as
// dp=2 tp=2 pp=2, 4 micro-batches, 1F1B.

#include <string>
#include <vector>

#include "planner/plan/plan.hpp"

namespace plan_test {

using namespace planner::plan;

/// Rank r's 1F1B program (vp = 1): warm-up forwards, steady 1F1B, cool-down.
inline std::vector<ScheduleStep> one_f_one_b(int r, int pp, int m) {
  std::vector<ScheduleStep> out;
  const int warmup = std::min(pp - 1 - r, m);
  for (int i = 0; i < warmup; ++i) out.push_back({'F', i, r});
  for (int i = 0; i < m - warmup; ++i) {
    out.push_back({'F', warmup + i, r});
    out.push_back({'B', i, r});
  }
  for (int i = m - warmup; i < m; ++i) out.push_back({'B', i, r});
  return out;
}

/// Every forward of the rank's chunks, then every backward in reverse: valid
/// for any vp (not a good schedule, only a legal one).
inline std::vector<ScheduleStep> all_forward_then_backward(int r, int pp, int vp, int m) {
  std::vector<ScheduleStep> out;
  for (int c = r; c < pp * vp; c += pp)
    for (int i = 0; i < m; ++i) out.push_back({'F', i, c});
  for (int c = r + pp * (vp - 1); c >= 0; c -= pp)
    for (int i = m - 1; i >= 0; --i) out.push_back({'B', i, c});
  return out;
}

inline Plan sample_plan() {
  Plan p;
  p.producer = {"planner", "0.1.0", "search", 1.25, 42};

  p.model.path = "models/gpt-2l.onnx";
  p.model.sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
  p.model.parameters = 119595008;
  p.model.dims = {{"seq", 1024}, {"vocab", 4096}};
  p.model.batch = 2;
  p.model.params_from_inputs = {};
  p.model.shared_weights = std::vector<std::string>{"embed.tokens.weight"};

  p.cluster = {"a100-sxm4-80gb", "47db48bebc3d3669", 8, 8, ""};

  p.training.global_batch = 16;
  p.training.micro_batch = 2;
  p.training.micro_batches = 4;
  p.training.optimizer = {"adam", 3e-4, 0.9, 0.95, 1e-8, 0.1, 0.9, "bf16", "remainder"};
  p.training.precision = "bf16";
  p.training.precision_by_class = {{"loss", "fp32"}, {"embedding", "fp32"}};
  p.training.recompute = "selective";
  p.training.recompute_modules = "layernorm,moe_act";
  p.training.attention = "flash";
  p.training.framework = "megatron";
  p.training.seed = 1234;

  auto& l = p.layout;
  l.dp = 2;
  l.tp = 2;
  l.pp = 2;
  l.sequence_parallel = true;
  l.zero = 1;
  l.distributed_optimizer = true;
  l.schedule = "1f1b";
  l.mesh = {{"pp", 2, 4}, {"dp", 2, 2}, {"tp", 2, 1}};
  l.chunks = {
      // mesh pp(2, stride 4) x dp(2, stride 2) x tp(2, stride 1): pipeline
      // rank 0 holds ranks 0-3, rank 1 ranks 4-7.
      {0, 0, 0, 0, true, false, {"embed", "l0.qkv", "l0.attn", "l0.proj"}, {0, 1, 2, 3}},
      {1, 1, 1, 1, false, true, {"l1.qkv", "l1.attn", "l1.proj", "lm_head", "loss"}, {4, 5, 6, 7}},
  };
  l.schedule_steps = {one_f_one_b(0, 2, 4), one_f_one_b(1, 2, 4)};
  OpStrategy qkv{"l0.qkv",
                 {"l0.qkv", "l1.qkv"},
                 {"l0.qkv"},
                 "matmul",
                 "((1,1,1),(1,2))",
                 "tp:n",
                 {"[-,-,-]", "[-,tp]"},
                 {"[-,-,tp]"},
                 {{"all_gather", "tp", 2, 2097152, 1, false, false, "edge l0.ln1 -> l0.qkv (x)"},
                  {"reduce_scatter", "tp", 2, 2097152, 1, true, false, "edge l0.ln1 -> l0.qkv (x)"},
                  {"all_reduce", "dp", 2, 25165824, 1, true, true, "node l0.qkv"}}};
  OpStrategy attn{"l0.attn", {"l0.attn", "l1.attn"}, {"l0.attn"}, "attention", "((1,2,1,1),(1,2,1,1),(1,2,1,1))",
                  "tp:n", {"[-,tp,-,-]", "[-,tp,-,-]", "[-,tp,-,-]"}, {"[-,tp,-,-]"}, {}};
  OpStrategy embed{"embed", {"embed"}, {"embed"}, "gather", "((1,1),(1,1))", "", {"[-,-]", "[-,-]"}, {"[-,-,-]"}, {}};
  l.strategies = {qkv, attn, embed};

  auto& pr = p.prediction;
  pr.step_time_s = 0.1 + 0.2;  // 0.30000000000000004: needs all 17 digits
  pr.breakdown_s = {{"compute", 0.2},
                    {"bubble", 0.05},
                    {"model_parallel.all_gather", 0.01},
                    {"data_parallel_exposed", 0.04000000000000001},
                    {"recompute", -0.0}};
  pr.model_tflops_per_device = 88.36113770566874;
  pr.hardware_tflops_per_device = 110.5;
  pr.mfu = 0.2832087746976562;
  pr.hfu = 0.354;
  pr.capacity_bytes = 85051089879.04;
  pr.fits = true;
  pr.stages = {{0, 3.5e9, true, 31480000, 2, {{"weights", 72040000, "weights (adam, distributed_optimizer)"}}},
               {1, 3.25e9, true, 29380000, 1, {}}};
  pr.lower_bound_s = 0.2;
  pr.gap = 0.5000000000000002;
  pr.alternatives = {{"dp=4 tp=2 pp=1 micro-batch=2 1f1b", 0.33, false, "does not fit: 81.2 GiB on stage 0"}};
  // A few spans of the step (a real timeline has every op; validate() does
  // not ask for completeness).
  pr.timeline = {{0,
                  {{"compute", "forward", 0, 0, std::nullopt, 0.0, 0.01},
                   {"compute", "bubble", std::nullopt, std::nullopt, std::nullopt, 0.2, 0.25},
                   {"pp", "send_activation", 0, 0, 1, 0.01, 0.015}}},
                 {1,
                  {{"compute", "backward", 0, 1, std::nullopt, 0.02, 0.04},
                   {"compute", "optimizer", std::nullopt, std::nullopt, std::nullopt, 0.29, 0.1 + 0.2},
                   {"pp", "recv_activation", 0, 1, 0, 0.01, 0.015}}}};
  return p;
}

}  // namespace plan_test
