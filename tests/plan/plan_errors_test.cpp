// Every validate() rule and every reader error: break one thing in a valid
// plan, expect one line naming the field path.

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "planner/plan/plan.hpp"
#include "plan_helpers.hpp"

using namespace planner;
using namespace planner::plan;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using ojson = nlohmann::ordered_json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Case {
  const char* expect;  ///< a substring of the message, starting with the path
  std::function<void(Plan&)> mutate;
};

/// Makes the sample an interleaved plan (vp = 2, 4 chunks).
void interleave(Plan& p) {
  auto& l = p.layout;
  l.vp = 2;
  l.schedule = "interleaved";
  l.chunks = {{0, 0, 0, 0, true, false, {"embed", "l0.qkv"}},
              {1, 1, 0, 0, false, false, {"l0.attn", "l0.proj"}},
              {2, 0, 1, 1, false, false, {"l1.qkv", "l1.attn"}},
              {3, 1, 1, 1, false, true, {"l1.proj", "lm_head", "loss"}}};
  const int m = static_cast<int>(p.training.micro_batches);
  l.schedule_steps = {plan_test::all_forward_then_backward(0, 2, 2, m),
                      plan_test::all_forward_then_backward(1, 2, 2, m)};
}

std::string message(const Status& s) { return s ? std::string("(valid)") : s.error().message; }

void check_cases(const std::vector<Case>& cases) {
  for (const auto& c : cases) {
    Plan p = plan_test::sample_plan();
    c.mutate(p);
    const auto s = validate(p);
    INFO("expected: " << c.expect);
    const std::string m = message(s);
    CHECK_THAT(m, StartsWith(std::string(c.expect).substr(0, std::string(c.expect).find(':'))));
    CHECK_THAT(m, Contains(c.expect));
    CHECK(m.find('\n') == std::string::npos);
    // Written and read back, the plan fails at the same path (the reader may
    // catch it first: "X0@c0" is not a step, NaN is written as null).
    if (!s.ok() && std::string(c.expect).rfind("format", 0) != 0) {
      const std::string path(c.expect, std::string(c.expect).find(':'));
      auto r = from_json(to_json(p), "x.json");
      REQUIRE_FALSE(r.ok());
      CHECK_THAT(r.error().message, StartsWith("x.json: " + path + ":"));
      if (m.find("finite") == std::string::npos &&
          path.rfind("layout.schedule_steps[", 0) != 0)
        CHECK(r.error().message == "x.json: " + m);
    }
  }
}

}  // namespace

TEST_CASE("validate: producer, model and cluster", "[plan][validate]") {
  check_cases({
      {"format: expected 'planner.plan/v1', got 'planner.plan/v2'", [](Plan& p) { p.format = "planner.plan/v2"; }},
      {"producer.tool: must not be empty", [](Plan& p) { p.producer.tool = ""; }},
      {"producer.command: 'run' is not one of: search, estimate", [](Plan& p) { p.producer.command = "run"; }},
      {"producer.search_time_s: must be >= 0", [](Plan& p) { p.producer.search_time_s = -1; }},
      {"producer.search_time_s: must be a finite number", [](Plan& p) { p.producer.search_time_s = kNaN; }},
      {"producer.layouts_scored: must be >= 0", [](Plan& p) { p.producer.layouts_scored = -1; }},
      {"model.path: must not be empty", [](Plan& p) { p.model.path = ""; }},
      {"model.sha256: expected 64 lowercase hex digits", [](Plan& p) { p.model.sha256[3] = 'A'; }},
      {"model.sha256: expected 64 lowercase hex digits", [](Plan& p) { p.model.sha256.pop_back(); }},
      {"model.sha256: expected 64 lowercase hex digits", [](Plan& p) { p.model.sha256[0] = 'g'; }},
      {"model.parameters: must be >= 0", [](Plan& p) { p.model.parameters = -5; }},
      {"model.dims.seq: must be >= 1", [](Plan& p) { p.model.dims["seq"] = 0; }},
      {"model.dims: a dimension name is empty", [](Plan& p) { p.model.dims[""] = 3; }},
      {"model.batch: must be >= 1", [](Plan& p) { p.model.batch = 0; }},
      {"model.params_from_inputs[1]: must not be empty", [](Plan& p) { p.model.params_from_inputs = {"w", ""}; }},
      {"model.shared_weights[0]: must not be empty",
       [](Plan& p) { p.model.shared_weights = std::vector<std::string>{""}; }},
      {"cluster.profile: must not be empty", [](Plan& p) { p.cluster.profile = ""; }},
      {"cluster.profile_hash: expected 16 lowercase hex digits", [](Plan& p) { p.cluster.profile_hash = "47db"; }},
      {"cluster.devices: must be >= 1", [](Plan& p) { p.cluster.devices = 0; }},
      {"cluster.devices_per_node: must be >= 1", [](Plan& p) { p.cluster.devices_per_node = 0; }},
  });
  // Empty hashes are allowed (a hand-written plan).
  Plan p = plan_test::sample_plan();
  p.model.sha256.clear();
  p.cluster.profile_hash.clear();
  CHECK(validate(p).ok());
}

TEST_CASE("validate: training", "[plan][validate]") {
  check_cases({
      {"training.global_batch: 17 != micro_batch * dp * micro_batches = 2 * 2 * 4",
       [](Plan& p) { p.training.global_batch = 17; }},
      {"training.global_batch: 8 != micro_batch * dp * micro_batches = 2 * 2 * 4",
       [](Plan& p) { p.training.global_batch = 8; }},
      {"training.global_batch: must be >= 1", [](Plan& p) { p.training.global_batch = 0; }},
      {"training.micro_batch: must be >= 1", [](Plan& p) { p.training.micro_batch = 0; }},
      {"training.micro_batches: must be >= 1", [](Plan& p) { p.training.micro_batches = 0; }},
      {"training.optimizer.name: 'lamb' is not one of: adam, sgd_momentum, sgd",
       [](Plan& p) { p.training.optimizer.name = "lamb"; }},
      {"training.optimizer.learning_rate: must be a finite number",
       [](Plan& p) { p.training.optimizer.learning_rate = kInf; }},
      {"training.optimizer.learning_rate: must be >= 0", [](Plan& p) { p.training.optimizer.learning_rate = -1e-4; }},
      {"training.optimizer.beta1: must be in [0, 1)", [](Plan& p) { p.training.optimizer.beta1 = 1.0; }},
      {"training.optimizer.beta2: must be in [0, 1)", [](Plan& p) { p.training.optimizer.beta2 = -0.1; }},
      {"training.optimizer.epsilon: must be >= 0", [](Plan& p) { p.training.optimizer.epsilon = -1e-8; }},
      {"training.optimizer.weight_decay: must be a finite number",
       [](Plan& p) { p.training.optimizer.weight_decay = kNaN; }},
      {"training.optimizer.momentum: must be in [0, 1)", [](Plan& p) { p.training.optimizer.momentum = 1.5; }},
      {"training.optimizer.state_dtype: 'fp8' is not one of: fp32, bf16",
       [](Plan& p) { p.training.optimizer.state_dtype = "fp8"; }},
      {"training.optimizer.master_weights: 'fp16' is not one of: fp32, remainder, none",
       [](Plan& p) { p.training.optimizer.master_weights = "fp16"; }},
      {"training.precision: 'int8' is not one of: bf16, fp16, fp8, tf32, fp32",
       [](Plan& p) { p.training.precision = "int8"; }},
      {"training.precision_by_class.loss: 'fp64' is not one of",
       [](Plan& p) { p.training.precision_by_class["loss"] = "fp64"; }},
      {"training.precision_by_class: an op class name is empty",
       [](Plan& p) { p.training.precision_by_class[""] = "fp32"; }},
      {"training.recompute: 'partial' is not one of: none, selective, full",
       [](Plan& p) { p.training.recompute = "partial"; }},
      {"training.recompute_modules: set with training.recompute 'full'",
       [](Plan& p) { p.training.recompute = "full", p.training.recompute_modules = "moe_act"; }},
      {"training.recompute_modules: 'mlp' is not one of core_attn, layernorm, moe_act",
       [](Plan& p) { p.training.recompute = "selective", p.training.recompute_modules = "layernorm,mlp"; }},
      {"training.recompute_modules: 'moe_act,layernorm' is out of order or repeated",
       [](Plan& p) { p.training.recompute = "selective", p.training.recompute_modules = "moe_act,layernorm"; }},
      {"training.recompute_modules: 'core_attn' alone is the default",
       [](Plan& p) { p.training.recompute = "selective", p.training.recompute_modules = "core_attn"; }},
      {"training.attention: 'sdpa' is not one of: flash, unfused", [](Plan& p) { p.training.attention = "sdpa"; }},
      {"training.memory_format: 'NHWC' is not one of: nchw, nhwc",
       [](Plan& p) { p.training.memory_format = "NHWC"; }},
      {"training.framework: 'jax' is not one of: megatron, megatron-legacy, deepspeed, fsdp, ddp",
       [](Plan& p) { p.training.framework = "jax"; }},
  });
}

TEST_CASE("validate: degrees, flags and mesh", "[plan][validate]") {
  check_cases({
      {"layout.tp: must be >= 1", [](Plan& p) { p.layout.tp = 0; }},
      {"layout.vp: must be >= 1", [](Plan& p) { p.layout.vp = -1; }},
      {"layout: dp*tp*pp*cp = 2*4*2*1 = 16 but cluster.devices is 8", [](Plan& p) { p.layout.tp = 4; }},
      {"layout: dp*tp*pp*cp = 2*2*2*1 = 8 but cluster.devices is 16", [](Plan& p) { p.cluster.devices = 16; }},
      {"layout: dp*tp*pp*cp = 65536*65536*65536*65536 = 1.8446744073709552e+19 but cluster.devices is 8",
       [](Plan& p) { p.layout.dp = p.layout.tp = p.layout.pp = p.layout.cp = 65536; }},
      {"layout.ep: 3 must divide dp*cp = 2", [](Plan& p) { p.layout.ep = 3; }},
      {"layout.zero: must be 0, 1, 2 or 3, got 4", [](Plan& p) { p.layout.zero = 4; }},
      {"layout.distributed_optimizer: is ZeRO-1 sharding", [](Plan& p) { p.layout.zero = 2; }},
      {"layout.sequence_parallel: needs tp >= 2",
       [](Plan& p) {
         p.layout.tp = 1;
         p.layout.dp = 4;
       }},
      {"layout.schedule: 'zb' is not one of: 1f1b, gpipe, interleaved", [](Plan& p) { p.layout.schedule = "zb"; }},
      {"layout.vp: 2 needs schedule 'interleaved' (got '1f1b')", [](Plan& p) { p.layout.vp = 2; }},
      {"layout.vp: the interleaved schedule needs vp >= 2", [](Plan& p) { p.layout.schedule = "interleaved"; }},
      {"layout.pp: the interleaved schedule needs pp >= 2",
       [](Plan& p) {
         p.layout.schedule = "interleaved";
         p.layout.vp = 2;
         p.layout.pp = 1;
         p.layout.dp = 4;
       }},
      {"training.micro_batches: 3 must be a multiple of pp = 2 for the interleaved schedule",
       [](Plan& p) {
         p.training.micro_batches = 3;
         p.training.global_batch = 12;
         interleave(p);
       }},
      {"layout.mesh[0].name: 'ep' is not one of: pp, dp, cp, tp", [](Plan& p) { p.layout.mesh[0].name = "ep"; }},
      {"layout.mesh[0].name: axis 'tp' appears twice", [](Plan& p) { p.layout.mesh[0].name = "tp"; }},
      {"layout.mesh[1].size: 4 but layout.dp is 2", [](Plan& p) { p.layout.mesh[1].size = 4; }},
      {"layout.mesh[0].stride: expected 4 (row-major: the last axis is fastest), got 2",
       [](Plan& p) { p.layout.mesh[0].stride = 2; }},
      {"layout.mesh[2].stride: expected 1", [](Plan& p) { p.layout.mesh[2].stride = 0; }},
      {"layout.mesh: axis sizes multiply to 4 but cluster.devices is 8",
       [](Plan& p) { p.layout.mesh.erase(p.layout.mesh.begin()); }},
  });
  // Size-1 axes may be listed or left out.
  Plan p = plan_test::sample_plan();
  p.layout.mesh.insert(p.layout.mesh.begin() + 2, MeshAxis{"cp", 1, 2});
  CHECK(validate(p).ok());
}

TEST_CASE("validate: chunks", "[plan][validate]") {
  check_cases({
      {"layout.chunks: 1 chunks, expected pp*vp = 2*1 = 2", [](Plan& p) { p.layout.chunks.pop_back(); }},
      {"layout.chunks[1].index: expected 1, got 2", [](Plan& p) { p.layout.chunks[1].index = 2; }},
      {"layout.chunks[1].pipeline_rank: expected 1 (index mod pp), got 0",
       [](Plan& p) { p.layout.chunks[1].pipeline_rank = 0; }},
      {"layout.chunks[0].first_layer: must be >= 0", [](Plan& p) { p.layout.chunks[0].first_layer = -1; }},
      {"layout.chunks[0].last_layer: must be >= -1", [](Plan& p) { p.layout.chunks[0].last_layer = -2; }},
      {"layout.chunks[1].ops[5]: op 'embed' is already in layout.chunks[0]",
       [](Plan& p) { p.layout.chunks[1].ops.push_back("embed"); }},
      {"layout.chunks[0].ops[1]: op 'embed' is already in layout.chunks[0]",
       [](Plan& p) { p.layout.chunks[0].ops[1] = "embed"; }},
      {"layout.chunks[0].ops[0]: must not be empty", [](Plan& p) { p.layout.chunks[0].ops[0] = ""; }},
  });
  // A chunk without repeated layers (last < first) is fine.
  Plan p = plan_test::sample_plan();
  p.layout.chunks[1].first_layer = 2;
  p.layout.chunks[1].last_layer = -1;
  CHECK(validate(p).ok());
}

TEST_CASE("validate: schedule programs", "[plan][validate]") {
  check_cases({
      {"layout.schedule_steps: 1 programs, expected one per pipeline rank (pp = 2)",
       [](Plan& p) { p.layout.schedule_steps.pop_back(); }},
      {"layout.schedule_steps[0]: missing B3@c0", [](Plan& p) { p.layout.schedule_steps[0].pop_back(); }},
      {"layout.schedule_steps[1]: missing F0@c1", [](Plan& p) { p.layout.schedule_steps[1].clear(); }},
      {"layout.schedule_steps[1][8]: F0@c1 appears twice",
       [](Plan& p) { p.layout.schedule_steps[1].push_back({'F', 0, 1}); }},
      {"layout.schedule_steps[0][8]: F4@c0: micro-batch 4 is not in [0, 4)",
       [](Plan& p) { p.layout.schedule_steps[0].push_back({'F', 4, 0}); }},
      {"layout.schedule_steps[0][0]: F0@c1: chunk 1 runs on pipeline rank 1, not 0",
       [](Plan& p) { p.layout.schedule_steps[0][0].chunk = 1; }},
      {"layout.schedule_steps[0][0]: F0@c5: chunk 5 does not exist (pp*vp = 2)",
       [](Plan& p) { p.layout.schedule_steps[0][0].chunk = 5; }},
      {"layout.schedule_steps[0][0]: step kind 'X' is not F or B", [](Plan& p) { p.layout.schedule_steps[0][0].kind = 'X'; }},
      {"layout.schedule_steps[1][0]: B0@c1 comes before its forward",
       [](Plan& p) { std::swap(p.layout.schedule_steps[1][0], p.layout.schedule_steps[1][1]); }},
      {"layout.schedule_steps[0][0]: F-1@c0: micro-batch -1 is not in [0, 4)",
       [](Plan& p) { p.layout.schedule_steps[0][0].micro_batch = -1; }},
  });
  // Any order that runs every backward after its forward is legal (GPipe).
  Plan p = plan_test::sample_plan();
  p.layout.schedule = "gpipe";
  p.layout.schedule_steps = {plan_test::all_forward_then_backward(0, 2, 1, 4),
                             plan_test::all_forward_then_backward(1, 2, 1, 4)};
  CHECK(validate(p).ok());
  // A huge micro-batch count is rejected without allocating for it.
  p.training.micro_batches = std::int64_t{1} << 40;
  p.training.global_batch = p.training.micro_batches * 4;
  CHECK_THAT(message(validate(p)), StartsWith("training.micro_batches: 1099511627776 is too large"));
}

TEST_CASE("validate: strategies", "[plan][validate]") {
  check_cases({
      {"layout.strategies[0].unit: must not be empty", [](Plan& p) { p.layout.strategies[0].unit = ""; }},
      {"layout.strategies[1].unit: unit 'l0.qkv' appears twice",
       [](Plan& p) { p.layout.strategies[1].unit = "l0.qkv"; }},
      {"layout.strategies[0].instances: must list at least one instance",
       [](Plan& p) { p.layout.strategies[0].instances.clear(); }},
      {"layout.strategies[0].instances[1]: 'l2.qkv' is not an op of any chunk",
       [](Plan& p) { p.layout.strategies[0].instances[1] = "l2.qkv"; }},
      {"layout.strategies[2].instances[0]: must not be empty",
       [](Plan& p) { p.layout.strategies[2].instances[0] = ""; }},
      {"layout.strategies[1].ops: must list at least one op", [](Plan& p) { p.layout.strategies[1].ops.clear(); }},
      {"layout.strategies[1].ops[1]: 'softmax' is not an op of any chunk",
       [](Plan& p) { p.layout.strategies[1].ops.push_back("softmax"); }},
      {"layout.strategies[0].collectives[2].kind: 'all-reduce' is not one of",
       [](Plan& p) { p.layout.strategies[0].collectives[2].kind = "all-reduce"; }},
      {"layout.strategies[0].collectives[0].axis: must not be empty",
       [](Plan& p) { p.layout.strategies[0].collectives[0].axis = ""; }},
      {"layout.strategies[0].collectives[1].group_size: must be >= 1",
       [](Plan& p) { p.layout.strategies[0].collectives[1].group_size = 0; }},
      {"layout.strategies[0].collectives[0].bytes: must be a finite number",
       [](Plan& p) { p.layout.strategies[0].collectives[0].bytes = kNaN; }},
      {"layout.strategies[0].collectives[0].bytes: must be >= 0",
       [](Plan& p) { p.layout.strategies[0].collectives[0].bytes = -1; }},
      {"layout.strategies[0].collectives[0].count: must be >= 1",
       [](Plan& p) { p.layout.strategies[0].collectives[0].count = 0; }},
  });
}

TEST_CASE("validate: prediction", "[plan][validate]") {
  check_cases({
      {"prediction.step_time_s: must be >= 0", [](Plan& p) { p.prediction.step_time_s = -1; }},
      {"prediction.step_time_s: must be a finite number", [](Plan& p) { p.prediction.step_time_s = kInf; }},
      {"prediction.breakdown_s.compute: must be a finite number",
       [](Plan& p) { p.prediction.breakdown_s["compute"] = -kInf; }},
      {"prediction.breakdown_s.bubble: must be >= 0", [](Plan& p) { p.prediction.breakdown_s["bubble"] = -0.1; }},
      {"prediction.breakdown_s: an entry name is empty", [](Plan& p) { p.prediction.breakdown_s[""] = 1; }},
      {"prediction.model_tflops_per_device: must be >= 0", [](Plan& p) { p.prediction.model_tflops_per_device = -1; }},
      {"prediction.hardware_tflops_per_device: must be a finite number",
       [](Plan& p) { p.prediction.hardware_tflops_per_device = kNaN; }},
      {"prediction.mfu: must be a finite number", [](Plan& p) { p.prediction.mfu = kNaN; }},
      {"prediction.hfu: must be >= 0", [](Plan& p) { p.prediction.hfu = -0.5; }},
      {"prediction.capacity_bytes: must be >= 0", [](Plan& p) { p.prediction.capacity_bytes = -1; }},
      {"prediction.stages[1].stage: 2 is not a pipeline rank in [0, 2)", [](Plan& p) { p.prediction.stages[1].stage = 2; }},
      {"prediction.stages[1].stage: stage 0 appears twice", [](Plan& p) { p.prediction.stages[1].stage = 0; }},
      {"prediction.stages[0].peak_bytes: must be >= 0", [](Plan& p) { p.prediction.stages[0].peak_bytes = -1; }},
      {"prediction.stages[0].parameters: must be a finite number",
       [](Plan& p) { p.prediction.stages[0].parameters = kInf; }},
      {"prediction.stages[1].micro_batches_in_flight: must be >= 0",
       [](Plan& p) { p.prediction.stages[1].micro_batches_in_flight = -1; }},
      {"prediction.stages[0].items[0].kind: must not be empty", [](Plan& p) { p.prediction.stages[0].items[0].kind = ""; }},
      {"prediction.stages[0].items[0].bytes: must be >= 0", [](Plan& p) { p.prediction.stages[0].items[0].bytes = -8; }},
      {"prediction.lower_bound_s: must be >= 0", [](Plan& p) { p.prediction.lower_bound_s = -1; }},
      {"prediction.gap: must be a finite number", [](Plan& p) { p.prediction.gap = kInf; }},
      {"prediction.alternatives[0].layout: must not be empty", [](Plan& p) { p.prediction.alternatives[0].layout = ""; }},
      {"prediction.alternatives[0].step_time_s: must be >= 0",
       [](Plan& p) { p.prediction.alternatives[0].step_time_s = -2; }},
  });
}

TEST_CASE("validate: prediction.timeline", "[plan][validate]") {
  check_cases({
      {"prediction.timeline[1].stage: 2 is not a pipeline rank in [0, 2)",
       [](Plan& p) { p.prediction.timeline[1].stage = 2; }},
      {"prediction.timeline[1].stage: stage 0 appears twice", [](Plan& p) { p.prediction.timeline[1].stage = 0; }},
      {"prediction.timeline[0].spans[0].stream: 'gpu' is not one of: compute, tp, pp, dp",
       [](Plan& p) { p.prediction.timeline[0].spans[0].stream = "gpu"; }},
      {"prediction.timeline[0].spans[1].kind: 'idle' is not one of: forward,",
       [](Plan& p) { p.prediction.timeline[0].spans[1].kind = "idle"; }},
      {"prediction.timeline[0].spans[0].micro_batch: 4 is not a micro-batch in [0, 4)",
       [](Plan& p) { p.prediction.timeline[0].spans[0].micro_batch = 4; }},
      {"prediction.timeline[1].spans[0].chunk: 0 is not a chunk of pipeline rank 1 (chunks = 2)",
       [](Plan& p) { p.prediction.timeline[1].spans[0].chunk = 0; }},
      {"prediction.timeline[0].spans[2].peer: -1 is not a pipeline rank in [0, 2)",
       [](Plan& p) { p.prediction.timeline[0].spans[2].peer = -1; }},
      {"prediction.timeline[0].spans[0].start_s: must be >= 0",
       [](Plan& p) { p.prediction.timeline[0].spans[0].start_s = -0.5; }},
      {"prediction.timeline[0].spans[0].end_s: must be a finite number",
       [](Plan& p) { p.prediction.timeline[0].spans[0].end_s = kNaN; }},
      {"prediction.timeline[0].spans[1].end_s: 0.1 is before start_s 0.2",
       [](Plan& p) { p.prediction.timeline[0].spans[1].end_s = 0.1; }},
      {"prediction.timeline[1].spans[1].end_s: 0.31 is after the step's end (step_time_s 0.30000000000000004)",
       [](Plan& p) { p.prediction.timeline[1].spans[1].end_s = 0.31; }},
  });
}

// --- the reader ---------------------------------------------------------------

namespace {

ojson sample_json() { return ojson::parse(to_json(plan_test::sample_plan())); }

std::string text_error(const std::string& text) {
  auto r = from_json(text, "bad.json");
  if (r.ok()) return "(parsed)";
  CHECK(r.error().message.find('\n') == std::string::npos);
  return r.error().message;
}

std::string parse_error(const ojson& j) { return text_error(j.dump(2)); }

}  // namespace

TEST_CASE("from_json: invalid JSON names the line and column", "[plan][read]") {
  CHECK_THAT(text_error("{\n  \"format\": \"planner.plan/v1\",\n  oops\n}"),
             StartsWith("bad.json: line 3, column 3: syntax error while parsing object key"));
  CHECK_THAT(text_error(""), StartsWith("bad.json: line 1, column 1: "));
  CHECK_THAT(text_error("{} trailing"), StartsWith("bad.json: line 1, column 6: syntax error while parsing value"));
  CHECK_THAT(text_error("{\"a\": NaN}"), StartsWith("bad.json: line 1, column 7: "));
  CHECK_THAT(text_error("{\"a\": \"\xff\"}"), StartsWith("bad.json: line 1, column "));
  // Infinity cannot be written in JSON; an overflowing literal names its path.
  auto j = sample_json();
  std::string text = j.dump(2);
  const std::string step = "\"step_time_s\": 0.30000000000000004";
  REQUIRE(text.find(step) != std::string::npos);
  text.replace(text.find(step), step.size(), "\"step_time_s\": 1e999");
  CHECK(text_error(text) ==
        "bad.json: prediction.step_time_s: number is not finite (a literal like 1e999 overflows a double)");
}

TEST_CASE("from_json: format version", "[plan][read]") {
  auto j = sample_json();
  j["format"] = "planner.plan/v2";
  j["layout"]["new_v2_field"] = 1;  // the version is checked before the keys
  CHECK(parse_error(j) == "bad.json: format 'planner.plan/v2' is not supported (this planner reads planner.plan/v1)");
  j.erase("format");
  CHECK(parse_error(j) == "bad.json: format: missing required field (expected \"planner.plan/v1\")");
  j = sample_json();
  j["format"] = 1;
  CHECK(parse_error(j) == "bad.json: format: expected a string, got a number (1)");
  CHECK(text_error("[1, 2]") == "bad.json: (top level): expected a JSON object (a planner plan), got an array");
}

TEST_CASE("from_json: unknown and duplicate keys", "[plan][read]") {
  auto j = sample_json();
  j["layout"]["foo"] = 1;
  CHECK_THAT(parse_error(j), StartsWith("bad.json: layout: unknown key 'foo' (expected one of: dp, tp, pp,"));
  j = sample_json();
  j["extra"] = true;
  CHECK_THAT(parse_error(j), StartsWith("bad.json: (top level): unknown key 'extra'"));
  j = sample_json();
  j["layout"]["chunks"][1]["frist_layer"] = 1;
  CHECK_THAT(parse_error(j), StartsWith("bad.json: layout.chunks[1]: unknown key 'frist_layer'"));
  j = sample_json();
  j["prediction"]["stages"][0]["items"][0]["size"] = 1;
  CHECK_THAT(parse_error(j), StartsWith("bad.json: prediction.stages[0].items[0]: unknown key 'size'"));
  j = sample_json();
  j["layout"]["strategies"][0]["collectives"][1]["bytez"] = 1;
  CHECK_THAT(parse_error(j), StartsWith("bad.json: layout.strategies[0].collectives[1]: unknown key 'bytez'"));

  // nlohmann keeps the last of duplicate keys; the reader refuses them.
  std::string text = to_json(plan_test::sample_plan());
  const std::string tp = "\"tp\": 2,";
  REQUIRE(text.find(tp) != std::string::npos);
  text.insert(text.find(tp), "\"tp\": 4, ");
  CHECK(text_error(text) == "bad.json: layout: duplicate key 'tp'");
  text = to_json(plan_test::sample_plan());
  const std::string index = "\"index\": 1,";
  REQUIRE(text.find(index) != std::string::npos);
  text.insert(text.find(index), "\"index\": 1, ");
  CHECK(text_error(text) == "bad.json: layout.chunks[1]: duplicate key 'index'");
  text = to_json(plan_test::sample_plan());
  const std::string kind = "\"kind\": \"all_reduce\",";
  REQUIRE(text.find(kind) != std::string::npos);
  text.insert(text.find(kind), "\"kind\": \"x\", ");
  CHECK(text_error(text) == "bad.json: layout.strategies[0].collectives[2]: duplicate key 'kind'");
}

TEST_CASE("from_json: wrong types name the path", "[plan][read]") {
  struct TypeCase {
    std::function<void(ojson&)> mutate;
    const char* expect;
  };
  const std::vector<TypeCase> cases{
      {[](ojson& j) { j["layout"]["chunks"][1]["first_layer"] = "1"; },
       "bad.json: layout.chunks[1].first_layer: expected an integer, got a string (\"1\")"},
      {[](ojson& j) { j["layout"]["tp"] = 2.0; }, "bad.json: layout.tp: expected an integer, got a number (2.0)"},
      {[](ojson& j) { j["layout"]["tp"] = 10000000000LL; }, "bad.json: layout.tp: integer 10000000000 is out of range"},
      {[](ojson& j) { j["model"]["parameters"] = 18446744073709551615ULL; },
       "bad.json: model.parameters: integer 18446744073709551615 is out of range"},
      {[](ojson& j) { j["training"]["seed"] = -1; }, "bad.json: training.seed: expected a non-negative integer, got -1"},
      {[](ojson& j) { j["training"]["seed"] = "x"; },
       "bad.json: training.seed: expected a non-negative integer, got a string (\"x\")"},
      {[](ojson& j) { j["layout"]["sequence_parallel"] = 1; },
       "bad.json: layout.sequence_parallel: expected true or false, got a number (1)"},
      {[](ojson& j) { j["prediction"]["mfu"] = "0.3"; }, "bad.json: prediction.mfu: expected a number, got a string"},
      {[](ojson& j) { j["prediction"]["mfu"] = nullptr; }, "bad.json: prediction.mfu: expected a number, got null"},
      {[](ojson& j) { j["layout"] = ojson::array(); }, "bad.json: layout: expected an object, got an array"},
      {[](ojson& j) { j["layout"]["chunks"] = ojson::object(); }, "bad.json: layout.chunks: expected an array, got an object"},
      {[](ojson& j) { j["layout"]["chunks"][0]["ops"][1] = 7; },
       "bad.json: layout.chunks[0].ops[1]: expected a string, got a number (7)"},
      {[](ojson& j) { j["model"]["dims"]["seq"] = "1024"; }, "bad.json: model.dims.seq: expected an integer"},
      {[](ojson& j) { j["training"]["precision_by_class"]["loss"] = false; },
       "bad.json: training.precision_by_class.loss: expected a string, got a boolean (false)"},
      {[](ojson& j) { j["layout"]["schedule_steps"][0][2] = "F1c0"; },
       "bad.json: layout.schedule_steps[0][2]: expected a step like \"F3@c1\" (F or B, micro-batch, '@c', chunk), got "
       "\"F1c0\""},
      {[](ojson& j) { j["layout"]["schedule_steps"][1][3] = "f1@c1"; },
       "bad.json: layout.schedule_steps[1][3]: expected a step like"},
      {[](ojson& j) { j["layout"]["schedule_steps"][1][3] = "F-1@c1"; },
       "bad.json: layout.schedule_steps[1][3]: expected a step like"},
      {[](ojson& j) { j["layout"]["schedule_steps"][1][3] = "F99999999999@c1"; },
       "bad.json: layout.schedule_steps[1][3]: expected a step like"},
      {[](ojson& j) { j["layout"]["schedule_steps"][1][3] = "F1@c"; },
       "bad.json: layout.schedule_steps[1][3]: expected a step like"},
      {[](ojson& j) { j["layout"]["schedule_steps"][1][3] = 3; },
       "bad.json: layout.schedule_steps[1][3]: expected a step string like \"F3@c1\", got a number (3)"},
      {[](ojson& j) { j["layout"]["mesh"][0] = "pp"; }, "bad.json: layout.mesh[0]: expected an object, got a string"},
  };
  for (const auto& c : cases) {
    auto j = sample_json();
    c.mutate(j);
    INFO(c.expect);
    CHECK_THAT(parse_error(j), StartsWith(c.expect));
  }
}

TEST_CASE("from_json: required and optional fields", "[plan][read]") {
  const std::vector<std::vector<std::string>> required{
      {"producer"}, {"layout", "tp"}, {"training", "optimizer", "beta1"}, {"model", "sha256"},
      {"cluster", "devices"}, {"prediction", "step_time_s"}, {"layout", "schedule_steps"}};
  for (const auto& path : required) {
    auto j = sample_json();
    ojson* parent = &j;
    std::string dotted;
    for (std::size_t i = 0; i + 1 < path.size(); ++i) {
      parent = &(*parent)[path[i]];
      dotted += path[i] + ".";
    }
    parent->erase(path.back());
    dotted += path.back();
    INFO(dotted);
    CHECK(parse_error(j) == "bad.json: " + dotted + ": missing required field");
  }
  {
    auto j = sample_json();
    j["layout"]["chunks"][1].erase("head");
    CHECK(parse_error(j) == "bad.json: layout.chunks[1].head: missing required field");
  }

  // Optional: absent means the default (empty, zero, none).
  auto j = sample_json();
  j["model"].erase("batch");
  j["model"].erase("dims");
  j["model"].erase("params_from_inputs");
  j["model"].erase("shared_weights");  // plans before it: unknown
  j["cluster"].erase("overrides");
  j["training"].erase("precision_by_class");
  j["training"].erase("memory_format");  // plans before --memory-format was stored
  j["producer"].erase("search_time_s");
  j["producer"].erase("layouts_scored");
  j["layout"]["strategies"][0].erase("collectives");
  j["prediction"].erase("breakdown_s");
  j["prediction"].erase("stages");
  j["prediction"].erase("lower_bound_s");
  j["prediction"].erase("gap");
  j["prediction"].erase("alternatives");
  auto r = from_json(j.dump(2), "opt.json");
  INFO((r ? std::string() : r.error().message));
  REQUIRE(r.ok());
  CHECK_FALSE(r->model.batch.has_value());
  CHECK_FALSE(r->model.shared_weights.has_value());
  CHECK(r->model.dims.empty());
  CHECK(r->training.precision_by_class.empty());
  CHECK(r->training.memory_format == "nchw");
  CHECK(r->producer.layouts_scored == 0);
  CHECK(r->layout.strategies[0].collectives.empty());
  CHECK(r->prediction.stages.empty());
  CHECK(r->prediction.alternatives.empty());
  CHECK(r->prediction.gap == 0);
}

TEST_CASE("from_json: validation errors carry the source", "[plan][read]") {
  auto j = sample_json();
  j["layout"]["chunks"][1]["pipeline_rank"] = 0;
  CHECK(parse_error(j) == "bad.json: layout.chunks[1].pipeline_rank: expected 1 (index mod pp), got 0");
  // Chunk devices against the mesh (pp=2 stride 4: pipeline rank 1 = ranks 4-7).
  j = sample_json();
  j["layout"]["chunks"][1]["devices"] = ojson::array({4, 5, 7, 6});
  CHECK(parse_error(j) == "bad.json: layout.chunks[1].devices[2]: expected rank 6 (pipeline rank 1's ranks in the "
                          "mesh's rank order), got 7");
  j = sample_json();
  j["layout"]["chunks"][0]["devices"] = ojson::array({0, 1, 2});
  CHECK(parse_error(j) == "bad.json: layout.chunks[0].devices: 3 ranks, expected devices/pp = 4 (pipeline rank 0 of "
                          "the mesh)");
  j = sample_json();
  j["layout"]["chunks"][0]["devices"] = ojson::array();
  CHECK(parse_error(j) == "bad.json: layout.chunks[0].devices: is empty (list the stage's ranks, or leave the field out)");
  j = sample_json();
  j["layout"]["chunks"][0]["devices"] = ojson::array({0, -1, 2, 3});
  CHECK_THAT(parse_error(j), StartsWith("bad.json: layout.chunks[0].devices[1]: "));
  j = sample_json();
  j["training"]["global_batch"] = 32;
  CHECK(parse_error(j) == "bad.json: training.global_batch: 32 != micro_batch * dp * micro_batches = 2 * 2 * 4");
  // Control characters in keys stay on one line.
  j = sample_json();
  j["layout"]["bad\nkey"] = 1;
  CHECK_THAT(parse_error(j), StartsWith("bad.json: layout: unknown key 'bad\\x0akey'"));
}
