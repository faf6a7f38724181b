#pragma once
/// The outer search of `planner search`: which degrees, micro-batch,
/// schedule, ZeRO stage and recompute policy train a model fastest within
/// memory. Each candidate layout is scored by estimate::estimate (which runs
/// the op-level search for its tensor-parallel degree).
///
/// Design note.
///   1. Enumerate the space (`enumerate_layouts`): tp over divisors of N
///      inside a node, cp over divisors of N/tp that split the sequence
///      (context_parallel_degrees), pp over divisors of N/(tp cp) up to the
///      layer count, dp the rest; micro-batch over divisors of B/dp; vp
///      where interleaving divides; ZeRO per framework; recompute policies;
///      for MoE models ep over divisors of dp*cp that divide the experts.
///      `--fix` pins any of them.
///   2. Prune by a memory lower bound (stage_memory_floor: model state and
///      the activations the schedule keeps in flight, which no op sharding
///      can shrink below their tp x cp share) before costing anything.
///   3. Order by a lower bound on the step time (`layout_bound`): the
///      candidate's own work (model FLOPs, plus the recomputed forward, per
///      device at the best kernel rate) times the pipeline's minimum stretch
///      (1 + (p-1)/(v m)), or that work plus the optimizer step's HBM
///      traffic, whichever is larger — no inner choice can beat it.
///   4. Branch and bound in fixed-size batches, in that order: a batch is
///      scored in parallel (`threads`), the incumbent updated after the batch,
///      and later candidates whose bound is no better than the incumbent are
///      skipped; the incumbent is the top_k-th step found, so the runners-up
///      are the space's next best. Before scoring, a candidate's bound is
///      raised by its model-parallel floor (estimate::model_parallel_floor,
///      with_model_parallel_floor) and it is pruned when that is no better.
///      Batches of a fixed size (not tied to the thread count), pruning
///      against the batch's starting incumbent and a total order on ties
///      (step time, then the candidate's canonical order) make the result
///      the same with any number of threads.
///   5. Anytime: stop when the time limit passes (between batches, and
///      within one no candidate starts once a plan has been found); the result
///      says whether the space was exhausted and gives the lower bound on the
///      best possible step (Outcome::lower_bound) and the gap.
///
/// Architecture invariant: no ONNX, no profile file, no CLI: graphs and cost
/// models come from the caller's providers.

#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/core/units.hpp"
#include "planner/cost/cost_model.hpp"
#include "planner/estimate/estimate.hpp"
#include "planner/graph/graph.hpp"

namespace planner::search {

/// Values `--fix` pins (unset = searched).
struct Fixed {
  std::optional<int> dp, tp, pp, cp, ep, vp, micro_batch, zero;
  std::optional<cost::RecomputePolicy> recompute;
  std::optional<sim::Schedule> schedule;
  std::optional<bool> sequence_parallel;
};

/// Parses `tp=8,pp=4,ep=2,mb=2,zero=1,recompute=full,schedule=interleaved,sp=1`.
/// Errors name the key or value.
Result<Fixed> parse_fixed(std::string_view text);

/// What is searched.
struct Space {
  int devices = 1;
  int devices_per_node = estimate::kDefaultDevicesPerNode;
  std::int64_t global_batch = 1;
  estimate::Framework framework = estimate::Framework::megatron;
  cost::Optimizer optimizer = cost::Optimizer::adam;
  /// Settings copied into every candidate: tp_comm_overlap (where tp > 1),
  /// fused_loss, grad_reduce_bytes, optimizer_state_bytes, master_weights,
  /// hints.
  estimate::ParallelConfig base;
  Fixed fixed;
  /// Recompute policies tried (when not fixed).
  std::vector<cost::RecomputePolicy> recompute = {cost::RecomputePolicy::none, cost::RecomputePolicy::selective,
                                                  cost::RecomputePolicy::full};
  /// Largest micro-batch tried (when not fixed).
  int max_micro_batch = 16;
  /// Also try tp axes that may split the batch (tp_splits_batch), pp = 1.
  bool hybrid_tp = true;
  /// Fraction of device memory a plan may use.
  double max_memory_fraction = 1.0;
  /// Fraction of device memory a fitting layout leaves free (the plan's
  /// peak at most (1 - margin) x capacity); absent: the cost model's
  /// memory_margin() (the profile's). The search keeps the reserved peak
  /// (with the allocator's fragmentation) to the smaller of 1 - margin and
  /// max_memory_fraction; when both allow the whole device, only the
  /// allocated peak must fit (the allocator frees its cache and retries).
  std::optional<double> memory_margin;
};

/// A candidate: the layout and the recompute policy (which selects the cost model).
struct Candidate {
  estimate::ParallelConfig config;
  cost::RecomputePolicy recompute = cost::RecomputePolicy::none;
  /// Position in the canonical enumeration order (ties).
  std::size_t order = 0;
  /// Lower bound on its step time (design note 3).
  Seconds bound;
};

/// `dp=8 tp=8 pp=16 vp=2 sp mb=1 interleaved zero1 recompute=full`;
/// `modules` (ops::RecomputeModules::text, "" = core_attn) follows a
/// selective recompute: `recompute=selective(layernorm,moe_act)`.
std::string describe(const Candidate& c, std::string_view modules = {});

/// FLOPs per sample by the rate the cost model charges them at (the compute
/// part of `layout_bound`); `fwd_layer` is the forward of ops in repeated
/// layers (what full recompute runs again).
struct Work {
  double fwd = 0, bwd = 0, fwd_layer = 0;
  Work& operator+=(const Work& o) {
    fwd += o.fwd;
    bwd += o.bwd;
    fwd_layer += o.fwd_layer;
    return *this;
  }
};
struct ComputeFacts {
  /// Shaped GEMMs by 2mnk at the facts' batch (their efficiency is at most
  /// the GEMM table's best up to that size, scaled with the micro-batch).
  std::map<double, Work> gemm;
  /// Other ops at the GEMM rate: unshaped matmuls, attention-class and
  /// control-flow ops outside attention patterns.
  Work fast;
  /// The ops of attention patterns, priced one by one (at most the GEMM
  /// rate) when attention is not flash-fused.
  Work unfused_attention;
  /// Convolutions (Winograd may divide their FLOPs by 2.25).
  Work conv;
  /// Memory-bound classes, charged at the vector peak; elementwise apart
  /// (fused elementwise ops may cost nothing).
  Work vector, elementwise;
  /// Flash-fused attention patterns: FlashAttention FLOPs (halved when
  /// causal; backward 2.5 x), keyed by (key length, causal).
  std::map<std::pair<std::int64_t, bool>, Work> flash;
  /// Per attention pattern (graph order), what context parallelism must
  /// exchange for it: the elements per sample of the narrowest tensor that
  /// carries its whole sequence's keys and values (min of kv_heads x
  /// (head_dim + head_dim_v) and heads x min(head_dim, head_dim_v), the
  /// width of a layer's input, per token x the key length), and its
  /// FlashAttention FLOPs per sample (forward + backward) with its key
  /// length and causality (what running it unsplit over cp costs).
  struct Exchange {
    double elems = 0, flops = 0;
    std::int64_t key = 0;
    bool causal = false;
  };
  std::vector<Exchange> exchanges;
};

/// The model as the search needs it, per micro-batch size.
struct ModelFacts {
  int layers = 0;            ///< repeated layers
  std::int64_t heads = 0;    ///< attention heads (0: no attention)
  std::int64_t seq = 0;      ///< attention query length (0: no attention)
  double parameters = 0;     ///< floating parameter elements
  int experts = 0;               ///< experts per MoE layer (0: no MoE; estimate/experts.hpp)
  double expert_parameters = 0;  ///< the experts' share of `parameters`
  /// Model FLOPs (forward + backward) of one sample, and the forward alone.
  Flops flops_per_sample, forward_flops_per_sample;
  /// Shapes of the floating parameters, with how many tensors have each
  /// (the optimizer-step bound).
  std::map<std::vector<std::int64_t>, int> parameter_shapes;
  /// FLOPs per sample by rate, and the batch the facts were read at.
  ComputeFacts compute;
  std::int64_t batch = 1;
};

/// Fills facts.compute from g (imported at facts.batch).
void add_compute_facts(ModelFacts& facts, const graph::OpGraph& g);

/// Facts read from a graph (annotated and analysed) imported at batch `batch`.
ModelFacts facts_of(const graph::OpGraph& g, std::int64_t batch);

/// Whether the space's layouts with tensor-parallel degree `tp` use
/// sequence parallelism (tp > 1, not under DeepSpeed, unless `--fix sp`).
bool sequence_parallel_for(const Space& space, int tp);

/// Context-parallel degrees enumerated at tensor-parallel degree `tp`: 1,
/// and, for a model with attention under a framework whose estimate runs
/// context parallelism (estimate::supports_context_parallel), every
/// divisor cp > 1 of devices / tp whose split of the sequence the estimate
/// accepts (estimate::context_parallel_error, with sequence_parallel_for).
/// No cap: memory pruning and the bound decide. Ascending.
std::vector<int> context_parallel_degrees(const Space& space, const ModelFacts& facts, int tp);

/// Every layout of the space, in canonical order, with `order` set; bounds
/// not yet set. Layouts the degrees cannot make (divisibility) are left out.
std::vector<Candidate> enumerate_layouts(const Space& space, const ModelFacts& facts);

/// The data-parallel twin of each context-parallel layout: the enumerated
/// layout with the same settings but cp folded into dp (dp x cp, cp = 1),
/// by index into `layouts`; nullopt for cp = 1 and where the space has no
/// twin (the global batch does not divide, a fixed dp). Under the
/// estimate a twin does the same work per device with the same gradient
/// and optimizer-state groups (dp x cp) and no context-parallel exchanges
/// (the key/value all-gathers); the context-parallel layout saves
/// activation memory (and, with pp > 1, has cp times the micro-batches to
/// fill the pipeline). search() therefore scores a layout with a twin only
/// after the others, and only where its twin gave no fitting estimate
/// (memory-pruned, too large, failed or not scored): counted as
/// `pruned_twin` otherwise.
std::vector<std::optional<std::size_t>> twin_of(const std::vector<Candidate>& layouts);

/// The values a space's enumerated layouts take, dimension by dimension
/// (read off the layouts themselves, so a report of what the search tried
/// cannot drift from enumerate_layouts): the `space` object of `planner
/// search --json`, from which tools/validate-published derives the options
/// of a published layout the search did not try.
struct SpaceRanges {
  std::set<int> tp, cp, pp, dp, ep, micro_batch;
  /// (pp, vp) pairs (vp 1 for 1F1B and GPipe).
  std::set<std::pair<int, int>> pp_vp;
  std::set<sim::Schedule> schedules;
  /// (ZeRO stage, distributed optimizer).
  std::set<std::pair<int, bool>> state_sharding;
  std::set<cost::RecomputePolicy> recompute;
  /// Sequence parallelism values of the layouts with tp > 1.
  std::set<bool> sequence_parallel;
  /// Stage cuts of the layouts with pp > 1: "even", "balanced".
  std::set<std::string> stage_cuts;
};
SpaceRanges space_ranges(const std::vector<Candidate>& layouts);

/// Model state bytes per device no schedule can avoid (weights, gradients,
/// optimizer states under the candidate's sharding; expert parameters split
/// over ep with their states sharded over dp*cp/ep); used to prune.
Bytes memory_floor(const Candidate& c, const ModelFacts& facts);

/// At most the fullest pipeline stage's memory in any estimate of `c`:
/// memory_floor's state and `saved` (one micro-batch's, whole:
/// estimate::saved_bytes at c's micro-batch and recompute policy) split
/// over tp x cp: the activations held by the ranks as the schedule keeps
/// them in flight (at least min(m, pp - r) on rank r under 1F1B, m under
/// GPipe; a model's experts hold theirs whole under ep, each rank's E/ep
/// experts taking 1/ep of its ep group's tokens), the loss buffer by the
/// last rank (halved by a fused loss); plus `fragmentation` x those and the
/// `reserve` (the CUDA context and communicator buffers) every rank has,
/// and `gradient_bytes` per local parameter (experts split over ep) the
/// framework keeps beyond the model state (estimate::framework_gradient_bytes).
Bytes stage_memory_floor(const Candidate& c, const ModelFacts& facts, const estimate::SavedBytes& saved, Bytes reserve,
                         double fragmentation, double gradient_bytes);

/// A lower bound on a layout's step time that no inner choice (op
/// strategies, stage cut, schedule) can beat under the cost model
/// (`docs/search.md`, "Bound"). Each part is <= what estimate charges.
struct LayoutBound {
  /// The layout's share of the FLOPs (plus the recomputed forward under
  /// full recompute) per device, each op class at the fastest rate the
  /// cost model can charge it at (GEMMs at the table's best efficiency up
  /// to their size, flash attention at its table, memory-bound ops at the
  /// vector peak).
  Seconds compute;
  /// (Includes the kernel launches every device issues: m x kernels x
  /// launch overhead / pp.)
  /// compute x the pipeline's minimum stretch 1 + (p-1)/(v m).
  Seconds pipelined;
  /// Context parallelism's key/value exchanges (included in `compute`):
  /// per micro-batch, of every attention pattern after the first, the
  /// cheaper of an all-gather and a reduce-scatter of the narrowest tensor
  /// carrying its keys and values over the cp axis (x 0.1 under
  /// tp_comm_overlap) and running the previous pattern unsplit over cp; / pp.
  /// Flash attention and cp > 1 only.
  Seconds context_exchange;
  /// The optimizer step of the pipeline rank with the most parameters:
  /// local parameters (each tensor at its smallest shard over tp x cp)
  /// / pp / optimizer shards x bytes per parameter / streaming bandwidth.
  Seconds optimizer;
  /// The framework's gradient accumulation passes (included in `compute`):
  /// m x every parameter at its smallest shard x its bytes / the streaming
  /// bandwidth, / pp.
  Seconds grad_accumulation;
  /// With a model-parallel floor F (estimate::model_parallel_floor: the
  /// least one micro-batch's ops and model-parallel collectives take over
  /// every op-level sharding): m x F / pp + grad_accumulation, the mean
  /// pipeline rank's busy time; `compute` is at least this. 0 without one.
  Seconds model_parallel;
  /// 1 + cv E[max of N standard normals] (the straggler term), or 1.
  double straggler = 1.0;
  /// max(pipelined, compute + optimizer) x straggler.
  Seconds total;
};

/// Smallest local element count of the parameters over any sharding on
/// `shards` devices (every split of `shards` over each tensor's dims, sizes
/// rounded down as estimate's local shapes are).
double min_local_parameters(const ModelFacts& facts, int shards);

/// HBM bytes per micro-batch (at the facts' batch, forward + backward, at
/// the model's precision policy) of the ops the cost model charges as
/// memory-bound (every op class but GEMMs, convolutions, attention and
/// control flow; attention patterns, flash-skipped masks and host-side
/// shape ops left out); elementwise ops apart.
struct MemoryFacts {
  double vector = 0, elementwise = 0;
  /// Kernels every device launches per micro-batch whatever the sharding
  /// (forward + backward; `layer_forward`: the layers' forward kernels,
  /// launched again under full recompute): one per GEMM, convolution or
  /// memory-bound op and direction with work (elementwise ops only without
  /// elementwise fusion), one per flash pattern and direction; attention
  /// patterns priced op by op and attention-class ops count none.
  double kernels = 0, layer_forward_kernels = 0;
};
MemoryFacts memory_facts(const graph::OpGraph& g, const cost::CostModel& model);

/// The bound of one layout under `model` (its recompute policy's model);
/// with `memory` (from the same model and the facts' graph), the
/// memory-bound ops' time is at least their bytes at the best streaming
/// bandwidth (the elementwise table's best efficiency), and every kernel
/// pays the launch overhead: terms that hold for cost::ProfileCostModel's
/// pricing (search() passes them for that model only).
LayoutBound layout_bound(const Candidate& c, const ModelFacts& facts, const cost::CostModel& model,
                         const MemoryFacts* memory = nullptr);

/// The parts of layout_bound that many layouts share, kept between calls
/// for one `facts` and `model` (search() bounds tens of thousands of
/// layouts that differ in pp, vp, dp and ZeRO over a few hundred
/// micro-batch x tp x cp meshes). The same bounds, bit for bit, with or
/// without it.
struct BoundMemo {
  /// The GEMM rates (peak x best efficiency over the splits), aligned with
  /// ComputeFacts::gemm, per (micro-batch, tp, cp).
  std::map<std::tuple<int, int, int>, std::vector<double>> gemm_rates;
  /// min_local_parameters per tp x cp.
  std::map<int, double> min_local;
  /// The cheapest context-parallel exchange per (cp, tp, micro-batch,
  /// devices per node, tp_comm_overlap).
  std::map<std::tuple<int, int, int, int, bool>, double> exchange;
  /// estimate::expected_max_std_normal per device count.
  std::map<int, double> expected_max;
};
LayoutBound layout_bound(const Candidate& c, const ModelFacts& facts, const cost::CostModel& model,
                         const MemoryFacts* memory, BoundMemo* memo);

/// `b` (layout_bound of `c`) with compute raised to the mean pipeline
/// rank's busy time under the model-parallel floor `floor` (one
/// micro-batch's least op and collective time on c's mesh, for c's micro-
/// batch graph and recompute policy's model): LayoutBound::model_parallel;
/// pipelined and total follow. `b` unchanged where that is no more.
LayoutBound with_model_parallel_floor(LayoutBound b, const Candidate& c, Seconds floor);

struct Options {
  double time_limit_s = 60;
  int threads = 1;
  std::size_t top_k = 5;
  /// Candidates scored per batch (fixed: results do not depend on threads).
  std::size_t batch = 16;
  /// Op-level solver (null: the fast one).
  const estimate::ShardingSolver* solver = nullptr;
  /// Called between batches with (scored, total) for progress lines.
  std::function<void(std::size_t, std::size_t)> progress;
};

struct Scored {
  Candidate candidate;
  estimate::Estimate estimate;
};

/// Prefix of search()'s error when no layout fits in memory (a gate
/// violation for `planner check`, bad input for `planner search`).
inline constexpr std::string_view kNoLayoutFits = "no layout fits";

struct Outcome {
  /// The fastest layout that fits, then the runners-up (top_k in all), fastest first.
  std::vector<Scored> best;
  /// Lower bound on the best step time any fitting layout of the space can
  /// reach: the best step found, or less where some layout not scored
  /// whose model state fits (memory_floor; bound-pruned, twin-pruned and
  /// unvisited ones) has a smaller bound (layout_bound, raised by its
  /// model-parallel floor where that was worked out), so it holds when the
  /// time limit stops the search. A memory-pruned layout cannot fit and a
  /// scored one's step is known, so neither lowers it.
  Seconds lower_bound;
  /// Speed of light of the model on the cluster: model FLOPs / (N x peak).
  Seconds speed_of_light;
  std::size_t enumerated = 0, pruned_memory = 0, pruned_bound = 0, scored = 0, failed = 0;
  /// Context-parallel layouts not scored because their data-parallel twin
  /// fit (twin_of).
  std::size_t pruned_twin = 0;
  /// Scored layouts whose estimate does not fit the device (of `scored`).
  std::size_t unfit = 0;
  /// false when the time limit stopped it: the branch and bound, or the
  /// tightening of the space's bound after it (the bound then looser).
  bool complete = true;
  double elapsed_s = 0;
  /// What the enumerated space spans (space_ranges of every enumerated layout).
  SpaceRanges space;
  /// A reason per failed candidate kind, e.g. "heads not divisible by --tp" (first few).
  std::vector<std::string> failures;
};

/// Supplies the graph imported at a micro-batch (cached by the caller).
using GraphProvider = std::function<Result<const graph::OpGraph*>(int micro_batch)>;
/// Supplies the cost model for a recompute policy.
using ModelProvider = std::function<Result<const cost::CostModel*>(cost::RecomputePolicy)>;

/// Runs the search. Errors: no layout of the space fits (the message gives
/// the smallest memory any scored layout needed and the largest item), or a
/// provider error.
Result<Outcome> search(const Space& space, const GraphProvider& graphs, const ModelProvider& models,
                       const Options& options);

}  // namespace planner::search
