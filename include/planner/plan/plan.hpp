#pragma once
/// The plan file (`plan.json`, format `planner.plan/v1`): everything the
/// executor and the exporters need to run or translate one training layout,
/// nothing implicit. Documented in docs/plan-format.md, JSON Schema in
/// docs/plan.schema.json.
///
/// Design note. A Plan is plain data: value types, no pointers into a graph.
/// `to_json` writes a canonical text (fixed key order, numbers printed the
/// same way every time, two-space indent, trailing newline), so the same plan
/// is the same bytes; `from_json` reads it back and validates every field
/// (errors are one line naming the JSON path, e.g. `plan.json: layout.tp: expected
/// an integer >= 1`). `from_json(to_json(p)) == p` for every valid plan.
///
/// Architecture invariant: plan depends on core only (and nlohmann_json
/// privately); it knows nothing about graphs, costs or ONNX. Producers
/// (`planner search`, `planner estimate -o`) fill it; consumers (executor,
/// exporters) read it.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/core/result.hpp"

namespace planner::plan {

inline constexpr const char* kFormat = "planner.plan/v1";

/// Which model, and how it was bound at import.
struct ModelIdentity {
  std::string path;    ///< as the user gave it
  std::string sha256;  ///< of the ONNX file's bytes (64 lowercase hex digits)
  std::int64_t parameters = 0;
  std::map<std::string, std::int64_t> dims;  ///< --dim NAME=N bindings
  std::optional<std::int64_t> batch;         ///< --batch (the micro-batch the graph was imported at)
  std::vector<std::string> params_from_inputs;
  /// Parameters several ops read (a tied LM head's token embedding); absent
  /// in plans written before it (unknown), [] for a model with none.
  std::optional<std::vector<std::string>> shared_weights;
  friend bool operator==(const ModelIdentity&, const ModelIdentity&) = default;
};

struct Cluster {
  std::string profile;       ///< profile name
  std::string profile_hash;  ///< 16 hex digits (cluster::ClusterProfile::content_hash)
  int devices = 1;
  int devices_per_node = 1;
  std::string overrides;     ///< "" or e.g. "gpus_per_node=4, inter_node_GBps=100"
  friend bool operator==(const Cluster&, const Cluster&) = default;
};

struct OptimizerSettings {
  std::string name = "adam";  ///< adam | sgd_momentum | sgd
  double learning_rate = 1e-4;
  double beta1 = 0.9, beta2 = 0.95, epsilon = 1e-8, weight_decay = 0.1;
  double momentum = 0.9;      ///< SGD with momentum
  /// Optimizer states of 16-bit parameters: fp32 | bf16. Optional ("fp32").
  std::string state_dtype = "fp32";
  /// Master copy of 16-bit parameters: fp32 | remainder | none. Optional ("fp32").
  std::string master_weights = "fp32";
  friend bool operator==(const OptimizerSettings&, const OptimizerSettings&) = default;
};

struct Training {
  std::int64_t global_batch = 1;
  int micro_batch = 1;
  std::int64_t micro_batches = 1;  ///< per step and data-parallel replica
  OptimizerSettings optimizer;
  std::string precision = "bf16";  ///< default compute precision: bf16 | fp16 | fp8 | tf32 | fp32
  /// Per op class overrides, e.g. {"embedding": "fp32", "loss": "fp32"}.
  std::map<std::string, std::string> precision_by_class;
  std::string recompute = "none";  ///< none | selective | full
  /// What selective recompute recomputes, Megatron-Core's recompute_modules
  /// as canonical text (ops::RecomputeModules::text, e.g.
  /// "core_attn,layernorm,moe_act"); "" = core_attn only. Optional ("").
  std::string recompute_modules;
  std::string attention = "flash"; ///< flash | unfused
  std::string framework = "megatron";
  std::uint64_t seed = 1234;       ///< weights and synthetic data
  /// Fused cross-entropy (no fp32 copy of the logits). Optional (false).
  bool fused_loss = false;
  /// Bytes per reduced gradient element (2 or 4); 0 = the framework's
  /// default. Optional (0).
  int grad_reduce_bytes = 0;
  /// Convolution activations: nchw (PyTorch's default) | nhwc
  /// (channels_last). Optional ("nchw", plans before it).
  std::string memory_format = "nchw";
  friend bool operator==(const Training&, const Training&) = default;
};

struct MeshAxis {
  std::string name;  ///< pp, dp, cp, tp
  int size = 1;
  int stride = 1;    ///< rank distance between neighbours along the axis
  friend bool operator==(const MeshAxis&, const MeshAxis&) = default;
};

/// One step of a device's pipeline program.
struct ScheduleStep {
  char kind = 'F';        ///< 'F' forward or 'B' backward
  int micro_batch = 0;
  int chunk = 0;          ///< global chunk index
  friend bool operator==(const ScheduleStep&, const ScheduleStep&) = default;
};

/// A pipeline chunk (a stage when vp = 1): which layers, on which devices.
struct Chunk {
  int index = 0;
  int pipeline_rank = 0;          ///< index mod pp
  int first_layer = 0, last_layer = -1;  ///< repeated-layer positions, inclusive; none when last < first
  bool embedding = false, head = false;
  std::vector<std::string> ops;   ///< op names in topological order (every op of the graph is in exactly one chunk)
  /// The devices running it: stage_devices(layout, pipeline_rank), ascending
  /// ranks. Optional in the file (plans before it): the reader fills it from
  /// the mesh; the writer always writes it (from the mesh when empty).
  std::vector<int> devices;
  friend bool operator==(const Chunk&, const Chunk&) = default;
};

/// One collective a strategy implies (per micro-batch unless `per_step`).
struct Collective {
  std::string kind;   ///< all_reduce | all_gather | reduce_scatter | all_to_all | send_recv | broadcast
  std::string axis;   ///< mesh axis name
  int group_size = 1;
  double bytes = 0;   ///< per device, nccl-tests convention
  int count = 1;      ///< times per micro-batch (or per step)
  bool backward = false;
  bool per_step = false;  ///< gradient syncs: once per step
  std::string where;  ///< `node fc1` or `edge fc1 -> gelu (t)`
  friend bool operator==(const Collective&, const Collective&) = default;
};

/// The sharding of one unit (an op, a fused pattern); repeated layers share
/// one entry whose `instances` lists every copy's representative op name.
struct OpStrategy {
  std::string unit;                    ///< representative op name (copy 0)
  std::vector<std::string> instances;  ///< first op of each copy, copy 0 first
  std::vector<std::string> ops;        ///< the representative's ops (a pattern has several)
  std::string family;                  ///< matmul, elementwise, attention, ...
  std::string strategy;                ///< shard() notation, e.g. ((1,4),(4,1))
  std::string assignment;              ///< which axis splits which letter, e.g. "tp:n"; "" replicated
  std::vector<std::string> inputs;     ///< layout text per input port ("" absent), docs/layout-grammar.md
  std::vector<std::string> outputs;    ///< layout text per output port
  std::vector<Collective> collectives;
  friend bool operator==(const OpStrategy&, const OpStrategy&) = default;
};

struct Layout {
  int dp = 1, tp = 1, pp = 1, cp = 1, ep = 1, vp = 1;
  bool sequence_parallel = false;
  int zero = 0;
  bool distributed_optimizer = false;
  bool tp_comm_overlap = false;
  /// The tp axis may also split the batch: data-parallel ops and
  /// model-parallel ops (a row-sharded embedding) on the same devices, as
  /// MindSpore's auto-parallel does. Optional in the file (default false).
  bool tp_splits_batch = false;
  std::string schedule = "1f1b";  ///< 1f1b | gpipe | interleaved
  /// Outermost first; rank = sum(coordinate * stride).
  std::vector<MeshAxis> mesh;
  std::vector<Chunk> chunks;
  /// Per pipeline rank (index = pipeline coordinate): its program.
  std::vector<std::vector<ScheduleStep>> schedule_steps;
  std::vector<OpStrategy> strategies;
  friend bool operator==(const Layout&, const Layout&) = default;
};

struct MemoryItem {
  std::string kind;
  double bytes = 0;
  std::string label;
  friend bool operator==(const MemoryItem&, const MemoryItem&) = default;
};

struct StageMemory {
  int stage = 0;
  double peak_bytes = 0;
  bool fits = true;
  double parameters = 0;
  double micro_batches_in_flight = 0;
  std::vector<MemoryItem> items;
  friend bool operator==(const StageMemory&, const StageMemory&) = default;
};

/// A layout the search also scored, and why it lost.
struct Alternative {
  std::string layout;  ///< one-line summary, e.g. "dp=8 tp=8 pp=16 ..."
  double step_time_s = 0;
  bool fits = true;
  std::string why;     ///< e.g. "+12.3 % step time: more pipeline bubble"
  friend bool operator==(const Alternative&, const Alternative&) = default;
};

/// One interval of the predicted step on one stream of a pipeline rank
/// (the same on every device of that rank). Stored on one line.
struct TimelineSpan {
  std::string stream;  ///< compute | tp | pp | dp
  std::string kind;    ///< forward | recompute | backward | optimizer | bubble | tp_forward | ... (docs/plan-format.md)
  std::optional<int> micro_batch;  ///< per-micro-batch spans
  std::optional<int> chunk;        ///< global chunk (chunk mod pp = the rank)
  std::optional<int> peer;         ///< send / recv: the other pipeline rank
  double start_s = 0, end_s = 0;   ///< from the step's start
  friend bool operator==(const TimelineSpan&, const TimelineSpan&) = default;
};

/// The spans of one pipeline rank, sorted by (stream, start, end).
struct StageTimeline {
  int stage = 0;
  std::vector<TimelineSpan> spans;
  friend bool operator==(const StageTimeline&, const StageTimeline&) = default;
};

struct Prediction {
  double step_time_s = 0;
  /// compute, recompute, zero3_exposed, grad_accumulation, bubble, data_parallel_exposed,
  /// data_parallel_total, optimizer, and "model_parallel.<kind>" entries.
  std::map<std::string, double> breakdown_s;
  double model_tflops_per_device = 0, hardware_tflops_per_device = 0;
  double mfu = 0, hfu = 0;
  double capacity_bytes = 0;
  bool fits = true;
  std::vector<StageMemory> stages;
  /// Speed-of-light bound on the step time (model FLOPs / (devices x peak))
  /// or a tighter one the search proved; gap = step / bound - 1.
  double lower_bound_s = 0;
  double gap = 0;
  std::vector<Alternative> alternatives;
  /// Optional: one step as spans per pipeline rank; empty = not recorded
  /// (and not written).
  std::vector<StageTimeline> timeline;
  friend bool operator==(const Prediction&, const Prediction&) = default;
};

/// Provenance of the plan.
struct Producer {
  std::string tool = "planner";
  std::string version;
  std::string command;  ///< "search" or "estimate"
  double search_time_s = 0;
  std::int64_t layouts_scored = 0;
  friend bool operator==(const Producer&, const Producer&) = default;
};

struct Plan {
  std::string format = kFormat;
  Producer producer;
  ModelIdentity model;
  Cluster cluster;
  Training training;
  Layout layout;
  Prediction prediction;
  friend bool operator==(const Plan&, const Plan&) = default;
};

/// The ranks of pipeline rank `pipeline_rank`: every rank whose pp
/// coordinate is it, ascending (rank = sum of coordinate x stride over the
/// mesh); all ranks when the mesh has no pp axis. Requires: a mesh that
/// validate() accepts, 0 <= pipeline_rank < pp. O(devices).
std::vector<int> stage_devices(const Layout& l, int pipeline_rank);

/// Canonical JSON text of the plan (same plan, same bytes).
std::string to_json(const Plan& p);

/// Parses and validates a plan; `source` names the file in errors.
Result<Plan> from_json(std::string_view text, std::string_view source = "plan.json");

/// Checks the plan's internal consistency: degrees multiply to devices, mesh
/// axes match the degrees and strides, chunks = pp x vp with every chunk's
/// pipeline_rank = index mod pp and devices (when given) = stage_devices(),
/// schedule_steps has pp programs each holding
/// every (micro-batch, chunk of its rank) forward and backward exactly once,
/// global_batch = micro_batch x dp x micro_batches. Errors name the field.
Status validate(const Plan& p);

}  // namespace planner::plan
