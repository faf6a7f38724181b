// planner inspect MODEL.onnx [--json]: what the importer made of a model.

#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "planner/cli/command.hpp"
#include "planner/cli/terminal.hpp"
#include "planner/cli/format.hpp"
#include "planner/cli/import_flags.hpp"
#include "planner/planning/model_source.hpp"
#include "planner/core/dtype.hpp"
#include "planner/cost/memory.hpp"
#include "planner/onnx/importer.hpp"

namespace planner::cli {
namespace {

struct InspectArgs {
  std::string model;
  ImportFlags import;
  bool json = false;
};

/// A parameter more than one op reads (cost::parameter_readers): a tied
/// weight, e.g. an LM head reading the token embedding.
struct SharedParameter {
  std::string name;
  std::vector<std::string> readers;
};

// Megatron recompute-module units (graph::find_recompute_modules): norms
// (layernorm) and experts' activations (moe_act).
std::pair<std::size_t, std::size_t> module_units(const graph::OpGraph& g) {
  std::set<int> norms, acts;
  for (const auto& op : g.ops()) {
    if (op.norm_unit) norms.insert(*op.norm_unit);
    if (op.expert_act_unit) acts.insert(*op.expert_act_unit);
  }
  return {norms.size(), acts.size()};
}

std::vector<SharedParameter> shared_parameters(const graph::OpGraph& g) {
  std::vector<SharedParameter> out;
  for (std::uint32_t i = 0; i < g.num_tensors(); ++i) {
    const graph::TensorId id{i};
    const auto& t = g.tensor(id);
    if (t.role != graph::TensorRole::parameter || !core::is_floating(t.dtype)) continue;
    const auto readers = cost::parameter_readers(g, id);
    if (readers.size() < 2) continue;
    SharedParameter p{t.name, {}};
    for (auto r : readers) p.readers.push_back(g.op(r).name);
    out.push_back(std::move(p));
  }
  return out;
}

nlohmann::json to_json(const onnx::ImportedModel& m) {
  const auto& g = m.graph;
  auto t = graph::totals(g);
  const auto batch = planning::graph_batch(g);
  nlohmann::json j;
  j["format"] = "planner.inspect/v1";
  j["model"] = m.path;
  j["producer"] = {{"name", g.info.producer_name}, {"version", g.info.producer_version}};
  j["ir_version"] = g.info.ir_version;
  nlohmann::json opsets = nlohmann::json::object();
  for (const auto& [d, v] : g.info.opsets) opsets[d.empty() ? "ai.onnx" : d] = v;
  j["opsets"] = opsets;
  j["batch"] = batch;
  j["ops"] = g.num_ops();
  j["tensors"] = g.num_tensors();
  j["parameters"] = {{"count", t.parameter_count}, {"bytes", t.parameter_bytes.value}};
  j["flops"] = {{"forward", t.forward_flops.value},
                {"training", t.training_flops.value},
                {"forward_per_sample", t.forward_flops.value / static_cast<double>(batch)},
                {"training_per_sample", t.training_flops.value / static_cast<double>(batch)}};
  j["activation_bytes"] = t.activation_bytes.value;
  j["op_histogram"] = t.op_histogram;
  j["ops_without_semantics"] = t.unknown_ops;
  nlohmann::json blocks = nlohmann::json::array();
  for (const auto& b : g.blocks)
    blocks.push_back({{"count", b.count}, {"ops_per_block", b.ops_per_block},
                      {"first_layer", b.first_layer}, {"signature", b.signature}});
  j["repeated_blocks"] = blocks;
  nlohmann::json att = nlohmann::json::array();
  for (const auto& f : g.fused)
    att.push_back({{"ops", f.ops.size()}, {"batch", f.batch}, {"heads", f.heads}, {"seq_q", f.seq_q},
                   {"seq_k", f.seq_k}, {"head_dim", f.head_dim}, {"score_bytes", f.score_bytes.value}});
  j["attention_patterns"] = att;
  nlohmann::json shared = nlohmann::json::array();
  for (const auto& p : shared_parameters(g)) shared.push_back({{"parameter", p.name}, {"readers", p.readers}});
  j["shared_parameters"] = shared;
  const auto [norms, acts] = module_units(g);
  j["recompute_modules"] = {{"layernorm", norms}, {"moe_act", acts}};
  nlohmann::json dis = nlohmann::json::array();
  for (const auto& d : m.report.disagreements)
    dis.push_back({{"tensor", d.tensor}, {"declared", d.declared}, {"computed", d.computed}});
  j["declared_shape_disagreements"] = dis;
  j["notes"] = m.report.notes;
  return j;
}

std::string dims_text(const std::vector<std::int64_t>& d) {
  std::string s = "[";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + (d[i] < 0 ? std::string("?") : std::to_string(d[i]));
  return s + "]";
}

void print_table(const onnx::ImportedModel& m) {
  const auto& g = m.graph;
  auto t = graph::totals(g);
  const auto batch = planning::graph_batch(g);
  std::string opsets;
  for (const auto& [d, v] : g.info.opsets) opsets += fmt::format("{}{}={}", opsets.empty() ? "" : " ", d.empty() ? "ai.onnx" : d, v);
  fmt::print("model        {}\n", m.path);
  fmt::print("producer     {} {} (IR {}; opsets {})\n", g.info.producer_name.empty() ? "?" : g.info.producer_name,
             g.info.producer_version, g.info.ir_version, opsets);
  fmt::print("graph        {} ops, {} tensors, batch {}\n", g.num_ops(), g.num_tensors(), batch);
  fmt::print("parameters   {} ({})\n", human_count(static_cast<double>(t.parameter_count)), human_bytes(t.parameter_bytes));
  fmt::print("FLOPs/sample forward {}, training {}\n", human_flops(t.forward_flops / static_cast<double>(batch)),
             human_flops(t.training_flops / static_cast<double>(batch)));
  fmt::print("activations  {} (all op outputs, batch {})\n", human_bytes(t.activation_bytes), batch);
  if (g.blocks.empty()) fmt::print("blocks       none repeated\n");
  for (const auto& b : g.blocks) {
    auto sig = b.signature.size() > 60 ? b.signature.substr(0, 57) + "..." : b.signature;
    fmt::print("blocks       {} x {} ops (layers {}-{}): {}\n", b.count, b.ops_per_block, b.first_layer,
               b.first_layer + b.count - 1, sig);
  }
  fmt::print("attention    {} pattern(s)\n", g.fused.size());
  if (const auto [norms, acts] = module_units(g); norms + acts > 0)
    fmt::print("recompute    --recompute-modules units: layernorm {} norm(s), moe_act {} expert activation(s)\n", norms,
               acts);
  for (const auto& p : shared_parameters(g)) {
    std::string readers;
    for (const auto& r : p.readers) readers += (readers.empty() ? "" : ", ") + r;
    fmt::print("shared       {} (read by {})\n", p.name, readers);
  }
  fmt::print("\nop histogram\n");
  std::vector<std::pair<std::string, int>> hist(t.op_histogram.begin(), t.op_histogram.end());
  std::stable_sort(hist.begin(), hist.end(), [](auto& a, auto& b) { return a.second > b.second; });
  for (const auto& [k, n] : hist) fmt::print("  {:<36} {:>7}{}\n", k, n, t.unknown_ops.count(k) ? "  (no semantics: memory-bound)" : "");
  if (!t.unknown_ops.empty()) {
    fmt::print("\nops without semantics (costed as memory-bound from their tensor sizes):\n");
    for (const auto& [k, n] : t.unknown_ops) fmt::print("  {} x{}\n", k, n);
  }
  if (!m.report.disagreements.empty()) {
    fmt::print("\ndeclared shapes that disagree with the computed ones (computed shapes are used):\n");
    for (const auto& d : m.report.disagreements)
      fmt::print("  {}: declared {}, computed {}\n", d.tensor, dims_text(d.declared), dims_text(d.computed));
  }
  for (const auto& n : m.report.notes) fmt::print("note: {}\n", n);
}

}  // namespace

Runner setup_inspect(CLI::App& sub) {
  auto args = std::make_shared<InspectArgs>();
  sub.add_option("model", args->model, "ONNX model file")->required();
  args->import.add_to(sub);
  sub.add_flag("--json", args->json, "Print JSON (format planner.inspect/v1, see docs/inspect-json.md)");
  return [args, &sub]() -> int {
    auto opts = args->import.options();
    if (!opts) return fail("inspect", opts.error().message);
    const auto t0 = std::chrono::steady_clock::now();
    ProgressLine progress(progress_wanted(sub));
    progress.set("importing " + args->model);
    auto m = onnx::import_file(args->model, *opts);
    progress.finish();
    if (!m) return fail("inspect", m.error().message);
    log_step(sub, "imported " + args->model, t0);
    if (verbosity_of(sub) == Verbosity::quiet && !args->json) m->report.notes.clear();
    if (args->json) fmt::print("{}\n", to_json(*m).dump(2));
    else print_table(*m);
    return kExitOk;
  };
}

}  // namespace planner::cli
