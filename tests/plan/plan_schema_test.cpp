// docs/plan.schema.json against the reader: the schema's properties are the
// keys the writer writes, its `required` lists are what the reader requires,
// and its enumerations are what validate() accepts. Keeps the schema from
// drifting from the code (the schema itself is checked against the
// documented example by tests/plan/schema_check.py when python3-jsonschema
// is installed).

#include <functional>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "planner/core/io.hpp"
#include "planner/plan/plan.hpp"
#include "plan_helpers.hpp"

using namespace planner;
using namespace planner::plan;
using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

json schema() {
  auto text = io::read_file(std::string(PLANNER_SOURCE_DIR) + "/docs/plan.schema.json");
  REQUIRE(text.ok());
  return json::parse(*text);
}

/// Schema object definition -> where the sample plan has one.
struct Site {
  const char* def;      ///< "" for the top level
  const char* pointer;  ///< JSON pointer into the sample plan
};

const std::vector<Site> kSites{
    {"", ""},
    {"producer", "/producer"},
    {"model", "/model"},
    {"cluster", "/cluster"},
    {"training", "/training"},
    {"optimizer", "/training/optimizer"},
    {"layout", "/layout"},
    {"mesh_axis", "/layout/mesh/0"},
    {"chunk", "/layout/chunks/0"},
    {"strategy", "/layout/strategies/0"},
    {"collective", "/layout/strategies/0/collectives/0"},
    {"prediction", "/prediction"},
    {"stage_memory", "/prediction/stages/0"},
    {"memory_item", "/prediction/stages/0/items/0"},
    {"alternative", "/prediction/alternatives/0"},
    {"stage_timeline", "/prediction/timeline/0"},
    {"timeline_span", "/prediction/timeline/0/spans/2"},
};

const json& definition(const json& s, const std::string& def) { return def.empty() ? s : s.at("$defs").at(def); }

}  // namespace

TEST_CASE("schema: properties are the written keys, in order", "[plan][schema]") {
  const json s = schema();
  const ojson plan = ojson::parse(to_json(plan_test::sample_plan()));
  for (const auto& site : kSites) {
    INFO(site.def);
    const json& d = definition(s, site.def);
    CHECK(d.at("additionalProperties") == false);
    std::set<std::string> props;
    for (const auto& [k, v] : d.at("properties").items()) props.insert(k);
    std::set<std::string> written;
    for (const auto& [k, v] : plan.at(ojson::json_pointer(site.pointer)).items()) written.insert(k);
    CHECK(props == written);
  }
}

TEST_CASE("schema: required fields are the ones the reader requires", "[plan][schema]") {
  const json s = schema();
  for (const auto& site : kSites) {
    const json& d = definition(s, site.def);
    std::set<std::string> required;
    for (const auto& r : d.at("required")) required.insert(r.get<std::string>());
    for (const auto& [key, v] : d.at("properties").items()) {
      ojson plan = ojson::parse(to_json(plan_test::sample_plan()));
      plan.at(ojson::json_pointer(site.pointer)).erase(key);
      auto r = from_json(plan.dump(2), "s.json");
      const std::string path = std::string(site.pointer) + "/" + key;
      INFO(path);
      if (required.count(key)) {
        REQUIRE_FALSE(r.ok());
        if (key != "format") CHECK_THAT(r.error().message, Catch::Matchers::EndsWith(": missing required field"));
      } else {
        INFO((r ? std::string() : r.error().message));
        CHECK(r.ok());
      }
    }
  }
}

TEST_CASE("schema: enumerations are what validate() accepts", "[plan][schema]") {
  const json s = schema();
  struct Enum {
    json values;
    std::function<void(Plan&, const std::string&)> set;
  };
  const auto& d = s.at("$defs");
  const std::vector<Enum> enums{
      {d.at("producer").at("properties").at("command").at("enum"), [](Plan& p, const std::string& v) { p.producer.command = v; }},
      {d.at("optimizer").at("properties").at("name").at("enum"),
       [](Plan& p, const std::string& v) { p.training.optimizer.name = v; }},
      {d.at("precision").at("enum"), [](Plan& p, const std::string& v) { p.training.precision = v; }},
      {d.at("precision").at("enum"), [](Plan& p, const std::string& v) { p.training.precision_by_class["x"] = v; }},
      {d.at("training").at("properties").at("recompute").at("enum"),
       [](Plan& p, const std::string& v) {
         p.training.recompute = v;
         if (v != "selective") p.training.recompute_modules.clear();  // modules need selective
       }},
      {d.at("training").at("properties").at("attention").at("enum"),
       [](Plan& p, const std::string& v) { p.training.attention = v; }},
      {d.at("training").at("properties").at("framework").at("enum"),
       [](Plan& p, const std::string& v) { p.training.framework = v; }},
      {d.at("collective").at("properties").at("kind").at("enum"),
       [](Plan& p, const std::string& v) { p.layout.strategies[0].collectives[0].kind = v; }},
      {d.at("timeline_span").at("properties").at("stream").at("enum"),
       [](Plan& p, const std::string& v) { p.prediction.timeline[0].spans[0].stream = v; }},
      {d.at("timeline_span").at("properties").at("kind").at("enum"),
       [](Plan& p, const std::string& v) { p.prediction.timeline[0].spans[0].kind = v; }},
  };
  for (const auto& e : enums) {
    REQUIRE(e.values.is_array());
    for (const auto& v : e.values) {
      Plan p = plan_test::sample_plan();
      e.set(p, v.get<std::string>());
      INFO(v.get<std::string>());
      CHECK(validate(p).ok());
    }
    Plan p = plan_test::sample_plan();
    e.set(p, "not-a-value");
    CHECK_FALSE(validate(p).ok());
  }
  // Schedules: each accepted in a plan shaped for it.
  for (const auto& v : d.at("layout").at("properties").at("schedule").at("enum")) {
    Plan p = plan_test::sample_plan();
    p.layout.schedule = v.get<std::string>();
    if (p.layout.schedule == "interleaved") {
      p.layout.vp = 2;
      p.layout.chunks = {{0, 0, 0, 0, true, false, {"embed", "l0.qkv"}},
                         {1, 1, 0, 0, false, false, {"l0.attn", "l0.proj"}},
                         {2, 0, 1, 1, false, false, {"l1.qkv", "l1.attn"}},
                         {3, 1, 1, 1, false, true, {"l1.proj", "lm_head", "loss"}}};
      p.layout.schedule_steps = {plan_test::all_forward_then_backward(0, 2, 2, 4),
                                 plan_test::all_forward_then_backward(1, 2, 2, 4)};
    }
    INFO(p.layout.schedule);
    CHECK(validate(p).ok());
  }
  // Mesh axis names: the ones the layout has degrees for.
  std::set<std::string> axes;
  for (const auto& v : d.at("mesh_axis").at("properties").at("name").at("enum")) axes.insert(v.get<std::string>());
  CHECK(axes == std::set<std::string>{"pp", "dp", "cp", "tp"});
  CHECK(d.at("step").at("pattern") == "^[FB][0-9]+@c[0-9]+$");
  CHECK(s.at("properties").at("format").at("const") == kFormat);
}
