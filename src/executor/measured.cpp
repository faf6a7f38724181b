// measured.json (planner.measured/v1): writer, strict reader, and the
// comparison with a plan's prediction (include/planner/executor/measured.hpp).

#include "planner/executor/measured.hpp"

#include "planner/core/json_path.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace planner::executor {

using nlohmann::ordered_json;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string to_json(const Measured& m) {
  ordered_json j;
  j["format"] = m.format;
  j["mode"] = m.mode;
  j["backend"] = m.backend;
  j["plan"] = {{"path", m.plan_path}, {"sha256", m.plan_sha256}};
  j["ranks"] = m.ranks;
  j["steps"] = m.steps;
  j["warmup"] = m.warmup;
  j["step_times_s"] = m.step_times_s;
  j["step_time_s"] = m.step_time_s;
  ordered_json comps = ordered_json::object();
  for (const auto& [k, v] : m.components_s) comps[k] = v;
  j["components_s"] = comps;
  j["peak_memory_bytes"] = m.peak_memory_bytes;
  j["host"] = m.host;
  j["date"] = m.date;
  ordered_json ver = ordered_json::object();
  for (const auto& [k, v] : m.versions) ver[k] = v;
  j["versions"] = ver;
  return j.dump(2) + "\n";
}

namespace {

class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}
  Error fail(std::string_view path, std::string_view msg) const {
    return Error{fmt::format("{}: {}: {}", source_, core::describe_json_path(path), msg)};
  }

  Status keys(const ordered_json& o, std::string_view path, std::initializer_list<std::string_view> allowed) const {
    if (!o.is_object()) return fail(path, "expected an object");
    for (const auto& [k, v] : o.items()) {
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
        return fail(path, fmt::format("unknown key '{}'", k));
    }
    for (auto k : allowed)
      if (!o.contains(std::string(k))) return fail(core::json_path(path, k), "missing required field");
    return {};
  }
  Result<std::string> str(const ordered_json& o, std::string_view path, std::string_view k) const {
    const auto& v = o.at(std::string(k));
    if (!v.is_string()) return fail(core::json_path(path, k), "expected a string");
    return v.get<std::string>();
  }
  Result<int> integer(const ordered_json& o, std::string_view path, std::string_view k, int min) const {
    const auto& v = o.at(std::string(k));
    if (!v.is_number_integer() || v.get<std::int64_t>() < min || v.get<std::int64_t>() > 1 << 30)
      return fail(core::json_path(path, k), fmt::format("expected an integer >= {}", min));
    return static_cast<int>(v.get<std::int64_t>());
  }
  Result<double> number(const ordered_json& v, std::string_view path) const {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
      return fail(path, "expected a finite number >= 0");
    return v.get<double>();
  }
  Result<std::vector<double>> numbers(const ordered_json& o, std::string_view path, std::string_view k) const {
    const auto& v = o.at(std::string(k));
    if (!v.is_array()) return fail(core::json_path(path, k), "expected an array of numbers");
    std::vector<double> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      PLANNER_TRY(double x, number(v[i], fmt::format("{}[{}]", core::json_path(path, k), i)));
      out.push_back(x);
    }
    return out;
  }

 private:
  std::string source_;
};

}  // namespace

Result<Measured> measured_from_json(std::string_view text, std::string_view source) {
  ordered_json j;
  try {
    j = ordered_json::parse(text);
  } catch (const ordered_json::parse_error& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    return make_error("{}: {}", source, what);
  }
  const Reader r(source);
  if (!j.is_object()) return r.fail("", "expected an object");
  // "backend" is optional (absent: cpu); read it, then check the other keys.
  std::string backend = "cpu";
  if (auto it = j.find("backend"); it != j.end()) {
    if (!it->is_string() || (*it != "cpu" && *it != "cuda")) return r.fail("backend", "expected \"cpu\" or \"cuda\"");
    backend = it->get<std::string>();
    j.erase("backend");
  }
  if (!j.contains("format") || !j["format"].is_string()) return r.fail("format", "missing required field");
  if (j["format"] != kMeasuredFormat)
    return make_error("{}: format '{}' is not supported (this planner reads {})", source,
                      j["format"].get<std::string>(), kMeasuredFormat);
  PLANNER_TRY_STATUS(r.keys(j, "", {"format", "mode", "plan", "ranks", "steps", "warmup", "step_times_s",
                                    "step_time_s", "components_s", "peak_memory_bytes", "host", "date", "versions"}));
  Measured m;
  m.backend = backend;
  PLANNER_TRY(m.mode, r.str(j, "", "mode"));
  if (m.mode != "replay" && m.mode != "real")
    return r.fail("mode", fmt::format("unknown mode '{}' (expected replay or real)", m.mode));
  PLANNER_TRY_STATUS(r.keys(j["plan"], "plan", {"path", "sha256"}));
  PLANNER_TRY(m.plan_path, r.str(j["plan"], "plan", "path"));
  PLANNER_TRY(m.plan_sha256, r.str(j["plan"], "plan", "sha256"));
  PLANNER_TRY(m.ranks, r.integer(j, "", "ranks", 1));
  PLANNER_TRY(m.steps, r.integer(j, "", "steps", 1));
  PLANNER_TRY(m.warmup, r.integer(j, "", "warmup", 0));
  PLANNER_TRY(m.step_times_s, r.numbers(j, "", "step_times_s"));
  if (m.step_times_s.size() != static_cast<std::size_t>(m.steps))
    return r.fail("step_times_s", fmt::format("expected {} entries (steps), got {}", m.steps, m.step_times_s.size()));
  PLANNER_TRY(m.step_time_s, r.number(j["step_time_s"], "step_time_s"));
  if (!j["components_s"].is_object()) return r.fail("components_s", "expected an object");
  static const std::set<std::string> kComps{"compute",   "tp_comm",           "pp_comm", "dp_comm",
                                            "optimizer", "grad_accumulation", "other"};
  for (const auto& [k, v] : j["components_s"].items()) {
    if (!kComps.count(k)) return r.fail("components_s", fmt::format("unknown component '{}'", k));
    PLANNER_TRY(double x, r.number(v, "components_s." + k));
    m.components_s[k] = x;
  }
  PLANNER_TRY(m.peak_memory_bytes, r.numbers(j, "", "peak_memory_bytes"));
  if (m.peak_memory_bytes.size() != static_cast<std::size_t>(m.ranks))
    return r.fail("peak_memory_bytes",
                  fmt::format("expected {} entries (ranks), got {}", m.ranks, m.peak_memory_bytes.size()));
  PLANNER_TRY(m.host, r.str(j, "", "host"));
  PLANNER_TRY(m.date, r.str(j, "", "date"));
  if (!j["versions"].is_object()) return r.fail("versions", "expected an object");
  for (const auto& [k, v] : j["versions"].items()) {
    if (!v.is_string()) return r.fail("versions." + k, "expected a string");
    m.versions[k] = v.get<std::string>();
  }
  return m;
}

namespace {
constexpr double kNoTimeS = 1e-6;
}  // namespace

Result<std::vector<CompareRow>> compare(const plan::Plan& p, std::string_view plan_sha256, const Measured& m,
                                        const std::vector<int>& rank_pp) {
  if (m.plan_sha256 != plan_sha256)
    return make_error("the measurement is of another plan (plan.sha256 {} in the measurement, {} for this plan)",
                      m.plan_sha256, plan_sha256);
  if (m.ranks != p.cluster.devices)
    return make_error("the measurement has {} ranks, the plan {} devices", m.ranks, p.cluster.devices);
  std::vector<CompareRow> rows;
  auto row = [&](std::string name, std::optional<double> pred, std::optional<double> meas, std::string unit) {
    CompareRow r{std::move(name), pred, meas, std::nullopt, std::move(unit)};
    // A prediction below a microsecond is a zero left by rounding (a bubble
    // of 1e-17 s): a percentage of it says nothing.
    if (pred && meas && *pred > (r.unit == "s" ? kNoTimeS : 0.0)) r.error_pct = (*meas - *pred) / *pred * 100.0;
    rows.push_back(std::move(r));
  };
  const auto& b = p.prediction.breakdown_s;
  auto pred = [&](std::string_view key) -> std::optional<double> {
    const auto it = b.find(std::string(key));
    return it == b.end() ? std::nullopt : std::optional<double>(it->second);
  };
  auto meas = [&](std::string_view key) -> std::optional<double> {
    const auto it = m.components_s.find(std::string(key));
    return it == m.components_s.end() ? std::nullopt : std::optional<double>(it->second);
  };
  row("step_time", p.prediction.step_time_s, m.step_time_s, "s");
  std::optional<double> compute;
  if (auto c = pred("compute")) compute = *c + pred("recompute").value_or(0.0);
  row("compute", compute, meas("compute"), "s");
  std::optional<double> tp;
  for (const auto& [k, v] : b)
    if (k.rfind("model_parallel.", 0) == 0) tp = tp.value_or(0.0) + v;
  row("tp_comm", tp, meas("tp_comm"), "s");
  row("pp_comm", pred("bubble"), meas("pp_comm"), "s");
  row("dp_comm", pred("data_parallel_exposed"), meas("dp_comm"), "s");
  row("optimizer", pred("optimizer"), meas("optimizer"), "s");
  // The real mode's own components: the gradient accumulation passes, and
  // the executor's work between kernels (the prediction's share of it is
  // the profile's per-kernel launch overhead, inside compute).
  if (meas("grad_accumulation")) row("grad_accumulation", pred("grad_accumulation"), meas("grad_accumulation"), "s");
  if (meas("other")) row("other", std::nullopt, meas("other"), "s");
  for (int s = 0; s < p.layout.pp; ++s) {
    std::optional<double> pm;
    for (const auto& st : p.prediction.stages)
      if (st.stage == s) pm = st.peak_bytes;
    std::optional<double> mm;
    for (std::size_t r = 0; r < rank_pp.size() && r < m.peak_memory_bytes.size(); ++r)
      if (rank_pp[r] == s) mm = std::max(mm.value_or(0.0), m.peak_memory_bytes[r]);
    row(fmt::format("peak_memory[pp {}]", s), pm, mm, "B");
  }
  return rows;
}

}  // namespace planner::executor
