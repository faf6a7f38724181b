// Text and JSON output of `planner estimate`.

#include "planner/cli/estimate_report.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "planner/cli/flag_names.hpp"
#include "planner/cli/format.hpp"
#include "planner/cli/train_flags.hpp"

namespace planner::cli {
namespace {

std::string ms(Seconds s) {
  if (s.value >= 1.0) return fmt::format("{:.3f} s", s.value);
  return fmt::format("{:.2f} ms", s.value * 1e3);
}

std::string pct(Seconds part, Seconds whole) {
  return whole.value > 0 ? fmt::format("{:5.1f} %", 100.0 * part.value / whole.value) : std::string("    -");
}

nlohmann::json memory_json(const cost::MemoryBreakdown& m) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& it : m.largest_items())
    items.push_back({{"kind", std::string(cost::memory_kind_name(it.kind))}, {"bytes", it.bytes.value}, {"label", it.label}});
  return items;
}

}  // namespace

void print_estimate(const estimate::Estimate& e, const ReportContext& ctx) {
  const auto& c = e.config;
  fmt::print("model        {} ({} parameters)\n", ctx.model_path, human_count(static_cast<double>(e.parameters)));
  fmt::print("cluster      {} x {} ({} per node{}){}\n", c.devices(), ctx.profile.name, c.devices_per_node,
             fabric_note(ctx.profile), ctx.profile.overrides.empty() ? "" : fmt::format(" [{}]", ctx.profile.overrides));
  fmt::print("layout       {}\n", estimate::describe(c));
  const std::string modules = ctx.train.recompute == "selective" ? ctx.train.modules_text() : "";
  fmt::print("training     {}, attention {}, recompute {}{}, framework {}\n", ctx.train.precision, ctx.train.attention,
             ctx.train.recompute, modules.empty() ? "" : " (" + modules + ")", estimate::framework_name(c.framework));
  if (!ctx.train.defaults_note.empty()) fmt::print("defaults     {}\n", ctx.train.defaults_note);
  fmt::print("\nstep time    {}", ms(e.step_time));
  if (e.straggler.value > 0)
    fmt::print("   (mean; median {}, p95 {} over the device spread)", ms(e.step_time_p50), ms(e.step_time_p95));
  fmt::print("\n");
  const Seconds T = e.step_time;
  fmt::print("  compute (forward + backward)     {:>12}  {}\n", ms(e.compute), pct(e.compute, T));
  if (e.recompute.value > 0) fmt::print("  recompute                        {:>12}  {}\n", ms(e.recompute), pct(e.recompute, T));
  fmt::print("    by op class (incl. recompute):\n");
  for (const auto& [k, v] : e.compute_by_class) fmt::print("      {:<28} {:>12}  {}\n", k, ms(v), pct(v, T));
  for (const auto& [k, v] : e.model_parallel.by_kind)
    fmt::print("  model-parallel {:<17} {:>12}  {}\n", k, ms(v), pct(v, T));
  if (e.zero3_exposed.value > 0)
    fmt::print("  ZeRO-3 gathers, exposed          {:>12}  {}\n", ms(e.zero3_exposed), pct(e.zero3_exposed, T));
  if (e.grad_accumulation.value > 0)
    fmt::print("  gradient accumulation passes     {:>12}  {}\n", ms(e.grad_accumulation), pct(e.grad_accumulation, T));
  if (c.pp > 1) fmt::print("  pipeline bubble (incl. p2p)      {:>12}  {}\n", ms(e.bubble), pct(e.bubble, T));
  if (e.dp_total.value > 0 && e.zero3_exposed.value == 0)
    fmt::print("  data-parallel sync, exposed      {:>12}  {}   (of {} in all)\n", ms(e.dp_exposed), pct(e.dp_exposed, T),
               ms(e.dp_total));
  fmt::print("  optimizer step                   {:>12}  {}\n", ms(e.optimizer), pct(e.optimizer, T));
  if (e.straggler.value > 0)
    fmt::print("  {:<32} {:>12}  {}\n", fmt::format("slowest of {} devices (expected)", c.devices()), ms(e.straggler),
               pct(e.straggler, T));
  fmt::print("\nthroughput   {:.1f} model TFLOP/s per device, MFU {:.1f} %", e.model_tflops_per_device, 100 * e.mfu);
  if (e.hfu > e.mfu * 1.0001) fmt::print(", HFU {:.1f} %", 100 * e.hfu);
  fmt::print("\n\nmemory per device (capacity {}; peak reserved, of it allocated)\n", human_bytes(e.capacity));
  for (const auto& s : e.stages) {
    fmt::print("  stage {:<3} {:>12}  {}  ({} allocated; {} params, {:.1f} micro-batches in flight)\n", s.stage,
               human_bytes(s.peak()),
               s.allocated() > e.capacity                             ? "DOES NOT FIT"
               : s.peak() > e.capacity * (1.0 - e.memory_margin) ? "at risk"
                                                                 : "fits",
               human_bytes(s.allocated()), human_count(s.parameters), s.in_flight);
  }
  const auto& worst = e.peak_stage();
  fmt::print("  largest items on stage {}:\n", worst.stage);
  int shown = 0;
  for (const auto& it : worst.breakdown.largest_items()) {
    if (++shown > 6) break;
    fmt::print("    {:<24} {:>12}  {}\n", cost::memory_kind_name(it.kind), human_bytes(it.bytes), it.label);
  }
  if (e.fits && e.memory_status() == "at risk")
    fmt::print("\nAT RISK: {} on stage {} is within the profile's {:.0f} % memory margin of the {} available "
               "(the margin covers what the memory prediction misses; `search --memory-margin`).\n",
               human_bytes(worst.peak()), worst.stage, 100 * e.memory_margin, human_bytes(e.capacity));
  if (!e.fits) {
    fmt::print("\nDOES NOT FIT: {} needed on stage {} (allocated, without the allocator's fragmentation), {} available.\n",
               human_bytes(worst.allocated()), worst.stage, human_bytes(e.capacity));
    if (e.advice.empty()) fmt::print("no single change found that shrinks it\n");
    std::size_t width = 28;
    for (const auto& a : e.advice) width = std::max(width, with_flags(a.change).size());
    for (const auto& a : e.advice)
      fmt::print("  {:<{}} saves {:>12}{}\n", with_flags(a.change), width, human_bytes(a.saves), a.fits ? "  -> fits" : "");
  }
  for (const auto& n : e.notes) fmt::print("note: {}\n", with_flags(n));
  for (const auto& n : ctx.import_notes) fmt::print("note: {}\n", n);
}

nlohmann::json estimate_json(const estimate::Estimate& e, const ReportContext& ctx) {
  const auto& c = e.config;
  nlohmann::json j;
  j["format"] = "planner.estimate/v1";
  j["model"] = {{"path", ctx.model_path}, {"parameters", e.parameters}};
  j["cluster"] = {{"profile", ctx.profile.name},
                  {"profile_hash", ctx.profile.content_hash},
                  {"devices", c.devices()},
                  {"devices_per_node", c.devices_per_node},
                  {"overrides", ctx.profile.overrides}};
  // The fabric across nodes where the profile (or an override) describes it.
  const auto& fabric = ctx.profile.interconnect.inter_node();
  if (fabric.nodes_per_leaf && fabric.oversubscription) {
    j["cluster"]["nodes_per_leaf"] = *fabric.nodes_per_leaf;
    j["cluster"]["oversubscription"] = *fabric.oversubscription;
  }
  if (fabric.collnet) j["cluster"]["collnet"] = true;
  j["layout"] = {{"dp", c.dp},
                 {"tp", c.tp},
                 {"pp", c.pp},
                 {"cp", c.cp},
                 {"ep", c.ep},
                 {"vp", c.vp},
                 {"sequence_parallel", c.sequence_parallel},
                 {"micro_batch", c.micro_batch},
                 {"global_batch", c.global_batch},
                 {"micro_batches", e.micro_batches},
                 {"schedule", std::string(sim::schedule_name(c.schedule))},
                 {"zero", c.zero},
                 {"distributed_optimizer", c.distributed_optimizer},
                 {"optimizer", std::string(cost::optimizer_name(c.optimizer))},
                 {"framework", std::string(estimate::framework_name(c.framework))}};
  j["training"] = {{"precision", ctx.train.precision}, {"attention", ctx.train.attention}, {"recompute", ctx.train.recompute}};
  if (ctx.train.recompute == "selective" && !ctx.train.modules_text().empty())
    j["training"]["recompute_modules"] = ctx.train.modules_text();
  if (!ctx.train.defaults_note.empty()) j["training"]["defaults_note"] = ctx.train.defaults_note;
  j["step_time_s"] = e.step_time.value;
  j["step_time_p50_s"] = e.step_time_p50.value;
  j["step_time_p95_s"] = e.step_time_p95.value;
  nlohmann::json mp = nlohmann::json::object();
  for (const auto& [k, v] : e.model_parallel.by_kind) mp[k] = v.value;
  j["breakdown_s"] = {{"compute", e.compute.value},
                      {"recompute", e.recompute.value},
                      {"model_parallel", mp},
                      {"zero3_exposed", e.zero3_exposed.value},
                      {"grad_accumulation", e.grad_accumulation.value},
                      {"bubble", e.bubble.value},
                      {"data_parallel_exposed", e.dp_exposed.value},
                      {"data_parallel_total", e.dp_total.value},
                      {"optimizer", e.optimizer.value},
                      {"straggler", e.straggler.value},
                      {"pipeline_p2p_per_transfer", e.pipeline_p2p.value}};
  nlohmann::json by_class = nlohmann::json::object();
  for (const auto& [k, v] : e.compute_by_class) by_class[k] = v.value;
  j["breakdown_s"]["compute_by_class"] = by_class;
  j["throughput"] = {{"model_flops_per_step", e.model_flops.value},
                     {"hardware_flops_per_step", e.hardware_flops.value},
                     {"model_tflops_per_device", e.model_tflops_per_device},
                     {"hardware_tflops_per_device", e.hardware_tflops_per_device},
                     {"mfu", e.mfu},
                     {"hfu", e.hfu},
                     {"samples_per_s", e.step_time.value > 0 ? static_cast<double>(c.global_batch) / e.step_time.value : 0.0}};
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : e.stages)
    stages.push_back({{"stage", s.stage},
                      {"peak_bytes", s.peak().value},
                      {"allocated_bytes", s.allocated().value},
                      {"fits", s.allocated() <= e.capacity},
                      {"parameters", s.parameters},
                      {"micro_batches_in_flight", s.in_flight},
                      {"items", memory_json(s.breakdown)}});
  nlohmann::json chunks = nlohmann::json::array();
  for (const auto& ch : e.chunks)
    chunks.push_back({{"first_layer", ch.first_layer},
                      {"last_layer", ch.last_layer},
                      {"embedding", ch.has_embedding},
                      {"head", ch.has_head},
                      {"forward_s", ch.forward_compute.value},
                      {"backward_s", ch.backward_compute.value},
                      {"recompute_s", ch.recompute.value},
                      {"model_parallel_comm_s", ch.model_parallel_comm.value},
                      {"zero3_exposed_s", ch.zero3_exposed.value},
                      {"grad_accumulation_s", ch.grad_accumulation.value}});
  nlohmann::json advice = nlohmann::json::array();
  for (const auto& a : e.advice) advice.push_back({{"change", with_flags(a.change)}, {"saves_bytes", a.saves.value}, {"fits", a.fits}});
  j["memory"] = {{"capacity_bytes", e.capacity.value},
                 {"peak_bytes", e.peak_stage().peak().value},
                 {"allocated_bytes", e.peak_stage().allocated().value},
                 {"peak_stage", e.peak_stage().stage},
                 {"fits", e.fits},
                 {"margin_fraction", e.memory_margin},
                 {"status", e.memory_status()},
                 {"stages", stages},
                 {"advice", advice}};
  j["chunks"] = chunks;
  j["sharding"] = e.sharding;
  nlohmann::json notes = nlohmann::json::array();
  for (const auto& n : e.notes) notes.push_back(with_flags(n));
  for (const auto& n : ctx.import_notes) notes.push_back(n);
  j["notes"] = notes;
  return j;
}

}  // namespace planner::cli
