// The plan file: canonical text, round trip, and the documented example.

#include <functional>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "planner/core/io.hpp"
#include "planner/plan/plan.hpp"
#include "plan_helpers.hpp"

using namespace planner;
using namespace planner::plan;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

namespace {

/// The first ```json block of docs/plan-format.md.
std::string doc_example() {
  auto doc = io::read_file(std::string(PLANNER_SOURCE_DIR) + "/docs/plan-format.md");
  REQUIRE(doc.ok());
  const std::string open = "```json\n";
  const auto begin = doc->find(open);
  REQUIRE(begin != std::string::npos);
  const auto end = doc->find("\n```", begin + open.size());
  REQUIRE(end != std::string::npos);
  return doc->substr(begin + open.size(), end + 1 - (begin + open.size()));
}

}  // namespace

TEST_CASE("sample plan is valid", "[plan]") {
  auto s = validate(plan_test::sample_plan());
  INFO((s ? std::string() : s.error().message));
  CHECK(s.ok());
}

TEST_CASE("to_json -> from_json gives back the same plan", "[plan]") {
  const Plan p = plan_test::sample_plan();
  const std::string text = to_json(p);
  auto back = from_json(text, "sample.json");
  INFO((back ? std::string() : back.error().message));
  REQUIRE(back.ok());
  CHECK(*back == p);
  CHECK(to_json(*back) == text);
}

TEST_CASE("to_json is canonical: same plan, same bytes", "[plan]") {
  const Plan p = plan_test::sample_plan();
  const std::string a = to_json(p);
  const std::string b = to_json(Plan(p));
  CHECK(a == b);
  CHECK_THAT(a, StartsWith("{\n  \"format\": \"planner.plan/v1\",\n  \"producer\": {\n    \"tool\": \"planner\",\n"));
  CHECK_THAT(a, EndsWith("\n}\n"));
  CHECK(a.find("\n\n") == std::string::npos);
  CHECK(a.find('\t') == std::string::npos);

  // Top-level keys in declaration order.
  std::size_t last = 0;
  for (const char* key : {"\n  \"format\"", "\n  \"producer\"", "\n  \"model\"", "\n  \"cluster\"", "\n  \"training\"",
                          "\n  \"layout\"", "\n  \"prediction\""}) {
    const auto at = a.find(key);
    INFO(key);
    REQUIRE(at != std::string::npos);
    CHECK(at >= last);
    last = at;
  }
}

TEST_CASE("canonical text: golden lines", "[plan]") {
  const std::string t = to_json(plan_test::sample_plan());
  // The schedule: one line per pipeline rank, steps as "F3@c1".
  CHECK_THAT(t, Contains("    \"schedule_steps\": [\n"
                         "      [\"F0@c0\", \"F1@c0\", \"B0@c0\", \"F2@c0\", \"B1@c0\", \"F3@c0\", \"B2@c0\", \"B3@c0\"],\n"
                         "      [\"F0@c1\", \"B0@c1\", \"F1@c1\", \"B1@c1\", \"F2@c1\", \"B2@c1\", \"F3@c1\", \"B3@c1\"]\n"
                         "    ],\n"));
  // Mesh entries keep the struct order name, size, stride.
  CHECK_THAT(t, Contains("      {\n        \"name\": \"pp\",\n        \"size\": 2,\n        \"stride\": 4\n      },\n"));
  // Maps sorted by key; -0.0 written as 0.0; shortest round-trip doubles.
  CHECK_THAT(t, Contains("    \"breakdown_s\": {\n"
                         "      \"bubble\": 0.05,\n"
                         "      \"compute\": 0.2,\n"
                         "      \"data_parallel_exposed\": 0.04000000000000001,\n"
                         "      \"model_parallel.all_gather\": 0.01,\n"
                         "      \"recompute\": 0.0\n"
                         "    },\n"));
  CHECK_THAT(t, Contains("    \"step_time_s\": 0.30000000000000004,\n"));
  CHECK_THAT(t, Contains("    \"precision_by_class\": {\n      \"embedding\": \"fp32\",\n      \"loss\": \"fp32\"\n    },\n"));
  // Integers as integers; optional model.batch written when set.
  CHECK_THAT(t, Contains("    \"parameters\": 119595008,\n"));
  CHECK_THAT(t, Contains("    \"batch\": 2,\n"));
  CHECK_THAT(t, Contains("    \"seed\": 1234,\n    \"fused_loss\": false,\n    \"grad_reduce_bytes\": 0,\n"
                         "    \"memory_format\": \"nchw\"\n"));
  CHECK_THAT(t, Contains("    \"learning_rate\": 0.0003,\n"));
  // Empty containers stay on one line.
  CHECK_THAT(t, Contains("    \"params_from_inputs\": [],\n"));
  CHECK_THAT(t, Contains("    \"shared_weights\": [\n      \"embed.tokens.weight\"\n    ]\n"));
}

TEST_CASE("canonical text: the timeline, one span per line", "[plan][timeline]") {
  const std::string t = to_json(plan_test::sample_plan());
  // After the alternatives; a span's optional fields only when set.
  CHECK_THAT(t, Contains("    ],\n    \"timeline\": [\n      {\n        \"stage\": 0,\n        \"spans\": [\n"
                         "          {\"stream\": \"compute\", \"kind\": \"forward\", \"micro_batch\": 0, \"chunk\": 0, "
                         "\"start_s\": 0.0, \"end_s\": 0.01},\n"
                         "          {\"stream\": \"compute\", \"kind\": \"bubble\", \"start_s\": 0.2, \"end_s\": 0.25},\n"
                         "          {\"stream\": \"pp\", \"kind\": \"send_activation\", \"micro_batch\": 0, \"chunk\": 0, "
                         "\"peer\": 1, \"start_s\": 0.01, \"end_s\": 0.015}\n"
                         "        ]\n"));
  // No timeline: no key (plans written before it stay byte-identical).
  Plan p = plan_test::sample_plan();
  p.prediction.timeline.clear();
  const std::string without = to_json(p);
  CHECK(without.find("\"timeline\"") == std::string::npos);
  auto back = from_json(without);
  REQUIRE(back.ok());
  CHECK(*back == p);
  auto with = from_json(t);
  REQUIRE(with.ok());
  CHECK(*with == plan_test::sample_plan());
}

TEST_CASE("optional fields: absent model.batch round-trips, defaults when omitted", "[plan]") {
  Plan p = plan_test::sample_plan();
  p.model.batch.reset();
  p.prediction.alternatives.clear();
  const std::string text = to_json(p);
  CHECK(text.find("\"batch\"") == std::string::npos);
  auto back = from_json(text);
  REQUIRE(back.ok());
  CHECK(*back == p);
  CHECK_FALSE(back->model.batch.has_value());
}

TEST_CASE("optional training fields round-trip: memory_format nhwc, recompute_modules", "[plan]") {
  struct Case {
    std::function<void(Plan&)> set;
    std::string line;  // as written
  };
  for (const auto& c : std::vector<Case>{
           {[](Plan& p) { p.training.memory_format = "nhwc"; }, "    \"memory_format\": \"nhwc\"\n"},
           {[](Plan& p) { p.training.recompute_modules = "core_attn,layernorm,moe_act"; },
            "    \"recompute_modules\": \"core_attn,layernorm,moe_act\",\n"},
       }) {
    Plan p = plan_test::sample_plan();
    c.set(p);
    const std::string text = to_json(p);
    CHECK_THAT(text, Contains(c.line));
    auto back = from_json(text);
    REQUIRE(back.ok());
    CHECK(*back == p);
  }
  // The default module list (core_attn alone) is written as no field.
  Plan p = plan_test::sample_plan();
  p.training.recompute_modules = "";
  CHECK_THAT(to_json(p), !Contains("recompute_modules"));
}

TEST_CASE("extreme doubles round-trip exactly", "[plan]") {
  Plan p = plan_test::sample_plan();
  p.prediction.breakdown_s = {{"a", 1e-300}, {"b", 1.7976931348623157e308}, {"c", 4.9406564584124654e-324},
                              {"d", 123456789012345680.0}, {"e", 1.0 / 3.0}};
  p.prediction.capacity_bytes = 2.0;
  auto back = from_json(to_json(p));
  REQUIRE(back.ok());
  CHECK(*back == p);
  CHECK(to_json(*back) == to_json(p));
}

TEST_CASE("strings with control characters and unicode round-trip", "[plan]") {
  Plan p = plan_test::sample_plan();
  p.cluster.overrides = "gpus_per_node=4,\tnote \"quoted\"\nline two \xc3\xa9";
  p.producer.version = "0.1.0-\xe2\x9c\x93";
  const std::string text = to_json(p);
  CHECK_THAT(text, Contains("\\t"));
  CHECK_THAT(text, Contains("\\n"));
  auto back = from_json(text);
  REQUIRE(back.ok());
  CHECK(*back == p);
}

TEST_CASE("interleaved plan (vp = 2) round-trips", "[plan]") {
  Plan p = plan_test::sample_plan();
  auto& l = p.layout;
  l.vp = 2;
  l.schedule = "interleaved";
  // Chunks 0 and 2 run on pipeline rank 0 (ranks 0-3), 1 and 3 on rank 1 (4-7).
  l.chunks = {{0, 0, 0, 0, true, false, {"embed", "l0.qkv"}, {0, 1, 2, 3}},
              {1, 1, 0, 0, false, false, {"l0.attn", "l0.proj"}, {4, 5, 6, 7}},
              {2, 0, 1, 1, false, false, {"l1.qkv", "l1.attn"}, {0, 1, 2, 3}},
              {3, 1, 1, 1, false, true, {"l1.proj", "lm_head", "loss"}, {4, 5, 6, 7}}};
  l.schedule_steps = {plan_test::all_forward_then_backward(0, 2, 2, 4),
                      plan_test::all_forward_then_backward(1, 2, 2, 4)};
  auto s = validate(p);
  INFO((s ? std::string() : s.error().message));
  REQUIRE(s.ok());
  auto back = from_json(to_json(p));
  REQUIRE(back.ok());
  CHECK(*back == p);
}

TEST_CASE("the example in docs/plan-format.md parses, validates and is canonical", "[plan][docs]") {
  const std::string text = doc_example();
  auto p = from_json(text, "docs/plan-format.md");
  INFO((p ? std::string() : p.error().message));
  REQUIRE(p.ok());
  CHECK(p->layout.dp * p->layout.tp * p->layout.pp * p->layout.cp == p->cluster.devices);
  CHECK(to_json(*p) == text);
}

TEST_CASE("stage_devices: the ranks of a pipeline rank in the mesh's rank order", "[plan]") {
  Layout l;
  // pp outermost (stride 4): pipeline rank r holds ranks 4r .. 4r+3.
  l.mesh = {{"pp", 2, 4}, {"dp", 2, 2}, {"tp", 2, 1}};
  CHECK(stage_devices(l, 0) == std::vector<int>{0, 1, 2, 3});
  CHECK(stage_devices(l, 1) == std::vector<int>{4, 5, 6, 7});
  // pp innermost (stride 1) on 6 ranks: rank x has pp coordinate x mod 3.
  l.mesh = {{"dp", 2, 3}, {"pp", 3, 1}};
  CHECK(stage_devices(l, 0) == std::vector<int>{0, 3});
  CHECK(stage_devices(l, 2) == std::vector<int>{2, 5});
  // pp in the middle (stride 2, size 2) of dp 2 x pp 2 x tp 2: (x / 2) mod 2 = 1.
  l.mesh = {{"dp", 2, 4}, {"pp", 2, 2}, {"tp", 2, 1}};
  CHECK(stage_devices(l, 1) == std::vector<int>{2, 3, 6, 7});
  // No pp axis: every rank.
  l.mesh = {{"dp", 2, 2}, {"tp", 2, 1}};
  CHECK(stage_devices(l, 0) == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("chunk devices: written always, optional when read (filled from the mesh)", "[plan]") {
  Plan p = plan_test::sample_plan();
  // The writer fills an empty list from the mesh.
  for (auto& c : p.layout.chunks) c.devices.clear();
  const auto text = to_json(p);
  const auto j = nlohmann::json::parse(text);
  CHECK(j["layout"]["chunks"][1]["devices"] == nlohmann::json::array({4, 5, 6, 7}));
  // An older plan without the field reads with the mesh's ranks.
  auto old = j;
  for (auto& c : old["layout"]["chunks"]) c.erase("devices");
  auto back = from_json(old.dump());
  REQUIRE(back.ok());
  CHECK(back->layout.chunks[0].devices == std::vector<int>{0, 1, 2, 3});
  CHECK(back->layout.chunks[1].devices == std::vector<int>{4, 5, 6, 7});
  CHECK(*back == plan_test::sample_plan());
}
