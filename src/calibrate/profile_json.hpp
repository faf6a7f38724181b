#pragma once
// Helpers shared by the profile writers (profile_out.cpp for the CPU and
// nccl-tests profiles, profile_device.cpp for the device profile): rounding,
// sourced values and tables, provenance, the collective fit of one level.
// Private to the calibrate module; defined in profile_out.cpp.

#include <array>
#include <functional>
#include <map>
#include <optional>
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
Result<double> model_error(const cluster::ClusterProfile& p, core::Collective kind, cluster::Placement where,
                           std::span<const Sample> samples);

/// The collective tables of one level (profile_out.cpp, fit_level).
struct LevelTables {
  bool single_stage = true;
  BytesPerSecond bandwidth;
  std::string bandwidth_from;
  std::map<core::Collective, Seconds> latency;
  std::map<core::Collective, SolvedTable> tables;
};
/// Fits level `level` of `net` (rewritten) to `runs` timed at `where`.
Result<LevelTables> fit_level(cluster::Interconnect& net, std::size_t level, cluster::Placement where,
                              const std::map<core::Collective, std::vector<Sample>>& runs);
std::string kernel_source(const std::string& by, std::string_view what);

/// What differs between the CPU and the device profile in the interconnect
/// of a one-host calibration (one_host_interconnect).
struct HostLevelText {
  std::string name;             ///< level 0: "shm" or "local"
  std::string fabric;           ///< level 0's fabric
  std::string group_source;     ///< source of devices_per_group
  std::string bandwidth_over;   ///< "collective" or "NCCL collective" (bandwidth_GBps' source)
  std::string one_rank_est;     ///< the sources of level 0 when one rank ran no collective
  std::string network_est;      ///< the sources of the estimated network level (no base)
  /// Source of the solved table of a collective over `rows` message sizes.
  std::function<std::string(core::Collective, std::size_t rows)> table_source;
};
/// The interconnect JSON of a one-host calibration by `by` with `ranks`
/// ranks: level 0 (the host's ranks at bandwidth `peak_Bps` until the
/// collectives in `runs` are fitted) and the network level, copied from
/// `base` or estimated from level 0. Appends one FitCheck per fitted
/// collective to `checks`.
Result<json> one_host_interconnect(const HostLevelText& text, const std::string& by, int ranks, double peak_Bps,
                                   const std::map<core::Collective, std::vector<Sample>>& runs,
                                   const std::optional<BaseProfile>& base, std::vector<FitCheck>& checks);
/// The profile document around `device` and `interconnect`; notes get the
/// sentence on where the inter-node level comes from.
json profile_document(const std::string& name, const std::string& system, const std::string& source,
                      const std::string& notes, bool from_base, const Provenance& prov, json device,
                      json interconnect);

/// A GEMM sweep of either backend: square sides with their samples, the
/// skinny products [d x skinny_n] x [skinny_n x skinny_n], and the square
/// pair at aligned_n and aligned_n - 1.
struct GemmSweep {
  const std::vector<int>& sizes;
  std::span<const Sample> square;
  int skinny_n = 0;
  const std::vector<int>& skinny_dims;
  std::span<const Sample> skinny;
  int aligned_n = 0;
  const Sample& aligned;
  const Sample& misaligned;

  std::vector<GemmSample> square_samples() const;
  std::vector<GemmSample> skinny_samples() const;
  /// Rate at aligned_n - 1 over the rate at aligned_n, capped at 1.
  double misaligned_ratio() const;
};

/// gemm_efficiency, gemm_skinny_efficiency and gemm_misaligned_factor of a
/// device, their sources naming the `kernel` ("sgemm", "bf16 GEMM") and its
/// `samples` ("sgemm", "bf16").
void gemm_fields(json& dev, const std::string& by, const GemmSweep& sweep, const GemmTables& g,
                 std::string_view kernel, std::string_view samples);

/// The collectives a calibration timed (those with samples).
std::map<core::Collective, std::vector<Sample>> timed_collectives(
    const std::array<std::vector<Sample>, core::kCollectiveCount>& collectives);

/// Largest |model / measured - 1| of memory-bound kernel `samples` (x =
/// bytes) on `device`.
double traffic_error(const cluster::DeviceProfile& device, std::span<const Sample> samples);

/// Each check of a fitted collective on level `level` ("<collective> on
/// <level>..."), measured again against the written profile.
Status recheck_collectives(WrittenProfile& out, const std::map<core::Collective, std::vector<Sample>>& runs,
                           std::string_view level, int ranks);

}  // namespace planner::calibrate::detail
