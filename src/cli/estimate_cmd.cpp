// planner estimate MODEL.onnx --devices N --tp T --pp P ...: predicts one
// training step of a given layout (time, breakdown, MFU, memory per stage,
// advice). JSON fields: docs/estimate-json.md.

#include <memory>

#include <fmt/format.h>

#include "planner/cli/command.hpp"
#include "planner/cli/terminal.hpp"
#include "planner/cli/estimate_report.hpp"
#include "planner/cli/import_flags.hpp"
#include "planner/cli/plan_build.hpp"
#include "planner/cli/train_flags.hpp"
#include "planner/core/io.hpp"
#include "planner/core/sha256.hpp"
#include "planner/plan/plan.hpp"
#include "planner/estimate/estimate.hpp"
#include "planner/graph/analysis.hpp"
#include "planner/onnx/importer.hpp"

namespace planner::cli {
namespace {

struct EstimateArgs {
  std::string model;
  ImportFlags import;
  TrainFlags train;
  estimate::ParallelConfig config;
  int dp = 0;  // 0 = devices / (tp pp cp)
  std::string schedule = "1f1b";
  std::string optimizer = "adam";
  std::string optimizer_state_dtype = "fp32";
  std::string master_weights = "fp32";
  std::string framework = "megatron";
  bool json = false;
  bool exact = false;
  CLI::Option* devices_opt = nullptr;
  CLI::Option* micro_batch_opt = nullptr;
  CLI::Option* global_batch_opt = nullptr;
  std::string hints_file;
  std::string plan_in;   // --plan: re-score a plan file
  std::string output;    // -o: write the estimate as a plan file
  std::string trace;     // --trace: write the step as a Chrome trace
  bool force = false;
  /// With --plan: the op names of the plan's chunks, as "layout.chunks[i].ops[j]" -> name.
  std::vector<std::pair<std::string, std::string>> plan_ops;
};

// A plan names the ops of the model it was made for: every name must be an op
// of the model imported now, and every op of the model must be in the plan.
Status check_plan_ops(const EstimateArgs& a, const graph::OpGraph& g) {
  if (a.plan_ops.empty()) return {};
  for (const auto& [where, name] : a.plan_ops)
    if (!g.find_op(name))
      return make_error("{}: {}: '{}' is not an op of {} (a plan for another model, or edited by hand?)", a.plan_in,
                        where, name, a.model);
  if (a.plan_ops.size() != g.ops().size())
    return make_error("{}: layout.chunks: the plan places {} ops, {} has {}", a.plan_in, a.plan_ops.size(), a.model,
                      g.ops().size());
  return {};
}

// Fills the layout, training settings, model binding and (unless given on
// the command line) the profile from a plan file.
Status load_plan(EstimateArgs& a) {
  auto text = io::read_file(a.plan_in);
  if (!text) return text.error();
  PLANNER_TRY(plan::Plan p, plan::from_json(*text, a.plan_in));
  auto& c = a.config;
  const auto& l = p.layout;
  c.devices = p.cluster.devices;
  c.dp = a.dp = l.dp;
  c.tp = l.tp;
  c.pp = l.pp;
  c.cp = l.cp;
  c.ep = l.ep;
  c.vp = l.vp;
  c.sequence_parallel = l.sequence_parallel;
  c.zero = l.zero;
  c.distributed_optimizer = l.distributed_optimizer;
  c.tp_comm_overlap = l.tp_comm_overlap;
  c.tp_splits_batch = l.tp_splits_batch;
  // The plan's own cut of the layers into chunks.
  c.layers_per_chunk.clear();
  a.plan_ops.clear();
  for (std::size_t i = 0; i < l.chunks.size(); ++i)
    for (std::size_t j = 0; j < l.chunks[i].ops.size(); ++j)
      a.plan_ops.emplace_back(fmt::format("layout.chunks[{}].ops[{}]", i, j), l.chunks[i].ops[j]);
  bool all_layers = !l.chunks.empty();
  for (const auto& ch : l.chunks) {
    if (ch.last_layer < ch.first_layer) all_layers = false;
    c.layers_per_chunk.push_back(ch.last_layer - ch.first_layer + 1);
  }
  if (!all_layers || l.chunks.size() == 1) c.layers_per_chunk.clear();
  c.micro_batch = p.training.micro_batch;
  c.fused_loss = p.training.fused_loss;
  c.grad_reduce_bytes = p.training.grad_reduce_bytes;
  a.optimizer_state_dtype = p.training.optimizer.state_dtype;
  a.master_weights = p.training.optimizer.master_weights;
  c.global_batch = p.training.global_batch;
  a.schedule = l.schedule;
  a.framework = p.training.framework;
  a.optimizer = p.training.optimizer.name == "sgd_momentum" ? "sgd" : p.training.optimizer.name == "sgd" ? "sgd-plain" : "adam";
  const auto fp8 = p.training.precision_by_class.find("matmul");
  a.train.precision = fp8 != p.training.precision_by_class.end() && fp8->second == "fp8" ? "fp8" : p.training.precision;
  a.train.attention = p.training.attention;
  a.train.recompute = p.training.recompute;
  a.train.memory_format = p.training.memory_format;
  if (a.model.empty()) a.model = p.model.path;
  if (a.train.profile_opt == nullptr || a.train.profile_opt->count() == 0) {
    a.train.profile = p.cluster.profile;
    // Overrides recorded as "gpus_per_node=4, inter_node_GBps=100".
    for (std::string_view rest = p.cluster.overrides; !rest.empty();) {
      const auto comma = rest.find(',');
      std::string item(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      item.erase(0, item.find_first_not_of(' '));
      const auto eq = item.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
      try {
        if (key == "gpus_per_node") a.train.gpus_per_node = std::stoi(value), a.train.force_gpus = true;
        if (key == "inter_node_GBps") a.train.inter_node_GBps = std::stod(value), a.train.force_inter = true;
      } catch (...) {
        return make_error("{}: cluster.overrides: cannot read '{}'", a.plan_in, item);
      }
      if ((key == "gpus_per_node" && a.train.gpus_per_node < 1) ||
          (key == "inter_node_GBps" && !(a.train.inter_node_GBps > 0)))
        return make_error("{}: cluster.overrides: '{}' must be positive", a.plan_in, item);
    }
  }
  for (const auto& [name, v] : p.model.dims) a.import.dims.push_back(fmt::format("{}={}", name, v));
  a.import.params_from_inputs = p.model.params_from_inputs;
  return {};
}

int run_estimate(EstimateArgs& a, const CLI::App& sub) {
  auto& c = a.config;
  // With --plan the layout comes from the plan file: its errors name it.
  auto fail_layout = [&](const std::string& m) { return fail("estimate", a.plan_in.empty() ? m : a.plan_in + ": " + m); };
  if (!a.plan_in.empty()) {
    if (auto st = load_plan(a); !st) return fail("estimate", st.error().message);
  } else if (a.model.empty() || a.devices_opt->count() == 0 || a.micro_batch_opt->count() == 0 ||
             a.global_batch_opt->count() == 0) {
    return fail("estimate", "give MODEL.onnx --devices N --micro-batch b --global-batch B, or --plan FILE");
  }
  if (!a.hints_file.empty()) {
    auto text = io::read_file(a.hints_file);
    if (!text) return fail("estimate", text.error().message);
    auto hints = estimate::parse_hints(*text, a.hints_file);
    if (!hints) return fail("estimate", hints.error().message);
    c.hints = std::move(hints).value();
  }
  const auto mode = a.force ? io::Overwrite::replace : io::Overwrite::refuse;
  if (!a.output.empty())
    if (auto st = io::check_writable(a.output, mode); !st) return fail("estimate", st.error().message);
  if (!a.trace.empty())
    if (auto st = io::check_writable(a.trace, mode); !st) return fail("estimate", st.error().message);
  if (c.devices < 1) return fail_layout(fmt::format("--devices must be at least 1 (got {})", c.devices));
  if (c.devices > estimate::kMaxDevices)
    return fail_layout(fmt::format("--devices {} is above the planner's limit of {} devices", c.devices,
                                        estimate::kMaxDevices));
  if (c.tp < 1 || c.pp < 1 || c.cp < 1) return fail_layout("--tp, --pp and --cp must be at least 1");
  if (a.dp > 0) {
    c.dp = a.dp;
  } else {
    const int mp = c.tp * c.pp * c.cp;
    if (c.devices % mp != 0)
      return fail_layout(fmt::format("--devices {} is not divisible by tp*pp*cp = {}*{}*{} = {}", c.devices, c.tp, c.pp,
                                          c.cp, mp));
    c.dp = c.devices / mp;
  }
  if (a.schedule == "1f1b") c.schedule = sim::Schedule::one_f_one_b;
  else if (a.schedule == "gpipe") c.schedule = sim::Schedule::gpipe;
  else if (a.schedule == "interleaved") c.schedule = sim::Schedule::interleaved;
  else return fail("estimate", fmt::format("--schedule '{}' is not one of 1f1b, gpipe, interleaved", a.schedule));
  if (a.optimizer == "adam") c.optimizer = cost::Optimizer::adam;
  else if (a.optimizer == "sgd") c.optimizer = cost::Optimizer::sgd_momentum;
  else if (a.optimizer == "sgd-plain") c.optimizer = cost::Optimizer::sgd;
  else return fail("estimate", fmt::format("--optimizer '{}' is not one of adam, sgd, sgd-plain", a.optimizer));
  if (auto sb = estimate::parse_optimizer_state_dtype(a.optimizer_state_dtype); sb.ok()) c.optimizer_state_bytes = *sb;
  else return fail("estimate", fmt::format("--optimizer-state-dtype: {}", sb.error().message));
  if (auto mw = estimate::parse_master_weights(a.master_weights); mw.ok()) c.master_weights = *mw;
  else return fail("estimate", fmt::format("--master-weights: {}", mw.error().message));
  auto fw = estimate::parse_framework(a.framework);
  if (!fw) return fail("estimate", "--framework: " + fw.error().message);
  c.framework = *fw;

  auto profile = a.train.load();
  if (!profile) return fail("estimate", profile.error().message);
  c.devices_per_node = profile->devices_per_node > 0 ? profile->devices_per_node : 8;
  if (auto st = estimate::validate(c); !st) return fail_layout(st.error().message);
  const bool fused = estimate::fuses_elementwise(c.framework);
  auto model = a.train.cost_model(*profile, fused);
  if (!model) return fail("estimate", model.error().message);

  // The model's batch is the micro-batch.
  auto opts = a.import.options();
  if (!opts) return fail("estimate", opts.error().message);
  if (opts->batch && *opts->batch != c.micro_batch)
    return fail("estimate", fmt::format("--batch {} differs from --micro-batch {} (the model is imported at the micro-batch)",
                                        *opts->batch, c.micro_batch));
  opts->batch = c.micro_batch;
  auto t0 = std::chrono::steady_clock::now();
  ProgressLine progress(progress_wanted(sub));
  progress.set("importing " + a.model);
  auto m = onnx::import_file(a.model, *opts);
  if (!m) return fail("estimate", m.error().message);
  log_step(sub, "imported " + a.model, t0);
  if (auto st = check_plan_ops(a, m->graph); !st) return fail("estimate", st.error().message);
  for (auto id : m->graph.graph_inputs) {
    const auto& t = m->graph.tensor(id);
    if (t.role != graph::TensorRole::input || !t.batch_axis || *t.batch_axis >= static_cast<int>(t.shape.size())) continue;
    const auto b = t.shape[static_cast<std::size_t>(*t.batch_axis)];
    if (b != c.micro_batch)
      return fail("estimate", fmt::format("{}: input '{}' has a static batch of {}; use --micro-batch {} (or export "
                                          "the model with a dynamic batch)",
                                          a.model, t.name, b, b));
    break;
  }
  const estimate::ShardingSolver exact = milp_solver();
  t0 = std::chrono::steady_clock::now();
  progress.set("estimating " + estimate::describe(c));
  auto e = estimate::estimate(m->graph, *model, c, true, a.exact ? &exact : nullptr);
  progress.finish();
  if (!e) return fail_layout(e.error().message);
  log_step(sub, "estimated " + estimate::describe(c), t0);
  if (verbosity_of(sub) == Verbosity::quiet && !a.json) {
    // --quiet: the report without its notes.
    e->notes.clear();
    m->report.notes.clear();
  }
  if (!a.output.empty() || !a.trace.empty()) {
    auto sha = sha256_file(a.model);
    if (!sha) return fail("estimate", sha.error().message);
    PlanSources src{"estimate", a.model, *sha, *opts, *profile, a.train.precision, a.train.recompute, a.train.attention};
    src.memory_format = a.train.memory_format;
    auto p = build_plan(*e, src);
    if (!p) return fail("estimate", p.error().message);
    if (auto st = plan::validate(*p); !st) return fail("estimate", "internal: the plan does not validate: " + st.error().message);
    if (!a.output.empty())
      if (auto st = io::write_file(a.output, plan::to_json(*p), mode); !st) return fail("estimate", st.error().message);
    if (!a.trace.empty())
      if (auto st = write_trace(*p, a.trace, mode); !st) return fail("estimate", st.error().message);
  }
  const ReportContext ctx{a.model, *profile, a.train, m->report.notes};
  if (a.json) fmt::print("{}\n", estimate_json(*e, ctx).dump(2));
  else print_estimate(*e, ctx);
  return kExitOk;
}

}  // namespace

Runner setup_estimate(CLI::App& sub) {
  auto a = std::make_shared<EstimateArgs>();
  auto& c = a->config;
  sub.add_option("model", a->model, "ONNX model file (with --plan: default the plan's model)");
  a->import.add_to(sub);
  a->train.add_to(sub);
  a->devices_opt = sub.add_option("--devices", c.devices, "Number of devices N");
  sub.add_option("--hints", a->hints_file, "Fix the strategies of named ops (docs/hints-format.md)");
  sub.add_option("--plan", a->plan_in, "Re-score a plan file (its layout and training; --profile to change the cluster)");
  sub.add_option("-o,--output", a->output, "Also write the estimate as a plan file (replaced only with --force)");
  sub.add_option("--trace", a->trace, "Write the step as a Chrome trace (Perfetto, chrome://tracing; docs/report.md)");
  sub.add_flag("--force", a->force, "Replace an existing plan or trace file");
  sub.add_option("--tp", c.tp, "Tensor-parallel degree")->capture_default_str();
  sub.add_option("--pp", c.pp, "Pipeline stages")->capture_default_str();
  sub.add_option("--dp", a->dp, "Data-parallel degree (default N / (tp pp cp))");
  sub.add_option("--cp", c.cp, "Context-parallel degree")->capture_default_str();
  sub.add_option("--ep", c.ep, "Expert-parallel degree")->capture_default_str();
  sub.add_option("--vp", c.vp, "Virtual stages per device (interleaved schedule)")->capture_default_str();
  sub.add_flag("--sp", c.sequence_parallel, "Sequence parallelism (Megatron SP) with tensor parallelism");
  a->micro_batch_opt = sub.add_option("--micro-batch", c.micro_batch, "Micro-batch size b (the model is imported at it)");
  a->global_batch_opt = sub.add_option("--global-batch", c.global_batch, "Global batch B (sequences or samples per step)");
  sub.add_option("--zero", c.zero, "ZeRO stage 0-3")->capture_default_str();
  sub.add_flag("--distributed-optimizer", c.distributed_optimizer, "Megatron's distributed optimizer");
  sub.add_option("--schedule", a->schedule, "1f1b | gpipe | interleaved")->capture_default_str();
  sub.add_option("--optimizer", a->optimizer, "adam | sgd (momentum) | sgd-plain")->capture_default_str();
  sub.add_option("--optimizer-state-dtype", a->optimizer_state_dtype,
                 "Optimizer states of 16-bit parameters: fp32 | bf16 (Megatron-Core's precision-aware optimizer, "
                 "NeMo distributed_fused_adam dtype: bf16)")
      ->capture_default_str();
  sub.add_option("--master-weights", a->master_weights,
                 "Master copy of 16-bit parameters: fp32 | remainder (Apex store_param_remainders) | none")
      ->capture_default_str();
  sub.add_option("--framework", a->framework,
                 "Communication behaviour: megatron | megatron-legacy | deepspeed | fsdp | ddp (docs/estimate.md)")
      ->capture_default_str();
  sub.add_flag("--split-embedding-loss", c.split_embedding_loss,
               "Count the embedding and the loss as one layer each in the pipeline split (Megatron-Core "
               "account_for_embedding/loss_in_pipeline_split)");
  sub.add_flag("--balance-stages", c.balance_stages,
               "Cut the layers where pipeline stages' work is most even (1F1B/GPipe; default: even split)");
  sub.add_flag("--tp-any", c.tp_splits_batch,
               "The tp axis may also split the batch (data- and model-parallel ops on the same devices)");
  sub.add_flag("--tp-comm-overlap", c.tp_comm_overlap,
               "Tensor-parallel collectives overlapped with their GEMMs (Megatron-Core tp_comm_overlap)");
  sub.add_flag("--fused-loss", c.fused_loss,
               "Fused cross-entropy kernel: 16-bit logits' gradient in place, no fp32 copy of the logits");
  sub.add_option("--grad-reduce-bytes", c.grad_reduce_bytes, "Bytes per reduced gradient element, 2 or 4 (default: framework's)");
  sub.add_flag("--json", a->json, "Print JSON (format planner.estimate/v1, docs/estimate-json.md)");
  sub.add_flag("--exact", a->exact, "Solve the op-level sharding exactly (MILP with COIN-OR CBC)");
  return [a, &sub]() -> int { return run_estimate(*a, sub); };
}

}  // namespace planner::cli
