#pragma once
// Helpers shared by the profile writers (profile_out.cpp for the CPU and
// nccl-tests profiles, profile_device.cpp for the device profile): rounding,
// sourced values and tables, provenance, the collective fit of one level.
// Private to the calibrate module; defined in profile_out.cpp.

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/calibrate/fit.hpp"
#include "planner/calibrate/profile_out.hpp"
#include "planner/cluster/collective.hpp"

namespace planner::calibrate::detail {

using json = nlohmann::ordered_json;
using Rows = std::vector<cluster::EfficiencyTable::Row>;

/// `v` to `digits` significant digits.
double sig(double v, int digits = 4);
/// `v` > 0 rounded down to 4 significant digits.
double sig_down(double v);
/// An efficiency: 4 significant digits, kept inside (0, 1].
double frac(double v);
json sourced(double v, const std::string& source);
json table(std::string_view x, const std::string& source, const Rows& rows);
/// The rows as written (rounded).
cluster::EfficiencyTable rounded(const Rows& rows, std::string x);
/// Provenance item `key` ("" when absent), and the provenance object.
std::string item(const Provenance& p, std::string_view key);
json provenance_json(const Provenance& p);
/// The profile name rule ([a-z0-9._-]+).
Status check_name(const std::string& name);
std::string us(Seconds t);
/// Largest |model / measured - 1| of `kind` at `where` on `p`.
Result<double> model_error(const cluster::ClusterProfile& p, cluster::Collective kind, cluster::Placement where,
                           std::span<const Sample> samples);

/// The collective tables of one level (profile_out.cpp, fit_level).
struct LevelTables {
  bool single_stage = true;
  BytesPerSecond bandwidth;
  std::string bandwidth_from;
  std::map<cluster::Collective, Seconds> latency;
  std::map<cluster::Collective, SolvedTable> tables;
};
/// Fits level `level` of `net` (rewritten) to `runs` timed at `where`.
Result<LevelTables> fit_level(cluster::Interconnect& net, std::size_t level, cluster::Placement where,
                              const std::map<cluster::Collective, std::vector<Sample>>& runs);
std::string kernel_source(const std::string& by, std::string_view what);

}  // namespace planner::calibrate::detail
