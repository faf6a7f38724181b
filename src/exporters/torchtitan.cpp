// torchtitan: the plan as a job-config TOML (docs/export.md has the mapping
// table). The pipeline cut is written exactly, chunk by chunk, as
// module_fqns_per_model_part with the module names of torchtitan's decoder
// models (tok_embeddings, layers.N, norm, output).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "internal.hpp"

namespace planner::exporters {

namespace {

struct Toml {
  std::string text;
  void section(std::string_view name) { text += fmt::format("\n[{}]\n", name); }
  void set(std::string_view key, std::string_view value) { text += fmt::format("{} = {}\n", key, value); }
  template <typename T>
  void num(std::string_view key, const T& value) { text += fmt::format("{} = {}\n", key, value); }
  void str(std::string_view key, std::string_view value) { text += fmt::format("{} = \"{}\"\n", key, value); }
};

std::string chunk_modules(const plan::Chunk& c) {
  std::vector<std::string> names;
  if (c.embedding) names.emplace_back("\"tok_embeddings\"");
  for (int i = c.first_layer; i <= c.last_layer; ++i) names.push_back(fmt::format("\"layers.{}\"", i));
  if (c.head) {
    names.emplace_back("\"norm\"");
    names.emplace_back("\"output\"");
  }
  return fmt::format("[{}]", fmt::join(names, ", "));
}

}  // namespace

Result<Export> to_torchtitan(const plan::Plan& p, const Options& options) {
  PLANNER_TRY(const std::string version, detail::pick_version(Framework::torchtitan, options));
  const auto& l = p.layout;
  const auto& t = p.training;
  detail::Findings f;
  Toml toml;

  toml.section("job");
  toml.str("description", fmt::format("planner plan for {}", p.model.path));

  // Batch: with a pipeline the local batch is cut into micro-batches; without
  // one, torchtitan accumulates global / (local x data-parallel) steps.
  toml.section("training");
  if (l.pp > 1) toml.num("local_batch_size", static_cast<std::int64_t>(t.micro_batch) * t.micro_batches);
  else toml.num("local_batch_size", t.micro_batch);
  toml.num("global_batch_size", t.global_batch);
  if (t.precision == "bf16" || t.precision == "fp8") toml.str("mixed_precision_param", "bfloat16");
  else toml.str("mixed_precision_param", "float32");
  toml.str("mixed_precision_reduce", "float32");
  if (t.precision == "fp16")
    f.lost("fp16: torchtitan's mixed precision is bfloat16 or float32; exported as float32");
  if (detail::fp8_matmuls(p))
    f.lost("fp8 GEMMs: enable torchtitan's float8 converter for the Linear layers by hand; exported as bfloat16");
  if (t.grad_reduce_bytes == 2)
    f.lost("2-byte gradient reduction: torchtitan reduces gradients in float32 (mixed_precision_reduce)");
  detail::check_precision_by_class(p, "torchtitan", f);
  detail::check_optimizer_precision(p, "torchtitan", f);
  f.note("set [training] seq_len and the dataset, and [model] name/flavor, from the model (the plan records neither)");
  // Tied weights (model.shared_weights): torchtitan ties a flavor's output
  // layer to its embedding with enable_weight_tying (at v0.2.2 only Qwen3's
  // flavors). Its pipeline split keeps tok_embeddings on the first stage and
  // output on the last, each with its own copy, and no step sums their
  // gradients (torchtitan/distributed/pipeline_parallel.py at v0.2.2); later
  // versions refuse the combination ("Weight tying is not supported with
  // Pipeline Parallel.", torchtitan/models/common/decoder.py).
  if (p.model.shared_weights && !p.model.shared_weights->empty()) {
    const std::string names = fmt::format("{}", fmt::join(*p.model.shared_weights, ", "));
    if (l.pp > 1)
      f.lost(fmt::format("tied weights ({}) across {} pipeline stages: torchtitan's pipeline split gives the embedding "
                         "and the output layer separate copies and does not sum their gradients (later versions refuse "
                         "weight tying with pipeline parallelism)",
                         names, l.pp));
    else
      f.note(fmt::format("the model ties weights ({}): choose a [model] flavor with enable_weight_tying (at {} only "
                         "Qwen3's)",
                         names, version));
  }

  const auto& o = t.optimizer;
  toml.section("optimizer");
  toml.str("name", "AdamW");
  toml.set("lr", detail::number(o.learning_rate));
  toml.set("beta1", detail::number(o.beta1));
  toml.set("beta2", detail::number(o.beta2));
  toml.set("eps", detail::number(o.epsilon));
  toml.set("weight_decay", detail::number(o.weight_decay));
  if (o.name != "adam")
    f.lost(fmt::format("optimizer {}: torchtitan builds Adam and AdamW only; exported as AdamW", o.name));

  toml.section("parallelism");
  // Data parallelism: DDP (replicate) for ZeRO-0, FSDP (shard) otherwise.
  const bool other_parallel = l.tp > 1 || l.pp > 1 || l.cp > 1;
  int replicate = 1, shard = 1;
  std::string reshard;
  if (l.dp > 1) {
    if (l.zero == 3) {
      shard = l.dp;
    } else if (l.zero == 2) {
      shard = l.dp;
      reshard = "never";
    } else if (l.zero == 1 || l.distributed_optimizer) {
      shard = l.dp;
      reshard = "never";
      f.lost("ZeRO-1 / distributed optimizer: torchtitan's FSDP also shards gradients (ZeRO-2); exported with "
             "fsdp_reshard_after_forward = \"never\"");
    } else if (!other_parallel) {
      replicate = l.dp;
    } else {
      shard = l.dp;
      reshard = "never";
      f.lost("ZeRO-0 with tensor/pipeline/context parallelism: torchtitan's DDP runs on 1-D meshes only; exported as "
             "FSDP that keeps weights gathered (fsdp_reshard_after_forward = \"never\"), which also shards gradients "
             "and optimizer states");
    }
  }
  toml.num("data_parallel_replicate_degree", replicate);
  toml.num("data_parallel_shard_degree", shard);
  if (!reshard.empty()) toml.str("fsdp_reshard_after_forward", reshard);
  toml.num("tensor_parallel_degree", l.tp);
  if (l.tp_comm_overlap) {
    toml.set("enable_async_tensor_parallel", "true");
    f.note("enable_async_tensor_parallel needs [compile] enable = true");
  }
  toml.num("context_parallel_degree", l.cp);
  if (l.ep > 1) toml.num("expert_parallel_degree", l.ep);
  toml.num("pipeline_parallel_degree", l.pp);
  if (l.pp > 1) {
    const char* schedule = l.schedule == "interleaved" ? "Interleaved1F1B" : l.schedule == "gpipe" ? "GPipe" : "1F1B";
    toml.str("pipeline_parallel_schedule", schedule);
    toml.num("pipeline_parallel_microbatch_size", t.micro_batch);
    toml.text += "module_fqns_per_model_part = [\n";
    for (std::size_t i = 0; i < l.chunks.size(); ++i)
      toml.text += fmt::format("  {}{}\n", chunk_modules(l.chunks[i]), i + 1 < l.chunks.size() ? "," : "");
    toml.text += "]\n";
    f.note("module_fqns_per_model_part uses the module names of torchtitan's decoder models "
           "(tok_embeddings, layers.N, norm, output)");
  }
  if (l.tp > 1 && !l.sequence_parallel)
    f.lost("tensor parallelism without sequence parallelism: torchtitan's tensor parallelism always splits norms "
           "along the sequence (less activation memory, other collectives)");
  if (l.tp > 1) detail::check_megatron_patterns(p, "torchtitan", f);
  detail::check_rank_order(p, "torchtitan", f);

  toml.section("activation_checkpoint");
  toml.str("mode", t.recompute == "full" ? "full" : t.recompute == "selective" ? "selective" : "none");
  if (t.recompute == "selective") toml.str("selective_ac_option", "op");
  if (t.recompute == "selective" && !t.recompute_modules.empty())
    f.lost(fmt::format("recompute modules {}: torchtitan's selective checkpointing picks ops by its own policy "
                       "(selective_ac_option \"op\" keeps matmul outputs), not Megatron's modules (other activation "
                       "memory than planned)",
                       t.recompute_modules));

  toml.section("debug");
  toml.num("seed", t.seed);

  if (t.framework != "fsdp")
    f.note(fmt::format("the plan's prediction models {}'s communication, not torchtitan's (FSDP2)", t.framework));

  std::string header = detail::header(p, fmt::format("torchtitan {} job config", version), options, f);
  std::string out = detail::commented(header, "# ") + toml.text;
  return detail::finish(std::move(out), std::move(f), std::move(header), true);
}

}  // namespace planner::exporters
