// DeepSpeed: the plan as a DeepSpeed config JSON (docs/export.md has the
// mapping table). Strict JSON, no comments: DeepSpeed itself reads hjson,
// but Hugging Face Trainer and Accelerate read the file with json.load. The
// header, every loss and every note are in Export::notes_text (the CLI
// prints them on stderr or writes them with --notes).
//
// The pipeline (PipelineModule(num_stages=..., partition_method=...)) and
// MoE expert parallelism are set in the training script, not in the config:
// they are notes.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "internal.hpp"

namespace planner::exporters {

namespace {

/// An ordered JSON object whose values are already JSON text.
struct Object {
  std::vector<std::pair<std::string, std::string>> items;
  void set(std::string key, std::string json) { items.emplace_back(std::move(key), std::move(json)); }
  void set(std::string key, const Object& o, int indent) { items.emplace_back(std::move(key), o.text(indent)); }
  std::string text(int indent) const {
    if (items.empty()) return "{}";
    const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
    std::string out = "{\n";
    for (std::size_t i = 0; i < items.size(); ++i)
      out += fmt::format("{}\"{}\": {}{}\n", pad, items[i].first, items[i].second, i + 1 < items.size() ? "," : "");
    out += std::string(static_cast<std::size_t>(indent), ' ') + "}";
    return out;
  }
};

std::string boolean(bool b) { return b ? "true" : "false"; }
std::string quoted(std::string_view s) { return fmt::format("\"{}\"", s); }

}  // namespace

Result<Export> to_deepspeed(const plan::Plan& p, const Options& options) {
  PLANNER_TRY(const std::string version, detail::pick_version(Framework::deepspeed, options));
  const auto& l = p.layout;
  const auto& t = p.training;
  detail::Findings f;
  Object root;

  // Batch: train_batch_size = micro-batch x accumulation x data-parallel ranks.
  // With cp > 1 DeepSpeed would count the cp ranks as data-parallel ranks:
  // train_batch_size is left for it to infer from the other two.
  if (l.cp == 1) root.set("train_batch_size", fmt::format("{}", t.global_batch));
  root.set("train_micro_batch_size_per_gpu", fmt::format("{}", t.micro_batch));
  root.set("gradient_accumulation_steps", fmt::format("{}", t.micro_batches));

  // Optimizer.
  const auto& o = t.optimizer;
  Object opt, params;
  params.set("lr", detail::number(o.learning_rate));
  if (o.name == "adam") {
    opt.set("type", quoted("AdamW"));
    params.set("betas", fmt::format("[{}, {}]", detail::number(o.beta1), detail::number(o.beta2)));
    params.set("eps", detail::number(o.epsilon));
  } else {
    opt.set("type", quoted("SGD"));
    params.set("momentum", detail::number(o.name == "sgd" ? 0.0 : o.momentum));
  }
  params.set("weight_decay", detail::number(o.weight_decay));
  opt.set("params", params, 4);
  root.set("optimizer", opt, 2);

  // Precision.
  if (t.precision == "bf16" || t.precision == "fp8") {
    Object b;
    b.set("enabled", "true");
    root.set("bf16", b, 2);
  } else if (t.precision == "fp16") {
    Object h;
    h.set("enabled", "true");
    root.set("fp16", h, 2);
  }
  if (detail::fp8_matmuls(p))
    f.lost("fp8 GEMMs: DeepSpeed's config has no fp8 training; exported as bf16 (use Transformer Engine in the model)");
  if (t.precision == "tf32") f.note("tf32: DeepSpeed has no setting; TF32 GEMMs follow torch.backends.cuda.matmul.allow_tf32");
  detail::check_precision_by_class(p, "DeepSpeed", f);
  detail::check_optimizer_precision(p, "DeepSpeed", f);
  if (t.grad_reduce_bytes == 4) root.set("communication_data_type", quoted("fp32"));
  else if (t.grad_reduce_bytes == 2)
    root.set("communication_data_type", quoted(t.precision == "fp16" ? "fp16" : "bf16"));

  // ZeRO. DeepSpeed's pipeline engine refuses ZeRO-2 and ZeRO-3.
  int stage = l.zero;
  if (l.distributed_optimizer && stage < 1) stage = 1;
  if (l.distributed_optimizer)
    f.note("Megatron's distributed optimizer exported as ZeRO stage 1 (optimizer states sharded over data parallelism)");
  if (l.pp > 1 && stage >= 2) {
    f.lost(fmt::format("ZeRO-{} with pipeline parallelism: DeepSpeed's PipelineEngine accepts ZeRO stage 0 or 1 only; "
                       "exported as stage 1 (gradients{} are not sharded)", stage, stage == 3 ? " and weights" : ""));
    stage = 1;
  }
  Object zero;
  zero.set("stage", fmt::format("{}", stage));
  root.set("zero_optimization", zero, 2);

  // Activation checkpointing (used through deepspeed.checkpointing and the pipeline).
  const int layers = detail::total_layers(p);
  if (t.recompute == "full") {
    Object ac;
    ac.set("partition_activations", boolean(l.tp > 1));
    ac.set("contiguous_memory_optimization", "false");
    if (layers > 0) ac.set("number_checkpoints", fmt::format("{}", layers));
    root.set("activation_checkpointing", ac, 2);
  } else if (t.recompute == "selective") {
    f.lost("selective recompute: DeepSpeed checkpoints whole layers only; exported without recompute (more activation memory than planned)");
  }

  // Pipeline: stages and the cut are PipelineModule arguments; the config holds the checkpoint interval.
  if (l.pp > 1) {
    Object pipe;
    pipe.set("activation_checkpoint_interval", t.recompute == "full" ? "1" : "0");
    root.set("pipeline", pipe, 2);
    if (detail::even_cut(p))
      f.note(fmt::format("pipeline: deepspeed.pipe.PipelineModule(layers, num_stages={}, partition_method=\"uniform\")", l.pp));
    else
      f.lost(fmt::format("pipeline cut {} (layers per stage): PipelineModule's partition methods cannot give explicit "
                         "stage sizes; \"uniform\" splits the layers evenly", detail::cut_text(p)));
    // Tied weights across stages: DeepSpeed shares them through TiedLayerSpec
    // (deepspeed/runtime/pipe/module.py) and sums the copies' gradients once
    // a step (PipelineEngine._exec_reduce_tied_grads), as the plan prices.
    if (p.model.shared_weights && !p.model.shared_weights->empty())
      f.note(fmt::format("tied weights ({}): build the embedding and the output layer as deepspeed.pipe.TiedLayerSpec "
                         "with one key, so each stage holding one keeps a copy and DeepSpeed sums their gradients",
                         fmt::join(*p.model.shared_weights, ", ")));
    if (l.vp > 1 || l.schedule == "interleaved")
      f.lost(fmt::format("interleaved schedule ({} chunks per rank): DeepSpeed's pipeline runs one chunk per rank (1F1B), "
                         "with a larger bubble", l.vp));
    else if (l.schedule == "gpipe")
      f.lost("GPipe schedule: DeepSpeed's pipeline runs 1F1B (fewer micro-batches in flight than the plan's memory assumes)");
  }

  // Tensor parallelism: AutoTP splits the Linear layers (column then row).
  if (l.tp > 1) {
    Object tp;
    tp.set("autotp_size", fmt::format("{}", l.tp));
    if (l.tp_comm_overlap) tp.set("tp_overlap_comm", "true");
    root.set("tensor_parallel", tp, 2);
    detail::check_megatron_patterns(p, "DeepSpeed AutoTP", f);
  } else if (l.tp_comm_overlap) {
    f.note("tp_comm_overlap has no effect without tensor parallelism");
  }
  if (l.sequence_parallel)
    f.lost("sequence parallelism: DeepSpeed AutoTP keeps norms and dropout whole on every tp rank (more activation memory)");
  if (l.cp > 1)
    f.lost(fmt::format("context parallelism cp={}: DeepSpeed's config has none (Ulysses sequence parallelism is another "
                       "scheme, set in the model); the cp ranks are counted as data-parallel ranks", l.cp));
  if (l.ep > 1)
    f.note(fmt::format("expert parallelism: pass ep_size={} to deepspeed.moe.layer.MoE", l.ep));
  detail::check_rank_order(p, "DeepSpeed", f);
  if (t.framework != "deepspeed")
    f.note(fmt::format("the plan's prediction models {}'s communication, not DeepSpeed's", t.framework));
  f.note("attention kernel, fused loss and the model itself are set in the training script");

  // Strict JSON: Hugging Face Trainer and Accelerate (`--deepspeed
  // ds_config.json`) read the file with Python's json.load, which refuses
  // comments; the header, losses and notes go to Export::notes_text.
  std::string header = detail::header(p, fmt::format("DeepSpeed {} config", version), options, f);
  return detail::finish(root.text(0) + "\n", std::move(f), std::move(header), false);
}

}  // namespace planner::exporters
