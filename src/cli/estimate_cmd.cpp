// planner estimate MODEL.onnx --devices N --tp T --pp P ...: predicts one
// training step of a given layout (time, breakdown, MFU, memory per stage,
// advice). JSON fields: docs/estimate-json.md.

#include <memory>

#include <fmt/format.h>

#include "planner/cli/command.hpp"
#include "planner/cli/estimate_report.hpp"
#include "planner/cli/import_flags.hpp"
#include "planner/cli/train_flags.hpp"
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
  std::string framework = "megatron";
  bool json = false;
};

int run_estimate(EstimateArgs& a) {
  auto& c = a.config;
  if (c.tp < 1 || c.pp < 1 || c.cp < 1) return fail("estimate", "--tp, --pp and --cp must be at least 1");
  if (c.devices < 1) return fail("estimate", fmt::format("--devices must be at least 1 (got {})", c.devices));
  if (a.dp > 0) {
    c.dp = a.dp;
  } else {
    const int mp = c.tp * c.pp * c.cp;
    if (c.devices % mp != 0)
      return fail("estimate", fmt::format("--devices {} is not divisible by tp*pp*cp = {}*{}*{} = {}", c.devices, c.tp, c.pp,
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
  auto fw = estimate::parse_framework(a.framework);
  if (!fw) return fail("estimate", "--framework: " + fw.error().message);
  c.framework = *fw;

  auto profile = a.train.load();
  if (!profile) return fail("estimate", profile.error().message);
  c.devices_per_node = profile->devices_per_node > 0 ? profile->devices_per_node : 8;
  if (auto st = estimate::validate(c); !st) return fail("estimate", st.error().message);
  // Megatron-LM, NeMo and Megatron-DeepSpeed run fused kernels (bias-GeLU,
  // SwiGLU, RMSNorm, rotary, bias-dropout-add); PyTorch eager does not.
  const bool fused = c.framework == estimate::Framework::megatron || c.framework == estimate::Framework::megatron_legacy ||
                     c.framework == estimate::Framework::deepspeed;
  auto model = a.train.cost_model(*profile, fused);
  if (!model) return fail("estimate", model.error().message);

  // The model's batch is the micro-batch.
  auto opts = a.import.options();
  if (!opts) return fail("estimate", opts.error().message);
  if (opts->batch && *opts->batch != c.micro_batch)
    return fail("estimate", fmt::format("--batch {} differs from --micro-batch {} (the model is imported at the micro-batch)",
                                        *opts->batch, c.micro_batch));
  opts->batch = c.micro_batch;
  auto m = onnx::import_file(a.model, *opts);
  if (!m) return fail("estimate", m.error().message);
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
  auto e = estimate::estimate(m->graph, *model, c);
  if (!e) return fail("estimate", e.error().message);
  const ReportContext ctx{a.model, *profile, a.train, m->report.notes};
  if (a.json) fmt::print("{}\n", estimate_json(*e, ctx).dump(2));
  else print_estimate(*e, ctx);
  return kExitOk;
}

}  // namespace

Runner setup_estimate(CLI::App& sub) {
  auto a = std::make_shared<EstimateArgs>();
  auto& c = a->config;
  sub.add_option("model", a->model, "ONNX model file")->required();
  a->import.add_to(sub);
  a->train.add_to(sub);
  sub.add_option("--devices", c.devices, "Number of devices N")->required();
  sub.add_option("--tp", c.tp, "Tensor-parallel degree")->capture_default_str();
  sub.add_option("--pp", c.pp, "Pipeline stages")->capture_default_str();
  sub.add_option("--dp", a->dp, "Data-parallel degree (default N / (tp pp cp))");
  sub.add_option("--cp", c.cp, "Context-parallel degree")->capture_default_str();
  sub.add_option("--ep", c.ep, "Expert-parallel degree")->capture_default_str();
  sub.add_option("--vp", c.vp, "Virtual stages per device (interleaved schedule)")->capture_default_str();
  sub.add_flag("--sp", c.sequence_parallel, "Sequence parallelism (Megatron SP) with tensor parallelism");
  sub.add_option("--micro-batch", c.micro_batch, "Micro-batch size b (the model is imported at it)")->required();
  sub.add_option("--global-batch", c.global_batch, "Global batch B (sequences or samples per step)")->required();
  sub.add_option("--zero", c.zero, "ZeRO stage 0-3")->capture_default_str();
  sub.add_flag("--distributed-optimizer", c.distributed_optimizer, "Megatron's distributed optimizer");
  sub.add_option("--schedule", a->schedule, "1f1b | gpipe | interleaved")->capture_default_str();
  sub.add_option("--optimizer", a->optimizer, "adam | sgd (momentum) | sgd-plain")->capture_default_str();
  sub.add_option("--framework", a->framework,
                 "Communication behaviour: megatron | megatron-legacy | deepspeed | fsdp | ddp (docs/estimate.md)")
      ->capture_default_str();
  sub.add_flag("--tp-comm-overlap", c.tp_comm_overlap,
               "Tensor-parallel collectives overlapped with their GEMMs (Megatron-Core tp_comm_overlap)");
  sub.add_flag("--fused-loss", c.fused_loss,
               "Fused cross-entropy kernel: 16-bit logits' gradient in place, no fp32 copy of the logits");
  sub.add_option("--grad-reduce-bytes", c.grad_reduce_bytes, "Bytes per reduced gradient element, 2 or 4 (default: framework's)");
  sub.add_flag("--json", a->json, "Print JSON (format planner.estimate/v1, docs/estimate-json.md)");
  return [a]() -> int { return run_estimate(*a); };
}

}  // namespace planner::cli
