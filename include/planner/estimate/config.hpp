#pragma once
/// A training layout as `planner estimate` takes it: parallel degrees,
/// batch, schedule, optimizer sharding and framework behaviour. Plain data
/// with a validate() that names the violated constraint.
///
///   devices = dp * pp * cp * tp          (ep divides dp * cp: experts are
///                                         split over data/context ranks)
///   micro-batches m = global_batch / (micro_batch * dp)
///   interleaved: vp > 1, m % pp == 0, layers % (pp * vp) == 0 (checked by
///   estimate() when it knows the layers)
///
/// The device mesh is `mesh(pp=P,dp=D,cp=C,tp=T;per_node=G)`: tensor-parallel
/// ranks are consecutive (inside a node first), then context, data and
/// pipeline (Megatron's order tp-cp-dp-pp).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/estimate/hints.hpp"
#include "planner/cost/compute.hpp"
#include "planner/cost/memory.hpp"
#include "planner/sim/problem.hpp"

namespace planner::estimate {

/// How the training framework schedules communication. The differences are
/// software behaviour, the same for every run of that framework.
enum class Framework : std::uint8_t {
  /// Megatron-LM / NeMo (Megatron-Core): fp32 main gradients, bucketed
  /// data-parallel reduction overlapped with the last micro-batch's
  /// backward, distributed-optimizer parameter all-gather overlapped with
  /// the next forward.
  megatron,
  /// Megatron-LM as of 2021-2022 (SC'21, Korthikanti et al.): the
  /// data-parallel all-reduce runs after the pipeline flush, not overlapped.
  megatron_legacy,
  /// Megatron-DeepSpeed (BLOOM): ZeRO-1 reduce-scatter and all-gather after
  /// the flush, not overlapped; fp32 gradient accumulation.
  deepspeed,
  /// PyTorch FSDP (MosaicML llm-foundry): per-micro-batch weight all-gathers
  /// and gradient reduce-scatters, prefetched and overlapped with compute;
  /// bf16 parameters gathered, fp32 gradients reduced.
  fsdp,
  /// PyTorch DDP: 25 MB gradient buckets all-reduced during backward.
  ddp,
  /// planner's bundled executor (`planner run`, `planner validate`;
  /// docs/executor.md): fp32 throughout, every op its own kernel (no
  /// elementwise fusion), each micro-batch's parameter gradients added into
  /// the step's buffer by a separate pass (read both, write one: 12 bytes per
  /// parameter, the first micro-batch too, into a zeroed buffer), the
  /// data-parallel all-reduce or ZeRO reduce-scatter after the flush, not
  /// overlapped; ZeRO 0, 1 and 3 (3 gathers the stage's weights for every
  /// forward and backward step).
  executor,
};

/// "megatron", "megatron-legacy", "deepspeed", "fsdp", "ddp", "executor".
std::string_view framework_name(Framework f);
/// Parses framework_name(); the error lists the names.
Result<Framework> parse_framework(std::string_view s);
/// Optimizer-state dtype "fp32" -> 4 bytes, "bf16" -> 2; the error lists them.
Result<int> parse_optimizer_state_dtype(std::string_view s);
/// "fp32" | "bf16" for 4 | 2 bytes per optimizer-state element.
std::string_view optimizer_state_dtype_name(int bytes);
/// cost::master_weights_name(); the error lists the names.
Result<cost::MasterWeights> parse_master_weights(std::string_view s);
/// Megatron-LM, NeMo and Megatron-DeepSpeed run fused kernels (bias-GeLU,
/// SwiGLU, RMSNorm, rotary, bias-dropout-add); PyTorch eager (ddp, fsdp)
/// does not. The cost model then prices elementwise chains as fused.
bool fuses_elementwise(Framework f);
/// The step runs planner's own executor's kernels (runtime_cpu), which the
/// profile's kernel keys describe (cost::ComputeContext::set_executor_kernels).
bool runs_executor_kernels(Framework f);

/// Frameworks that run a rank's local experts of an MoE layer as one
/// grouped GEMM per expert weight, over all the tokens routed to them
/// (Megatron-Core's TEGroupedMLP, `--moe-grouped-gemm`, which the NeMo and
/// Megatron-Bridge MoE recipes set): estimate prices the experts' ops of a
/// layer as one kernel each. The others run each local expert on its own
/// (Megatron-Core's SequentialMLP, DeepSpeed-MoE): one kernel per local
/// expert over the tokens of all ep ranks (expert_batch in estimate.hpp).
bool groups_local_experts(Framework f);

/// Frameworks whose runs `estimate` prices with context parallelism
/// (cp > 1): Megatron-Core (`--context-parallel-size`, 2023 on). The search
/// enumerates cp > 1 only for these.
bool supports_context_parallel(Framework f);
/// The divisibility the estimate requires of an attention pattern with a
/// query length of `seq` tokens under cp (and tp with sequence
/// parallelism): seq % cp == 0 and, with sequence parallelism, seq % (tp cp)
/// == 0. nullopt when it holds, else why (naming `cp` or tp*cp); the search
/// enumerates only the cp values that pass.
std::optional<std::string> context_parallel_error(std::int64_t seq, int tp, int cp, bool sequence_parallel);

/// Largest device count the planner models (2^20; the largest clusters have
/// about 10^5). Beyond it the mesh and collective tables grow without use.
inline constexpr int kMaxDevices = 1 << 20;
/// Largest number of micro-batches per step (2^20): the pipeline simulation
/// holds every forward and backward of every micro-batch, so memory grows
/// with it (2^24 micro-batches on 4 stages take 1.6 GB and 6 s).
inline constexpr std::int64_t kMaxMicroBatches = std::int64_t{1} << 20;

/// Devices per node of a layout made without a cluster profile (an 8-GPU
/// HGX/DGX node); the commands always take it from the profile.
inline constexpr int kDefaultDevicesPerNode = 8;

/// The layout of one training step.
struct ParallelConfig {
  int dp = 1;  ///< data parallel
  int tp = 1;  ///< tensor parallel (op-level sharding over the `tp` axis)
  int pp = 1;  ///< pipeline stages
  int cp = 1;  ///< context parallel (sequence split of attention)
  int ep = 1;  ///< expert parallel (inside dp * cp)
  int vp = 1;  ///< virtual stages per device (interleaved schedule)
  bool sequence_parallel = false;
  int micro_batch = 1;
  std::int64_t global_batch = 1;
  sim::Schedule schedule = sim::Schedule::one_f_one_b;
  cost::Optimizer optimizer = cost::Optimizer::adam;
  /// ZeRO stage 0..3.
  int zero = 0;
  /// Megatron's distributed optimizer (ZeRO-1 with fp32 main gradients).
  bool distributed_optimizer = false;
  Framework framework = Framework::megatron;
  /// Tensor-parallel collectives pipelined with the GEMMs next to them
  /// (Megatron-Core / Transformer Engine userbuffers, `tp_comm_overlap`).
  bool tp_comm_overlap = false;
  /// The tp axis may split any dim, the batch included (MindSpore's
  /// auto-parallel: a row-sharded embedding next to data-parallel dense
  /// layers on the same devices). Off: tp splits model dims only (Megatron).
  bool tp_splits_batch = false;
  /// A fused cross-entropy kernel (flash-attn's xentropy, as llm-foundry
  /// uses): no fp32 copy of the logits, the 16-bit logits' gradient is
  /// written in place, so the loss buffer is b*s*V 16-bit values.
  bool fused_loss = false;
  /// Bytes per gradient element reduced over data parallelism (2 or 4);
  /// 0 = the framework's default for the precision.
  int grad_reduce_bytes = 0;
  /// Bytes per optimizer-state element of 16-bit parameters: 4 (fp32) or 2
  /// (bf16; cost::OptimizerSetup::state_bytes).
  int optimizer_state_bytes = 4;
  /// Master copy of 16-bit parameters (cost::MasterWeights).
  cost::MasterWeights master_weights = cost::MasterWeights::fp32;
  /// Repeated layers per pipeline chunk, in model order (empty: even split,
  /// the extra layers in the middle chunks; or balanced, below).
  std::vector<int> layers_per_chunk;
  /// Without layers_per_chunk and for 1F1B/GPipe: cut the layers where the
  /// chunks' work is most even (dynamic programming over layer cuts), so
  /// the first and last stages, which also hold the embedding and the head,
  /// get fewer layers.
  bool balance_stages = false;
  /// Without layers_per_chunk: Megatron-Core's
  /// account_for_embedding_in_pipeline_split and
  /// account_for_loss_in_pipeline_split. The embedding and the loss each
  /// take one layer's slot: (layers + 2) / (pp x vp) slots per chunk, the
  /// first chunk and the last one layer fewer. Requires (layers + 2)
  /// divisible by pp x vp, at least 2 slots per chunk.
  bool split_embedding_loss = false;
  /// Strategies the user fixed for named ops (semi-auto); the op-level search
  /// chooses the rest around them.
  std::vector<Hint> hints;
  /// Devices per node (from the profile unless overridden).
  int devices_per_node = kDefaultDevicesPerNode;

  /// Devices of the layout: dp * tp * pp * cp (ep and vp subdivide them).
  int devices() const { return dp * tp * pp * cp; }

  /// Micro-batches per step and data-parallel replica.
  std::int64_t micro_batches() const { return global_batch / (static_cast<std::int64_t>(micro_batch) * dp); }
  /// The state sharding the optimizer setting implies.
  cost::StateSharding state_sharding() const;
};

/// Checks the degrees and batch arithmetic (not the model: estimate() checks
/// divisibility of the model's dims). Errors name the constraint and the
/// config fields in backticks, e.g. "`global_batch` 10 is not divisible by
/// micro-batch * dp = 2 * 2 = 4" (the CLI writes its flags in their place).
Status validate(const ParallelConfig& c);

/// Whether the layout's meshes can be placed on nodes of
/// `devices_per_node` devices: the whole cluster (pp, dp, cp, tp; tp
/// fastest) and the model-parallel sub-mesh (cp, tp), each axis's groups
/// spread evenly over the nodes they touch (layout::DeviceMesh::create).
/// nullopt when they can, else the mesh's error (e.g. tp 3 on nodes of 8:
/// "the groups of axis dp are spread unevenly over nodes of 8 devices").
/// estimate() refuses such a layout with the same error; the search does
/// not enumerate it. Depends on the degrees and devices_per_node only.
std::optional<std::string> placement_error(const ParallelConfig& c);

/// `dp=8 tp=8 pp=12 mb=2 B=2048 1f1b zero1` style one-line summary.
std::string describe(const ParallelConfig& c);

}  // namespace planner::estimate
