// Megatron-LM: the plan as command-line arguments of pretrain_gpt.py, one per
// line in a bash array (docs/export.md has the mapping table).
//
//   PLANNER_MEGATRON_ARGS=(
//     --tensor-model-parallel-size 8
//     ...
//   )
//
// core_v0.12.0 has uneven first/last stages (--decoder-first/last-pipeline-
// num-layers) and Megatron FSDP (ZeRO-2/3); core_v0.8.0 has neither.

#include <algorithm>

#include <fmt/format.h>

#include "internal.hpp"

namespace planner::exporters {

namespace {

struct Args {
  std::vector<std::string> lines;
  void flag(std::string_view name) { lines.push_back(fmt::format("--{}", name)); }
  template <typename T>
  void opt(std::string_view name, const T& value) { lines.push_back(fmt::format("--{} {}", name, value)); }
};

/// The pipeline cut as arguments, or a warning when the version cannot express it.
void pipeline_cut(const plan::Plan& p, bool uneven_ok, Args& a, detail::Findings& f) {
  const auto& l = p.layout;
  const int layers = detail::total_layers(p);
  if (layers == 0) {
    if (l.pp > 1) f.lost("pipeline cut: the plan's chunks hold no repeated layers; Megatron cuts transformer layers only");
    return;
  }
  const int chunks = l.pp * l.vp;
  if (detail::even_cut(p)) {
    if (l.vp > 1) a.opt("num-layers-per-virtual-pipeline-stage", layers / chunks);
    return;
  }
  // Uneven: Megatron can size the first and the last pipeline rank; the
  // middle ranks share the rest evenly, and every chunk of a rank is equal.
  const auto per = detail::layers_per_chunk(p);
  const auto rank = detail::layers_per_rank(p);
  bool chunks_equal = true;
  for (std::size_t i = 0; i < per.size(); ++i)
    if (per[i] != per[i % static_cast<std::size_t>(l.pp)]) chunks_equal = false;
  bool middle_equal = true;
  for (int r = 2; r + 1 < l.pp; ++r)
    if (rank[static_cast<std::size_t>(r)] != rank[1]) middle_equal = false;
  const bool expressible = uneven_ok && chunks_equal && middle_equal && l.pp >= 2;
  if (!expressible) {
    f.lost(fmt::format("pipeline cut {} (layers per chunk): {}; exported as Megatron's even split", detail::cut_text(p),
                       uneven_ok ? "Megatron sizes only the first and last pipeline ranks, with equal chunks per rank"
                                 : "this Megatron version has no uneven stages (core_v0.9.0 added them)"));
    if (l.vp > 1) {
      if (uneven_ok) a.opt("num-virtual-stages-per-pipeline-rank", l.vp);
      else if (layers % chunks == 0) a.opt("num-layers-per-virtual-pipeline-stage", layers / chunks);
    }
    return;
  }
  const int first = rank.front(), last = rank.back();
  if (l.pp == 2) {
    a.opt("decoder-first-pipeline-num-layers", first);  // the last rank takes the rest
  } else {
    const int middle = rank[1];
    if (first != middle) a.opt("decoder-first-pipeline-num-layers", first);
    if (last != middle) a.opt("decoder-last-pipeline-num-layers", last);
  }
  if (l.vp > 1) a.opt("num-virtual-stages-per-pipeline-rank", l.vp);
}

}  // namespace

Result<Export> to_megatron(const plan::Plan& p, const Options& options) {
  PLANNER_TRY(const std::string version, detail::pick_version(Framework::megatron, options));
  const bool v12 = version == "core_v0.12.0";
  const auto& l = p.layout;
  const auto& t = p.training;
  detail::Findings f;
  Args a;

  // Model shape: the plan knows the layer count and nothing else.
  const int layers = detail::total_layers(p);
  if (layers > 0) a.opt("num-layers", layers);
  f.note("model shape: set --hidden-size, --num-attention-heads, --seq-length, --max-position-embeddings and the "
         "tokenizer from the model (the plan records parameters and layers only)");
  // Megatron ties the output layer to the word embedding unless told not to;
  // the plan says whether the model shares a weight (plans before it do not).
  if (!p.model.shared_weights)
    f.note("output layer: the plan does not say whether the model ties it to the embedding; Megatron ties them "
           "unless --untie-embeddings-and-output-weights");
  else if (p.model.shared_weights->empty())
    a.flag("untie-embeddings-and-output-weights");

  // Parallel degrees.
  a.opt("tensor-model-parallel-size", l.tp);
  a.opt("pipeline-model-parallel-size", l.pp);
  if (l.cp > 1) a.opt("context-parallel-size", l.cp);
  if (l.ep > 1) a.opt("expert-model-parallel-size", l.ep);
  if (l.sequence_parallel) a.flag("sequence-parallel");
  if (l.tp_comm_overlap) a.flag("tp-comm-overlap");
  pipeline_cut(p, v12, a, f);
  if (l.schedule == "gpipe" && l.pp > 1)
    f.lost("GPipe schedule: Megatron runs 1F1B (fewer micro-batches in flight than the plan's memory assumes)");

  // Data parallelism and optimizer sharding.
  if (l.zero >= 1 || l.distributed_optimizer) a.flag("use-distributed-optimizer");
  if (l.zero >= 2) {
    if (v12) {
      a.flag("use-custom-fsdp");
      a.opt("data-parallel-sharding-strategy", l.zero == 2 ? "optim_grads" : "optim_grads_params");
      a.flag("no-gradient-accumulation-fusion");
    } else {
      f.lost(fmt::format("ZeRO-{}: Megatron {} shards optimizer states only (distributed optimizer); "
                         "gradients{} stay whole", l.zero, version, l.zero == 3 ? " and weights" : ""));
    }
  }

  // Batch.
  a.opt("micro-batch-size", t.micro_batch);
  a.opt("global-batch-size", t.global_batch);

  // Recompute.
  if (t.recompute == "full") {
    a.opt("recompute-granularity", "full");
    a.opt("recompute-method", "uniform");
    a.opt("recompute-num-layers", 1);
  } else if (t.recompute == "selective") {
    a.opt("recompute-granularity", "selective");
    if (!t.recompute_modules.empty()) {
      // Megatron-Core's list (nargs '*'); it refuses moe_act without grouped
      // GEMMs and, in fp8, layernorm / moe_act under delayed scaling
      // (TransformerConfig.__post_init__).
      std::string list = t.recompute_modules;
      std::replace(list.begin(), list.end(), ',', ' ');
      a.opt("recompute-modules", list);
      if (list.find("moe_act") != std::string::npos) {
        a.flag("moe-grouped-gemm");
        f.note("recompute module moe_act: Megatron-Core recomputes the experts' activation with grouped GEMMs only "
               "(--moe-grouped-gemm)");
      }
    }
  }

  // Precision.
  if (t.precision == "bf16" || t.precision == "fp8") a.flag("bf16");
  else if (t.precision == "fp16") a.flag("fp16");
  else if (t.precision == "tf32") {
    f.note("tf32: Megatron has no flag; TF32 GEMMs follow torch.backends.cuda.matmul.allow_tf32");
  }
  if (detail::fp8_matmuls(p)) {
    a.opt("fp8-format", "hybrid");
    if (t.recompute == "selective" && (t.recompute_modules.find("layernorm") != std::string::npos ||
                                       t.recompute_modules.find("moe_act") != std::string::npos)) {
      a.opt("fp8-recipe", "tensorwise");
      f.note("fp8 with layernorm / moe_act recompute: Megatron-Core refuses delayed scaling for them; current "
             "scaling (--fp8-recipe tensorwise, Transformer Engine >= 2.6)");
    }
  }
  detail::check_precision_by_class(p, "Megatron", f);
  if (t.grad_reduce_bytes == 4) a.flag("accumulate-allreduce-grads-in-fp32");
  else if (t.grad_reduce_bytes == 2) {
    if (v12 && t.precision != "fp16") a.flag("grad-reduce-in-bf16");
    else if (!v12 && t.precision == "bf16")
      f.lost("2-byte gradient reduction: Megatron core_v0.8.0 reduces bf16 gradients in fp32");
  }

  // Kernels.
  if (t.attention == "flash") {
    if (v12) a.opt("attention-backend", "flash");
    else a.flag("use-flash-attn");
  } else if (v12) {
    a.opt("attention-backend", "unfused");
  }
  if (t.fused_loss) a.flag("cross-entropy-loss-fusion");

  // Optimizer.
  const auto& o = t.optimizer;
  if (o.name == "adam") {
    a.opt("optimizer", "adam");
    a.opt("lr", detail::number(o.learning_rate));
    a.opt("adam-beta1", detail::number(o.beta1));
    a.opt("adam-beta2", detail::number(o.beta2));
    a.opt("adam-eps", detail::number(o.epsilon));
  } else {
    a.opt("optimizer", "sgd");
    a.opt("lr", detail::number(o.learning_rate));
    a.opt("sgd-momentum", detail::number(o.name == "sgd" ? 0.0 : o.momentum));
  }
  a.opt("weight-decay", detail::number(o.weight_decay));
  if (o.state_dtype == "bf16") {
    if (v12) {
      a.flag("use-precision-aware-optimizer");
      a.opt("exp-avg-dtype", "bf16");
      a.opt("exp-avg-sq-dtype", "bf16");
    } else {
      f.lost("bf16 optimizer states: Megatron core_v0.8.0 keeps them in fp32");
    }
  }
  if (o.master_weights != "fp32")
    f.lost(fmt::format("master weights '{}': Megatron keeps an fp32 master copy (NeMo's distributed_fused_adam "
                       "does not)", o.master_weights));
  a.opt("seed", t.seed);

  // What Megatron cannot express.
  detail::check_rank_order(p, "Megatron", f);
  detail::check_megatron_patterns(p, "Megatron", f);
  if (t.framework != "megatron" && t.framework != "megatron-legacy")
    f.note(fmt::format("the plan's prediction models {}'s communication, not Megatron's", t.framework));

  std::string out = "#!/usr/bin/env bash\n";
  std::string header = detail::header(p, fmt::format("Megatron-LM {} arguments", version), options, f);
  out += detail::commented(header, "# ");
  out += "PLANNER_MEGATRON_ARGS=(\n";
  for (const auto& line : a.lines) out += "  " + line + "\n";
  out += ")\n";
  out += "# torchrun ... pretrain_gpt.py \"${PLANNER_MEGATRON_ARGS[@]}\" <model shape, data and tokenizer arguments>\n";
  return detail::finish(std::move(out), std::move(f), std::move(header), true);
}

}  // namespace planner::exporters
