// Ranking, Kendall tau, regret, speedups and the gate of `planner validate`
// (design note: include/planner/validate/validate.hpp).

#include "planner/validate/validate.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace planner::validate {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Spread spread(const std::vector<double>& v) {
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return Spread{median(v), *lo, *hi};
}

std::vector<int> ranks(const std::vector<double>& v) {
  std::vector<int> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    int below = 0;
    for (double x : v)
      if (x < v[i]) ++below;
    out[i] = below + 1;
  }
  return out;
}

std::optional<double> kendall_tau(const std::vector<double>& x, const std::vector<double>& y) {
  const std::size_t n = x.size();
  if (n < 2 || y.size() != n) return std::nullopt;
  auto sign = [](double d) { return d > 0 ? 1 : d < 0 ? -1 : 0; };
  double concordant = 0, discordant = 0, tied_x = 0, tied_y = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      const int sx = sign(x[i] - x[j]), sy = sign(y[i] - y[j]);
      if (sx == 0) ++tied_x;
      if (sy == 0) ++tied_y;
      if (sx * sy > 0) ++concordant;
      if (sx * sy < 0) ++discordant;
    }
  const double pairs = static_cast<double>(n) * static_cast<double>(n - 1) / 2.0;
  const double denominator = std::sqrt((pairs - tied_x) * (pairs - tied_y));
  if (!(denominator > 0)) return std::nullopt;
  return (concordant - discordant) / denominator;
}

Result<std::vector<std::vector<double>>> run_interleaved(
    std::size_t rows, int rounds, const std::function<Result<std::vector<double>>(std::size_t row)>& measure) {
  if (rounds < 1) return make_error("rounds must be at least 1 (got {})", rounds);
  std::vector<std::vector<double>> out(rows);
  for (int r = 0; r < rounds; ++r)
    for (std::size_t i = 0; i < rows; ++i) {
      PLANNER_TRY(std::vector<double> steps, measure(i));
      if (steps.empty()) return make_error("row {}: a run measured no step", i + 1);
      out[i].push_back(median(std::move(steps)));
    }
  return out;
}

Summary summarize(const std::vector<Row>& rows, std::optional<std::size_t> baseline, std::size_t choice) {
  Summary s;
  s.rows.resize(rows.size());
  // The ranked mode: the baseline's, else the choice's, else the first measured row's.
  const auto measured_at = [&](std::optional<std::size_t> i) { return i && *i < rows.size() && rows[*i].measured(); };
  if (measured_at(baseline)) s.ranked_mode = rows[*baseline].mode;
  else if (measured_at(choice)) s.ranked_mode = rows[choice].mode;
  else
    for (const auto& r : rows)
      if (r.measured()) {
        s.ranked_mode = r.mode;
        break;
      }
  std::vector<std::size_t> ran;
  std::vector<double> predicted, measured;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].measured()) continue;
    const Spread sp = spread(rows[i].rounds_s);
    auto& st = s.rows[i];
    st.measured_s = sp.median;
    st.spread_pct = sp.pct();
    if (sp.median > 0) st.error_pct = 100.0 * (rows[i].predicted_s - sp.median) / sp.median;
    if (rows[i].mode != s.ranked_mode) {
      s.other_mode_rows.push_back(i);
      continue;
    }
    ran.push_back(i);
    predicted.push_back(rows[i].predicted_s);
    measured.push_back(sp.median);
  }
  s.measured_rows = ran.size();
  const auto rp = ranks(predicted), rm = ranks(measured);
  for (std::size_t k = 0; k < ran.size(); ++k) {
    s.rows[ran[k]].predicted_rank = rp[k];
    s.rows[ran[k]].measured_rank = rm[k];
  }
  s.tau = kendall_tau(predicted, measured);
  if (!ran.empty()) {
    // The first minimum: ties go to the lowest row index.
    const std::size_t pb = static_cast<std::size_t>(std::min_element(predicted.begin(), predicted.end()) - predicted.begin());
    const std::size_t mb = static_cast<std::size_t>(std::min_element(measured.begin(), measured.end()) - measured.begin());
    s.predicted_best = ran[pb];
    s.measured_best = ran[mb];
    if (measured[mb] > 0) s.regret = measured[pb] / measured[mb];
  }
  if (baseline && *baseline < rows.size() && rows[*baseline].measured()) {
    s.baseline = baseline;
    const double bp = rows[*baseline].predicted_s, bm = *s.rows[*baseline].measured_s;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      auto& st = s.rows[i];
      if (rows[i].predicted_s > 0) st.predicted_speedup = bp / rows[i].predicted_s;
      if (st.measured_s && *st.measured_s > 0 && rows[i].mode == s.ranked_mode) st.measured_speedup = bm / *st.measured_s;
    }
    if (choice < rows.size()) {
      s.choice_predicted_speedup = s.rows[choice].predicted_speedup;
      s.choice_measured_speedup = s.rows[choice].measured_speedup;
    }
  }
  return s;
}

Status check_thresholds(const Thresholds& t) {
  if (t.min_tau && !(*t.min_tau >= -1.0 && *t.min_tau <= 1.0))
    return make_error("--min-tau must be in [-1, 1] (got {:g})", *t.min_tau);
  if (t.max_regret && !(*t.max_regret >= 1.0))
    return make_error("--max-regret is a ratio of step times, at least 1 (got {:g})", *t.max_regret);
  return {};
}

std::vector<Check> gate(const Summary& s, const Thresholds& t) {
  std::vector<Check> out;
  if (t.min_tau) {
    Check c{"min-tau", s.tau, *t.min_tau, false, ""};
    if (!s.tau) {
      c.text = fmt::format("Kendall tau undefined ({} measured row(s), or every time tied) (--min-tau {:g})",
                           s.measured_rows, *t.min_tau);
    } else {
      c.passed = *s.tau >= *t.min_tau;
      c.text = fmt::format("Kendall tau {:.3f} {} {:g} (--min-tau)", *s.tau, c.passed ? ">=" : "<", *t.min_tau);
    }
    out.push_back(std::move(c));
  }
  if (t.max_regret) {
    Check c{"max-regret", s.regret, *t.max_regret, false, ""};
    if (!s.regret) {
      c.text = fmt::format("regret undefined (no row measured) (--max-regret {:g})", *t.max_regret);
    } else {
      c.passed = *s.regret <= *t.max_regret;
      c.text = fmt::format("regret {:.3f} {} {:g} (--max-regret)", *s.regret, c.passed ? "<=" : ">", *t.max_regret);
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace planner::validate
