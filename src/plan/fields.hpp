#pragma once
// The JSON fields of every plan struct, each named once: plan_read.cpp
// reads them and plan_write.cpp writes them through these lists, in this
// order (the canonical key order; the order in which a reader reports the
// first missing field). Not public.
//
// A visitor `v` has
//   v.req(key, field)           required
//   v.opt(key, field)           may be absent when read; always written
//                               (a std::optional: when it holds a value)
//   v.opt(key, field, written)  may be absent when read; written only when
//                               `written` (a default left out of the file)
//   v.devices(key, chunk)       Chunk::devices: may be absent when read (plans
//                               before it), never empty; written as the
//                               stage's mesh ranks when empty

#include <concepts>
#include <string_view>
#include <type_traits>
#include <vector>

#include "planner/plan/plan.hpp"

namespace planner::plan::detail {

/// S is T or const T: one list serves the reader (T&) and the writer (const T&).
template <class S, class T>
concept Is = std::same_as<std::remove_const_t<S>, T>;

template <class V, Is<Producer> S>
void fields(V& v, S& p) {
  v.req("tool", p.tool);
  v.req("version", p.version);
  v.req("command", p.command);
  v.opt("search_time_s", p.search_time_s);
  v.opt("layouts_scored", p.layouts_scored);
}

template <class V, Is<ModelIdentity> S>
void fields(V& v, S& m) {
  v.req("path", m.path);
  v.req("sha256", m.sha256);
  v.req("parameters", m.parameters);
  v.opt("dims", m.dims);
  v.opt("batch", m.batch);
  v.opt("params_from_inputs", m.params_from_inputs);
  v.opt("shared_weights", m.shared_weights);
}

template <class V, Is<Cluster> S>
void fields(V& v, S& c) {
  v.req("profile", c.profile);
  v.req("profile_hash", c.profile_hash);
  v.req("devices", c.devices);
  v.req("devices_per_node", c.devices_per_node);
  v.opt("overrides", c.overrides);
}

template <class V, Is<OptimizerSettings> S>
void fields(V& v, S& s) {
  v.req("name", s.name);
  v.req("learning_rate", s.learning_rate);
  v.req("beta1", s.beta1);
  v.req("beta2", s.beta2);
  v.req("epsilon", s.epsilon);
  v.req("weight_decay", s.weight_decay);
  v.req("momentum", s.momentum);
  // Written only when not the default, so plans without them stay as they were.
  v.opt("state_dtype", s.state_dtype, s.state_dtype != "fp32");
  v.opt("master_weights", s.master_weights, s.master_weights != "fp32");
}

template <class V, Is<Training> S>
void fields(V& v, S& t) {
  v.req("global_batch", t.global_batch);
  v.req("micro_batch", t.micro_batch);
  v.req("micro_batches", t.micro_batches);
  v.req("optimizer", t.optimizer);
  v.req("precision", t.precision);
  v.opt("precision_by_class", t.precision_by_class);
  v.req("recompute", t.recompute);
  v.opt("recompute_modules", t.recompute_modules, !t.recompute_modules.empty());
  v.req("attention", t.attention);
  v.req("framework", t.framework);
  v.req("seed", t.seed);
  v.opt("fused_loss", t.fused_loss);
  v.opt("grad_reduce_bytes", t.grad_reduce_bytes);
  v.opt("memory_format", t.memory_format);
}

template <class V, Is<MeshAxis> S>
void fields(V& v, S& a) {
  v.req("name", a.name);
  v.req("size", a.size);
  v.req("stride", a.stride);
}

template <class V, Is<Chunk> S>
void fields(V& v, S& c) {
  v.req("index", c.index);
  v.req("pipeline_rank", c.pipeline_rank);
  v.devices("devices", c);
  v.req("first_layer", c.first_layer);
  v.req("last_layer", c.last_layer);
  v.req("embedding", c.embedding);
  v.req("head", c.head);
  v.req("ops", c.ops);
}

template <class V, Is<Collective> S>
void fields(V& v, S& c) {
  v.req("kind", c.kind);
  v.req("axis", c.axis);
  v.req("group_size", c.group_size);
  v.req("bytes", c.bytes);
  v.req("count", c.count);
  v.req("backward", c.backward);
  v.req("per_step", c.per_step);
  v.opt("where", c.where);
}

template <class V, Is<OpStrategy> S>
void fields(V& v, S& s) {
  v.req("unit", s.unit);
  v.req("instances", s.instances);
  v.req("ops", s.ops);
  v.req("family", s.family);
  v.req("strategy", s.strategy);
  v.req("assignment", s.assignment);
  v.req("inputs", s.inputs);
  v.req("outputs", s.outputs);
  v.opt("collectives", s.collectives);
}

template <class V, Is<Layout> S>
void fields(V& v, S& l) {
  v.req("dp", l.dp);
  v.req("tp", l.tp);
  v.req("pp", l.pp);
  v.req("cp", l.cp);
  v.req("ep", l.ep);
  v.req("vp", l.vp);
  v.req("sequence_parallel", l.sequence_parallel);
  v.req("zero", l.zero);
  v.req("distributed_optimizer", l.distributed_optimizer);
  v.req("tp_comm_overlap", l.tp_comm_overlap);
  v.opt("tp_splits_batch", l.tp_splits_batch);
  v.req("schedule", l.schedule);
  v.req("mesh", l.mesh);
  v.req("chunks", l.chunks);
  v.req("schedule_steps", l.schedule_steps);
  v.req("strategies", l.strategies);
}

template <class V, Is<MemoryItem> S>
void fields(V& v, S& m) {
  v.req("kind", m.kind);
  v.req("bytes", m.bytes);
  v.opt("label", m.label);
}

template <class V, Is<StageMemory> S>
void fields(V& v, S& s) {
  v.req("stage", s.stage);
  v.req("peak_bytes", s.peak_bytes);
  v.req("fits", s.fits);
  v.req("parameters", s.parameters);
  v.req("micro_batches_in_flight", s.micro_batches_in_flight);
  v.opt("items", s.items);
}

template <class V, Is<Alternative> S>
void fields(V& v, S& a) {
  v.req("layout", a.layout);
  v.req("step_time_s", a.step_time_s);
  v.req("fits", a.fits);
  v.opt("why", a.why);
}

template <class V, Is<TimelineSpan> S>
void fields(V& v, S& s) {
  v.req("stream", s.stream);
  v.req("kind", s.kind);
  v.opt("micro_batch", s.micro_batch);
  v.opt("chunk", s.chunk);
  v.opt("peer", s.peer);
  v.req("start_s", s.start_s);
  v.req("end_s", s.end_s);
}

template <class V, Is<StageTimeline> S>
void fields(V& v, S& s) {
  v.req("stage", s.stage);
  v.req("spans", s.spans);
}

template <class V, Is<Prediction> S>
void fields(V& v, S& p) {
  v.req("step_time_s", p.step_time_s);
  v.opt("breakdown_s", p.breakdown_s);
  v.req("model_tflops_per_device", p.model_tflops_per_device);
  v.req("hardware_tflops_per_device", p.hardware_tflops_per_device);
  v.req("mfu", p.mfu);
  v.req("hfu", p.hfu);
  v.req("capacity_bytes", p.capacity_bytes);
  v.req("fits", p.fits);
  v.opt("stages", p.stages);
  v.opt("lower_bound_s", p.lower_bound_s);
  v.opt("gap", p.gap);
  v.opt("alternatives", p.alternatives);
  v.opt("timeline", p.timeline, !p.timeline.empty());
}

template <class V, Is<Plan> S>
void fields(V& v, S& p) {
  v.req("format", p.format);
  v.req("producer", p.producer);
  v.req("model", p.model);
  v.req("cluster", p.cluster);
  v.req("training", p.training);
  v.req("layout", p.layout);
  v.req("prediction", p.prediction);
}

/// The keys of a field list, in order.
struct KeyList {
  std::vector<std::string_view> keys;
  template <class T>
  void req(std::string_view key, const T&) { keys.push_back(key); }
  template <class T>
  void opt(std::string_view key, const T&, bool = true) { keys.push_back(key); }
  void devices(std::string_view key, const Chunk&) { keys.push_back(key); }
};

/// A plan struct with a field list.
template <class T>
concept HasFields = requires(KeyList& k, const T& t) { fields(k, t); };

}  // namespace planner::plan::detail
