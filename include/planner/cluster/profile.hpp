#pragma once
/// Cluster cost profiles: what one device can do and how devices talk.
///
/// Design note. A profile is a JSON file in cost_profiles/ (format:
/// docs/profile-format.md). Every number in it carries its source, either as
/// {"value": N, "source": "..."} or, for a table, one "source" for all its
/// rows; the reader rejects a bare number, naming the key. Loading turns the
/// file into the value types below, with strong units for quantities and
/// EfficiencyTable for everything that depends on a size (GEMM FLOPs,
/// message bytes, sequence length). The cost model reads these values and the
/// helpers on DeviceProfile; collective times live in collective.hpp.
///
/// The interconnect is a list of levels, innermost first: one or more levels
/// inside a node (NVLink/NVSwitch, HCCS, PCIe), each with a group size, and
/// last the level across nodes (NICs). Ranks are assumed placed compactly:
/// ranks that share a node fill its innermost groups first.
///
/// Architecture invariant: this module depends on core only (no graph, no
/// ops); it knows devices and links, not models.

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/core/collective.hpp"
#include "planner/core/precision.hpp"
#include "planner/core/result.hpp"
#include "planner/core/units.hpp"

namespace planner::cluster {

// GEMM precisions are core::Precision (planner/core/precision.hpp).

/// A measured or modelled efficiency y (0 < y <= 1) as a function of a size x
/// (> 0). Between rows y is interpolated linearly against log(x); outside the
/// rows it is clamped to the first or last row.
/// Invariant (checked by the reader): rows non-empty, x strictly increasing.
struct EfficiencyTable {
  struct Row {
    double x = 0;
    double y = 0;
  };
  std::vector<Row> rows;
  /// What x measures: "flops", "bytes", "min_dim", "seq_len", "message_bytes".
  std::string x_name;

  /// Requires: !rows.empty(). x <= 0 or NaN clamps to the first row.
  double interpolate(double x) const;
};

/// A collective efficiency table with the conditions under which the
/// algorithm is available (NVLS: at least 5 ranks, messages from 2 MiB).
struct CollectiveTable {
  EfficiencyTable efficiency;
  int min_ranks = 2;
  Bytes min_bytes{0};
};

// The collectives the cost model prices are core::Collective
// (collective.hpp gives their formulas and message-size conventions).

/// One collective's own table at a level (calibrate writes them when the
/// collectives of a library differ, e.g. MPI's all-to-all vs its all-reduce):
/// a bus-bandwidth fraction over message_bytes, read in the same ring
/// formula in place of the level's ring table, and optionally its own
/// per-step latency in place of the level's.
struct CollectiveOverride {
  EfficiencyTable efficiency;
  std::optional<Seconds> latency;
};

/// Fused-attention (FlashAttention-style) kernel efficiency against sequence
/// length, for causal and unmasked attention. FLOPs are counted as the
/// FlashAttention benchmark counts them: 4*b*s^2*heads*head_dim forward,
/// halved when causal, and 2.5x that backward.
struct AttentionEfficiency {
  EfficiencyTable causal;
  EfficiencyTable full;
};

/// One accelerator.
struct DeviceProfile {
  std::string name;
  /// Dense peak per precision; nullopt where the device lacks it.
  std::array<std::optional<FlopsPerSecond>, core::kPrecisionCount> peak_by_precision{};
  /// Nominal capacity as the vendor prints it (informational).
  double hbm_GB = 0;
  /// Memory the driver reports (cudaMemGetInfo total).
  Bytes visible_memory;
  /// Taken by the runtime context and kernel images before any tensor.
  Bytes context_memory;
  /// Taken by the communication library once collectives start (NCCL/HCCL).
  Bytes communicator_memory;
  BytesPerSecond hbm_bandwidth;
  /// Best fraction of hbm_bandwidth any kernel reaches.
  double hbm_efficiency = 1;
  /// Fraction of the achievable bandwidth an unfused memory-bound kernel
  /// reaches, against the bytes it reads plus writes (x = "bytes").
  EfficiencyTable elementwise_table;
  /// Host-side cost per kernel launch, added by the cost model per op.
  Seconds launch_overhead;
  /// 16-bit tensor-core GEMM kernel efficiency against 2*m*n*k (x = "flops").
  EfficiencyTable gemm_table;
  /// Factor for small min(m, n, k) (x = "min_dim").
  EfficiencyTable gemm_skinny_table;
  /// Factor applied when a dimension is not a multiple of
  /// gemm_alignment_bytes / element size.
  double gemm_misaligned_factor = 1;
  int gemm_alignment_bytes = 16;
  /// Per-precision factor on gemm_table (e.g. fp8); absent means 1.
  std::array<std::optional<double>, core::kPrecisionCount> gemm_precision_factor{};
  /// Absent where the device has no fused attention kernel (V100, Ascend 910).
  std::optional<AttentionEfficiency> attention;
  /// Coefficient of variation (sigma / mean) of one device's step time
  /// across devices of this kind (manufacturing and power-management
  /// variability); a synchronous step waits for the slowest of N devices
  /// (estimate.hpp). Absent: no spread modelled.
  std::optional<double> step_time_cv;
  /// Fraction of the usable memory a plan should leave free for what the
  /// memory prediction misses (its error on measured runs): a predicted
  /// peak above (1 - margin) x capacity is "at risk", and the search keeps
  /// below it by default (`--memory-margin`). Absent: 0.
  std::optional<double> memory_margin;
  /// The caching allocator's fragmentation: the fraction of its peak
  /// reserved memory that is not allocated to live tensors at the peak
  /// (1 - peak active / peak reserved, GMLake's ratio). The reserved peak is
  /// allocated / (1 - f). Absent: cost::kDefaultFragmentation of the
  /// allocated bytes.
  std::optional<double> allocator_fragmentation;
  /// Special-function evaluations (exp, log, erf, tanh, ...; graph::OpCost's
  /// forward_special / backward_special) per second of one device's
  /// elementwise kernels: a CPU evaluates libm in software. Absent: not
  /// priced (a GPU's special-function units outpace its memory).
  std::optional<double> special_function_rate_per_s;
  /// erf evaluations per second (graph::OpCost's forward_erf /
  /// backward_erf), where erf runs slower than the other special functions
  /// (libm's erf about three exps). Absent: special_function_rate_per_s.
  std::optional<double> erf_rate_per_s;
  /// Parameters per second one device's Adam(W) step updates, where that is
  /// slower than streaming the step's bytes (a CPU's scalar update). Absent:
  /// the step streams at the achievable bandwidth (a GPU's fused
  /// multi-tensor Adam).
  std::optional<double> adam_update_rate_params_per_s;
  /// Per op class (graph::op_class_name: "elementwise", "normalization",
  /// ...), a table over the bytes one pass moves of the rate one device's
  /// kernels of that class reach on the bytes the cost model counts for
  /// them, over achievable_hbm_bandwidth: it replaces elementwise_table for
  /// that class (a CPU backend's strided transposes and row-wise norms
  /// stream far below its triad, and gain nothing from the cache where a
  /// triad does). Absent class: elementwise_table (a GPU's kernels stream).
  std::map<std::string, EfficiencyTable, std::less<>> memory_bound_class_efficiency;
  /// Per ONNX op type ("Transpose", "Add", ...), the same table for that
  /// op type's kernels: it comes before its class's table (one class's
  /// kernels stream at rates 10x apart on a CPU backend). Absent op type:
  /// its class's table, then elementwise_table.
  std::map<std::string, EfficiencyTable, std::less<>> memory_bound_op_efficiency;
  /// The measured table of the kernels of `op_type` and class `op_class`:
  /// its op type's, else its class's; nullptr where neither has one (the
  /// op streams at elementwise_table).
  const EfficiencyTable* kernel_table(std::string_view op_type, std::string_view op_class) const;

  /// Dense peak for `p`; an error naming the device when it lacks `p`.
  Result<FlopsPerSecond> peak(core::Precision p) const;
  /// GEMM efficiency of a 16-bit [m,k]x[k,n] product. Requires m, n, k >= 1.
  double gemm_efficiency(std::int64_t m, std::int64_t n, std::int64_t k) const;
  /// GEMM efficiency for precision `p`: table(2mnk) x skinny(min dim) x
  /// misalignment x precision factor. Requires m, n, k >= 1.
  double gemm_efficiency(std::int64_t m, std::int64_t n, std::int64_t k, core::Precision p) const;
  /// hbm_bandwidth x hbm_efficiency.
  BytesPerSecond achievable_hbm_bandwidth() const;
  /// elementwise_table at `moved` bytes.
  double memory_bound_efficiency(Bytes moved) const;
  /// Fused attention efficiency, or nullopt when the device has none.
  std::optional<double> attention_efficiency(std::int64_t seq_len, bool causal) const;
  /// visible_memory - context_memory.
  Bytes usable_memory() const;
};

/// One level of the interconnect.
struct Level {
  std::string name;    ///< "nvlink", "infiniband", "hccs", ...
  std::string fabric;  ///< human description
  /// False for the levels inside a node; true for the last level.
  bool inter_node = false;
  /// Intra-node levels: devices in one group of this level (the last
  /// intra-node level's group is the node). 0 for the inter-node level.
  int devices_per_group = 0;
  /// Intra-node levels: unidirectional bandwidth per device.
  BytesPerSecond bandwidth;
  /// Inter-node level: NICs per node and unidirectional rate of one NIC.
  int nics_per_node = 0;
  BytesPerSecond nic_bandwidth;
  /// Inter-node level, where the profile describes a two-tier (leaf/spine)
  /// fabric that is not non-blocking: nodes under one leaf switch, and the
  /// leaf's oversubscription r = its downlink over its uplink bandwidth
  /// (r >= 1; 1 = full bisection). Traffic that leaves a leaf gets 1/r of the
  /// NIC bandwidth when every node of the leaf sends at once (collective.hpp).
  /// Absent: non-blocking.
  std::optional<int> nodes_per_leaf;
  std::optional<double> oversubscription;
  /// Inter-node level, where the fabric reduces in its switches (InfiniBand
  /// SHARP; NCCL's CollNet algorithms, NCCL_COLLNET_ENABLE=1): an all-reduce
  /// across nodes sends each rank's shard up once and gets the sum back
  /// once, at `efficiency` of the rank's NIC bandwidth, plus `latency`
  /// (collective.hpp). Absent: the fabric has no in-network reduction.
  struct CollNet {
    Seconds latency;
    double efficiency = 1;
  };
  std::optional<CollNet> collnet;
  /// Per-step latency alpha (the profile's fit, small and mid messages).
  Seconds latency;
  /// Per-step latency of NCCL's Simple protocol on this kind of link (NCCL
  /// tuning model); with Interconnect::simple_base_latency it lets rings
  /// that cross nodes choose between the fitted latency at LL128's
  /// bandwidth and Simple's latency at full bandwidth (collective.hpp).
  std::optional<Seconds> simple_latency;
  /// Ring is required; tree (inter-node) and nvls (NVSwitch) are optional.
  CollectiveTable ring;
  std::optional<CollectiveTable> tree;
  std::optional<CollectiveTable> nvls;
  /// Per-collective tables, indexed by Collective; absent = ring and latency.
  std::array<std::optional<CollectiveOverride>, core::kCollectiveCount> per_collective{};

  /// The efficiency table collective `kind` reads at this level: its own
  /// when the profile has one, else the ring table.
  const EfficiencyTable& table_for(core::Collective kind) const;
  /// The per-step latency of `kind`: its own when its table sets one, else
  /// `latency`.
  Seconds latency_for(core::Collective kind) const;

  /// Unidirectional bandwidth one rank gets at this level when
  /// `ranks_per_node` ranks of a node take part: `bandwidth` inside a node;
  /// across nodes min(ranks_per_node, nics_per_node) x nic_bandwidth shared
  /// by the node's ranks. Requires ranks_per_node >= 1.
  BytesPerSecond per_rank_bandwidth(int ranks_per_node) const;
};

/// Levels innermost first; the last one is the inter-node level.
/// Invariant (checked by the reader): at least one intra-node level, exactly
/// one inter-node level at the end, intra group sizes non-decreasing and each
/// a multiple of the previous.
struct Interconnect {
  std::vector<Level> levels;
  /// Fixed cost of one ring collective under NCCL's Simple protocol (NCCL
  /// tuning model's base latency); absent: no Simple alternative.
  std::optional<Seconds> simple_base_latency;
  /// Group size of the last intra-node level.
  int devices_per_node() const;
  const Level& inter_node() const { return levels.back(); }
};

/// A loaded profile.
struct ClusterProfile {
  std::string name;
  std::string system;
  std::string source;
  std::string notes;
  DeviceProfile device;
  Interconnect interconnect;
  /// interconnect.devices_per_node(), kept in step by apply_overrides.
  int devices_per_node = 0;
  /// FNV-1a 64-bit hash of the canonical JSON (sorted keys, no whitespace),
  /// 16 lowercase hex digits; apply_overrides folds the overrides in.
  std::string content_hash;
  /// "" or e.g. "gpus_per_node=4, inter_node_GBps=100".
  std::string overrides;
  /// Where it was read from ("" when parsed from text).
  std::filesystem::path file;
  /// Source text of every number, keyed by JSON path ("device.hbm_GBps",
  /// "interconnect.levels[0].efficiency.ring").
  std::map<std::string, std::string> sources;
};

/// Parses profile text. `origin` names it in errors (a file name). Errors are
/// one line: "<origin>: <json path>: <problem>".
Result<ClusterProfile> parse_profile(std::string_view text, std::string_view origin);

/// Loads a profile. A NAME (no '/', not ending in ".json") reads
/// `<profiles_dir>/<NAME>.json`; anything else is a file path. The profile's
/// "name" must equal the file's stem.
Result<ClusterProfile> load_profile(std::string_view name_or_path,
                                    const std::filesystem::path& profiles_dir);

/// Adapts a profile to a cluster that differs from it. `gpus_per_node`
/// resizes the node (inner groups larger than it shrink to it; otherwise it
/// must be a multiple of each inner group). `inter_node_GBps` is the node's
/// total unidirectional NIC bandwidth in GB/s (1e9 B/s), e.g. 100 for 4x HDR
/// 200 Gb/s; it is split evenly over the profile's NICs. Errors name the
/// override.
Result<ClusterProfile> apply_overrides(ClusterProfile profile, std::optional<int> gpus_per_node,
                                       std::optional<double> inter_node_GBps);

/// Everything a cluster may differ from its profile by: the two above, and
/// the fabric's leaves (Level::nodes_per_leaf, Level::oversubscription on
/// the inter-node level; both or neither, oversubscription >= 1).
struct ProfileOverrides {
  std::optional<int> gpus_per_node;
  std::optional<double> inter_node_GBps;
  std::optional<int> nodes_per_leaf;
  std::optional<double> oversubscription;
  bool any() const { return gpus_per_node || inter_node_GBps || nodes_per_leaf || oversubscription; }
};
/// Applies `o`; profile.overrides records them as "key=value, ..." in the
/// order above. Errors name the override.
Result<ClusterProfile> apply_overrides(ClusterProfile profile, const ProfileOverrides& o);

/// Names (file stems) of the *.json files in `dir`, sorted; empty when the
/// folder is missing.
std::vector<std::string> list_profiles(const std::filesystem::path& dir);

/// Folders searched for profiles, in order: $PLANNER_PROFILES (`env`, when
/// non-null and non-empty), <exe dir>/../cost_profiles,
/// <exe dir>/../../cost_profiles (the binary lives in build/<preset>/), and
/// PLANNER_SOURCE_DIR/cost_profiles when that compile definition is set.
/// The exe dir comes from argv0 when it holds a '/', else /proc/self/exe.
std::vector<std::filesystem::path> profiles_dir_candidates(const char* argv0, const char* env);

/// The first candidate that is an existing folder ($PLANNER_PROFILES is taken
/// as given even when missing, so a wrong setting shows in the load error);
/// "cost_profiles" when none exists.
std::filesystem::path default_profiles_dir(const char* argv0);

}  // namespace planner::cluster
