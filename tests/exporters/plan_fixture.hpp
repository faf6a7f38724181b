#pragma once
// Builds valid plans in code for the exporter tests: a GPT-like model whose
// chunks hold "layers.N/..." ops, a complete schedule, Megatron-style op
// strategies, and the mesh in Megatron's rank order.

#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "planner/plan/plan.hpp"

namespace planner::exporters::testing {

struct PlanSpec {
  int dp = 1, tp = 1, pp = 1, cp = 1, ep = 1, vp = 1;
  int layers = 4;
  std::vector<int> cut;  ///< layers per chunk (pp x vp entries); empty = even
  int zero = 0;
  bool distributed_optimizer = false;
  bool sequence_parallel = false;
  std::string schedule;  ///< "" = interleaved when vp > 1, else 1f1b
  std::string recompute = "none";
  std::string precision = "bf16";
  std::string optimizer = "adam";
  int micro_batch = 1;
  std::int64_t micro_batches = 1;
  std::int64_t parameters = 1000;
};

inline plan::OpStrategy strategy(std::string unit, std::vector<std::string> instances, std::string family,
                                 std::string shard, std::string assignment, std::vector<std::string> outputs) {
  plan::OpStrategy s;
  s.unit = std::move(unit);
  s.instances = std::move(instances);
  s.ops = {s.unit};
  s.family = std::move(family);
  s.strategy = std::move(shard);
  s.assignment = std::move(assignment);
  s.outputs = std::move(outputs);
  return s;
}

inline plan::Plan make_plan(const PlanSpec& in) {
  plan::Plan p;
  p.producer.version = "0.1.0";
  p.producer.command = "search";
  p.model.path = "gpt.onnx";
  p.model.parameters = in.parameters;
  p.cluster.profile = "a100-sxm4-80gb";
  p.cluster.devices = in.dp * in.tp * in.pp * in.cp;
  p.cluster.devices_per_node = 8;
  auto& t = p.training;
  t.micro_batch = in.micro_batch;
  t.micro_batches = in.micro_batches;
  t.global_batch = static_cast<std::int64_t>(in.micro_batch) * in.dp * in.micro_batches;
  t.optimizer.name = in.optimizer;
  t.optimizer.learning_rate = 0.00006;
  t.precision = in.precision;
  if (in.precision == "bf16" || in.precision == "fp16") t.precision_by_class = {{"embedding", "fp32"}, {"loss", "fp32"}};
  t.recompute = in.recompute;
  auto& l = p.layout;
  l.dp = in.dp, l.tp = in.tp, l.pp = in.pp, l.cp = in.cp, l.ep = in.ep, l.vp = in.vp;
  l.zero = in.zero;
  l.distributed_optimizer = in.distributed_optimizer;
  l.sequence_parallel = in.sequence_parallel;
  l.schedule = !in.schedule.empty() ? in.schedule : in.vp > 1 ? "interleaved" : "1f1b";
  l.mesh = {{"pp", in.pp, in.dp * in.cp * in.tp}, {"dp", in.dp, in.cp * in.tp}, {"cp", in.cp, in.tp}, {"tp", in.tp, 1}};
  const int chunks = in.pp * in.vp;
  std::vector<int> cut = in.cut;
  if (cut.empty()) cut.assign(static_cast<std::size_t>(chunks), in.layers / chunks);
  int layer = 0;
  for (int c = 0; c < chunks; ++c) {
    plan::Chunk ch;
    ch.index = c;
    ch.pipeline_rank = c % in.pp;
    ch.devices = plan::stage_devices(l, ch.pipeline_rank);
    ch.first_layer = layer;
    ch.last_layer = layer + cut[static_cast<std::size_t>(c)] - 1;
    ch.embedding = c == 0;
    ch.head = c == chunks - 1;
    if (ch.embedding) ch.ops = {"embed/tokens/Gather", "embed/positions/Gather"};
    for (int i = ch.first_layer; i <= ch.last_layer; ++i)
      for (const char* op : {"attn/qkv/MatMul", "attn/scores/MatMul", "attn/proj/MatMul", "ln2/LayerNormalization",
                             "mlp/fc1/MatMul", "mlp/fc2/MatMul"})
        ch.ops.push_back(fmt::format("layers.{}/{}", i, op));
    if (ch.head) {
      ch.ops.push_back("lm_head/MatMul");
      ch.ops.push_back("loss/SoftmaxCrossEntropyLoss");
    }
    layer = ch.last_layer + 1;
    l.chunks.push_back(std::move(ch));
  }
  // Each rank: every forward, then every backward (a valid GPipe-like order).
  for (int r = 0; r < in.pp; ++r) {
    std::vector<plan::ScheduleStep> steps;
    for (char kind : {'F', 'B'})
      for (int c = r; c < chunks; c += in.pp)
        for (int m = 0; m < static_cast<int>(in.micro_batches); ++m) steps.push_back({kind, m, c});
    l.schedule_steps.push_back(std::move(steps));
  }
  auto copies = [&](const char* op) {
    std::vector<std::string> v;
    for (int i = 0; i < layer; ++i) v.push_back(fmt::format("layers.{}/{}", i, op));
    return v;
  };
  if (in.tp > 1 && layer > 0) {
    const std::string n = std::to_string(in.tp);
    l.strategies.push_back(strategy("layers.0/attn/qkv/MatMul", copies("attn/qkv/MatMul"), "matmul",
                                    "((1,1,1),(1," + n + "))", "tp:n", {"[-,-,tp]"}));
    l.strategies.push_back(strategy("layers.0/attn/scores/MatMul", copies("attn/scores/MatMul"), "attention",
                                    "((1," + n + ",1,1),(1," + n + ",1,1),(1," + n + ",1,1))", "tp:n", {"[-,tp,-,-]"}));
    l.strategies.push_back(strategy("layers.0/attn/proj/MatMul", copies("attn/proj/MatMul"), "matmul",
                                    "((1,1," + n + "),(" + n + ",1))", "tp:k", {"[-,-,-]partial(tp)"}));
    l.strategies.push_back(strategy("layers.0/ln2/LayerNormalization", copies("ln2/LayerNormalization"), "norm",
                                    in.sequence_parallel ? "((1," + n + ",1),(1,),(1,))" : "((1,1,1),(1,),(1,))",
                                    in.sequence_parallel ? "tp:d1" : "", {in.sequence_parallel ? "[-,tp,-]" : "[-,-,-]"}));
    l.strategies.push_back(strategy("layers.0/mlp/fc1/MatMul", copies("mlp/fc1/MatMul"), "matmul",
                                    "((1,1,1),(1," + n + "))", "tp:n", {"[-,-,tp]"}));
    l.strategies.push_back(strategy("layers.0/mlp/fc2/MatMul", copies("mlp/fc2/MatMul"), "matmul",
                                    "((1,1," + n + "),(" + n + ",1))", "tp:k", {"[-,-,-]partial(tp)"}));
    l.strategies.push_back(strategy("embed/tokens/Gather", {"embed/tokens/Gather"}, "embedding",
                                    "((" + n + ",1),(1,1))", "tp:v", {"[-,-,-]partial(tp)"}));
    l.strategies.push_back(strategy("embed/positions/Gather", {"embed/positions/Gather"}, "embedding", "((1,1))", "",
                                    {"[-,-]"}));
    l.strategies.push_back(strategy("loss/SoftmaxCrossEntropyLoss", {"loss/SoftmaxCrossEntropyLoss"}, "loss",
                                    "((1," + n + "),(1,))", "tp:c", {"[]"}));
  }
  p.prediction.step_time_s = 1.5;
  p.prediction.mfu = 0.5;
  return p;
}

/// GPT-3 175B on 1024 A100s as Megatron trained it (Narayanan et al. 2021):
/// dp=8 x tp=8 x pp=16, two chunks per rank (3 layers each), sequence
/// parallel, distributed optimizer, full recompute, micro-batch 1, global
/// batch 1536 = 1 x 8 x 192.
inline PlanSpec gpt3_175b() {
  PlanSpec s;
  s.dp = 8, s.tp = 8, s.pp = 16, s.vp = 2;
  s.layers = 96;
  s.sequence_parallel = true;
  s.distributed_optimizer = true;
  s.recompute = "full";
  s.micro_batch = 1;
  s.micro_batches = 192;
  s.parameters = 175244992512;
  return s;
}

}  // namespace planner::exporters::testing
