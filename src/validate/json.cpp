// The planner.validate/v1 document (docs/validate-format.md).

#include <nlohmann/json.hpp>

#include "planner/validate/validate.hpp"

namespace planner::validate {
namespace {

template <typename T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

std::string to_json(const RunInfo& info, const std::vector<Row>& rows, const Summary& s,
                    const std::vector<Check>& checks) {
  nlohmann::ordered_json j;
  j["format"] = "planner.validate/v1";
  j["model"] = info.model;
  j["devices"] = info.devices;
  j["profile"] = info.profile;
  j["backend"] = info.backend;
  j["selection"] = {{"candidates", info.candidates},
                    {"min_gap_pct", info.min_gap_pct ? nlohmann::ordered_json(*info.min_gap_pct) : nullptr}};
  j["measurement"] = {{"steps", info.steps},
                      {"warmup", info.warmup},
                      {"rounds", info.rounds},
                      {"order", "interleaved"},
                      {"statistic", "median over rounds of the median step per round"}};
  j["host"] = info.host;
  j["date"] = info.date;
  auto out_rows = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const RowStats& st = s.rows[i];
    nlohmann::ordered_json o;
    o["index"] = i + 1;
    o["name"] = r.name;
    o["role"] = r.role;
    o["layout"] = r.layout;
    if (!r.spec.empty()) o["spec"] = r.spec;
    o["ran"] = r.measured();
    o["mode"] = r.mode.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.mode);
    if (!r.note.empty()) o["note"] = r.note;
    o["predicted_s"] = r.predicted_s;
    o["measured_s"] = opt(st.measured_s);
    o["rounds_s"] = r.rounds_s;
    o["spread_pct"] = opt(st.spread_pct);
    o["error_pct"] = opt(st.error_pct);
    o["predicted_speedup"] = opt(st.predicted_speedup);
    o["measured_speedup"] = opt(st.measured_speedup);
    o["predicted_rank"] = opt(st.predicted_rank);
    o["measured_rank"] = opt(st.measured_rank);
    out_rows.push_back(std::move(o));
  }
  j["rows"] = std::move(out_rows);
  auto index = [](const std::optional<std::size_t>& i) {
    return i ? nlohmann::ordered_json(*i + 1) : nlohmann::ordered_json(nullptr);
  };
  auto other = nlohmann::ordered_json::array();
  for (auto i : s.other_mode_rows) other.push_back(i + 1);
  j["summary"] = {{"measured_rows", s.measured_rows},
                  {"ranked_mode", s.ranked_mode},
                  {"other_mode_rows", std::move(other)},
                  {"kendall_tau", opt(s.tau)},
                  {"regret", opt(s.regret)},
                  {"predicted_best", index(s.predicted_best)},
                  {"measured_best", index(s.measured_best)},
                  {"baseline", index(s.baseline)},
                  {"choice_measured_speedup", opt(s.choice_measured_speedup)},
                  {"choice_predicted_speedup", opt(s.choice_predicted_speedup)}};
  auto out_checks = nlohmann::ordered_json::array();
  bool passed = true;
  for (const auto& c : checks) {
    passed = passed && c.passed;
    out_checks.push_back({{"name", c.name},
                          {"value", opt(c.value)},
                          {"threshold", c.threshold},
                          {"passed", c.passed},
                          {"text", c.text}});
  }
  j["checks"] = std::move(out_checks);
  j["passed"] = passed;
  return j.dump(2) + "\n";
}

}  // namespace planner::validate
