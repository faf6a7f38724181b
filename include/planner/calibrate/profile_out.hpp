#pragma once
/// Calibrated cluster profiles: measurements -> profile JSON text that
/// cluster::parse_profile accepts (so `planner estimate --profile FILE`
/// does), every number with a source that says how it was measured and
/// fitted ("measured by planner calibrate ..."), and a "provenance" object
/// (date, host, CPU, library versions, command).
///
/// Two producers:
///   cpu_profile   a whole profile from measure_cpu(); the network level
///                 across hosts, which one host cannot measure, comes from
///                 a base profile when given, else is labelled "estimate,
///                 not measured"
///   nccl_profile  a base profile whose interconnect tables are refitted to
///                 nccl-tests runs: each run fits one level (the inter-node
///                 level when it spans hosts, else the smallest intra-node
///                 level holding its ranks)
/// Both check the text with cluster::parse_profile before returning it.

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "planner/calibrate/measure.hpp"
#include "planner/calibrate/nccl_tests.hpp"
#include "planner/cluster/profile.hpp"
#include "planner/core/result.hpp"

namespace planner::calibrate {

/// Facts about the run, written under "provenance" in this order.
struct Provenance {
  std::vector<std::pair<std::string, std::string>> items;
};

/// A base profile: its text (sources kept verbatim) and the parsed value.
struct BaseProfile {
  std::string text;
  cluster::ClusterProfile parsed;
};

/// How well the written profile reproduces what was measured: per fitted
/// collective (and level), the largest |model / measured - 1|.
struct FitCheck {
  std::string what;  ///< "all_reduce on shm (2 ranks)"
  int points = 0;
  double max_error = 0;
  int capped = 0;  ///< points faster than the level's bandwidth allows
};

struct WrittenProfile {
  std::string text;
  cluster::ClusterProfile parsed;
  std::vector<FitCheck> checks;
};

/// Profile `name` from CPU measurements. Requires: name matches
/// [a-z0-9._-]+ (checked).
Result<WrittenProfile> cpu_profile(const CpuMeasurements& m, const Provenance& provenance, const std::string& name,
                                   const std::optional<BaseProfile>& base);

struct DeviceMeasurements;

/// Profile `name` from device measurements (measure_device.hpp): the
/// device part measured, the level between the ranks of one host fitted to
/// the device communicator's collectives (two ranks or more), the
/// inter-node level from `base` or labelled "estimate, not measured".
/// Requires: name matches [a-z0-9._-]+ (checked).
Result<WrittenProfile> device_profile(const DeviceMeasurements& m, const Provenance& provenance,
                                      const std::string& name, const std::optional<BaseProfile>& base);

/// `base` with the interconnect refitted to `runs`; `nccl_file` names the
/// input in sources. Errors name the run's line in `nccl_file`.
Result<WrittenProfile> nccl_profile(const BaseProfile& base, std::span<const NcclSection> runs,
                                    const Provenance& provenance, const std::string& name,
                                    const std::string& nccl_file);

}  // namespace planner::calibrate
