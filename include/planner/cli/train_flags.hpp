#pragma once
/// Flags every subcommand that costs a training setup shares (estimate,
/// search, check): the cluster profile and its overrides, precision,
/// attention kernel and recompute policy, and the cost model built from them.

#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "planner/cluster/profile.hpp"
#include "planner/core/result.hpp"
#include "planner/cost/cost_model.hpp"
#include "planner/estimate/estimate.hpp"

namespace planner::cli {

struct TrainFlags {
  std::string profile = "a100-sxm4-80gb";
  int gpus_per_node = 0;        ///< 0 = the profile's
  double inter_node_GBps = 0;   ///< 0 = the profile's
  int nodes_per_leaf = 0;       ///< 0 = the profile's
  double oversubscription = 0;  ///< 0 = the profile's
  /// "auto" (the default) resolves from the profile's device in load():
  /// precision bf16, else fp16, else fp32 (the first the device has a GEMM
  /// peak for); attention flash where the device has a fused-attention
  /// kernel and the attention runs in 16 bits or fp8, unfused otherwise.
  std::string precision = "auto";
  std::string attention = "auto";
  /// Why "auto" chose what it did, where that is not bf16 / flash (a CPU or
  /// V100 profile); empty otherwise. Printed beside the training settings.
  std::string defaults_note;
  std::string recompute = "none";
  /// --recompute-modules: what selective recompute recomputes
  /// (ops::RecomputeModules::parse); "" = core_attn.
  std::string recompute_modules;
  std::string memory_format = "nchw";  ///< convolution activations: nchw | nhwc (channels_last)
  CLI::Option* profile_opt = nullptr;
  CLI::Option* recompute_opt = nullptr;
  CLI::Option* gpus_opt = nullptr;
  CLI::Option* inter_opt = nullptr;
  CLI::Option* leaf_opt = nullptr;
  CLI::Option* over_opt = nullptr;
  /// Overrides set from a plan file (as if the flags were given).
  bool force_gpus = false, force_inter = false, force_fabric = false;

  void add_to(CLI::App& app);
  /// The profile with its overrides applied; "auto" precision and attention
  /// resolved for its device (defaults_note says why, when not bf16/flash).
  /// Errors name the flag or file.
  Result<cluster::ClusterProfile> load();
  /// The cost model for `profile` under the precision, attention and
  /// recompute flags; `fused_kernels`: the framework fuses elementwise chains.
  /// `executor_kernels`: cost::ComputeContext::set_executor_kernels
  /// (estimate::runs_executor_kernels).
  /// --recompute-modules checked and in canonical text; "" when it is the
  /// default (core_attn) or not given. Requires check_recompute_modules().
  std::string modules_text() const;
  /// Errors when --recompute-modules names an unknown module, or is given
  /// while the recompute policy is `pinned` to none or full (estimate's
  /// --recompute; search's --recompute or --fix recompute=).
  Status check_recompute_modules(std::optional<cost::RecomputePolicy> pinned) const;
  Result<cost::ProfileCostModel> cost_model(cluster::ClusterProfile profile, bool fused_kernels = false,
                                            bool executor_kernels = false) const;
};

/// "; leaves of L nodes, R:1 oversubscribed" for a profile whose fabric is
/// not non-blocking (cluster::Level::oversubscription), "" otherwise: the
/// tail of the `cluster` line of estimate and search.
std::string fabric_note(const cluster::ClusterProfile& profile);

/// The exact op-level solver for `--exact`: a MILP solved with COIN-OR CBC
/// (sharding_milp), one thread, proving optimality.
estimate::ShardingSolver milp_solver();

/// The precision policy of a --precision value: bf16/fp16 mixed (embedding
/// and loss in fp32), fp8 (GEMMs in fp8, the rest bf16, as Transformer
/// Engine runs), tf32 / fp32 uniform.
Result<cost::PrecisionPolicy> precision_policy(const std::string& name);

/// The default precision and attention of a device (the "auto" of
/// --precision and --attention), and why when they are not bf16 and flash.
struct DeviceDefaults {
  std::string precision, attention;
  std::string precision_note, attention_note;  ///< why, when not bf16 / flash
};
DeviceDefaults device_defaults(const cluster::DeviceProfile& device, const std::string& precision);

}  // namespace planner::cli
