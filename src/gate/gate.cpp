// The CI gate: thresholds against a plan's prediction (see gate.hpp).

#include "planner/gate/gate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace planner::gate {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string verdict(bool passed) { return passed ? "<=" : ">"; }

/// Percent by which `now` exceeds `base` (negative when it is below).
double regression_pct(double now, double base) { return 100.0 * (now / base - 1.0); }

std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::size_t Report::violations() const {
  return static_cast<std::size_t>(std::count_if(checks.begin(), checks.end(), [](const Check& c) { return !c.passed; }));
}

Bytes peak_memory(const plan::Prediction& p) {
  double peak = 0;
  for (const auto& s : p.stages) peak = std::max(peak, s.peak_bytes);
  return Bytes(peak);
}

Status validate(const Thresholds& t, bool have_baseline) {
  if (!t.max_step_time && !t.max_memory_fraction && !t.max_regression_pct)
    return Error{"no threshold given: pass --max-step-time, --max-memory-fraction or --baseline with --max-regression"};
  if (t.max_step_time && !(t.max_step_time->value > 0 && std::isfinite(t.max_step_time->value)))
    return make_error("--max-step-time must be a positive number of seconds (got {})", t.max_step_time->value);
  if (t.max_memory_fraction && !(*t.max_memory_fraction > 0 && *t.max_memory_fraction <= 1))
    return make_error("--max-memory-fraction must be in (0, 1] (got {})", *t.max_memory_fraction);
  if (t.max_regression_pct && !std::isfinite(*t.max_regression_pct))
    return make_error("--max-regression must be a finite percentage (got {})", *t.max_regression_pct);
  if (t.max_regression_pct && !have_baseline) return Error{"--max-regression needs --baseline PLAN"};
  if (have_baseline && !t.max_regression_pct) return Error{"--baseline needs --max-regression PCT"};
  return {};
}

Check no_layout_fits(const Thresholds& t, std::string_view why) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (t.max_memory_fraction)
    return {Kind::memory_fraction, "max-memory-fraction", nan, *t.max_memory_fraction, false,
            fmt::format("{} (--max-memory-fraction {:g})", why, *t.max_memory_fraction)};
  return {Kind::fits, "fits", nan, 1.0, false, std::string(why)};
}

Result<Report> evaluate(const plan::Plan& plan, const Thresholds& t, const plan::Plan* baseline) {
  PLANNER_TRY_STATUS(validate(t, baseline != nullptr));

  const auto& pred = plan.prediction;
  const double step = pred.step_time_s;
  const double peak = peak_memory(pred).value;
  Report r;
  if (t.max_step_time) {
    const double lim = t.max_step_time->value;
    const bool ok = step <= lim;
    r.checks.push_back({Kind::step_time, "max-step-time", step, lim, ok,
                        fmt::format("step time {:.4g} s {} {:.4g} s (--max-step-time)", step, verdict(ok), lim)});
  }
  if (t.max_memory_fraction) {
    if (!(pred.capacity_bytes > 0)) return Error{"prediction.capacity_bytes: must be positive to gate memory"};
    if (pred.stages.empty()) return Error{"prediction.stages: empty, no memory to gate"};
    const double frac = peak / pred.capacity_bytes;
    const double lim = *t.max_memory_fraction;
    const bool ok = frac <= lim;
    r.checks.push_back({Kind::memory_fraction, "max-memory-fraction", frac, lim, ok,
                        fmt::format("peak memory {:.2f} GiB = {:.4g} of {:.2f} GiB {} {:.4g} (--max-memory-fraction)",
                                    peak / kGiB, frac, pred.capacity_bytes / kGiB, verdict(ok), lim)});
  }
  if (baseline != nullptr) {
    const auto& bp = baseline->prediction;
    const double bstep = bp.step_time_s;
    const double bpeak = peak_memory(bp).value;
    if (!(bstep > 0)) return Error{"baseline: prediction.step_time_s: must be positive"};
    if (!(bpeak > 0)) return Error{"baseline: prediction.stages: no positive peak memory"};
    if (pred.stages.empty()) return Error{"prediction.stages: empty, no memory to compare with the baseline"};
    const double lim = *t.max_regression_pct;
    const double ds = regression_pct(step, bstep);
    const bool ok_s = ds <= lim;
    r.checks.push_back({Kind::step_time_regression, "max-regression.step-time", ds, lim, ok_s,
                        fmt::format("step time {:.4g} s vs baseline {:.4g} s: {:+.2f} % {} {:g} % (--max-regression)",
                                    step, bstep, ds, verdict(ok_s), lim)});
    const double dm = regression_pct(peak, bpeak);
    const bool ok_m = dm <= lim;
    r.checks.push_back({Kind::memory_regression, "max-regression.peak-memory", dm, lim, ok_m,
                        fmt::format("peak memory {:.2f} GiB vs baseline {:.2f} GiB: {:+.2f} % {} {:g} % (--max-regression)",
                                    peak / kGiB, bpeak / kGiB, dm, verdict(ok_m), lim)});
    if (baseline->model.sha256 != plan.model.sha256)
      r.notes.push_back(fmt::format("the baseline is of a different model (sha256 {} vs {}): the comparison crosses models",
                                    baseline->model.sha256.substr(0, 12), plan.model.sha256.substr(0, 12)));
    const auto& bc = baseline->cluster;
    const auto& pc = plan.cluster;
    if (bc.profile != pc.profile || bc.devices != pc.devices || bc.overrides != pc.overrides)
      r.notes.push_back(fmt::format("the baseline is for another cluster ({} x {} vs {} x {})", bc.devices, bc.profile,
                                    pc.devices, pc.profile));
    if (baseline->training.global_batch != plan.training.global_batch)
      r.notes.push_back(fmt::format("the baseline trains another global batch ({} vs {})", baseline->training.global_batch,
                                    plan.training.global_batch));
  }
  return r;
}

std::string junit_xml(const Report& r, std::string_view suite) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites tests=\"{}\" failures=\"{}\">\n", r.checks.size(), r.violations());
  out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\">\n",
                     xml_escape(suite), r.checks.size(), r.violations());
  for (const auto& c : r.checks) {
    out += fmt::format("    <testcase classname=\"planner.check\" name=\"{}\"", xml_escape(c.name));
    if (c.passed) {
      out += "/>\n";
      continue;
    }
    const std::string body = std::isfinite(c.value) ? fmt::format("value {:g}, threshold {:g}", c.value, c.threshold)
                                                    : xml_escape(c.text);
    out += fmt::format(">\n      <failure type=\"threshold\" message=\"{}\">{}</failure>\n    </testcase>\n",
                       xml_escape(c.text), body);
  }
  if (!r.notes.empty()) {
    out += "    <system-out>";
    for (std::size_t i = 0; i < r.notes.size(); ++i) out += (i ? "\n" : "") + xml_escape("note: " + r.notes[i]);
    out += "</system-out>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace planner::gate
