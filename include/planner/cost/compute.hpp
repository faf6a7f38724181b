#pragma once
/// Compute time of one op on one device (BRIEF §3, "Compute").
///
/// Per kernel, a roofline plus a launch overhead:
///
///   t = max( F / (peak(p) * e_gemm),  B / (hbm_bw * hbm_eff * e_mem(B)) ) + launch
///
/// with p the op's compute precision (PrecisionPolicy), e_gemm the profile's
/// GEMM efficiency at the local m, n, k (DeviceProfile::gemm_efficiency;
/// memory-bound ops use the CUDA-core fp32 peak with e_gemm = 1), e_mem the
/// profile's elementwise table at the kernel's bytes. Below the first row of
/// either table a kernel costs as much as the first row (the rows model a
/// fixed per-kernel cost, which clamping the efficiency would lose).
///
/// Backward of a GEMM is one GEMM per operand needing a gradient (dX, dW),
/// each of the same size class, so each has the forward's efficiency.
///
/// Attention (graph::FusedPattern): in AttentionMode::flash the pattern is ONE
/// fused kernel priced with the profile's attention efficiency and the
/// FlashAttention-2 FLOP count (forward 4*b*a*sq*sk*d, halved when causal;
/// backward 2.5x forward, as it recomputes the scores); its whole time is
/// charged to the pattern's first op and its other ops cost 0. In
/// AttentionMode::unfused every op is priced on its own.
///
/// Views (Reshape, Squeeze, ...), Shape/Constant and host-side integer shape
/// arithmetic cost nothing, not even a launch.
///
/// Requires of every graph passed here: ops::annotate(g) ran (op_class and
/// cost are filled) and, for attention patterns and recompute, graph::analyze(g).

#include <cstdint>
#include <optional>

#include "planner/cluster/profile.hpp"
#include "planner/core/result.hpp"
#include "planner/core/units.hpp"
#include "planner/cost/precision.hpp"
#include "planner/graph/graph.hpp"
#include "planner/ops/recompute.hpp"

namespace planner::cost {

/// How attention patterns are executed.
enum class AttentionMode : std::uint8_t {
  flash,    ///< one fused kernel (FlashAttention-2): no s x s tensors kept
  unfused,  ///< the pattern's ops one by one: scores and probabilities kept
};

/// Activation recomputation (Korthikanti et al. 2022; ops/recompute.hpp).
using ops::RecomputePolicy;

/// "flash" or "unfused".
std::string_view attention_mode_name(AttentionMode m);
/// "none", "selective" or "full".
using ops::recompute_name;
using ops::parse_recompute;
using ops::RecomputeModules;

/// Local shape of a GEMM for the efficiency lookup: [m, k] x [k, n], with
/// batch dimensions folded into m.
struct GemmShape {
  std::int64_t m = 1, n = 1, k = 1;
  friend bool operator==(const GemmShape&, const GemmShape&) = default;
};

/// How much of an op this device executes. A tensor-parallel split over t
/// devices is flops = bytes = 1/t with the local GEMM shape (e.g. n/t for a
/// column-parallel linear).
struct OpScaling {
  /// Fraction of the op's FLOPs executed here.
  double flops = 1.0;
  /// Fraction of the op's bytes moved here.
  double bytes = 1.0;
  /// Local GEMM shape; nullopt: the graph's shape with m scaled by `flops`.
  std::optional<GemmShape> gemm;
  /// Local query length of an attention pattern (context parallelism);
  /// nullopt: the pattern's own.
  std::optional<std::int64_t> seq_len;
  /// Ops like this one that run as one kernel (the experts' ops of an MoE
  /// layer: estimate's expert_batch): the op is charged 1/batch of one
  /// kernel doing batch times its work (FLOPs, bytes, a GEMM's m); its
  /// kernel counts stay that kernel's. 1: its own kernel.
  double batch = 1.0;

  /// The whole op.
  static OpScaling whole() { return {}; }
  /// An even split over `parts` devices (flops and bytes 1/parts). Requires: parts >= 1.
  static OpScaling split(int parts) {
    OpScaling s;
    s.flops = s.bytes = 1.0 / parts;
    return s;
  }
};

/// What limited a kernel.
enum class Bound : std::uint8_t { none, compute, memory };

/// Predicted time of one op (or one fused pattern, on its first op).
struct OpTime {
  Seconds forward;
  Seconds backward;
  /// Forward executed again in backward under the context's recompute
  /// policy (0 when the op's activations are kept).
  Seconds recompute;
  /// FLOPs the kernels execute (FlashAttention's count for a flash pattern),
  /// for hardware FLOPs utilisation; recompute executes forward_flops again.
  Flops forward_flops;
  Flops backward_flops;
  Bound forward_bound = Bound::none;
  Bound backward_bound = Bound::none;
  int forward_kernels = 0;
  int backward_kernels = 0;

  /// forward + backward + recompute.
  Seconds total() const { return forward + backward + recompute; }
  /// Sums times, FLOPs and kernels (bounds: the first non-none one).
  OpTime& operator+=(const OpTime& o);
};

/// The device, precision policy, attention mode and recompute policy every
/// time and memory prediction is made under. Validated on creation, so
/// time_of cannot fail.
class ComputeContext {
 public:
  /// Checks that the device has a peak for every precision the policy uses,
  /// and, for AttentionMode::flash, a fused attention kernel (attention
  /// efficiency table) and a 16-bit or fp8 attention precision. Errors name
  /// the device and what is missing.
  static Result<ComputeContext> create(cluster::DeviceProfile device, PrecisionPolicy precision,
                                       AttentionMode attention = AttentionMode::flash,
                                       RecomputePolicy recompute = RecomputePolicy::none,
                                       bool fuse_elementwise = false);

  /// Activations of convolutions are kept channels-last (NHWC, PyTorch
  /// `channels_last`) rather than ONNX's and PyTorch's default NCHW. Tensor-
  /// core convolution kernels work on NHWC only, so under NCHW every
  /// tensor-core Conv (any precision but fp32) also pays cuDNN's layout
  /// transposes (conv_layout_time). Default: NCHW.
  void set_channels_last(bool on) { channels_last_ = on; }
  bool channels_last() const { return channels_last_; }

  /// The step runs planner's own executor's kernels (runtime_cpu;
  /// --framework executor), which the profile's kernel keys describe
  /// (calibrate --backend cpu measures them):
  ///   - views (Reshape, Flatten, Squeeze, Unsqueeze, Identity) are copied,
  ///     the tensor read and written forward and its gradient backward
  ///     (runtime_cpu keeps each value in its own storage);
  ///   - memory-bound ops stream at the device's kernel tables
  ///     (DeviceProfile::kernel_table);
  ///   - special functions cost their evaluations
  ///     (special_function_rate_per_s, erf_rate_per_s) and an Adam step
  ///     its update rate (adam_update_rate_params_per_s).
  /// Off (default): a framework's kernels, which the profile's streaming
  /// tables price: views alias, memory-bound ops stream at the elementwise
  /// table, special functions and Adam cost their bytes (a GPU's
  /// special-function units outpace its memory; `planner run --replay`
  /// streams the ops' bytes and computes no exp).
  void set_executor_kernels(bool on) { executor_kernels_ = on; }
  bool executor_kernels() const { return executor_kernels_; }

  /// The device the times are for.
  const cluster::DeviceProfile& device() const { return device_; }
  /// Compute dtype per op class.
  const PrecisionPolicy& precision() const { return precision_; }
  /// How attention patterns run.
  AttentionMode attention() const { return attention_; }
  /// Which forwards are executed again in backward.
  RecomputePolicy recompute() const { return recompute_; }
  /// What selective recompute recomputes (ops::RecomputeModules; default
  /// core attention). Only read under RecomputePolicy::selective.
  void set_recompute_modules(RecomputeModules m) { recompute_modules_ = m; }
  RecomputeModules recompute_modules() const { return recompute_modules_; }
  /// Chains of elementwise ops run as one kernel (frameworks with fused
  /// kernels: Megatron/Transformer Engine's bias-GeLU, SwiGLU, RMSNorm,
  /// rotary; compilers): tensors inside a chain are neither written nor read
  /// back, and only the chain's last op launches. Off: every exported op is
  /// its own kernel (PyTorch eager on a decomposed export).
  bool fuse_elementwise() const { return fuse_elementwise_; }
  /// Dense tensor-core peak at `p`. Requires: p is used by the policy.
  FlopsPerSecond peak(core::Precision p) const;
  /// Peak for memory-bound ops' arithmetic: fp32 (CUDA cores), or the
  /// lowest peak the device lists when it has no fp32 entry.
  FlopsPerSecond vector_peak() const { return vector_peak_; }

 private:
  ComputeContext() = default;
  cluster::DeviceProfile device_;
  PrecisionPolicy precision_;
  AttentionMode attention_ = AttentionMode::flash;
  RecomputePolicy recompute_ = RecomputePolicy::none;
  RecomputeModules recompute_modules_;
  bool fuse_elementwise_ = false;
  bool channels_last_ = false;
  bool executor_kernels_ = false;
  std::array<FlopsPerSecond, core::kPrecisionCount> peaks_{};
  FlopsPerSecond vector_peak_;
};

/// Time of `op` on one device. For an op of an attention pattern in flash
/// mode: the pattern's time on its first op, zero on the others.
/// Requires: op belongs to g; ops::annotate(g) ran.
OpTime time_of(const graph::Op& op, const graph::OpGraph& g, const OpScaling& scaling, const ComputeContext& ctx);

/// Time of a whole attention pattern as one FlashAttention kernel (whatever
/// the context's mode).
OpTime flash_attention_time(const graph::FusedPattern& p, const graph::OpGraph& g, const OpScaling& scaling,
                            const ComputeContext& ctx);

/// Bytes an op moves at its compute precision: the graph's floating bytes
/// times byte_scale(); integer and bool inputs and outputs keep their size.
struct OpBytes {
  Bytes forward, backward;
};
OpBytes op_bytes(const graph::Op& op, const graph::OpGraph& g, const PrecisionPolicy& policy);

/// The graph shape of a GEMM-like op (MatMul, Gemm, FusedMatMul, Conv as an
/// implicit GEMM), batch folded into m; nullopt for other ops or when the
/// shapes do not say.
std::optional<GemmShape> gemm_shape(const graph::Op& op, const graph::OpGraph& g);

/// True when the pattern's scores are masked causally: a mask operand that
/// varies over both the query and the key axis (a padding mask varies over
/// keys only), or a fused op's unidirectional / is_causal attribute.
bool is_causal(const graph::FusedPattern& p, const graph::OpGraph& g);

/// True when every output of `op` only feeds the masks and scales of
/// attention patterns (directly or through other such ops): a fused flash
/// kernel applies the causal mask itself, so these ops never run (the
/// explicit s x s causal mask of an exported graph). Cost 0 in flash mode.
bool feeds_only_flash_masks(const graph::Op& op, const graph::OpGraph& g);

/// True when the op's forward is executed again in backward under `policy`
/// (full: every op of a layer; selective: the ops of attention patterns,
/// unfused, or the flash kernel's forward, which Megatron-Core reruns when
/// it checkpoints core attention): ops::recomputed, the derivation the
/// executor's real mode shares.
using ops::recomputed;

}  // namespace planner::cost
