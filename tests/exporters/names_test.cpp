// Every option name an export emits is a real option of the targeted
// framework version: each is looked up in tests/exporters/names/<fw>.tsv
// (NAME, documentation address, version; no framework is installed here).
// The exports are parsed as their framework would read them: bash array
// lines, strict JSON (Hugging Face Trainer reads the DeepSpeed config with
// json.load: a comment is a parse error here), TOML sections and
// keys, Python keyword arguments.

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "exporters/plan_fixture.hpp"
#include "planner/exporters/exporters.hpp"

namespace ex = planner::exporters;
using ex::testing::make_plan;
using ex::testing::PlanSpec;

namespace {

/// (name, version) pairs of a names file.
std::set<std::pair<std::string, std::string>> load_names(const std::string& fw) {
  std::ifstream in(std::string(PLANNER_SOURCE_DIR) + "/tests/exporters/names/" + fw + ".tsv");
  REQUIRE(in.good());
  std::set<std::pair<std::string, std::string>> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto t1 = line.find('\t'), t2 = line.rfind('\t');
    REQUIRE(t1 != std::string::npos);
    REQUIRE(t2 > t1);
    const std::string url = line.substr(t1 + 1, t2 - t1 - 1);
    CHECK(url.rfind("https://", 0) == 0);
    out.emplace(line.substr(0, t1), line.substr(t2 + 1));
  }
  REQUIRE(out.size() > 10);
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) out.push_back(l);
  return out;
}

std::vector<std::string> megatron_names(const std::string& text) {
  std::vector<std::string> out;
  bool in = false;
  for (const auto& l : lines_of(text)) {
    if (l == "PLANNER_MEGATRON_ARGS=(") { in = true; continue; }
    if (in && l == ")") break;
    if (in) {
      REQUIRE(l.rfind("  --", 0) == 0);
      out.push_back(l.substr(2, l.find(' ', 2) - 2));
    }
  }
  REQUIRE(in);
  return out;
}

void flatten(const nlohmann::json& j, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& [k, v] : j.items()) {
    const std::string name = prefix.empty() ? k : prefix + "." + k;
    out.push_back(name);
    if (v.is_object()) flatten(v, name, out);
  }
}

std::vector<std::string> deepspeed_names(const std::string& text) {
  const auto j = nlohmann::json::parse(text, nullptr, true, /*ignore_comments=*/false);
  std::vector<std::string> out;
  flatten(j, "", out);
  return out;
}

std::vector<std::string> torchtitan_names(const std::string& text) {
  std::vector<std::string> out;
  std::string section;
  const std::regex sec(R"(^\[([a-z_]+)\]$)"), kv(R"(^([a-z_0-9]+) = .*$)");
  std::smatch m;
  for (const auto& l : lines_of(text)) {
    if (std::regex_match(l, m, sec)) section = m[1];
    else if (std::regex_match(l, m, kv)) {
      REQUIRE(!section.empty());
      out.push_back(section + "." + m[1].str());
    }
  }
  return out;
}

std::vector<std::string> mindspore_names(const std::string& text) {
  std::vector<std::string> out;
  bool in = false;
  const std::regex kw(R"(^    ([a-z_0-9]+)=(.*?),?$)"), key(R"x("([a-z_0-9]+)":)x"),
      call(R"(nn\.([A-Za-z]+)\(net(.*)\))"), arg(R"(([a-z_]+)=)");
  std::smatch m;
  for (const auto& l : lines_of(text)) {
    if (l == "ms.set_auto_parallel_context(") { in = true; continue; }
    if (in && l == ")") { in = false; continue; }
    if (in) {
      REQUIRE(std::regex_match(l, m, kw));
      const std::string name = m[1], value = m[2];
      out.push_back(name);
      if (!value.empty() && value[0] == '{')
        for (std::sregex_iterator it(value.begin(), value.end(), key), end; it != end; ++it)
          out.push_back(name + "." + (*it)[1].str());
    } else if (std::regex_search(l, m, call)) {
      const std::string cls = "nn." + m[1].str(), rest = m[2];
      out.push_back(cls);
      for (std::sregex_iterator it(rest.begin(), rest.end(), arg), end; it != end; ++it) out.push_back(cls + "." + (*it)[1].str());
    }
  }
  return out;
}

std::vector<std::string> names_in(ex::Framework f, const std::string& text) {
  switch (f) {
    case ex::Framework::megatron: return megatron_names(text);
    case ex::Framework::deepspeed: return deepspeed_names(text);
    case ex::Framework::torchtitan: return torchtitan_names(text);
    case ex::Framework::mindspore: return mindspore_names(text);
  }
  return {};
}

/// Plans that between them take every branch of every exporter.
std::vector<PlanSpec> plan_matrix() {
  std::vector<PlanSpec> v;
  v.push_back(ex::testing::gpt3_175b());
  PlanSpec s;
  v.push_back(s);  // one device
  s = {};
  s.dp = 4, s.micro_batches = 4, s.precision = "fp16", s.optimizer = "sgd_momentum", s.zero = 2;
  v.push_back(s);
  s = {};
  s.dp = 2, s.tp = 2, s.pp = 4, s.cp = 2, s.ep = 2, s.layers = 24, s.cut = {5, 6, 6, 7}, s.zero = 3;
  s.micro_batches = 8, s.recompute = "selective", s.precision = "fp8", s.schedule = "gpipe";
  v.push_back(s);
  s = {};
  s.dp = 2, s.tp = 4, s.pp = 2, s.vp = 2, s.layers = 16, s.cut = {3, 5, 3, 5}, s.zero = 1, s.micro_batches = 4;
  s.recompute = "full", s.optimizer = "sgd", s.precision = "tf32";
  v.push_back(s);
  s = {};
  s.dp = 8, s.tp = 2, s.pp = 4, s.vp = 2, s.layers = 32, s.cut = {5, 3, 4, 4, 5, 3, 4, 4}, s.micro_batches = 8;
  v.push_back(s);
  return v;
}

}  // namespace

TEST_CASE("every emitted option name is in the framework's names list for the version", "[exporters][names]") {
  for (const auto f : {ex::Framework::megatron, ex::Framework::deepspeed, ex::Framework::torchtitan, ex::Framework::mindspore}) {
    const auto names = load_names(std::string(ex::framework_name(f)));
    for (const auto version : ex::versions(f)) {
      std::set<std::string> seen;
      for (const auto& spec : plan_matrix()) {
        auto plan = make_plan(spec);
        plan.training.grad_reduce_bytes = spec.dp == 4 ? 2 : 4;
        plan.training.fused_loss = spec.pp > 1;
        plan.training.attention = spec.tp == 4 ? "unfused" : "flash";
        plan.layout.tp_comm_overlap = spec.tp > 1;
        REQUIRE(planner::plan::validate(plan).ok());
        auto out = ex::export_plan(plan, f, {std::string(version), "plan.json"});
        REQUIRE(out.ok());
        for (const auto& n : names_in(f, out->text)) {
          INFO(ex::framework_name(f) << " " << version << ": " << n);
          CHECK(names.count({n, std::string(version)}) == 1);
          seen.insert(n);
        }
      }
      // The matrix reaches most of the list: a names file is not padding.
      std::size_t listed = 0;
      for (const auto& [n, v] : names)
        if (v == version) ++listed;
      INFO(ex::framework_name(f) << " " << version << ": " << seen.size() << " of " << listed << " names emitted");
      CHECK(seen.size() * 10 >= listed * 8);
    }
  }
}

TEST_CASE("the names parsers see what is there", "[exporters][names]") {
  // A name outside the list would be caught: the parsers return every option.
  CHECK(megatron_names("PLANNER_MEGATRON_ARGS=(\n  --bf16\n  --lr 0.1\n)\n") == std::vector<std::string>{"--bf16", "--lr"});
  CHECK(deepspeed_names("{\"a\": {\"b\": 1}, \"c\": [1]}\n") == std::vector<std::string>{"a", "a.b", "c"});
  CHECK_THROWS(deepspeed_names("// c\n{\"a\": 1}\n"));
  CHECK(torchtitan_names("# x\n[job]\ndescription = \"d\"\n[parallelism]\nm = [\n  [\"a\"]\n]\n") ==
        std::vector<std::string>{"job.description", "parallelism.m"});
  CHECK(mindspore_names("ms.set_auto_parallel_context(\n    a=1,\n    b={\"c\": 1, \"d\": True}\n)\n"
                        "    return nn.PipelineCell(net, micro_size=4)\n") ==
        std::vector<std::string>{"a", "b", "b.c", "b.d", "nn.PipelineCell", "nn.PipelineCell.micro_size"});
}
