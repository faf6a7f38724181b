#pragma once
// A tiny plan with a complete timeline for the report tests: 4 devices as
// pp=2 x tp=2, 2 micro-batches, 1F1B, the two-stage step of
// tests/estimate/timeline_test.cpp (forward 1, backward 2, transfers 0.5):
//
//   stage 0  F0 [0,0.75] tp [0.75,1]  F1 [1,1.75] tp [1.75,2]  B0 [5,6.5] tp [6.5,7]
//            B1 [8,9.5] tp [9.5,10]  optimizer [10,10.5]; bubbles [2,5], [7,8]
//   stage 1  F0 [1.5,2.5]  R0 [2.5,3] B0 [3,4.5]  F1 [4.5,5.5]  R1 [5.5,6] B1 [6,7.5]
//            dp buckets [6.75,7.25] [7.25,7.75]  optimizer [7.75,8.25];
//            bubbles [0,1.5], [8.25,10.5]
//   transfers: act F0 [1,1.5], F1 [2,2.5]; grad B0 [4.5,5], B1 [7.5,8]

#include <optional>

#include "planner/plan/plan.hpp"

namespace report_test {

using namespace planner::plan;

inline TimelineSpan span(const char* stream, const char* kind, std::optional<int> mb, std::optional<int> chunk,
                         std::optional<int> peer, double start, double end) {
  return {stream, kind, mb, chunk, peer, start, end};
}

inline Plan tiny_plan() {
  Plan p;
  p.producer = {"planner", "0.1.0", "search", 0, 12};
  p.model.path = "tiny.onnx";
  p.model.parameters = 1000;
  p.cluster = {"a100-sxm4-80gb", "", 4, 8, ""};
  p.training.global_batch = 2;
  p.training.micro_batch = 1;
  p.training.micro_batches = 2;
  auto& l = p.layout;
  l.tp = 2;
  l.pp = 2;
  l.mesh = {{"pp", 2, 2}, {"tp", 2, 1}};
  l.chunks = {{0, 0, 0, 0, true, false, {"embed", "l0.fc"}}, {1, 1, 1, 1, false, true, {"l1.fc", "loss"}}};
  l.schedule_steps = {{{'F', 0, 0}, {'F', 1, 0}, {'B', 0, 0}, {'B', 1, 0}},
                      {{'F', 0, 1}, {'B', 0, 1}, {'F', 1, 1}, {'B', 1, 1}}};
  l.strategies = {{"l0.fc", {"l0.fc", "l1.fc"}, {"l0.fc"}, "matmul", "((1,1),(1,2))", "tp:n", {"[-,-]"}, {"[-,tp]"},
                   {{"all_reduce", "tp", 2, 4096, 1, true, false, "node l0.fc"}}},
                  {"embed", {"embed"}, {"embed"}, "gather", "((1,1),(1,1))", "", {"[-,-]"}, {"[-,-]"}, {}}};
  auto& pr = p.prediction;
  pr.step_time_s = 10.5;
  pr.breakdown_s = {{"compute", 6.0}, {"bubble", 4.0}, {"optimizer", 0.5}};
  pr.mfu = 0.25;
  pr.capacity_bytes = 80.0 * 1073741824.0;
  // Stage 0: 8 + 4 + 24 GiB state, 12 GiB activations, 2 GiB temporary,
  // 1 GiB context = 51 GiB. Stage 1: 10 + 5 + 30 + 6 + 0.5 (loss buffer,
  // an activation) + 1 = 52.5 GiB.
  const double G = 1073741824.0;
  pr.stages = {{0, 51 * G, true, 2e9, 2,
                {{"optimizer_states", 24 * G, ""}, {"activations", 12 * G, ""}, {"weights", 8 * G, ""},
                 {"gradients", 4 * G, ""}, {"temporary", 2 * G, ""}, {"cuda_context", 1 * G, ""}}},
               {1, 52.5 * G, true, 2.5e9, 1,
                {{"optimizer_states", 30 * G, ""}, {"weights", 10 * G, ""}, {"activations", 6 * G, ""},
                 {"gradients", 5 * G, ""}, {"cuda_context", 1 * G, ""}, {"loss_buffer", 0.5 * G, ""}}}};
  pr.alternatives = {{"dp=1 tp=4 pp=1 mb=1 1f1b", 12.6, true, "+20.0 % step time, most from model-parallel communication"},
                     {"dp=2 tp=2 pp=1 mb=1 1f1b", 11.0, false, "does not fit"}};
  pr.timeline = {
      {0,
       {span("compute", "forward", 0, 0, {}, 0, 0.75), span("compute", "forward", 1, 0, {}, 1, 1.75),
        span("compute", "bubble", {}, {}, {}, 2, 5), span("compute", "backward", 0, 0, {}, 5, 6.5),
        span("compute", "bubble", {}, {}, {}, 7, 8), span("compute", "backward", 1, 0, {}, 8, 9.5),
        span("compute", "optimizer", {}, {}, {}, 10, 10.5), span("tp", "tp_forward", 0, 0, {}, 0.75, 1),
        span("tp", "tp_forward", 1, 0, {}, 1.75, 2), span("tp", "tp_backward", 0, 0, {}, 6.5, 7),
        span("tp", "tp_backward", 1, 0, {}, 9.5, 10), span("pp", "send_activation", 0, 0, 1, 1, 1.5),
        span("pp", "send_activation", 1, 0, 1, 2, 2.5), span("pp", "recv_gradient", 0, 0, 1, 4.5, 5),
        span("pp", "recv_gradient", 1, 0, 1, 7.5, 8)}},
      {1,
       {span("compute", "bubble", {}, {}, {}, 0, 1.5), span("compute", "forward", 0, 1, {}, 1.5, 2.5),
        span("compute", "recompute", 0, 1, {}, 2.5, 3), span("compute", "backward", 0, 1, {}, 3, 4.5),
        span("compute", "forward", 1, 1, {}, 4.5, 5.5), span("compute", "recompute", 1, 1, {}, 5.5, 6),
        span("compute", "backward", 1, 1, {}, 6, 7.5), span("compute", "optimizer", {}, {}, {}, 7.75, 8.25),
        span("compute", "bubble", {}, {}, {}, 8.25, 10.5), span("pp", "recv_activation", 0, 1, 0, 1, 1.5),
        span("pp", "recv_activation", 1, 1, 0, 2, 2.5), span("pp", "send_gradient", 0, 1, 0, 4.5, 5),
        span("pp", "send_gradient", 1, 1, 0, 7.5, 8), span("dp", "dp_reduce", {}, {}, {}, 6.75, 7.25),
        span("dp", "dp_reduce", {}, {}, {}, 7.25, 7.75)}}};
  return p;
}

}  // namespace report_test
