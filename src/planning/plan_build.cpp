// Builds a plan file (planner.plan/v1) from an estimate and what produced it.

#include "planner/planning/plan_build.hpp"

#include <fmt/format.h>

#include "planner/sim/schedule.hpp"

namespace planner::planning {

Result<plan::Plan> build_plan(const estimate::Estimate& e, const PlanSources& src) {
  const auto& c = e.config;
  plan::Plan p;
  p.producer.version = "0.1.0";
  p.producer.command = src.command;
  p.producer.search_time_s = src.search_time_s;
  p.producer.layouts_scored = src.layouts_scored;

  p.model.path = src.model_path;
  p.model.sha256 = src.model_sha256;
  p.model.parameters = e.parameters;
  p.model.dims = src.import.dims;
  p.model.batch = c.micro_batch;
  p.model.params_from_inputs = src.import.params_from_inputs;
  p.model.shared_weights = e.shared_weights;

  p.cluster.profile = src.profile.name;
  p.cluster.profile_hash = src.profile.content_hash;
  p.cluster.devices = c.devices();
  p.cluster.devices_per_node = c.devices_per_node;
  p.cluster.overrides = src.profile.overrides;

  auto& t = p.training;
  t.global_batch = c.global_batch;
  t.micro_batch = c.micro_batch;
  t.micro_batches = e.micro_batches;
  t.optimizer.name = std::string(cost::optimizer_name(c.optimizer));
  t.optimizer.state_dtype = std::string(estimate::optimizer_state_dtype_name(c.optimizer_state_bytes));
  t.optimizer.master_weights = std::string(cost::master_weights_name(c.master_weights));
  t.precision = src.precision;
  if (src.precision == "bf16" || src.precision == "fp16") {
    t.precision_by_class = {{"embedding", "fp32"}, {"loss", "fp32"}};
  } else if (src.precision == "fp8") {
    t.precision = "bf16";
    t.precision_by_class = {{"embedding", "fp32"}, {"loss", "fp32"}, {"matmul", "fp8"}};
  }
  t.recompute = src.recompute;
  if (src.recompute == "selective") t.recompute_modules = src.recompute_modules;
  t.attention = src.attention;
  t.framework = std::string(estimate::framework_name(c.framework));
  t.seed = src.seed;
  t.fused_loss = c.fused_loss;
  t.grad_reduce_bytes = c.grad_reduce_bytes;
  t.memory_format = src.memory_format;

  auto& l = p.layout;
  l.dp = c.dp;
  l.tp = c.tp;
  l.pp = c.pp;
  l.cp = c.cp;
  l.ep = c.ep;
  l.vp = c.vp;
  l.sequence_parallel = c.sequence_parallel;
  l.zero = c.zero;
  l.distributed_optimizer = c.distributed_optimizer;
  l.tp_comm_overlap = c.tp_comm_overlap;
  l.tp_splits_batch = c.tp_splits_batch;
  l.schedule = std::string(sim::schedule_name(c.schedule));
  // Megatron's rank order: tp fastest, then cp, dp, pp.
  l.mesh = {{"pp", c.pp, c.dp * c.cp * c.tp}, {"dp", c.dp, c.cp * c.tp}, {"cp", c.cp, c.tp}, {"tp", c.tp, 1}};
  for (std::size_t i = 0; i < e.chunks.size(); ++i) {
    const auto& ch = e.chunks[i];
    plan::Chunk pc;
    pc.index = static_cast<int>(i);
    pc.pipeline_rank = static_cast<int>(i) % c.pp;
    pc.devices = plan::stage_devices(l, pc.pipeline_rank);
    pc.first_layer = ch.first_layer;
    pc.last_layer = ch.last_layer;
    pc.embedding = ch.has_embedding;
    pc.head = ch.has_head;
    if (i < e.chunk_ops.size()) pc.ops = e.chunk_ops[i];
    l.chunks.push_back(std::move(pc));
  }
  // The schedule and the timeline are the estimate's own simulation.
  if (!e.timeline) return make_error("internal: the estimate was made without its timeline (EstimateOptions::timeline)");
  for (const auto& dev : e.timeline->orders) {
    std::vector<plan::ScheduleStep> steps;
    for (const auto& s : dev)
      steps.push_back({s.kind == sim::StepKind::forward ? 'F' : 'B', s.micro_batch, s.chunk});
    l.schedule_steps.push_back(std::move(steps));
  }
  for (const auto& u : e.units) {
    plan::OpStrategy os;
    os.unit = u.unit;
    os.instances = u.instances;
    os.ops = u.ops;
    os.family = u.family;
    os.strategy = u.strategy;
    os.assignment = u.assignment;
    os.inputs = u.inputs;
    os.outputs = u.outputs;
    for (const auto& uc : u.collectives)
      os.collectives.push_back({uc.kind, uc.axis, uc.group_size, uc.bytes.value, uc.count, uc.backward, uc.per_step, uc.where});
    l.strategies.push_back(std::move(os));
  }

  auto& pr = p.prediction;
  pr.step_time_s = e.step_time.value;
  pr.breakdown_s = {{"compute", e.compute.value},
                    {"recompute", e.recompute.value},
                    {"zero3_exposed", e.zero3_exposed.value},
                    {"grad_accumulation", e.grad_accumulation.value},
                    {"bubble", e.bubble.value},
                    {"data_parallel_exposed", e.dp_exposed.value},
                    {"data_parallel_total", e.dp_total.value},
                    {"optimizer", e.optimizer.value}};
  for (const auto& [k, v] : e.model_parallel.by_kind) pr.breakdown_s["model_parallel." + k] = v.value;
  pr.model_tflops_per_device = e.model_tflops_per_device;
  pr.hardware_tflops_per_device = e.hardware_tflops_per_device;
  pr.mfu = e.mfu;
  pr.hfu = e.hfu;
  pr.capacity_bytes = e.capacity.value;
  pr.fits = e.fits;
  for (const auto& s : e.stages) {
    plan::StageMemory sm;
    sm.stage = s.stage;
    sm.peak_bytes = s.peak().value;
    sm.fits = s.allocated() <= e.capacity;  // the allocated peak must fit (estimate.hpp)
    sm.parameters = s.parameters;
    sm.micro_batches_in_flight = s.in_flight;
    for (const auto& it : s.breakdown.largest_items())
      sm.items.push_back({std::string(cost::memory_kind_name(it.kind)), it.bytes.value, it.label});
    pr.stages.push_back(std::move(sm));
  }
  pr.lower_bound_s = src.lower_bound_s > 0 ? src.lower_bound_s : e.speed_of_light.value;
  pr.gap = pr.lower_bound_s > 0 ? e.step_time.value / pr.lower_bound_s - 1.0 : 0.0;
  pr.alternatives = src.alternatives;
  pr.timeline = plan_timeline(*e.timeline);
  return p;
}

std::vector<plan::StageTimeline> plan_timeline(const estimate::StepTimeline& tl) {
  std::vector<plan::StageTimeline> out(static_cast<std::size_t>(tl.stages));
  for (int r = 0; r < tl.stages; ++r) out[static_cast<std::size_t>(r)].stage = r;
  for (const auto& s : tl.spans)
    out[static_cast<std::size_t>(s.stage)].spans.push_back(
        {std::string(estimate::stream_name(s.stream)), std::string(estimate::span_kind_name(s.kind)), s.micro_batch,
         s.chunk, s.peer, s.start.value, s.end.value});
  return out;
}

}  // namespace planner::planning
