// Malformed profiles: each error is one line naming the file and the key.
// The cases start from a valid bundled profile, break one thing, and write
// the result to a temporary folder.

#include <fstream>
#include <functional>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "cluster_helpers.hpp"
#include "planner/core/io.hpp"

using namespace planner;
using namespace planner::cluster;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

const std::string kName = "a100-sxm4-80gb";

std::string valid_text() {
  auto t = io::read_file(cluster_test::profiles_dir() / (kName + ".json"));
  REQUIRE(t.ok());
  return *t;
}

std::filesystem::path temp_dir() {
  auto dir = std::filesystem::temp_directory_path() / ("planner_cluster_test." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

/// Writes `text` as <tmp>/<kName>.json and loads it; returns the error message
/// ("" when it loaded).
std::string load_text(const std::string& text) {
  auto file = temp_dir() / (kName + ".json");
  {
    std::ofstream out(file, std::ios::trunc);
    out << text;
  }
  auto p = load_profile(file.string(), "/unused");
  std::filesystem::remove(file);
  return p.ok() ? std::string() : p.error().message;
}

std::string load_edited(const std::function<void(json&)>& edit) {
  json j = json::parse(valid_text());
  edit(j);
  return load_text(j.dump(2));
}

/// Replaces the first occurrence of `from` in the valid text.
std::string load_replaced(const std::string& from, const std::string& to) {
  auto text = valid_text();
  auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  return load_text(text);
}

void check_one_line(const std::string& msg, const std::string& key) {
  CAPTURE(msg);
  CHECK_THAT(msg, Contains(kName + ".json") && Contains(key));
  CHECK(msg.find('\n') == std::string::npos);
}

}  // namespace

TEST_CASE("the unmodified profile loads from a temp folder", "[cluster]") {
  CHECK(load_text(valid_text()).empty());
}

TEST_CASE("missing key", "[cluster]") {
  auto msg = load_edited([](json& j) { j["device"].erase("hbm_GBps"); });
  check_one_line(msg, "device.hbm_GBps: missing key");
  msg = load_edited([](json& j) { j["interconnect"]["levels"][1]["nic_GBps"].erase("source"); });
  check_one_line(msg, "interconnect.levels[1].nic_GBps.source: missing");
}

TEST_CASE("string where a number belongs", "[cluster]") {
  auto msg = load_edited([](json& j) { j["device"]["hbm_GBps"]["value"] = "2039"; });
  check_one_line(msg, "device.hbm_GBps.value: expected a number, got a string");
  msg = load_edited([](json& j) { j["device"]["gemm_efficiency"]["rows"][2][1] = "0.5"; });
  check_one_line(msg, "device.gemm_efficiency.rows[2][1]: expected a number");
}

TEST_CASE("negative and zero numbers", "[cluster]") {
  auto msg = load_edited([](json& j) { j["interconnect"]["levels"][0]["latency_us"]["value"] = -1; });
  check_one_line(msg, "interconnect.levels[0].latency_us.value: must be >= 0");
  msg = load_edited([](json& j) { j["interconnect"]["levels"][0]["bandwidth_GBps"]["value"] = 0; });
  check_one_line(msg, "interconnect.levels[0].bandwidth_GBps.value: must be > 0, got 0");
  msg = load_edited([](json& j) { j["device"]["peak_tflops"]["bf16"]["value"] = -312; });
  check_one_line(msg, "device.peak_tflops.bf16.value: must be > 0");
  msg = load_edited([](json& j) { j["device"]["hbm_efficiency"]["value"] = 1.5; });
  check_one_line(msg, "device.hbm_efficiency.value: must be in (0, 1]");
}

TEST_CASE("1e999 overflows to infinity and is rejected", "[cluster]") {
  auto msg = load_replaced("\"hbm_GBps\": {\"value\": 2039", "\"hbm_GBps\": {\"value\": 1e999");
  check_one_line(msg, "device.hbm_GBps.value: number is not finite");
  msg = load_replaced("[1000000, 0.0006405]", "[1e999, 0.0006405]");
  check_one_line(msg, "device.gemm_efficiency.rows[0][0]: number is not finite");
}

TEST_CASE("number without a source", "[cluster]") {
  auto msg = load_edited([](json& j) { j["device"]["hbm_GBps"] = 2039; });
  check_one_line(msg, "device.hbm_GBps: number without a source");
  msg = load_edited([](json& j) { j["device"]["hbm_GBps"]["source"] = "  "; });
  check_one_line(msg, "device.hbm_GBps.source: empty source");
  msg = load_edited([](json& j) { j["device"]["gemm_efficiency"].erase("source"); });
  check_one_line(msg, "device.gemm_efficiency.source: missing");
  msg = load_edited([](json& j) { j["interconnect"]["levels"][0]["devices_per_group"] = 8; });
  check_one_line(msg, "interconnect.levels[0].devices_per_group: number without a source");
}

TEST_CASE("tables: unsorted, empty, wrong axis, efficiency above 1", "[cluster]") {
  auto msg = load_edited([](json& j) {
    auto& rows = j["device"]["gemm_efficiency"]["rows"];
    std::swap(rows[3], rows[4]);
  });
  check_one_line(msg, "device.gemm_efficiency.rows[4]: rows not sorted");
  msg = load_edited([](json& j) { j["interconnect"]["levels"][0]["efficiency"]["ring"]["rows"] = json::array(); });
  check_one_line(msg, "interconnect.levels[0].efficiency.ring.rows: table has no rows");
  msg = load_edited([](json& j) { j["device"]["gemm_efficiency"]["x"] = "bytes"; });
  check_one_line(msg, "device.gemm_efficiency.x: table is over 'bytes', expected 'flops'");
  msg = load_edited([](json& j) { j["device"]["gemm_efficiency"]["rows"][0][1] = 1.2; });
  check_one_line(msg, "device.gemm_efficiency.rows[0][1]: must be in (0, 1]");
  msg = load_edited([](json& j) { j["device"]["gemm_efficiency"]["rows"][0] = json::array({1, 2, 3}); });
  check_one_line(msg, "device.gemm_efficiency.rows[0]: expected a row [x, y]");
}

TEST_CASE("structure: unknown keys, level order, schema, JSON syntax, name", "[cluster]") {
  auto msg = load_edited([](json& j) { j["device"]["hbm_GBs"] = j["device"]["hbm_GBps"]; });
  check_one_line(msg, "device.hbm_GBs: unknown key");
  msg = load_edited([](json& j) {
    auto& levels = j["interconnect"]["levels"];
    std::swap(levels[0], levels[1]);
  });
  check_one_line(msg, "interconnect.levels[0]: only the last level may cross nodes");
  msg = load_edited([](json& j) { j["interconnect"]["levels"].erase(1); });
  check_one_line(msg, "interconnect.levels: need at least one intra-node level");
  msg = load_edited([](json& j) { j["schema_version"] = 2; });
  check_one_line(msg, "schema_version: expected 1");
  msg = load_edited([](json& j) { j["name"] = "other-name"; });
  check_one_line(msg, "name: 'other-name' differs from the file name");
  msg = load_edited([](json& j) { j["device"]["peak_tflops"] = json::object({{"fp8", nullptr}}); });
  check_one_line(msg, "device.peak_tflops: no precision has a peak");
  msg = load_edited([](json& j) { j["device"]["cuda_context_GiB"]["value"] = 100; });
  check_one_line(msg, "device.cuda_context_GiB: 100 GiB leaves nothing");
  msg = load_text("{\"schema_version\": 1,");
  check_one_line(msg, "not valid JSON");
}

TEST_CASE("null peak means the device lacks the precision", "[cluster]") {
  json j = json::parse(valid_text());
  j["device"]["peak_tflops"]["tf32"] = nullptr;
  auto p = parse_profile(j.dump(), "inline.json");
  REQUIRE(p.ok());
  CHECK_FALSE(p->device.peak(core::Precision::tf32).ok());
  CHECK(p->device.peak(core::Precision::bf16).ok());
  // Reformatting does not change the content hash; a changed number does.
  auto original = parse_profile(valid_text(), "a.json");
  auto compact = parse_profile(json::parse(valid_text()).dump(), "b.json");
  REQUIRE(original.ok());
  REQUIRE(compact.ok());
  CHECK(original->content_hash == compact->content_hash);
  CHECK(p->content_hash != original->content_hash);
}

TEST_CASE("a JSON syntax error after a key holding a newline is one line", "[cluster][profile]") {
  // Found by fuzz_profile: the parser's path echoed the key "schema_versio<LF>" raw.
  auto r = planner::cluster::parse_profile("{\"schema_versio\\n\": [1, }", "p.json");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find('\n') == std::string::npos);
  INFO(r.error().message);
  CHECK(r.error().message.rfind("p.json: schema_versio\\x0a", 0) == 0);
}

TEST_CASE("scale keys: Simple latencies and step-time spread are sourced and range-checked", "[cluster]") {
  auto msg = load_edited([](json& j) { j["interconnect"]["levels"][1]["simple_latency_us"]["value"] = -14; });
  check_one_line(msg, "interconnect.levels[1].simple_latency_us.value: must be >= 0");
  msg = load_edited([](json& j) { j["interconnect"]["simple_base_latency_us"] = 8.4; });
  check_one_line(msg, "interconnect.simple_base_latency_us: number without a source");
  msg = load_edited([](json& j) { j["interconnect"]["simple_base_latency_us"]["source"] = ""; });
  check_one_line(msg, "interconnect.simple_base_latency_us.source: empty source");
  msg = load_edited([](json& j) { j["device"]["step_time_cv"] = {{"value", 0}, {"source", "x"}}; });
  check_one_line(msg, "device.step_time_cv.value: must be in (0, 1]");
  msg = load_edited([](json& j) { j["device"]["step_time_cv"] = {{"value", "0.01"}, {"source", "x"}}; });
  check_one_line(msg, "device.step_time_cv.value: expected a number");
  msg = load_edited([](json& j) { j["device"]["step_time_cv"] = {{"value", 0.01}}; });
  check_one_line(msg, "device.step_time_cv.source: missing");
  msg = load_edited([](json& j) { j["device"]["memory_margin_fraction"] = {{"value", 1}, {"source", "x"}}; });
  check_one_line(msg, "device.memory_margin_fraction.value: must be below 1, got 1");
  msg = load_edited([](json& j) { j["device"]["memory_margin_fraction"] = {{"value", -0.1}, {"source", "x"}}; });
  check_one_line(msg, "device.memory_margin_fraction.value: must be in (0, 1]");
  msg = load_edited([](json& j) { j["device"]["memory_margin_fraction"] = 0.1; });
  check_one_line(msg, "device.memory_margin_fraction: number without a source");
  msg = load_edited([](json& j) { j["device"]["allocator_fragmentation_fraction"] = {{"value", 1}, {"source", "x"}}; });
  check_one_line(msg, "device.allocator_fragmentation_fraction.value: must be below 1, got 1");
  msg = load_edited([](json& j) { j["device"]["allocator_fragmentation_fraction"] = 0.15; });
  check_one_line(msg, "device.allocator_fragmentation_fraction: number without a source");
  msg = load_edited([](json& j) { j["device"]["special_function_rate_per_s"] = {{"value", -1}, {"source", "x"}}; });
  check_one_line(msg, "device.special_function_rate_per_s.value: must be > 0");
  msg = load_edited([](json& j) { j["device"]["adam_update_rate_params_per_s"] = 3e8; });
  check_one_line(msg, "device.adam_update_rate_params_per_s: number without a source");
  msg = load_edited([](json& j) {
    j["device"]["memory_bound_class_efficiency"] = {
        {"normalization", {{"x", "bytes"}, {"source", "x"}, {"rows", json::array({json::array({1e6, 0})})}}}};
  });
  CHECK(msg.find("device.memory_bound_class_efficiency.normalization") != std::string::npos);
  msg = load_edited([](json& j) {
    j["device"]["memory_bound_class_efficiency"] = {
        {"softmax", {{"x", "flops"}, {"source", "x"}, {"rows", json::array({json::array({1e6, 0.2})})}}}};
  });
  CHECK(msg.find("device.memory_bound_class_efficiency.softmax") != std::string::npos);
  msg = load_edited([](json& j) { j["device"]["memory_bound_class_efficiency"] = 0.2; });
  CHECK(msg.find("device.memory_bound_class_efficiency") != std::string::npos);
  msg = load_edited([](json& j) {
    j["device"]["memory_bound_op_efficiency"] = {
        {"Transpose", {{"x", "bytes"}, {"source", "x"}, {"rows", json::array({json::array({1e6, 1.5})})}}}};
  });
  CHECK(msg.find("device.memory_bound_op_efficiency.Transpose") != std::string::npos);
  msg = load_edited([](json& j) { j["device"]["memory_bound_op_efficiency"] = json::array(); });
  CHECK(msg.find("device.memory_bound_op_efficiency") != std::string::npos);
  msg = load_edited([](json& j) {
    j["device"]["special_function_rate_per_s"] = {{"value", 2e8}, {"source", "x"}};
    j["device"]["adam_update_rate_params_per_s"] = {{"value", 3e8}, {"source", "x"}};
    j["device"]["memory_bound_class_efficiency"] = {
        {"softmax", {{"x", "bytes"}, {"source", "x"}, {"rows", json::array({json::array({1e6, 0.2})})}}}};
    j["device"]["memory_bound_op_efficiency"] = {
        {"Softmax", {{"x", "bytes"}, {"source", "x"}, {"rows", json::array({json::array({1e6, 0.3})})}}}};
  });
  CHECK(msg.empty());
  // Absent keys are allowed: no Simple alternative, no spread.
  msg = load_edited([](json& j) {
    j["interconnect"].erase("simple_base_latency_us");
    for (auto& l : j["interconnect"]["levels"]) l.erase("simple_latency_us");
    j["device"].erase("step_time_cv");
    j["device"].erase("memory_margin_fraction");
    j["device"].erase("allocator_fragmentation_fraction");
  });
  CHECK(msg.empty());
}
