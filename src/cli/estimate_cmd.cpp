// planner estimate MODEL.onnx --devices N --tp T --pp P ...: predicts one
// training step of a given layout (time, breakdown, MFU, memory per stage,
// advice). JSON fields: docs/estimate-json.md.

#include <memory>
#include <optional>

#include <fmt/format.h>

#include "planner/cli/command.hpp"
#include "planner/cli/terminal.hpp"
#include "planner/cli/estimate_report.hpp"
#include "planner/cli/import_flags.hpp"
#include "planner/cli/plan_files.hpp"
#include "planner/cli/train_flags.hpp"
#include "planner/core/io.hpp"
#include "planner/core/sha256.hpp"
#include "planner/plan/plan.hpp"
#include "planner/estimate/estimate.hpp"
#include "planner/graph/analysis.hpp"
#include "planner/onnx/importer.hpp"
#include "planner/planning/plan_build.hpp"
#include "planner/planning/plan_settings.hpp"

namespace planner::cli {
namespace {

struct EstimateArgs {
  std::string model;
  ImportFlags import;
  TrainFlags train;
  estimate::ParallelConfig config;
  int devices = 1;
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
  /// With --plan: what the plan file says.
  std::optional<planning::PlanSettings> plan;
};

// Fills the layout, training settings, model binding and (unless given on
// the command line) the profile from a plan file.
Status load_plan(EstimateArgs& a) {
  PLANNER_TRY(std::string text, io::read_file(a.plan_in));
  PLANNER_TRY(plan::Plan p, plan::from_json(text, a.plan_in));
  PLANNER_TRY(planning::PlanSettings s, planning::plan_settings(p, a.plan_in));
  a.config = s.config;
  a.devices = s.devices;
  a.dp = s.config.dp;
  a.train.precision = s.precision;
  a.train.attention = s.attention;
  a.train.recompute = s.recompute;
  a.train.recompute_modules = s.recompute_modules;
  a.train.memory_format = s.memory_format;
  if (a.model.empty()) a.model = s.model_path;
  if (a.train.profile_opt == nullptr || a.train.profile_opt->count() == 0) {
    a.train.profile = s.profile;
    if (s.gpus_per_node) a.train.gpus_per_node = *s.gpus_per_node, a.train.force_gpus = true;
    if (s.inter_node_GBps) a.train.inter_node_GBps = *s.inter_node_GBps, a.train.force_inter = true;
    if (s.nodes_per_leaf && s.oversubscription) {
      a.train.nodes_per_leaf = *s.nodes_per_leaf;
      a.train.oversubscription = *s.oversubscription;
      a.train.force_fabric = true;
    }
  }
  for (const auto& d : s.dims) a.import.dims.push_back(d);
  a.import.params_from_inputs = s.params_from_inputs;
  a.plan = std::move(s);
  return {};
}

// The training settings the flags give (a plan brings its own).
Status parse_training_flags(const EstimateArgs& a, estimate::ParallelConfig& c) {
  if (a.schedule == "1f1b") c.schedule = sim::Schedule::one_f_one_b;
  else if (a.schedule == "gpipe") c.schedule = sim::Schedule::gpipe;
  else if (a.schedule == "interleaved") c.schedule = sim::Schedule::interleaved;
  else return make_error("--schedule '{}' is not one of 1f1b, gpipe, interleaved", a.schedule);
  if (a.optimizer == "adam") c.optimizer = cost::Optimizer::adam;
  else if (a.optimizer == "sgd") c.optimizer = cost::Optimizer::sgd_momentum;
  else if (a.optimizer == "sgd-plain") c.optimizer = cost::Optimizer::sgd;
  else return make_error("--optimizer '{}' is not one of adam, sgd, sgd-plain", a.optimizer);
  if (auto sb = estimate::parse_optimizer_state_dtype(a.optimizer_state_dtype); sb.ok()) c.optimizer_state_bytes = *sb;
  else return make_error("--optimizer-state-dtype: {}", sb.error().message);
  if (auto mw = estimate::parse_master_weights(a.master_weights); mw.ok()) c.master_weights = *mw;
  else return make_error("--master-weights: {}", mw.error().message);
  auto fw = estimate::parse_framework(a.framework);
  if (!fw) return Error{"--framework: " + fw.error().message};
  c.framework = *fw;
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
  if (a.devices < 1) return fail_layout(fmt::format("--devices must be at least 1 (got {})", a.devices));
  if (a.devices > estimate::kMaxDevices)
    return fail_layout(fmt::format("--devices {} is above the planner's limit of {} devices", a.devices,
                                   estimate::kMaxDevices));
  if (c.tp < 1 || c.pp < 1 || c.cp < 1) return fail_layout("--tp, --pp and --cp must be at least 1");
  if (a.dp > 0) {
    c.dp = a.dp;
  } else {
    const int mp = c.tp * c.pp * c.cp;
    if (a.devices % mp != 0)
      return fail_layout(fmt::format("--devices {} is not divisible by tp*pp*cp = {}*{}*{} = {}", a.devices, c.tp, c.pp,
                                     c.cp, mp));
    c.dp = a.devices / mp;
  }
  if (c.dp < 1) return fail_layout(fmt::format("--dp must be at least 1 (got {})", c.dp));
  if (1LL * c.dp * c.tp * c.pp * c.cp != a.devices)
    return fail_layout(fmt::format("dp*tp*pp*cp = {}*{}*{}*{} = {} but --devices is {}", c.dp, c.tp, c.pp, c.cp,
                                   1LL * c.dp * c.tp * c.pp * c.cp, a.devices));
  if (!a.plan)
    if (auto st = parse_training_flags(a, c); !st) return fail("estimate", st.error().message);

  if (auto st = a.train.check_recompute_modules(cost::parse_recompute(a.train.recompute)); !st)
    return fail_layout(st.error().message);
  auto profile = a.train.load();
  if (!profile) return fail("estimate", profile.error().message);
  c.devices_per_node = profile->devices_per_node;
  if (auto st = estimate::validate(c); !st) return fail_layout(st.error().message);
  const bool fused = estimate::fuses_elementwise(c.framework);
  auto model = a.train.cost_model(*profile, fused, estimate::runs_executor_kernels(c.framework));
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
  if (a.plan)
    if (auto st = planning::check_plan_ops(*a.plan, a.plan_in, a.model, m->graph); !st)
      return fail("estimate", st.error().message);
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
  // The timeline only for a plan or a trace (it records every op's events).
  const estimate::EstimateOptions eo{.advise = true,
                                     .solver = a.exact ? &exact : nullptr,
                                     .timeline = !a.output.empty() || !a.trace.empty()};
  auto e = estimate::estimate(m->graph, *model, c, eo);
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
    const planning::ProfileRef ref{profile->name, profile->content_hash, profile->overrides};
    planning::PlanSources src{"estimate", a.model, *sha, *opts, ref, a.train.precision, a.train.recompute, a.train.attention};
    src.memory_format = a.train.memory_format;
    src.recompute_modules = a.train.modules_text();
    auto p = planning::build_plan(*e, src);
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
  a->devices_opt = sub.add_option("--devices", a->devices, "Number of devices N");
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
                 "Communication behaviour: megatron | megatron-legacy | deepspeed | fsdp | ddp | executor (docs/estimate.md)")
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
