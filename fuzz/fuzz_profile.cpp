// libFuzzer target: planner::cluster::parse_profile on arbitrary text (the
// profile reader has a from-text entry point, so no temp file is needed).
//
// Oracle, beyond ASan + UBSan: a rejected profile reports one non-empty line
// starting with the origin; an accepted one has finite, positive quantities,
// non-empty tables with x strictly increasing and y in (0, 1], and
// interpolation that stays in (0, 1] (what the cost model relies on).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "fuzz_oracle.hpp"
#include "planner/cluster/profile.hpp"

namespace {

[[noreturn]] void violated(const char* what, std::string_view detail = {}) {
  fuzz_oracle::violated("fuzz_profile", what, detail);
}

void check_table(const planner::cluster::EfficiencyTable& t, const char* what) {
  if (t.rows.empty()) violated("empty table", what);
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const auto& r = t.rows[i];
    if (!(r.x > 0) || !std::isfinite(r.x) || !(r.y > 0 && r.y <= 1)) violated("table row out of range", what);
    if (i > 0 && !(r.x > t.rows[i - 1].x)) violated("table x not increasing", what);
  }
  for (double x : {0.0, -1.0, 1e-300, 1.0, 1e6, 1e300, t.rows.front().x, t.rows.back().x, std::nan("")}) {
    const double y = t.interpolate(x);
    if (!(y > 0 && y <= 1)) violated("interpolation out of (0, 1]", what);
  }
}

bool positive(double x) { return std::isfinite(x) && x > 0; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::string_view kOrigin = "fuzz.json";
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = planner::cluster::parse_profile(text, kOrigin);
  if (!r) {
    const std::string& m = r.error().message;
    fuzz_oracle::check_error("fuzz_profile", m, kOrigin);
    return 0;
  }
  const auto& d = r->device;
  if (!positive(d.hbm_bandwidth.value)) violated("hbm bandwidth");
  if (!positive(d.usable_memory().value)) violated("usable memory");
  if (!(d.hbm_efficiency > 0 && d.hbm_efficiency <= 1)) violated("hbm efficiency");
  check_table(d.elementwise_table, "elementwise");
  check_table(d.gemm_table, "gemm");
  check_table(d.gemm_skinny_table, "gemm_skinny");
  if (d.attention) {
    check_table(d.attention->causal, "attention.causal");
    check_table(d.attention->full, "attention.full");
  }
  for (const auto& [cls, t] : d.memory_bound_class_efficiency) check_table(t, "memory_bound_class_efficiency");
  for (const auto& [op, t] : d.memory_bound_op_efficiency) check_table(t, "memory_bound_op_efficiency");
  for (const auto& rate : {d.special_function_rate_per_s, d.erf_rate_per_s, d.adam_update_rate_params_per_s})
    if (rate && !positive(*rate)) violated("a per-second rate");
  for (std::int64_t m : {1, 7, 4096})
    for (std::size_t p = 0; p < planner::core::kPrecisionCount; ++p) {
      const double e = d.gemm_efficiency(m, m, m, static_cast<planner::core::Precision>(p));
      if (!(e > 0 && e <= 1)) violated("gemm efficiency out of (0, 1]");
    }
  const auto& ic = r->interconnect;
  if (ic.levels.size() < 2 || r->devices_per_node < 1) violated("interconnect levels");
  for (const auto& l : ic.levels) {
    check_table(l.ring.efficiency, "ring");
    if (l.tree) check_table(l.tree->efficiency, "tree");
    if (l.nvls) check_table(l.nvls->efficiency, "nvls");
    if (!positive(l.per_rank_bandwidth(1).value)) violated("per-rank bandwidth", l.name);
  }
  return 0;
}
