// MindSpore: the plan as a Python snippet (semi-auto parallel): the
// set_auto_parallel_context(...) call, the pipeline stage of every layer, a
// wrapper for micro-batches, and every op's shard() strategy in MindSpore's
// tuple form; plus, on request, the same strategies as a JSON strategy file
// (planner.mindspore-strategy/v1). docs/export.md has the mapping table.

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "internal.hpp"

namespace planner::exporters {

namespace {

/// Python tuple text: ((1, 1, 1), (1, 2)); a one-element tuple keeps its comma.
std::string py_tuple(const std::vector<std::vector<long long>>& s) {
  auto one = [](const std::vector<long long>& t) {
    if (t.size() == 1) return fmt::format("({},)", t.front());
    return fmt::format("({})", fmt::join(t, ", "));
  };
  std::vector<std::string> parts;
  for (const auto& t : s) parts.push_back(one(t));
  if (parts.size() == 1) return fmt::format("({},)", parts.front());
  return fmt::format("({})", fmt::join(parts, ", "));
}

std::string json_lists(const std::vector<std::vector<long long>>& s) {
  std::vector<std::string> parts;
  for (const auto& t : s) parts.push_back(fmt::format("[{}]", fmt::join(t, ", ")));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

/// JSON/Python string literal (op names are plain, but quotes and
/// backslashes are escaped all the same).
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<int>(c));
    else out += c;
  }
  return out + "\"";
}

}  // namespace

Result<Export> to_mindspore(const plan::Plan& p, const Options& options) {
  PLANNER_TRY(const std::string version, detail::pick_version(Framework::mindspore, options));
  const auto& l = p.layout;
  const auto& t = p.training;
  detail::Findings f;

  // The context call, one keyword per line.
  std::vector<std::string> kw;
  kw.push_back("parallel_mode=\"semi_auto_parallel\"");
  kw.push_back(fmt::format("device_num={}", p.cluster.devices));
  // Each data-parallel rank loads its own share of the batch.
  kw.push_back("full_batch=False");
  if (l.pp > 1) {
    kw.push_back(fmt::format("pipeline_stages={}", l.pp));
    const bool interleave = l.vp > 1;
    kw.push_back(fmt::format("pipeline_config={{\"pipeline_interleave\": {}, \"pipeline_scheduler\": \"{}\"}}",
                             interleave ? "True" : "False", l.schedule == "gpipe" ? "gpipe" : "1f1b"));
  }
  const bool shard_optimizer = l.zero >= 1 || l.distributed_optimizer;
  kw.push_back(fmt::format("enable_parallel_optimizer={}", shard_optimizer ? "True" : "False"));
  if (shard_optimizer) {
    kw.push_back(fmt::format("parallel_optimizer_config={{\"gradient_accumulation_shard\": {}, \"optimizer_weight_shard_size\": {}}}",
                             l.zero >= 2 ? "True" : "False", l.dp));
    if (l.zero < 3)
      f.lost(fmt::format("ZeRO-{}: MindSpore's parallel optimizer also shards the weights (gathered before use, as ZeRO-3); "
                         "memory and traffic differ from the plan", std::max(1, l.zero)));
  }
  kw.push_back(fmt::format("gradient_fp32_sync={}", t.grad_reduce_bytes == 2 ? "False" : "True"));

  // Plan features outside the context.
  if (l.cp > 1)
    f.lost(fmt::format("context parallelism cp={}: not a set_auto_parallel_context setting; give the attention ops a "
                       "sequence split by hand", l.cp));
  if (l.ep > 1)
    f.lost(fmt::format("expert parallelism ep={}: not a set_auto_parallel_context setting; set it in the MoE layers' "
                       "configuration", l.ep));
  if (detail::fp8_matmuls(p)) f.lost("fp8 GEMMs: MindSpore's auto mixed precision has no fp8 level; use bf16");
  detail::check_precision_by_class(p, "MindSpore", f);
  detail::check_optimizer_precision(p, "MindSpore", f);
  if (t.precision == "bf16" || t.precision == "fp16" || t.precision == "fp8")
    f.note(fmt::format("precision {}: cast the network with mindspore.amp (e.g. amp_level \"O2\" in {})",
                       t.precision == "fp16" ? "fp16" : "bf16", t.precision == "fp16" ? "float16" : "bfloat16"));
  if (t.recompute == "full") f.note("recompute full: call .recompute() on every transformer layer cell");
  else if (t.recompute == "selective" && t.recompute_modules.empty())
    f.note("recompute selective: call .recompute() on the attention core of every layer");
  else if (t.recompute == "selective")
    f.note(fmt::format("recompute selective ({}): call .recompute() on those parts of every layer (attention core, "
                       "norms, experts' activation)",
                       t.recompute_modules));
  if (l.tp_comm_overlap) f.note("tp_comm_overlap: MindSpore overlaps communication on its own (no setting)");

  std::string py = "import mindspore as ms\nfrom mindspore import nn\n\n";
  py += "ms.set_auto_parallel_context(\n";
  for (std::size_t i = 0; i < kw.size(); ++i) py += fmt::format("    {}{}\n", kw[i], i + 1 < kw.size() ? "," : "");
  py += ")\n\n";

  // Micro-batches: PipelineCell with a pipeline, GradAccumulationCell without.
  py += "def wrap_network(net):\n";
  py += fmt::format("    \"\"\"The plan's {} micro-batches of {} samples per step and data-parallel replica.\"\"\"\n",
                    t.micro_batches, t.micro_batch);
  if (l.pp > 1) py += fmt::format("    return nn.PipelineCell(net, micro_size={})\n", t.micro_batches);
  else if (t.micro_batches > 1) py += fmt::format("    return nn.GradAccumulationCell(net, micro_size={})\n", t.micro_batches);
  else py += "    return net\n";
  py += "\n";

  // Stage (and segment, with interleaving) of every repeated layer: cell.pipeline_stage = ...
  if (l.pp > 1) {
    py += "# Pipeline stage of each repeated layer: layer_cell.pipeline_stage = stage";
    py += l.vp > 1 ? " (and .pipeline_segment = segment)\n" : "\n";
    py += "LAYER_STAGES = {\n";
    for (const auto& c : l.chunks)
      for (int i = c.first_layer; i <= c.last_layer; ++i)
        py += l.vp > 1 ? fmt::format("    {}: ({}, {}),\n", i, c.pipeline_rank, c.index / l.pp)
                       : fmt::format("    {}: {},\n", i, c.pipeline_rank);
    py += "}\n";
    py += fmt::format("# embedding on stage {}, output head and loss on stage {}\n\n",
                      l.chunks.empty() ? 0 : l.chunks.front().pipeline_rank,
                      l.chunks.empty() ? 0 : l.chunks.back().pipeline_rank);
  }

  // shard() strategies.
  py += "# shard() strategy of each op (the plan's units; copies of a repeated layer share one):\n";
  py += "#   ops.<Primitive>().shard(SHARD_STRATEGIES[name])\n";
  py += "SHARD_STRATEGIES = {\n";
  std::string sf = "{\n  \"format\": \"planner.mindspore-strategy/v1\",\n";
  sf += fmt::format("  \"device_num\": {},\n  \"pipeline_stages\": {},\n  \"strategies\": [", p.cluster.devices, l.pp);
  bool first = true;
  for (const auto& s : l.strategies) {
    auto parsed = detail::parse_strategy(s.strategy);
    if (!parsed) return make_error("layout.strategies unit {}: {}", s.unit, parsed.error().message);
    py += fmt::format("    {}: {},  # {} {}{}\n", quoted(s.unit), py_tuple(*parsed), s.family,
                      s.assignment.empty() ? "replicated" : s.assignment,
                      s.instances.size() > 1 ? fmt::format(", {} copies", s.instances.size()) : "");
    sf += first ? "\n" : ",\n";
    first = false;
    std::vector<std::string> inst;
    for (const auto& i : s.instances) inst.push_back(quoted(i));
    sf += fmt::format("    {{\"unit\": {}, \"family\": {}, \"strategy\": {}, \"instances\": [{}]}}", quoted(s.unit),
                      quoted(s.family), json_lists(*parsed), fmt::join(inst, ", "));
  }
  py += "}\n";
  sf += first ? "]\n}\n" : "\n  ]\n}\n";

  f.note(fmt::format("the plan's prediction models {}'s communication, not MindSpore's", t.framework));

  std::string header = detail::header(p, fmt::format("MindSpore {} auto-parallel settings", version), options, f);
  std::string out = detail::commented(header, "# ") + py;
  return detail::finish(std::move(out), std::move(f), std::move(header), true, std::move(sf));
}

}  // namespace planner::exporters
